// SPDX-License-Identifier: MIT
/*
 * The HTTP side every exporter shares (exporters/sender.h): endpoint keys
 * and their checks, libcurl, retries, gzip, the thread and its stop.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/gzip.h"
#include "base/lazylib.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "exporters/sender.h"
#include "storage/store_samples.h"

#define SENDER_RETRY_AFTER_MAX_MS (5 * 60 * 1000) /* a longer Retry-After is capped */
#define SENDER_SECRET_MAX	  (64 * 1024)
#define SENDER_CONNECT_MAX_MS	  10000
/* At shutdown a request in flight gets this long to finish: one the
 * receiver already applied but whose answer was cut off would be sent again
 * after the restart (a remote-write receiver without an out-of-order window
 * refuses a batch with older samples of a series it has: 400). */
#define SENDER_STOP_GRACE_NS (2 * 1000000000ll)

/* ---- keys ---- */

/* A password or token file: its content without trailing blanks. */
static int sender_read_secret(const char *path, char **out, const char **why)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		*why = strerror(errno);
		return -EINVAL;
	}
	buf = malloc(SENDER_SECRET_MAX + 1);
	if (!buf) {
		fclose(f);
		*why = "out of memory";
		return -ENOMEM;
	}
	n = fread(buf, 1, SENDER_SECRET_MAX + 1, f);
	fclose(f);
	while (n && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n > SENDER_SECRET_MAX || !n || memchr(buf, '\n', n) || strlen(buf) != n) {
		*why = n ? "must hold one line of at most 64 KiB" : "is empty";
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/* libcurl is loaded here, by the check of a configured sender: an agent
 * that sends nothing never maps it (base/lazylib.h). */
static int sender_check_url(struct config *cfg, const char *section, const char *url)
{
	const char *why = NULL;
	const struct lazylib_curl *cu = lazylib_curl(&why);
	char *scheme = NULL, *host = NULL;
	CURLU *u;
	int err = 0;

	if (!*url)
		return cfg_error(cfg, section, "url", "is required");
	if (!cu)
		return cfg_error(cfg, section, "url", "sending needs libcurl: %s", why);
	u = cu->url();
	if (!u)
		return -ENOMEM;
	if (cu->url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
		err = cfg_error(cfg, section, "url", "'%s' is not a URL", url);
	else if (cu->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
		 (strcmp(scheme, "http") && strcmp(scheme, "https")))
		err = cfg_error(cfg, section, "url", "'%s': the scheme must be http or https", url);
	else if (cu->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		err = cfg_error(cfg, section, "url", "'%s' names no host", url);
	cu->free(scheme);
	cu->free(host);
	cu->url_cleanup(u);
	return err;
}

char *sender_url_public(const char *url)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL);
	char *shown = NULL, *out = NULL;
	CURLUcode rc;
	CURLU *u;

	if (!cu) {
		errno = ENOENT;
		return NULL;
	}
	u = cu->url();
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	rc = cu->url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	if (rc == CURLUE_OK)
		rc = cu->url_set(u, CURLUPART_USER, NULL, 0);
	if (rc == CURLUE_OK)
		rc = cu->url_set(u, CURLUPART_PASSWORD, NULL, 0);
	if (rc == CURLUE_OK)
		rc = cu->url_set(u, CURLUPART_OPTIONS, NULL, 0);
	if (rc == CURLUE_OK)
		rc = cu->url_get(u, CURLUPART_URL, &shown, 0);
	if (rc != CURLUE_OK)
		errno = rc == CURLUE_OUT_OF_MEMORY ? ENOMEM : EINVAL;
	else if (!(out = strdup(shown)))
		errno = ENOMEM;
	cu->free(shown);
	cu->url_cleanup(u);
	return out;
}

/* A PEM block whose label holds what ("CERTIFICATE", "PRIVATE KEY"). */
static bool pem_has(const char *text, const char *what)
{
	for (const char *p = strstr(text, "-----BEGIN "); p; p = strstr(p + 1, "-----BEGIN ")) {
		const char *label = p + 11, *end = strstr(label, "-----");
		const char *hit = strstr(label, what);

		if (end && hit && hit < end)
			return true;
	}
	return false;
}

/* A TLS file of a sender: readable, and PEM holding what (libcurl reads
 * it at the first send, where a bad file would only show as failing sends:
 * issue 30, tls_ca_file = /etc/hostname passed the check). */
static int sender_check_file(struct config *cfg, const char *section, const char *key,
			     const char *path, const char *what)
{
	enum { PEM_MAX = 1 << 20 };
	FILE *f;
	char *buf;
	size_t n;
	int err = 0;

	if (!*path)
		return 0;
	f = fopen(path, "re");
	if (!f)
		return cfg_error(cfg, section, key, "%s: %s", path, strerror(errno));
	buf = malloc(PEM_MAX + 1);
	if (!buf) {
		fclose(f);
		return cfg_error(cfg, section, key, "out of memory");
	}
	n = fread(buf, 1, PEM_MAX + 1, f);
	if (ferror(f))
		err = cfg_error(cfg, section, key, "%s: %s", path, strerror(errno));
	else if (n > PEM_MAX)
		err = cfg_error(cfg, section, key, "%s: larger than 1 MiB", path);
	else {
		buf[n] = '\0';
		if (!pem_has(buf, what))
			err = cfg_error(cfg, section, key,
					"%s: not PEM (no -----BEGIN ...%s----- line)", path, what);
	}
	fclose(f);
	free(buf);
	return err;
}

int sender_check(struct sender *s, struct config *cfg, const char *section,
		 const struct sender_config *c, bool read_files)
{
	const char *why = NULL;
	int bad = 0;

	s->section = section;
	s->cfg = c;
	/* The lock guards what status readers see, from now on. */
	if (!s->sync_init) {
		pthread_condattr_t ca;

		pthread_mutex_init(&s->mu, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cv, &ca);
		pthread_condattr_destroy(&ca);
		s->sync_init = true;
	}
	bad |= sender_check_url(cfg, section, c->url);
	free(s->url_public);
	s->url_public = bad ? strdup(c->url) : sender_url_public(c->url);
	if (!s->url_public)
		return -ENOMEM;
	if (c->min_backoff > c->max_backoff)
		bad |= cfg_error(cfg, section, "max_backoff", "must not be below min_backoff");
	if (*c->bearer_token && *c->bearer_token_file)
		bad |= cfg_error(cfg, section, "bearer_token_file",
				 "set bearer_token or bearer_token_file, not both");
	if (*c->basic_auth_user && (*c->bearer_token || *c->bearer_token_file))
		bad |= cfg_error(cfg, section, "basic_auth_user",
				 "basic auth and a bearer token exclude each other");
	if (!*c->basic_auth_user != !*c->basic_auth_password_file)
		bad |=
		    cfg_error(cfg, section,
			      *c->basic_auth_user ? "basic_auth_user" : "basic_auth_password_file",
			      "basic auth needs both basic_auth_user and basic_auth_password_file");
	if (!*c->tls_cert_file != !*c->tls_key_file)
		bad |= cfg_error(cfg, section, *c->tls_cert_file ? "tls_cert_file" : "tls_key_file",
				 "a client certificate needs both tls_cert_file and tls_key_file");
	if (!read_files)
		return bad ? -EINVAL : 0;
	bad |= sender_check_file(cfg, section, "tls_ca_file", c->tls_ca_file, "CERTIFICATE");
	bad |= sender_check_file(cfg, section, "tls_cert_file", c->tls_cert_file, "CERTIFICATE");
	bad |= sender_check_file(cfg, section, "tls_key_file", c->tls_key_file, "PRIVATE KEY");
	if (*c->basic_auth_password_file &&
	    sender_read_secret(c->basic_auth_password_file, &s->password, &why))
		bad |= cfg_error(cfg, section, "basic_auth_password_file", "%s: %s",
				 c->basic_auth_password_file, why);
	if (*c->bearer_token_file && sender_read_secret(c->bearer_token_file, &s->bearer, &why))
		bad |= cfg_error(cfg, section, "bearer_token_file", "%s: %s", c->bearer_token_file,
				 why);
	if (bad)
		return -EINVAL;
	if (*c->bearer_token && !(s->bearer = strdup(c->bearer_token)))
		return -ENOMEM;
	return 0;
}

/* ---- libcurl (loaded by sender_check(), which comes first) ---- */

static size_t sender_on_header(char *p, size_t size, size_t n, void *arg)
{
	struct sender *s = arg;
	size_t len = size * n;
	static const char key[] = "retry-after:";

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		s->retry_after[0] = '\0'; /* a new response (after a 100) */
	} else if (len > sizeof(key) - 1 && !strncasecmp(p, key, sizeof(key) - 1)) {
		size_t v = len - (sizeof(key) - 1);

		if (v >= sizeof(s->retry_after))
			v = sizeof(s->retry_after) - 1;
		memcpy(s->retry_after, p + sizeof(key) - 1, v);
		s->retry_after[v] = '\0';
	}
	return len;
}

static size_t sender_on_body(char *p, size_t size, size_t n, void *arg)
{
	struct sender *s = arg;
	size_t len = size * n, room = sizeof(s->resp) - 1 - s->resp_len;

	if (room) {
		memcpy(s->resp + s->resp_len, p, len < room ? len : room);
		s->resp_len += len < room ? len : room;
		s->resp[s->resp_len] = '\0';
	}
	return len;
}

/* Called by libcurl at least once a second during a transfer: aborts it
 * once a stop has waited SENDER_STOP_GRACE_NS. */
static int sender_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct sender *s = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED) &&
	       clock_mono_ns() - __atomic_load_n(&s->stop_ns, __ATOMIC_RELAXED) >
		   SENDER_STOP_GRACE_NS;
}

int sender_setup(struct sender *s, const char *const *headers)
{
	const struct sender_config *c = s->cfg;
	const struct lazylib_curl *cu = lazylib_curl(NULL);
	struct curl_slist *l = NULL;
	CURL *h;

	if (!cu)
		return -EIO;
	if (cu->global_init(CURL_GLOBAL_DEFAULT))
		return -EIO;
	s->curl_global = true;
	h = cu->easy_init();
	if (!h)
		return -ENOMEM;
	s->curl = h;
	/* "Expect:" off so a large body is not held back for a 100-continue
	 * round trip. */
	l = cu->slist_append(l, "Expect:");
	for (size_t i = 0; l && headers && headers[i]; i++)
		l = cu->slist_append(l, headers[i]);
	if (l && s->bearer) {
		char *v = malloc(strlen(s->bearer) + 32);

		if (v) {
			sprintf(v, "Authorization: Bearer %s", s->bearer);
			l = cu->slist_append(l, v);
			free(v);
		} else {
			l = NULL;
		}
	}
	if (!l)
		return -ENOMEM;
	s->hdr = l;
	cu->easy_setopt(h, CURLOPT_URL, c->url);
	cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	cu->easy_setopt(h, CURLOPT_USERAGENT, "sysobsd/" SYSOBS_VERSION);
	cu->easy_setopt(h, CURLOPT_POST, 1L);
	cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout);
	cu->easy_setopt(
	    h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(c->timeout < SENDER_CONNECT_MAX_MS ? c->timeout : SENDER_CONNECT_MAX_MS));
	cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(h, CURLOPT_ERRORBUFFER, s->errbuf);
	cu->easy_setopt(h, CURLOPT_HEADERFUNCTION, sender_on_header);
	cu->easy_setopt(h, CURLOPT_HEADERDATA, s);
	cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, sender_on_body);
	cu->easy_setopt(h, CURLOPT_WRITEDATA, s);
	cu->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	cu->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, sender_on_progress);
	cu->easy_setopt(h, CURLOPT_XFERINFODATA, s);
	if (*c->basic_auth_user) {
		cu->easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		cu->easy_setopt(h, CURLOPT_USERNAME, c->basic_auth_user);
		cu->easy_setopt(h, CURLOPT_PASSWORD, s->password);
	}
	if (*c->tls_ca_file)
		cu->easy_setopt(h, CURLOPT_CAINFO, c->tls_ca_file);
	if (*c->tls_cert_file) {
		cu->easy_setopt(h, CURLOPT_SSLCERT, c->tls_cert_file);
		cu->easy_setopt(h, CURLOPT_SSLKEY, c->tls_key_file);
	}
	if (c->tls_insecure_skip_verify) {
		cu->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		cu->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return 0;
}

/* The verdict on a request libcurl performed: its status, or its error
 * (stopped when the stop cut it short). */
static enum sender_verdict sender_answered(struct sender *s, const struct lazylib_curl *cu,
					   CURLcode rc)
{
	if (rc == CURLE_OK)
		cu->easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
	else if (!s->errbuf[0])
		snprintf(s->errbuf, sizeof(s->errbuf), "%s", cu->easy_strerror(rc));
	if (!s->status && sender_stopping(s))
		return SENDER_STOPPED;
	return sender_verdict_of(s->status);
}

enum sender_verdict sender_post(struct sender *s, const void *body, size_t len, bool gzip)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL); /* s->curl: it is loaded */
	struct curl_slist *enc = NULL;
	CURLcode rc;

	s->retry_after[0] = '\0';
	s->resp[0] = '\0';
	s->resp_len = 0;
	s->errbuf[0] = '\0';
	s->status = 0;
	if (gzip) {
		if (gzip_compress(body, len, 6, &s->gz)) {
			snprintf(s->errbuf, sizeof(s->errbuf),
				 "out of memory compressing %zu bytes", len);
			return SENDER_RETRY;
		}
		body = s->gz.p;
		len = s->gz.len;
		/* The handle's own headers plus this one, for this request. */
		for (struct curl_slist *h = s->hdr; h; h = h->next)
			enc = cu->slist_append(enc, h->data);
		enc = enc ? cu->slist_append(enc, "Content-Encoding: gzip") : NULL;
		if (!enc) {
			snprintf(s->errbuf, sizeof(s->errbuf), "out of memory");
			return SENDER_RETRY;
		}
	}
	cu->easy_setopt(s->curl, CURLOPT_HTTPHEADER, enc ? enc : s->hdr);
	cu->easy_setopt(s->curl, CURLOPT_POSTFIELDS, body);
	cu->easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = cu->easy_perform(s->curl);
	cu->easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->hdr);
	cu->slist_free_all(enc);
	return sender_answered(s, cu, rc);
}

enum sender_verdict sender_get(struct sender *s, const char *url)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL); /* s->curl: it is loaded */
	CURLcode rc;

	s->resp[0] = '\0';
	s->resp_len = 0;
	s->errbuf[0] = '\0';
	s->status = 0;
	/* the handle's headers stay: they carry a bearer token (the body's
	 * Content-* headers mean nothing without a body) */
	cu->easy_setopt(s->curl, CURLOPT_URL, url);
	cu->easy_setopt(s->curl, CURLOPT_HTTPGET, 1L);
	rc = cu->easy_perform(s->curl);
	/* back to the posts' URL (POSTFIELDS makes the next request a POST) */
	cu->easy_setopt(s->curl, CURLOPT_URL, s->url_post ? s->url_post : s->cfg->url);
	return sender_answered(s, cu, rc);
}

enum sender_verdict sender_verdict_of(long status)
{
	if (status >= 200 && status < 300)
		return SENDER_SENT;
	if (status == 400 || status == 422)
		return SENDER_REFUSED;
	return SENDER_RETRY;
}

uint64_t sender_retry_wait(struct sender *s)
{
	const struct sender_config *c = s->cfg;
	uint64_t ra;

	s->failures++;
	s->backoff_ms = sender_backoff_next(s->backoff_ms, c->min_backoff, c->max_backoff);
	if (s->retry_after[0] && !sender_retry_after_parse(s->retry_after, time(NULL), &ra))
		return ra < c->min_backoff		? c->min_backoff
		       : ra > SENDER_RETRY_AFTER_MAX_MS ? SENDER_RETRY_AFTER_MAX_MS
							: ra;
	return s->backoff_ms;
}

bool sender_recovered(struct sender *s)
{
	bool was = s->failures != 0;

	if (was)
		log_info(s->section, "%s accepts again after %u failed attempts", s->url_public,
			 s->failures);
	s->failures = 0;
	s->backoff_ms = 0;
	return was;
}

/* ---- the thread ---- */

int sender_start(struct sender *s, void *(*fn)(void *), void *arg, const char *name)
{
	int rc = pthread_create(&s->thread, NULL, fn, arg);

	if (rc)
		return -rc;
	pthread_setname_np(s->thread, name);
	s->started = true;
	return 0;
}

bool sender_sleep(struct sender *s, uint64_t ms)
{
	int64_t until = clock_mono_ns() + (int64_t)ms * 1000000;
	struct timespec ts = {until / 1000000000, until % 1000000000};
	bool stop;

	pthread_mutex_lock(&s->mu);
	while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
		;
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return !stop;
}

void sender_set_url(struct sender *s, const char *url)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL); /* s->curl: it is loaded */

	s->url_post = url;
	cu->easy_setopt(s->curl, CURLOPT_URL, url);
}

void sender_publish_cpu(struct metric_series *cpu)
{
	struct rusage ru;

	if (cpu && !getrusage(RUSAGE_THREAD, &ru))
		series_set(cpu, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
				    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

void sender_count(struct metric_series *c, uint64_t v)
{
	if (c && v)
		series_add(c, (double)v);
}

/* ---- status (struct export_status, under s->mu) ---- */

void sender_lost(struct sender *s, struct metric_series *c, uint64_t v)
{
	if (!v)
		return;
	sender_count(c, v);
	pthread_mutex_lock(&s->mu);
	s->st.lost += v;
	s->st.last_loss = (double)clock_wall_ns() / 1e9;
	pthread_mutex_unlock(&s->mu);
}

void sender_status_cursor(struct sender *s, int64_t cursor)
{
	pthread_mutex_lock(&s->mu);
	s->st.cursor = cursor;
	pthread_mutex_unlock(&s->mu);
}

void sender_status_backlog(struct sender *s, uint64_t pending, double lag)
{
	pthread_mutex_lock(&s->mu);
	s->st.pending = pending;
	s->st.lag_seconds = lag > 0 ? lag : 0;
	pthread_mutex_unlock(&s->mu);
}

void sender_status_sent(struct sender *s, uint64_t n, bool clear_error)
{
	pthread_mutex_lock(&s->mu);
	s->st.sent += n;
	s->st.last_success = (double)clock_wall_ns() / 1e9;
	if (clear_error)
		s->st.last_error[0] = '\0';
	pthread_mutex_unlock(&s->mu);
}

void sender_status_retried(struct sender *s, uint64_t n)
{
	pthread_mutex_lock(&s->mu);
	s->st.retried += n;
	pthread_mutex_unlock(&s->mu);
}

void sender_status_failed(struct sender *s, uint64_t n)
{
	pthread_mutex_lock(&s->mu);
	s->st.failed += n;
	pthread_mutex_unlock(&s->mu);
}

void sender_status_error(struct sender *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->mu);
	va_start(ap, fmt);
	vsnprintf(s->st.last_error, sizeof(s->st.last_error), fmt, ap);
	va_end(ap);
	/* one line: a receiver's answer often ends in a newline */
	for (char *p = s->st.last_error; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	pthread_mutex_unlock(&s->mu);
}

void sender_status_get(struct sender *s, struct export_status *st)
{
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	pthread_mutex_unlock(&s->mu);
}

void sender_cursor_save(struct sender *s, struct store_cursor *cur, int64_t pos,
			struct log_ratelimit *rl)
{
	int err = store_cursor_set(cur, pos);

	sender_status_cursor(s, pos);
	if (err)
		log_ratelimited(rl, 60000, LOG_LVL_WARN, s->section,
				"cannot store the cursor (%s); it stays in memory and is stored "
				"with the next batch",
				strerror(-err));
}

bool sender_stopping(const struct sender *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

void sender_free(struct sender *s)
{
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		__atomic_store_n(&s->stop_ns, clock_mono_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		s->started = false;
	}
	if (s->sync_init) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		s->sync_init = false;
	}
	if (s->curl_global) { /* sender_setup() ran: libcurl is loaded */
		const struct lazylib_curl *cu = lazylib_curl(NULL);

		cu->easy_cleanup(s->curl);
		cu->slist_free_all(s->hdr);
		cu->global_cleanup();
	}
	s->curl_global = false;
	s->curl = NULL;
	s->hdr = NULL;
	buf_free(&s->gz);
	free(s->password);
	free(s->bearer);
	free(s->url_public);
	s->password = s->bearer = s->url_public = NULL;
}

/* ---- pure parts ---- */

int sender_retry_after_parse(const char *v, time_t now, uint64_t *ms)
{
	const char *p = v;
	const struct lazylib_curl *cu;
	time_t t;

	while (*p == ' ' || *p == '\t')
		p++;
	if (isdigit((unsigned char)*p)) {
		uint64_t sec = 0;

		for (; isdigit((unsigned char)*p); p++)
			sec = sec < UINT64_MAX / 10000 ? sec * 10 + (uint64_t)(*p - '0')
						       : UINT64_MAX / 1000;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p)
			return -EINVAL;
		*ms = sec * 1000;
		return 0;
	}
	/* HTTP-date in any of the three forms RFC 9110 lets a recipient see
	 * (IMF-fixdate, RFC 850, asctime): libcurl's parser reads them all. */
	cu = lazylib_curl(NULL);
	t = cu ? cu->getdate(p, NULL) : -1;
	if (t == -1)
		return -EINVAL;
	*ms = t > now ? (uint64_t)(t - now) * 1000 : 0;
	return 0;
}

uint64_t sender_backoff_next(uint64_t cur, uint64_t min, uint64_t max)
{
	if (!cur)
		return min < max ? min : max;
	return cur >= max / 2 ? max : cur * 2;
}
