// SPDX-License-Identifier: MIT
/*
 * The Alertmanager v2 push (see alertmanager.h): its config, fire and
 * resolve, its thread. Its turns are the exporters' turn loop's
 * (alertmanager_turn.c); the alerts it holds are kept durable in the store
 * (alertmanager_state.c). The alert table lives under the sender's lock
 * (s->mu), which also wakes its thread (s->cv) when an alert changes.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/lazylib.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "exporters/alertmanager_internal.h"
#include "metrics/metrics.h"
#include "storage/store_samples.h"

static const struct cfg_key am_sender_keys[] = {
    SENDER_KEYS(struct am_config, http,
		"Alertmanager base URL; the IFS failed-core alerts are POSTed to "
		"<url>/api/v2/alerts. Empty: [collector.ifs] alertmanager_url, the older "
		"spelling, which still works"),
    {0},
};

/* The sender's keys with the push's own timings: a 10 s time limit, a
 * backoff from 1 s doubling to a minute (an alert is not a flood of rows;
 * the push has always waited so). Filled by am_export_declare(). */
static struct cfg_key am_keys[sizeof(am_sender_keys) / sizeof(am_sender_keys[0])];

int am_export_declare(struct config *cfg)
{
	static const char *const timing[][2] = {
	    {"timeout", "10s"}, {"min_backoff", "1s"}, {"max_backoff", "1m"}};

	memcpy(am_keys, am_sender_keys, sizeof(am_keys));
	for (struct cfg_key *k = am_keys; k->key; k++)
		for (size_t i = 0; i < sizeof(timing) / sizeof(timing[0]); i++)
			if (!strcmp(k->key, timing[i][0]))
				k->def = timing[i][1];
	return cfg_declare(cfg, AM_SECTION_OWN, am_keys);
}

void am_format_time(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000LL);
	struct tm tm;
	char tmp[32];

	gmtime_r(&s, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", tmp, (int)(ns / 1000000 % 1000));
}

/* Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]* */
static bool label_name_ok(const char *k)
{
	if (!*k || isdigit((unsigned char)*k))
		return false;
	for (const char *p = k; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

int am_labels_parse(const char *s, void (*out)(const char *k, const char *v, void *arg), void *arg)
{
	char *copy, *save, *tok;
	int err = 0;

	if (!s || !*s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *k, *v;

		if (cfg_kv_split(tok, &k, &v) || !label_name_ok(k))
			err = -EINVAL;
		else if (out)
			out(k, v, arg);
	}
	free(copy);
	return err;
}

int am_reply(long status, const char *body, size_t len, char *msg, size_t msglen)
{
	json_t *j = NULL, *m;

	if (!msglen)
		return status >= 200 && status <= 299 ? 0 : -EIO;
	msg[0] = '\0';
	if (status >= 200 && status <= 299)
		return 0;
	if (body && len)
		j = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	m = json_is_object(j) ? json_object_get(j, "message") : j;
	if (json_is_string(m) && json_string_length(m))
		log_printable(msg, msglen, json_string_value(m), json_string_length(m), false);
	else if (body && len)
		log_printable(msg, msglen, body, len, true);
	if (!msg[0])
		snprintf(msg, msglen, "HTTP %ld", status);
	json_decref(j);
	return -EIO;
}

static void label_set(const char *k, const char *v, void *arg)
{
	json_object_set_new(arg, k, json_string(v));
}

/* The keys' checks, with the messages they always had; 0 or -EINVAL. */
static int am_check(struct config *cfg, const char *sec, const char *key, const char *url,
		    const char *labels)
{
	const char *why = NULL;
	int bad = 0;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		bad |= cfg_error(cfg, sec, key, "must start with http(s)://");
	/* libcurl is loaded (base/lazylib.h): a host without it hears so from
	 * the check, with the package to install, not at the first alert. */
	else if (!lazylib_curl(&why))
		bad |= cfg_error(cfg, sec, key, "the alert push needs libcurl: %s", why);
	if (am_labels_parse(labels, NULL, NULL))
		bad |= cfg_error(cfg, AM_SECTION, AM_KEY_LABELS,
				 "expected k=v,k2=v2 with label names [a-zA-Z_][a-zA-Z0-9_]*");
	return bad ? -EINVAL : 0;
}

/*
 * [alertmanager] read into am->c; its url, else [collector.ifs]
 * alertmanager_url (*url_sec and *url_key say which, for errors).
 */
static int am_sender_config(struct config *cfg, struct am_export *am, const char *ifs_url,
			    const char **url_sec, const char **url_key)
{
	const struct cfg_section *own = cfg_section(cfg, AM_SECTION_OWN);
	struct sender_config *h = &am->c.http;

	if (!own || cfg_section_parse(cfg, AM_SECTION_OWN, &am->c))
		return -EINVAL;
	*url_sec = AM_SECTION_OWN;
	*url_key = "url";
	if (!*h->url && ifs_url) {
		h->url = ifs_url;
		*url_sec = AM_SECTION;
		*url_key = AM_KEY_URL;
	}
	return 0;
}

static int am_resend_ms(const struct cfg_section *sec, uint64_t *ms)
{
	const char *v = sec ? cfg_get(sec, AM_KEY_RESEND) : NULL;

	*ms = 60000;
	/* Range and syntax: the collector's typed key checks them. */
	return v && cfg_parse_duration_ms(v, ms) ? -EINVAL : 0;
}

/* [collector.ifs] enabled = false: no alert to push (its value is the
 * collector host's to check). */
static bool am_collector_enabled(const struct cfg_section *sec)
{
	const char *v = sec ? cfg_get(sec, "enabled") : NULL;
	bool on = true;

	return !v || cfg_parse_bool(v, &on) || on;
}

/* The sender checked and set up for <url>/api/v2/alerts. */
static int am_sender_setup(struct config *cfg, struct am_export *am, bool read_files)
{
	const char *url = am->c.http.url;
	size_t ul = strlen(url);
	int err;

	am->post_url = malloc(ul + sizeof("/api/v2/alerts"));
	if (!am->post_url)
		return -ENOMEM;
	sprintf(am->post_url, "%.*s/api/v2/alerts", (int)(ul && url[ul - 1] == '/' ? ul - 1 : ul),
		url);
	err = sender_check(&am->s, cfg, AM_SECTION_OWN, &am->c.http, read_files);
	if (!err)
		err = sender_setup(&am->s,
				   (const char *const[]){"Content-Type: application/json", NULL});
	if (err)
		return err;
	sender_set_url(&am->s, am->post_url);
	am->s.st.name = AM_DESTINATION;
	am->s.st.format = "alertmanager";
	am->s.st.url = am->s.url_public;
	return 0;
}

int am_export_new(struct config *cfg, bool read_files, struct am_export **out)
{
	const struct cfg_section *sec = cfg_section(cfg, AM_SECTION);
	const char *labels = sec ? cfg_get(sec, AM_KEY_LABELS) : NULL;
	const char *url_sec, *url_key;
	struct am_export *am;
	uint64_t resend_ms;
	int err;

	*out = NULL;
	if (!am_collector_enabled(sec))
		return 0;
	am = calloc(1, sizeof(*am));
	if (!am)
		return -ENOMEM;
	err = am_sender_config(cfg, am, sec ? cfg_get(sec, AM_KEY_URL) : NULL, &url_sec, &url_key);
	if (err || !*am->c.http.url)
		goto out_free;
	err = -EINVAL;
	if (am_check(cfg, url_sec, url_key, am->c.http.url, labels) ||
	    am_resend_ms(sec, &resend_ms))
		goto out_free;
	am->resend_ns = (int64_t)resend_ms * AM_MS_NS;
	am->extra = json_object();
	err = am->extra ? am_sender_setup(cfg, am, read_files) : -ENOMEM;
	if (err)
		goto out_free;
	am_labels_parse(labels, label_set, am->extra);
	am->turn = (struct turn){.ops = &am_turn_ops,
				 .ctx = am,
				 .snd = &am->s,
				 .section = AM_SECTION_OWN,
				 .unit = "alerts",
				 .rl_fail = &am->rl};
	*out = am;
	return 0;

out_free:
	am_export_free(am);
	return err;
}

/* The counts into the registry's series (after each turn). */
static void am_publish(struct am_export *am)
{
	struct am_stats st;

	am_export_stats(am, &st);
	if (am->posts[0])
		series_set(am->posts[0], (double)st.posts_ok);
	if (am->posts[1])
		series_set(am->posts[1], (double)st.posts_failed);
	if (am->firing)
		series_set(am->firing, st.firing);
}

static void *am_main(void *arg)
{
	struct am_export *am = arg;

	while (!sender_stopping(&am->s)) {
		int64_t next = am_export_turn(am, clock_mono_ns());
		struct timespec ts;

		am_publish(am);
		if (next == INT64_MAX)
			next = clock_mono_ns() + 3600 * 1000000000LL;
		ts = (struct timespec){next / 1000000000LL, next % 1000000000LL};
		pthread_mutex_lock(&am->s.mu);
		while (!am->s.stop && !am->kick &&
		       pthread_cond_timedwait(&am->s.cv, &am->s.mu, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&am->s.mu);
	}
	return NULL;
}

/* The push's series in the exporters' words (sent, retried, dropped,
 * pending, lag, last success), counted in alerts: an alert's state in a
 * POST is one. */
static void am_metrics_turn(struct am_export *am, struct metrics *m)
{
	static const char *const dest[] = {"destination", NULL};
	static const char *const dest_reason[] = {"destination", "reason", NULL};
	static const char *const own[] = {AM_DESTINATION, NULL};
	struct metric *f;

	f = metrics_counter(m, "sysobs_ifs_alerts_sent_total",
			    "Alert states (a firing alert, its resend, its resolve) Alertmanager "
			    "accepted. Present only with alertmanager_url set.",
			    dest);
	am->turn.m.sent = f ? metric_series(f, own) : NULL;
	f = metrics_counter(m, "sysobs_ifs_alerts_retried_total",
			    "Alert states in POSTs sent again: no answer, 5xx, 429 or any "
			    "answer not about the alerts. Present only with alertmanager_url set.",
			    dest);
	am->turn.m.retried = f ? metric_series(f, own) : NULL;
	f = metrics_counter(m, "sysobs_ifs_alerts_dropped_total",
			    "Alert states never delivered: refused (400 or 422, Alertmanager's "
			    "verdict on the alerts; a firing alert goes again at its next "
			    "resend). Present only with alertmanager_url set.",
			    dest_reason);
	am->turn.m.refused =
	    f ? metric_series(f, (const char *const[]){AM_DESTINATION, "refused"}) : NULL;
	f = metrics_gauge(m, "sysobs_ifs_alerts_pending",
			  "Alerts whose state (fired or resolved) Alertmanager has not taken yet. "
			  "Present only with alertmanager_url set.",
			  dest);
	am->pending = f ? metric_series(f, own) : NULL;
	f = metrics_gauge(m, "sysobs_ifs_alert_lag_seconds",
			  "How long the oldest pending alert state has waited (0: none). Present "
			  "only with alertmanager_url set.",
			  dest);
	am->lag = f ? metric_series(f, own) : NULL;
	f = metrics_gauge(m, "sysobs_ifs_alert_last_success_timestamp_seconds",
			  "Unix time of the last POST Alertmanager accepted. Present only with "
			  "alertmanager_url set.",
			  dest);
	am->turn.m.last_success = f ? metric_series(f, own) : NULL;
}

int am_export_start(struct am_export *am, struct metrics *m)
{
	static const char *const labels[] = {"destination", "result", NULL};
	static const char *const dest[] = {"destination", NULL};
	struct metric *f;

	if (!am)
		return 0;
	if (m) {
		f = metrics_counter(m, "sysobs_ifs_alert_posts_total",
				    "POSTs of the IFS failed-core alerts to Alertmanager (one per "
				    "batch of alerts), by result: ok, failed (no connection or not "
				    "a 2xx answer). Present only with alertmanager_url set.",
				    labels);
		am->posts[0] =
		    f ? metric_series(f, (const char *const[]){AM_DESTINATION, "ok"}) : NULL;
		am->posts[1] =
		    f ? metric_series(f, (const char *const[]){AM_DESTINATION, "failed"}) : NULL;
		f = metrics_gauge(m, "sysobs_ifs_alerts_firing",
				  "IFS failed-core alerts the agent holds firing (sent again every "
				  "alert_resend until a scan of the core passes). Present only "
				  "with alertmanager_url set.",
				  dest);
		am->firing = f ? metric_series(f, (const char *const[]){AM_DESTINATION}) : NULL;
		am_metrics_turn(am, m);
		am_status_backlog(am);
		am_publish(am);
	}
	return sender_start(&am->s, am_main, am, "sysobs-alert");
}

void am_export_free(struct am_export *am)
{
	if (!am)
		return;
	sender_free(&am->s);
	for (size_t i = 0; i < am->n; i++) {
		json_decref(am->alerts[i].labels);
		json_decref(am->alerts[i].annotations);
	}
	free(am->alerts);
	free(am->body);
	store_cursor_close(am->cur);
	json_decref(am->extra);
	free(am->post_url);
	free(am);
}

static json_t *pairs_json(const struct am_pair *p, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++)
		if (json_object_set_new(o, p[i].name, json_string(p[i].value ?: ""))) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static struct alert *alert_find(struct am_export *am, const char *key)
{
	for (size_t i = 0; i < am->n; i++)
		if (!strcmp(am->alerts[i].key, key))
			return &am->alerts[i];
	return NULL;
}

/* A new entry for key (s.mu held); NULL when out of memory. */
static struct alert *alert_add(struct am_export *am, const char *key)
{
	struct alert *na = realloc(am->alerts, (am->n + 1) * sizeof(*na)), *al;

	if (!na)
		return NULL;
	am->alerts = na;
	al = &am->alerts[am->n++];
	memset(al, 0, sizeof(*al));
	snprintf(al->key, sizeof(al->key), "%s", key);
	return al;
}

void am_alert_drop(struct am_export *am, size_t i)
{
	struct alert *al = &am->alerts[i];

	json_decref(al->labels);
	json_decref(al->annotations);
	memmove(al, al + 1, (am->n - i - 1) * sizeof(*al));
	am->n--;
}

/* The alert's new state is due now, to store and to send: the thread
 * wakes (s.mu held). */
static void alert_kick(struct am_export *am, struct alert *al)
{
	al->due = INT64_MIN;
	al->version++;
	al->gone = false;
	al->dirty = true;
	al->changed = true;
	if (!al->pending_ns)
		al->pending_ns = clock_wall_ns();
	am->kick = true;
	pthread_cond_signal(&am->s.cv);
}

int am_export_fire(struct am_export *am, const char *key, const struct am_pair *labels,
		   size_t n_labels, const struct am_pair *annotations, size_t n_annotations,
		   int64_t starts_ns)
{
	json_t *l = pairs_json(labels, n_labels), *a = pairs_json(annotations, n_annotations);
	struct alert *al;

	if (!l || !a)
		goto err;
	pthread_mutex_lock(&am->s.mu);
	al = alert_find(am, key);
	if (al && !al->ends_ns) {
		/* Still firing: refresh the details, keep startsAt. */
		json_decref(al->annotations);
		al->annotations = a;
		json_decref(l);
	} else {
		if (!al)
			al = alert_add(am, key);
		else /* resolved but not yet delivered, now failing again: a new alert */
			json_decref(al->labels), json_decref(al->annotations);
		if (!al) {
			pthread_mutex_unlock(&am->s.mu);
			goto err;
		}
		al->labels = l;
		al->annotations = a;
		al->starts_ns = starts_ns;
		al->ends_ns = 0;
	}
	alert_kick(am, al);
	pthread_mutex_unlock(&am->s.mu);
	return 0;
err:
	json_decref(l);
	json_decref(a);
	return -ENOMEM;
}

void am_export_resolve(struct am_export *am, const char *key, int64_t ends_ns)
{
	struct alert *al;

	pthread_mutex_lock(&am->s.mu);
	al = alert_find(am, key);
	if (al && !al->ends_ns) {
		al->ends_ns = ends_ns;
		alert_kick(am, al);
	}
	pthread_mutex_unlock(&am->s.mu);
}

void am_export_stats(struct am_export *am, struct am_stats *out)
{
	pthread_mutex_lock(&am->s.mu);
	*out = am->stats;
	pthread_mutex_unlock(&am->s.mu);
}

void am_export_status(struct am_export *am, struct export_status *st)
{
	sender_status_get(&am->s, st);
}
