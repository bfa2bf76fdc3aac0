// SPDX-License-Identifier: MIT
/*
 * Alertmanager v2 push on its own thread (see ifs_alert.h), with libcurl,
 * loaded by ifs_alert_new() (base/lazylib.h): only an agent that pushes
 * alerts maps it.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "base/lazylib.h"
#include "base/log.h"
#include "collectors/ifs/ifs_alert.h"

#define BACKOFF_MIN_NS (1000000000LL)
#define BACKOFF_MAX_NS (60 * 1000000000LL)
#define POST_TIMEOUT_S 10L

struct alert {
	char key[64];
	json_t *labels, *annotations;
	int64_t starts_ns, ends_ns; /* ends_ns 0 = firing */
	int64_t due_mono;	    /* next send */
	int64_t backoff_ns;
	uint64_t version;      /* bumped by fire/resolve */
	uint64_t sent_version; /* version in the POST in flight */
	bool in_flight;
};

struct ifs_alerter {
	const struct lazylib_curl *cu;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool stop;
	char *url;
	json_t *extra;
	int64_t resend_ns;
	struct alert *alerts;
	size_t n;
	struct ifs_alert_stats stats;
	struct log_ratelimit rl;
};

void ifs_alert_format_time(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000LL);
	struct tm tm;
	char tmp[32];

	gmtime_r(&s, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", tmp, (int)(ns / 1000000 % 1000));
}

json_t *ifs_alert_parse_labels(const char *s)
{
	json_t *o = json_object();
	char *copy, *save, *tok;

	if (!o)
		return NULL;
	if (!s || !*s)
		return o;
	copy = strdup(s);
	if (!copy)
		goto err;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *k, *v;

		if (cfg_kv_split(tok, &k, &v))
			goto err_copy;
		/* Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]* */
		if (!*k || isdigit((unsigned char)*k))
			goto err_copy;
		for (const char *p = k; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '_')
				goto err_copy;
		json_object_set_new(o, k, json_string(v));
	}
	free(copy);
	return o;

err_copy:
	free(copy);
err:
	json_decref(o);
	return NULL;
}

/* The start of the reply body, for ifs_alert_reply(). */
struct reply_buf {
	char p[IFS_ALERT_REPLY_MAX];
	size_t len;
};

static size_t keep_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply_buf *r = arg;
	size_t n = size * nmemb, room = sizeof(r->p) - r->len;

	memcpy(r->p + r->len, ptr, n < room ? n : room);
	r->len += n < room ? n : room;
	return size * nmemb;
}

int ifs_alert_reply(long status, const char *body, size_t len, char *msg, size_t msglen)
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

/* One POST of a JSON array; 0 on a 2xx answer. */
static int post_alerts(struct ifs_alerter *a, CURL *curl, const char *body)
{
	const struct lazylib_curl *cu = a->cu;
	char url[1024], err[CURL_ERROR_SIZE] = "", why[160];
	struct curl_slist *hdr = NULL;
	struct reply_buf reply = {.len = 0};
	long status = 0;
	CURLcode rc;
	size_t ul = strlen(a->url);

	snprintf(url, sizeof(url), "%.*s/api/v2/alerts",
		 (int)(ul && a->url[ul - 1] == '/' ? ul - 1 : ul), a->url);
	hdr = cu->slist_append(hdr, "Content-Type: application/json");
	cu->easy_reset(curl);
	cu->easy_setopt(curl, CURLOPT_URL, url);
	cu->easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
	cu->easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	cu->easy_setopt(curl, CURLOPT_TIMEOUT, POST_TIMEOUT_S);
	cu->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
	cu->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_body);
	cu->easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
	cu->easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
	rc = cu->easy_perform(curl);
	if (rc == CURLE_OK)
		cu->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	cu->slist_free_all(hdr);
	if (rc != CURLE_OK) {
		log_ratelimited(&a->rl, 60000, LOG_LVL_WARN, "ifs",
				"alertmanager push to %s failed: %s", url,
				err[0] ? err : cu->easy_strerror(rc));
		return -EIO;
	}
	if (ifs_alert_reply(status, reply.p, reply.len, why, sizeof(why))) {
		log_ratelimited(&a->rl, 60000, LOG_LVL_WARN, "ifs",
				"alertmanager push to %s failed: HTTP %ld: %s", url, status, why);
		return -EIO;
	}
	return 0;
}

static json_t *alert_json(const struct ifs_alerter *a, const struct alert *al)
{
	json_t *o = json_object(), *labels = json_deep_copy(al->labels);
	char t[40];

	json_object_update_missing(labels, a->extra);
	json_object_set_new(o, "labels", labels);
	json_object_set(o, "annotations", al->annotations);
	ifs_alert_format_time(al->starts_ns, t, sizeof(t));
	json_object_set_new(o, "startsAt", json_string(t));
	if (al->ends_ns) {
		ifs_alert_format_time(al->ends_ns, t, sizeof(t));
		json_object_set_new(o, "endsAt", json_string(t));
	}
	return o;
}

static void *alert_main(void *arg)
{
	struct ifs_alerter *a = arg;
	const struct lazylib_curl *cu = a->cu;
	CURL *curl = cu->easy_init();

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		int64_t now = clock_mono_ns(), next = now + 3600 * 1000000000LL;
		json_t *batch = json_array();
		char *body;
		int rc;

		for (size_t i = 0; i < a->n; i++) {
			if (a->alerts[i].due_mono <= now) {
				json_array_append_new(batch, alert_json(a, &a->alerts[i]));
				a->alerts[i].in_flight = true;
				a->alerts[i].sent_version = a->alerts[i].version;
			} else if (a->alerts[i].due_mono < next)
				next = a->alerts[i].due_mono;
		}
		if (!json_array_size(batch) || !curl) {
			struct timespec ts = {next / 1000000000LL, next % 1000000000LL};

			json_decref(batch);
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
			continue;
		}
		body = json_dumps(batch, JSON_COMPACT);
		json_decref(batch);
		/* The network call runs unlocked: fire/resolve never wait on it. */
		pthread_mutex_unlock(&a->lock);
		rc = body ? post_alerts(a, curl, body) : -ENOMEM;
		free(body);
		pthread_mutex_lock(&a->lock);
		now = clock_mono_ns();
		if (rc)
			a->stats.posts_failed++;
		else
			a->stats.posts_ok++;
		for (size_t i = 0; i < a->n;) {
			struct alert *al = &a->alerts[i];
			bool changed = al->version != al->sent_version;

			if (!al->in_flight) {
				i++;
				continue;
			}
			al->in_flight = false;
			if (changed) {
				i++; /* fire/resolve during the POST: send the new state */
				continue;
			}
			if (rc) {
				al->backoff_ns =
				    al->backoff_ns ? al->backoff_ns * 2 : BACKOFF_MIN_NS;
				if (al->backoff_ns > BACKOFF_MAX_NS)
					al->backoff_ns = BACKOFF_MAX_NS;
				al->due_mono = now + al->backoff_ns;
				i++;
				continue;
			}
			al->backoff_ns = 0;
			if (al->ends_ns) {
				/* Resolution delivered: forget it. */
				json_decref(al->labels);
				json_decref(al->annotations);
				memmove(al, al + 1, (a->n - i - 1) * sizeof(*al));
				a->n--;
				continue;
			}
			al->due_mono = now + a->resend_ns;
			i++;
		}
		a->stats.firing = 0;
		for (size_t i = 0; i < a->n; i++)
			a->stats.firing += !a->alerts[i].ends_ns;
	}
	pthread_mutex_unlock(&a->lock);
	if (curl)
		cu->easy_cleanup(curl);
	return NULL;
}

struct ifs_alerter *ifs_alert_new(const char *url, const char *extra_labels, uint64_t resend_ms)
{
	struct ifs_alerter *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	int err;

	if (!a)
		return NULL;
	/* The config check said so already, naming the package. */
	a->cu = lazylib_curl(NULL);
	if (!a->cu) {
		free(a);
		errno = ENOENT;
		return NULL;
	}
	a->extra = ifs_alert_parse_labels(extra_labels);
	a->url = strdup(url);
	if (!a->extra || !a->url) {
		err = a->extra ? ENOMEM : EINVAL;
		goto err_free;
	}
	a->resend_ns = (int64_t)resend_ms * 1000000LL;
	a->cu->global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&a->thread, NULL, alert_main, a);
	if (err) {
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		a->cu->global_cleanup();
		goto err_free;
	}
	pthread_setname_np(a->thread, "sysobs-alert");
	return a;

err_free:
	json_decref(a->extra);
	free(a->url);
	free(a);
	errno = err;
	return NULL;
}

void ifs_alert_free(struct ifs_alerter *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	for (size_t i = 0; i < a->n; i++) {
		json_decref(a->alerts[i].labels);
		json_decref(a->alerts[i].annotations);
	}
	free(a->alerts);
	json_decref(a->extra);
	free(a->url);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	a->cu->global_cleanup();
	free(a);
}

static struct alert *find(struct ifs_alerter *a, const char *key)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->alerts[i].key, key))
			return &a->alerts[i];
	return NULL;
}

void ifs_alert_fire(struct ifs_alerter *a, const char *key, json_t *labels, json_t *annotations,
		    int64_t starts_ns)
{
	struct alert *al;

	pthread_mutex_lock(&a->lock);
	al = find(a, key);
	if (al && !al->ends_ns) {
		/* Still firing: refresh the details, keep startsAt. */
		json_decref(al->annotations);
		al->annotations = annotations;
		json_decref(labels);
	} else {
		if (!al) {
			struct alert *na = realloc(a->alerts, (a->n + 1) * sizeof(*na));

			if (!na) {
				pthread_mutex_unlock(&a->lock);
				json_decref(labels);
				json_decref(annotations);
				return;
			}
			a->alerts = na;
			al = &a->alerts[a->n++];
			memset(al, 0, sizeof(*al));
			snprintf(al->key, sizeof(al->key), "%s", key);
		} else {
			/* Resolved but not yet delivered, now failing again: a new alert. */
			json_decref(al->labels);
			json_decref(al->annotations);
		}
		al->labels = labels;
		al->annotations = annotations;
		al->starts_ns = starts_ns;
		al->ends_ns = 0;
	}
	al->due_mono = clock_mono_ns();
	al->backoff_ns = 0;
	al->version++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

void ifs_alert_resolve(struct ifs_alerter *a, const char *key, int64_t ends_ns)
{
	struct alert *al;

	pthread_mutex_lock(&a->lock);
	al = find(a, key);
	if (al && !al->ends_ns) {
		al->ends_ns = ends_ns;
		al->due_mono = clock_mono_ns();
		al->backoff_ns = 0;
		al->version++;
		pthread_cond_signal(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
}

void ifs_alert_get_stats(struct ifs_alerter *a, struct ifs_alert_stats *out)
{
	pthread_mutex_lock(&a->lock);
	*out = a->stats;
	pthread_mutex_unlock(&a->lock);
}
