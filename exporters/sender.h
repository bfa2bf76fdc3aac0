/* SPDX-License-Identifier: MIT */
/*
 * What every exporter that POSTs to a receiver shares (remote_write, the
 * event exporters): the endpoint's keys (URL, time limit, backoff, basic
 * auth or bearer token, TLS) and their checks, one libcurl handle, the
 * verdict on an answer (2xx sent; 400 and 422, a verdict on the data
 * itself, refused; every other answer and transport errors retried after an
 * exponential backoff or the receiver's Retry-After: the matrix is
 * sender_verdict_of() and docs/fleet.md), gzip for a body, and
 * a thread that a stop wakes from its waits and that aborts a request still
 * running RW_STOP_GRACE after the stop.
 */
#ifndef SYSOBS_SENDER_H
#define SYSOBS_SENDER_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/config.h"

/* The endpoint's keys; a section embeds this struct and lists SENDER_KEYS. */
struct sender_config {
	const char *url;
	uint64_t timeout;		   /* ms per request */
	uint64_t min_backoff, max_backoff; /* ms */
	const char *basic_auth_user, *basic_auth_password_file;
	const char *bearer_token, *bearer_token_file;
	const char *tls_ca_file, *tls_cert_file, *tls_key_file;
	bool tls_insecure_skip_verify;
};

// clang-format off
#define SENDER_KEY(st, m, f, t, d, lo, hi, h) \
	{#f, (d), (h), (t), offsetof(st, m) + offsetof(struct sender_config, f), (lo), (hi), NULL}
// clang-format on

/* The keys of struct sender_config member m of config struct st, url's
 * help given (it names the receiver's usual path). */
#define SENDER_KEYS(st, m, url_help)                                                               \
	SENDER_KEY(st, m, url, CFG_STRING, "", 0, 0, url_help),                                    \
	    SENDER_KEY(st, m, timeout, CFG_DURATION, "30s", 100, 600000,                           \
		       "time limit of one request"),                                               \
	    SENDER_KEY(st, m, min_backoff, CFG_DURATION, "30ms", 1, 600000,                        \
		       "first wait before retrying (any answer but 2xx, 400, 422); doubles per "   \
		       "failure"),                                                                 \
	    SENDER_KEY(st, m, max_backoff, CFG_DURATION, "5s", 1, 3600000,                         \
		       "longest wait between retries (a receiver's Retry-After is honoured up to " \
		       "5m)"),                                                                     \
	    SENDER_KEY(st, m, basic_auth_user, CFG_STRING, "", 0, 0, "HTTP basic auth user name"), \
	    SENDER_KEY(st, m, basic_auth_password_file, CFG_STRING, "", 0, 0,                      \
		       "file holding the basic auth password (trailing newline ignored)"),         \
	    SENDER_KEY(st, m, bearer_token, CFG_STRING, "", 0, 0, "Authorization: Bearer token"),  \
	    SENDER_KEY(st, m, bearer_token_file, CFG_STRING, "", 0, 0,                             \
		       "file holding the bearer token"),                                           \
	    SENDER_KEY(st, m, tls_ca_file, CFG_STRING, "", 0, 0,                                   \
		       "CA bundle to verify the receiver (default: system)"),                      \
	    SENDER_KEY(st, m, tls_cert_file, CFG_STRING, "", 0, 0,                                 \
		       "client certificate (PEM), with tls_key_file"),                             \
	    SENDER_KEY(st, m, tls_key_file, CFG_STRING, "", 0, 0, "client key (PEM)"),             \
	    SENDER_KEY(st, m, tls_insecure_skip_verify, CFG_BOOL, "false", 0, 0,                   \
		       "do not verify the receiver's certificate and host name (testing only)")

#define SENDER_RESP_MAX 512 /* response body kept (the log, OTLP's partial success) */

enum sender_verdict {
	SENDER_SENT,	/* 2xx */
	SENDER_RETRY,	/* the receiver's state, not the data: send it again */
	SENDER_REFUSED, /* 400, 422: the data itself, it would be refused again */
	SENDER_STOPPED, /* aborted by the stop */
};

/*
 * The verdict on an HTTP status (0: no answer, a transport error). Only a
 * verdict on the data itself refuses a batch (its rows are counted lost and
 * the cursor moves past them): 400 Bad Request and 422 Unprocessable
 * Content, which the remote-write spec and OTLP/HTTP use for data the
 * receiver cannot take. Everything else says something about the receiver
 * or the way to it, which changes (a token renewed, a proxy fixed, a
 * database created): 401, 403, 404, 407, 408, 413, 429, 5xx, any other
 * code, and no answer at all are retried with backoff, and the batch stays
 * in the history. Formats refine it from the body (ClickHouse's error code,
 * OTLP's partial success).
 */
enum sender_verdict sender_verdict_of(long status);

/* What the status API shows of one destination (GET /api/v1/export,
 * /readyz): kept by the sender's thread through the sender_status_*()
 * calls, read on HTTP threads with sender_status_get(). */
struct export_status {
	const char *name, *format, *url;
	int64_t cursor;	     /* last id delivered (or given up) */
	uint64_t pending;    /* rows after it */
	double lag_seconds;  /* age of the oldest pending row, 0 when none */
	double last_success; /* unix s, 0 = never */
	uint64_t sent, failed, retried;
	uint64_t lost;	      /* rows never delivered: refused, too old, deleted... */
	double last_loss;     /* unix s of the last such loss, 0 = none since the start */
	char last_error[256]; /* "" when the last attempt succeeded */
};

struct sender {
	const char *section; /* "remote_write", "export.NAME": logs and messages */
	const struct sender_config *cfg;
	char *url_public;     /* cfg->url without user:password@: for logs and status */
	const char *url_post; /* sender_set_url()'s, NULL: cfg->url */
	char *password, *bearer;
	CURL *curl;
	struct curl_slist *hdr;
	char errbuf[CURL_ERROR_SIZE];
	char retry_after[64];
	char resp[SENDER_RESP_MAX];
	size_t resp_len;
	long status; /* of the last post; 0: transport error (errbuf) */
	uint64_t backoff_ms;
	unsigned failures; /* retried attempts since the last success */
	struct buf gz;	   /* gzip'ed body, reused */

	/* Under mu: the status readers (sender_status_get()). name, format
	 * and url are the owner's to set. */
	struct export_status st;

	pthread_t thread;
	bool started, curl_global, sync_init;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool stop;
	int64_t stop_ns;
};

/*
 * Checks the keys of c for section (URL scheme http or https with a host,
 * backoff range, auth and TLS file combinations) and, with read_files,
 * reads the password and token files. Every error is recorded (cfg_error);
 * -EINVAL when any was, -ENOMEM. Loads libcurl (base/lazylib.h): its
 * absence is an error of url that names the package. Also makes s->mu
 * (status readers may lock it from then on, until sender_free()).
 */
int sender_check(struct sender *s, struct config *cfg, const char *section,
		 const struct sender_config *c, bool read_files);
/* The libcurl handle with headers (NULL-terminated "Name: value" list);
 * after a sender_check() that loaded libcurl (base/lazylib.h).
 * 0 or -ENOMEM, -EIO. */
int sender_setup(struct sender *s, const char *const *headers);
/* POSTs body (gzip'ed first with gzip, sent with Content-Encoding: gzip)
 * and says what became of it; s->status, s->resp, s->errbuf tell more. */
enum sender_verdict sender_post(struct sender *s, const void *body, size_t len, bool gzip);
/* GETs url with the handle's auth and TLS (a receiver's query API): the
 * verdict, and s->status, s->resp (its first SENDER_RESP_MAX - 1 bytes),
 * s->errbuf. The next sender_post() goes where it went before. */
enum sender_verdict sender_get(struct sender *s, const char *url);
/* The URL of the next requests (a copy is not taken: keep it alive). */
void sender_set_url(struct sender *s, const char *url);
/* After SENDER_RETRY: the wait before the next attempt (ms), the backoff
 * doubled or the receiver's Retry-After (capped at 5 min). */
uint64_t sender_retry_wait(struct sender *s);
/* After a success: the backoff starts over; true when it had failed. */
bool sender_recovered(struct sender *s);

/* Runs fn(arg) on a thread named name. 0 or -errno. */
int sender_start(struct sender *s, void *(*fn)(void *), void *arg, const char *name);
/* Sleeps up to ms; false when asked to stop. */
bool sender_sleep(struct sender *s, uint64_t ms);
bool sender_stopping(const struct sender *s);
/* The calling thread's CPU time (user + system) into the counter cpu
 * (NULL: nothing); each sender thread after each turn. */
struct metric_series;
void sender_publish_cpu(struct metric_series *cpu);
/* v added to the counter c; nothing for a NULL series (its registration
 * failed) or 0. */
void sender_count(struct metric_series *c, uint64_t v);
/* Rows lost for good (refused, too old, deleted unsent, ...): v added to
 * the counter c and to the status (lost, last_loss: what /readyz calls
 * losing rows). */
void sender_lost(struct sender *s, struct metric_series *c, uint64_t v);
/* The status, under s->mu: the backlog after a count of it; rows the
 * receiver took (now the last success; the last error cleared when
 * clear_error); rows in a batch sent again or refused (failed, with
 * sender_lost() for the loss); the last error; the cursor. */
void sender_status_backlog(struct sender *s, uint64_t pending, double lag);
void sender_status_cursor(struct sender *s, int64_t cursor);
void sender_status_sent(struct sender *s, uint64_t n, bool clear_error);
void sender_status_retried(struct sender *s, uint64_t n);
void sender_status_failed(struct sender *s, uint64_t n);
void sender_status_error(struct sender *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A copy of the status, safe on any thread once sender_check() ran. */
void sender_status_get(struct sender *s, struct export_status *st);

/* pos stored as the durable cursor cur. A failure (locked or full disk) is
 * logged as s->section, at most once a minute through rl, and changes
 * nothing else: the position stays in memory and the next batch stores it. */
struct store_cursor;
struct log_ratelimit;
void sender_cursor_save(struct sender *s, struct store_cursor *cur, int64_t pos,
			struct log_ratelimit *rl);
/* Stops the thread (a request in flight gets 2 s, then is aborted within
 * about a second more) and frees everything but s itself. */
void sender_free(struct sender *s);

/* ---- pure parts (unit-tested) ---- */

/* Retry-After: delay-seconds or an HTTP-date, relative to now, in ms.
 * 0 or -EINVAL. */
int sender_retry_after_parse(const char *v, time_t now, uint64_t *ms);
/* The wait after cur (0 = no failure yet): min, then doubling, capped. */
uint64_t sender_backoff_next(uint64_t cur, uint64_t min, uint64_t max);
/* url without its user, password and login options (user:password@), as
 * libcurl parses it: what logs and the status API may show. malloc'ed; NULL
 * with errno ENOMEM, EINVAL for what libcurl cannot parse, or ENOENT when
 * libcurl cannot be loaded. */
char *sender_url_public(const char *url);

#endif
