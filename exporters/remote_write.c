// SPDX-License-Identifier: MIT
/*
 * Prometheus remote-write 1.0 sender: metric history (SQLite) -> WriteRequest
 * (protobuf-c) -> snappy block -> libcurl POST, on a thread of its own. See
 * remote_write.h for the design and docs/remote_write.md for the user's view.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/hist_blob.h"
#include "agent/log.h"
#include "exporters/remote_write.h"
#include "exporters/remote_write_meta.h"
#include "api/metrics.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store.h"
#include "storage/store_samples.h"

#define RW_COMPONENT	      "remote_write"
#define RW_RETRY_AFTER_MAX_MS (5 * 60 * 1000) /* a Retry-After longer than this is capped */
#define RW_SECRET_MAX	      (64 * 1024)
#define RW_RESP_MAX	      256 /* response body kept for the log */
#define RW_CONNECT_MAX_MS     10000
/* At shutdown a request in flight gets this long to finish: one the
 * receiver already applied but whose answer was cut off would be sent again
 * after the restart, and a receiver without an out-of-order window refuses
 * a batch with older samples of a series it has (400). */
#define RW_STOP_GRACE_NS (2 * 1000000000ll)

#define RWK(f, t, d, lo, hi, h) CFG_KEY(struct remote_write_config, f, t, d, lo, hi, h)

const struct cfg_key remote_write_keys[] = {
    RWK(url, CFG_STRING, "", 0, 0,
	"receiver endpoint, http:// or https://, e.g. http://127.0.0.1:9090/api/v1/write "
	"(empty = remote_write off)"),
    RWK(max_age, CFG_DURATION, "1h", 1000, 31ull * 86400000,
	"history older than this when its turn comes is dropped and counted (receivers "
	"such as Prometheus refuse samples much older than their newest)"),
    RWK(batch_samples, CFG_U64, "2000", 1, 100000,
	"samples per request; one batch is held in memory at a time"),
    RWK(send_interval, CFG_DURATION, "1s", 100, 60000,
	"how often to look for new history once everything was sent"),
    RWK(timeout, CFG_DURATION, "30s", 100, 600000, "time limit of one request"),
    RWK(min_backoff, CFG_DURATION, "30ms", 1, 600000,
	"first wait before retrying a 5xx, 429 or transport error; doubles per failure"),
    RWK(max_backoff, CFG_DURATION, "5s", 1, 3600000,
	"longest wait between retries (a receiver's Retry-After is honoured up to 5m)"),
    RWK(external_labels, CFG_STRING, "", 0, 0,
	"labels added to every series unless it has them, e.g. cluster=eu1, replica=a"),
    RWK(cursor, CFG_STRING, "remote_write", 0, 0,
	"name of the durable cursor in the database (store_meta cursor.NAME): a second agent "
	"sending the same history elsewhere needs a name of its own"),
    RWK(metadata_interval, CFG_DURATION, "1m", 0, 86400000,
	"how often to send every family's type, help and unit (also at start and when they "
	"change; 0 = never)"),
    RWK(job, CFG_STRING, "sysobs", 0, 0,
	"job label of every series unless it has one (empty = none); the same as the "
	"documented scrape job's name"),
    RWK(instance, CFG_STRING, "", 0, 0,
	"instance label of every series unless it has one (empty = [agent] hostname, else the "
	"host name, as the documented scrape config relabels it)"),
    RWK(basic_auth_user, CFG_STRING, "", 0, 0, "HTTP basic auth user name"),
    RWK(basic_auth_password_file, CFG_STRING, "", 0, 0,
	"file holding the basic auth password (trailing newline ignored)"),
    RWK(bearer_token, CFG_STRING, "", 0, 0, "Authorization: Bearer token"),
    RWK(bearer_token_file, CFG_STRING, "", 0, 0, "file holding the bearer token"),
    RWK(tls_ca_file, CFG_STRING, "", 0, 0, "CA bundle to verify the receiver (default: system)"),
    RWK(tls_cert_file, CFG_STRING, "", 0, 0, "client certificate (PEM), with tls_key_file"),
    RWK(tls_key_file, CFG_STRING, "", 0, 0, "client key (PEM)"),
    RWK(tls_insecure_skip_verify, CFG_BOOL, "false", 0, 0,
	"do not verify the receiver's certificate and host name (testing only)"),
    RWK(native_histograms, CFG_BOOL, "false", 0, 0,
	"send histograms as native histograms (the receiver must accept them, e.g. Prometheus "
	"with --enable-feature=native-histograms) instead of NAME_bucket, _count and _sum"),
    {0},
};

/* ---- the sender ---- */

struct rw_metrics {
	struct metric_series *sent, *failed, *retried, *pending, *last_send, *highest, *duration,
	    *bytes, *cpu, *meta_sent;
	struct metric_series *drop_old, *drop_deleted, *drop_invalid;
};

struct remote_write {
	struct remote_write_config cfg; /* strings point into the agent's config */
	char *ext_text;
	char host[256]; /* gethostname(), the default instance */
	struct rw_label ext[RW_MAX_LABELS];
	size_t n_ext;
	char *password, *bearer;

	struct store *store;
	struct store_cursor *cursor;
	int64_t pos; /* rowid of the last sample accepted or given up */
	CURL *curl;
	struct curl_slist *hdr;
	char errbuf[CURL_ERROR_SIZE];
	char retry_after[64];
	char resp[RW_RESP_MAX];
	size_t resp_len;
	struct rw_batch batch;
	uint64_t backoff_ms;
	unsigned failures; /* retried attempts since the last success */
	struct rw_metrics m;
	struct metrics *metrics;
	struct rw_meta meta;
	struct log_ratelimit rl_fail, rl_store;

	pthread_t thread;
	bool started, curl_global;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool stop;
	int64_t stop_ns; /* clock_mono_ns() of the stop request */
};

/* A password or token file: its content without trailing blanks. */
static int rw_read_secret(const char *path, char **out, const char **why)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		*why = strerror(errno);
		return -EINVAL;
	}
	buf = malloc(RW_SECRET_MAX + 1);
	if (!buf) {
		fclose(f);
		*why = "out of memory";
		return -ENOMEM;
	}
	n = fread(buf, 1, RW_SECRET_MAX + 1, f);
	fclose(f);
	while (n && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n > RW_SECRET_MAX || !n || memchr(buf, '\n', n) || strlen(buf) != n) {
		*why = n ? "must hold one line of at most 64 KiB" : "is empty";
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

static int rw_check_url(struct config *cfg, const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int err = 0;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
		err = cfg_error(cfg, "remote_write", "url", "'%s' is not a URL", url);
	else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
		 (strcmp(scheme, "http") && strcmp(scheme, "https")))
		err = cfg_error(cfg, "remote_write", "url",
				"'%s': the scheme must be http or https", url);
	else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		err = cfg_error(cfg, "remote_write", "url", "'%s' names no host", url);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return err;
}

static int rw_cursor_name_check(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 40)
		return -EINVAL;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return -EINVAL;
	return 0;
}

static int rw_check_file(struct config *cfg, const char *key, const char *path)
{
	if (*path && access(path, R_OK))
		return cfg_error(cfg, "remote_write", key, "%s: %s", path, strerror(errno));
	return 0;
}

/* [agent] hostname, the name the IFS alert push uses too: one instance
 * label on every path. Empty: gethostname(). */
static const char *rw_agent_hostname(struct config *cfg)
{
	const char *h = cfg_get(cfg_section(cfg, "agent"), "hostname");

	return h ? h : "";
}

static void rw_free_settings(struct remote_write *rw)
{
	free(rw->ext_text);
	free(rw->password);
	free(rw->bearer);
	free(rw);
}

/* Every check of remote_write_new(), past a failed one: each error is
 * recorded (cfg_fail()); the secret files are read only with read_files. */
static int rw_settings(struct config *cfg, struct remote_write *rw, bool read_files)
{
	struct remote_write_config *c = &rw->cfg;
	const char *why = NULL, *key = NULL;
	int bad = 0;

	bad |= rw_check_url(cfg, c->url);
	if (c->min_backoff > c->max_backoff)
		bad |=
		    cfg_error(cfg, "remote_write", "max_backoff", "must not be below min_backoff");
	if (rw_cursor_name_check(c->cursor))
		bad |= cfg_error(cfg, "remote_write", "cursor",
				 "1 to 40 of [a-zA-Z0-9_.-], e.g. remote_write or vm");
	rw->ext_text = strdup(c->external_labels);
	if (!rw->ext_text)
		return -ENOMEM;
	/* __name__ takes one of a series' RW_MAX_LABELS. */
	if (rw_external_labels_parse(rw->ext_text, rw->ext, RW_MAX_LABELS - 1, &rw->n_ext, &why))
		bad |= cfg_error(cfg, "remote_write", "external_labels", "%s", why);
	else if (rw_identity_add(c->job, *c->instance ? c->instance : rw_agent_hostname(cfg),
				 rw->host, sizeof(rw->host), rw->ext, RW_MAX_LABELS - 1, &rw->n_ext,
				 &key, &why))
		bad |= cfg_error(cfg, "remote_write", key, "%s", why);
	if (*c->bearer_token && *c->bearer_token_file)
		bad |= cfg_error(cfg, "remote_write", "bearer_token_file",
				 "set bearer_token or bearer_token_file, not both");
	if (*c->basic_auth_user && (*c->bearer_token || *c->bearer_token_file))
		bad |= cfg_error(cfg, "remote_write", "basic_auth_user",
				 "basic auth and a bearer token exclude each other");
	if (!*c->basic_auth_user != !*c->basic_auth_password_file)
		bad |=
		    cfg_error(cfg, "remote_write",
			      *c->basic_auth_user ? "basic_auth_user" : "basic_auth_password_file",
			      "basic auth needs both basic_auth_user and basic_auth_password_file");
	if (!*c->tls_cert_file != !*c->tls_key_file)
		bad |= cfg_error(cfg, "remote_write",
				 *c->tls_cert_file ? "tls_cert_file" : "tls_key_file",
				 "a client certificate needs both tls_cert_file and tls_key_file");
	if (!read_files)
		return bad ? -EINVAL : 0;
	bad |= rw_check_file(cfg, "tls_ca_file", c->tls_ca_file);
	bad |= rw_check_file(cfg, "tls_cert_file", c->tls_cert_file);
	bad |= rw_check_file(cfg, "tls_key_file", c->tls_key_file);
	if (*c->basic_auth_password_file &&
	    rw_read_secret(c->basic_auth_password_file, &rw->password, &why))
		bad |= cfg_error(cfg, "remote_write", "basic_auth_password_file", "%s: %s",
				 c->basic_auth_password_file, why);
	if (*c->bearer_token_file && rw_read_secret(c->bearer_token_file, &rw->bearer, &why))
		bad |= cfg_error(cfg, "remote_write", "bearer_token_file", "%s: %s",
				 c->bearer_token_file, why);
	if (bad)
		return -EINVAL;
	if (*c->bearer_token && !(rw->bearer = strdup(c->bearer_token)))
		return -ENOMEM;
	return 0;
}

int remote_write_check(struct config *cfg, bool read_files, struct remote_write **out)
{
	struct remote_write *rw;
	int err;

	*out = NULL;
	rw = calloc(1, sizeof(*rw));
	if (!rw)
		return -ENOMEM;
	err = cfg_section_parse(cfg, "remote_write", &rw->cfg);
	if (!*rw->cfg.url) { /* off: nothing more to check */
		rw_free_settings(rw);
		return err;
	}
	if (rw_settings(cfg, rw, read_files) || err) {
		rw_free_settings(rw);
		return -EINVAL;
	}
	*out = rw;
	return 0;
}

int remote_write_new(struct config *cfg, struct remote_write **out)
{
	return remote_write_check(cfg, true, out);
}

static size_t rw_on_header(char *p, size_t size, size_t n, void *arg)
{
	struct remote_write *rw = arg;
	size_t len = size * n;
	static const char key[] = "retry-after:";

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		rw->retry_after[0] = '\0'; /* a new response (after a 100) */
	} else if (len > sizeof(key) - 1 && !strncasecmp(p, key, sizeof(key) - 1)) {
		size_t v = len - (sizeof(key) - 1);

		if (v >= sizeof(rw->retry_after))
			v = sizeof(rw->retry_after) - 1;
		memcpy(rw->retry_after, p + sizeof(key) - 1, v);
		rw->retry_after[v] = '\0';
	}
	return len;
}

static size_t rw_on_body(char *p, size_t size, size_t n, void *arg)
{
	struct remote_write *rw = arg;
	size_t len = size * n, room = sizeof(rw->resp) - 1 - rw->resp_len;

	if (room) {
		memcpy(rw->resp + rw->resp_len, p, len < room ? len : room);
		rw->resp_len += len < room ? len : room;
		rw->resp[rw->resp_len] = '\0';
	}
	return len;
}

/* Called by libcurl at least once a second during a transfer: aborts it
 * once a stop has waited RW_STOP_GRACE_NS. */
static int rw_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct remote_write *rw = arg;

	return __atomic_load_n(&rw->stop, __ATOMIC_RELAXED) &&
	       clock_mono_ns() - __atomic_load_n(&rw->stop_ns, __ATOMIC_RELAXED) > RW_STOP_GRACE_NS;
}

static int rw_curl_setup(struct remote_write *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	CURL *h = curl_easy_init();
	struct curl_slist *l = NULL;

	if (!h)
		return -ENOMEM;
	rw->curl = h;
	/* The spec's headers; "Expect:" off so a large body is not held back
	 * for a 100-continue round trip. */
	l = curl_slist_append(l, "Content-Encoding: snappy");
	if (l)
		l = curl_slist_append(l, "Content-Type: application/x-protobuf");
	if (l)
		l = curl_slist_append(l, "X-Prometheus-Remote-Write-Version: 0.1.0");
	if (l)
		l = curl_slist_append(l, "Expect:");
	if (l && rw->bearer) {
		char *v = malloc(strlen(rw->bearer) + 32);

		if (v) {
			sprintf(v, "Authorization: Bearer %s", rw->bearer);
			l = curl_slist_append(l, v);
			free(v);
		} else {
			l = NULL;
		}
	}
	if (!l)
		return -ENOMEM;
	rw->hdr = l;
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, rw->hdr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sysobsd/" SYSOBS_VERSION);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(c->timeout < RW_CONNECT_MAX_MS ? c->timeout : RW_CONNECT_MAX_MS));
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, rw->errbuf);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, rw_on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, rw);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, rw_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, rw);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, rw_on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, rw);
	if (*c->basic_auth_user) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->basic_auth_user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, rw->password);
	}
	if (*c->tls_ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->tls_ca_file);
	if (*c->tls_cert_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->tls_cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->tls_key_file);
	}
	if (c->tls_insecure_skip_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return 0;
}

/* Sleeps up to ms; false when asked to stop. */
static bool rw_sleep(struct remote_write *rw, uint64_t ms)
{
	int64_t until = clock_mono_ns() + (int64_t)ms * 1000000;
	struct timespec ts = {until / 1000000000, until % 1000000000};
	bool stop;

	pthread_mutex_lock(&rw->mu);
	while (!rw->stop && pthread_cond_timedwait(&rw->cv, &rw->mu, &ts) != ETIMEDOUT)
		;
	stop = rw->stop;
	pthread_mutex_unlock(&rw->mu);
	return !stop;
}

static void rw_cursor_save(struct remote_write *rw)
{
	int err = store_cursor_set(rw->cursor, rw->pos);

	if (err)
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, RW_COMPONENT,
				"cannot store the cursor (%s); it stays in memory and is "
				"stored with the next batch",
				strerror(-err));
}

static void rw_add(struct metric_series *s, uint64_t v)
{
	if (s && v)
		series_add(s, (double)v);
}

static void rw_publish_cpu(struct remote_write *rw)
{
	struct rusage ru;

	if (rw->m.cpu && !getrusage(RUSAGE_THREAD, &ru))
		series_set(rw->m.cpu, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
					  (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

/* One batch read from the history. */
struct rw_read {
	struct remote_write *rw;
	int64_t cutoff_ns;
	int64_t first, last; /* rowids read */
	int64_t newest_ms;   /* newest timestamp in the batch */
	uint64_t too_old;
	int err;
};

/* rw_read_row's "the batch is full": the walk stops before this row. */
#define RW_READ_FULL 1

static int rw_read_row(const struct store_sample *smp, void *arg)
{
	struct rw_read *x = arg;
	int64_t ms = smp->ts_ns / 1000000;
	int err;

	/* A row with buckets adds up to HIST_BLOB_MAX_BUCKETS samples more:
	 * the batch has that much room past batch_samples. */
	if (x->rw->batch.n_rows >= x->rw->cfg.batch_samples)
		return RW_READ_FULL;
	if (!x->first)
		x->first = smp->rowid;
	x->last = smp->rowid;
	if (smp->ts_ns < x->cutoff_ns) {
		x->too_old++;
		return 0;
	}
	err = rw_batch_add_history(&x->rw->batch, x->rw->cfg.native_histograms, smp, ms);
	if (err == -ENOMEM || err == -ENOSPC)
		return -ENOMEM;
	if (!err && ms > x->newest_ms)
		x->newest_ms = ms;
	return 0;
}

/* The cursor moves past the batch: count what it leaves unsent. */
static void rw_advance(struct remote_write *rw, const struct rw_read *x)
{
	if (rw->pos > 0 && x->first > rw->pos + 1)
		rw_add(rw->m.drop_deleted, (uint64_t)(x->first - rw->pos - 1));
	rw_add(rw->m.drop_old, x->too_old);
	rw_add(rw->m.drop_invalid, rw->batch.invalid);
	rw->pos = x->last;
	rw_cursor_save(rw);
}

/* POSTs the batch's body: the HTTP status, or 0 for a transport error. */
static long rw_post(struct remote_write *rw, const uint8_t *body, size_t len)
{
	long status = 0;
	CURLcode rc;

	rw->retry_after[0] = '\0';
	rw->resp[0] = '\0';
	rw->resp_len = 0;
	rw->errbuf[0] = '\0';
	curl_easy_setopt(rw->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(rw->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(rw->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(rw->curl, CURLINFO_RESPONSE_CODE, &status);
	else if (!rw->errbuf[0])
		snprintf(rw->errbuf, sizeof(rw->errbuf), "%s", curl_easy_strerror(rc));
	return status;
}

/* One turn of the sender: reads a batch after the cursor, sends it, and
 * returns how long to wait before the next turn (ms). */
static uint64_t rw_turn(struct remote_write *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	struct rw_read x = {.rw = rw};
	int64_t last, t0;
	size_t n;
	long status;
	int err;

	err = store_samples_last(rw->store, &last);
	if (err) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, RW_COMPONENT,
				"cannot read the metric history: %s", strerror(-err));
		return c->send_interval;
	}
	if (last < rw->pos) {
		log_warn(RW_COMPONENT,
			 "the metric history was renumbered (emptied or a new database): "
			 "sending it from its start");
		rw->pos = 0;
		rw_cursor_save(rw);
	}
	if (rw->m.pending)
		series_set(rw->m.pending, (double)(last - rw->pos));
	if (last == rw->pos)
		return c->send_interval;

	rw_batch_reset(&rw->batch);
	x.cutoff_ns = clock_wall_ns() - (int64_t)c->max_age * 1000000;
	err = store_samples_after(rw->store, rw->pos, c->batch_samples, rw_read_row, &x);
	if (err == RW_READ_FULL)
		err = 0;
	if (err || rw->batch.arena.oom) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, RW_COMPONENT,
				"cannot read the metric history: %s",
				strerror(err ? -err : ENOMEM));
		return c->send_interval;
	}
	if (!x.last)
		return c->send_interval;
	if (!rw->batch.n_rows) { /* all too old or invalid: nothing to send */
		rw_advance(rw, &x);
		return 0;
	}
	if (rw_batch_encode(&rw->batch, rw->ext, rw->n_ext, &n)) {
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
				"out of memory encoding %zu samples", rw->batch.n_rows);
		return c->max_backoff;
	}

	t0 = clock_mono_ns();
	status = rw_post(rw, rw->batch.body, rw->batch.body_len);
	if (!status && __atomic_load_n(&rw->stop, __ATOMIC_RELAXED))
		return 0; /* aborted by the stop: nothing to count */
	if (rw->m.duration)
		series_observe(rw->m.duration, (double)(clock_mono_ns() - t0) / 1e9);

	if (status >= 200 && status < 300) {
		rw_add(rw->m.sent, n);
		rw_add(rw->m.bytes, rw->batch.body_len);
		if (rw->m.last_send)
			series_set(rw->m.last_send, (double)clock_wall_ns() / 1e9);
		if (rw->m.highest)
			series_set(rw->m.highest, (double)x.newest_ms / 1e3);
		if (rw->failures)
			log_info(RW_COMPONENT, "%s accepts again after %u failed attempts", c->url,
				 rw->failures);
		rw->failures = 0;
		rw->backoff_ms = 0;
		rw_advance(rw, &x);
		return x.last < last ? 0 : c->send_interval;
	}
	if (status == 0 || status == 429 || status >= 500) {
		uint64_t wait, ra;

		rw_add(rw->m.retried, n);
		rw->failures++;
		rw->backoff_ms = rw_backoff_next(rw->backoff_ms, c->min_backoff, c->max_backoff);
		wait = rw->backoff_ms;
		if (rw->retry_after[0] && !rw_retry_after_parse(rw->retry_after, time(NULL), &ra))
			wait = ra < c->min_backoff	    ? c->min_backoff
			       : ra > RW_RETRY_AFTER_MAX_MS ? RW_RETRY_AFTER_MAX_MS
							    : ra;
		if (status)
			log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
					"%s answered %ld (%.120s); retrying %zu samples in %" PRIu64
					" ms",
					c->url, status, rw->resp, n, wait);
		else
			log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
					"%s: %s; retrying %zu samples in %" PRIu64 " ms", c->url,
					rw->errbuf, n, wait);
		return wait;
	}
	/* 4xx other than 429 (and anything else): it would refuse it again. */
	rw_add(rw->m.failed, n);
	log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
			"%s refused %zu samples with %ld (%.160s); dropped, not retried", c->url, n,
			status, rw->resp);
	rw->backoff_ms = 0;
	rw_advance(rw, &x);
	return 0;
}

/* Metadata, in a request of its own when due (remote_write_meta.h). A
 * receiver that refuses it (4xx) gets it again after metadata_interval, a
 * failing one after max_backoff; samples never wait for it. */
static void rw_meta_turn(struct remote_write *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	int64_t now = clock_mono_ns();
	long status;

	if (!c->metadata_interval || !rw_meta_due(&rw->meta, rw->metrics, now))
		return;
	status = rw_post(rw, rw->meta.body, rw->meta.body_len);
	if (status >= 200 && status < 300) {
		rw_add(rw->m.meta_sent, rw->meta.n);
		rw_meta_sent(&rw->meta, now, (int64_t)c->metadata_interval * 1000000);
		return;
	}
	if (status)
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
				"%s answered %ld (%.120s) to the metadata of %zu families", c->url,
				status, rw->resp, rw->meta.n);
	rw_meta_failed(&rw->meta, now,
		       (int64_t)(status >= 400 && status < 500 && status != 429
				     ? c->metadata_interval
				     : c->max_backoff) *
			   1000000);
}

static void *rw_main(void *arg)
{
	struct remote_write *rw = arg;
	uint64_t wait;

	do {
		rw_meta_turn(rw);
		wait = rw_turn(rw);
		rw_publish_cpu(rw);
	} while (!__atomic_load_n(&rw->stop, __ATOMIC_RELAXED) && (!wait || rw_sleep(rw, wait)));
	return NULL;
}

static void rw_metrics_register(struct remote_write *rw, struct metrics *m)
{
	static const char *const reason[] = {"reason", NULL};
	static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
					0.25,  0.5,    1,     2.5,  5,	   10,	 30};
	struct metric *f;

	rw->m.sent = metrics_counter1(m, "sysobs_remote_write_samples_sent_total",
				      "Samples the remote-write receiver accepted (2xx).");
	rw->m.failed = metrics_counter1(
	    m, "sysobs_remote_write_samples_failed_total",
	    "Samples in requests the receiver refused with a 4xx other than 429 (not retried).");
	rw->m.retried =
	    metrics_counter1(m, "sysobs_remote_write_samples_retried_total",
			     "Samples in requests that failed with a 5xx, a 429 or a transport "
			     "error and are sent again.");
	f = metrics_counter(m, "sysobs_remote_write_samples_dropped_total",
			    "Metric history samples never sent: too_old (older than max_age), "
			    "deleted (by retention before their turn), invalid (label set).",
			    reason);
	if (f) {
		rw->m.drop_old = metric_series(f, (const char *const[]){"too_old"});
		rw->m.drop_deleted = metric_series(f, (const char *const[]){"deleted"});
		rw->m.drop_invalid = metric_series(f, (const char *const[]){"invalid"});
	}
	rw->m.pending = metrics_gauge1(
	    m, "sysobs_remote_write_pending_samples",
	    "Metric history samples after the sender's cursor (committed, not yet sent).");
	rw->m.last_send = metrics_gauge1(m, "sysobs_remote_write_last_send_timestamp_seconds",
					 "Unix time of the last request the receiver accepted.");
	rw->m.highest = metrics_gauge1(m, "sysobs_remote_write_highest_sent_timestamp_seconds",
				       "Timestamp of the newest sample the receiver accepted.");
	rw->m.bytes = metrics_counter1(m, "sysobs_remote_write_bytes_sent_total",
				       "Request bytes (snappy-compressed) the receiver accepted.");
	rw->m.meta_sent =
	    metrics_counter1(m, "sysobs_remote_write_metadata_sent_total",
			     "Metric family metadata (type, help, unit) the receiver accepted.");
	rw->m.cpu = metrics_counter1(m, "sysobs_remote_write_cpu_seconds_total",
				     "CPU time (user + system) of the sender thread.");
	f = metrics_histogram(m, "sysobs_remote_write_batch_duration_seconds",
			      "Duration of each request of a batch, retries included.", NULL,
			      bounds, sizeof(bounds) / sizeof(bounds[0]));
	rw->m.duration = f ? metric_series(f, NULL) : NULL;
}

int remote_write_start(struct remote_write *rw, struct store *s, struct metrics *m)
{
	pthread_condattr_t ca;
	char err[256];
	int rc;

	if (!rw)
		return 0;
	rw->store = s;
	rw->metrics = m;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		log_err(RW_COMPONENT, "libcurl initialisation failed");
		return -EIO;
	}
	rw->curl_global = true;
	rw->cursor = store_cursor_open(s, rw->cfg.cursor, err, sizeof(err));
	if (!rw->cursor) {
		log_err(RW_COMPONENT, "cannot open its cursor: %s", err);
		return -EIO;
	}
	if (store_cursor_get(rw->cursor, &rw->pos)) {
		log_err(RW_COMPONENT, "cannot read its cursor");
		return -EIO;
	}
	if (rw_batch_init(&rw->batch, rw->cfg.batch_samples + HIST_BLOB_MAX_BUCKETS) ||
	    rw_curl_setup(rw)) {
		log_err(RW_COMPONENT, "out of memory");
		return -ENOMEM;
	}
	rw_metrics_register(rw, m);
	pthread_mutex_init(&rw->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rw->cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&rw->thread, NULL, rw_main, rw);
	if (rc) {
		log_err(RW_COMPONENT, "cannot start its thread: %s", strerror(rc));
		return -rc;
	}
	pthread_setname_np(rw->thread, "sysobs-rw");
	rw->started = true;
	log_info(RW_COMPONENT, "sending metric history to %s from sample %" PRId64 "%s%s",
		 rw->cfg.url, rw->pos, strcmp(rw->cfg.cursor, "remote_write") ? " of cursor " : "",
		 strcmp(rw->cfg.cursor, "remote_write") ? rw->cfg.cursor : "");
	return 0;
}

void remote_write_free(struct remote_write *rw)
{
	if (!rw)
		return;
	if (rw->started) {
		pthread_mutex_lock(&rw->mu);
		__atomic_store_n(&rw->stop_ns, clock_mono_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&rw->stop, true, __ATOMIC_RELAXED);
		pthread_cond_signal(&rw->cv);
		pthread_mutex_unlock(&rw->mu);
		pthread_join(rw->thread, NULL);
		pthread_cond_destroy(&rw->cv);
		pthread_mutex_destroy(&rw->mu);
	}
	curl_easy_cleanup(rw->curl);
	if (rw->curl_global)
		curl_global_cleanup();
	curl_slist_free_all(rw->hdr);
	store_cursor_close(rw->cursor);
	rw_batch_free(&rw->batch);
	rw_meta_free(&rw->meta);
	rw_free_settings(rw);
}
