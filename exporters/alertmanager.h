/* SPDX-License-Identifier: MIT */
/*
 * The Alertmanager v2 push (POST <url>/api/v2/alerts, a JSON array of
 * alerts) of the IFS collector's failed-core alerts, for hosts without
 * Prometheus rules. The collector publishes each alert's state through its
 * sink (sink_alert(), collectors/sink.h); the agent hands it here. A firing
 * alert is sent at once and again every resend period (Alertmanager
 * resolves an alert by itself after resolve_timeout without updates); a
 * resolved one is sent once with endsAt and then forgotten.
 *
 * The request goes through the shared sender (exporters/sender.h) and the
 * exporters' turn loop (exporters/turn.h): its libcurl handle, its verdict
 * (2xx sent; 400 and 422, Alertmanager's verdict on the alerts themselves,
 * refused and counted lost: a resolved alert is then forgotten, a firing
 * one waits for its next resend; every other answer and transport errors
 * retried after the sender's backoff or Retry-After), its counters and
 * status (GET /api/v1/export, /readyz), no gzip (Alertmanager does not
 * take it). Its own thread; fire and resolve only update a table under a
 * lock and never wait for the network or the disk. The alerts it holds are
 * kept in the store (am_export_attach()) and survive a restart.
 *
 * Config: [alertmanager], the sender's keys (url, TLS, auth, timeout,
 * backoff), its url defaulting to [collector.ifs] alertmanager_url, the
 * older spelling; [collector.ifs] alert_labels and alert_resend, where they
 * have always been (docs/ifs.md).
 */
#ifndef SYSOBS_ALERTMANAGER_H
#define SYSOBS_ALERTMANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

struct am_export;
struct metrics;
struct store;

/* One label or annotation of an alert. */
struct am_pair {
	const char *name, *value;
};

/* The push's own section (am_export_declare()), and the keys of the IFS
 * collector's it reads (the collector declares them). */
#define AM_SECTION_OWN "alertmanager"
#define AM_SECTION     "collector.ifs"
#define AM_KEY_URL     "alertmanager_url"
#define AM_KEY_LABELS  "alert_labels"
#define AM_KEY_RESEND  "alert_resend"

/* Declares [alertmanager] (before cfg_load). */
int am_export_declare(struct config *cfg);
/*
 * Reads and checks the push's keys of cfg (every error recorded with
 * cfg_error: the URL's scheme, libcurl present, the label syntax, the
 * sender's checks of [alertmanager]). *out is NULL when no URL is set or the
 * collector is disabled ([collector.ifs] enabled = false). read_files:
 * as sender_check(). 0 or -EINVAL, -ENOMEM.
 */
int am_export_new(struct config *cfg, bool read_files, struct am_export **out);
/* The alerts it held before a restart back from the store, and the store
 * keeping them from now on (alertmanager_state.c): before the collectors
 * start. Without it they are kept in memory only. NULL am ok. 0 or -EIO,
 * -ENOMEM (logged). */
int am_export_attach(struct am_export *am, struct store *s);
/* Registers its metrics in m (NULL: none) and starts its thread. NULL ok. */
int am_export_start(struct am_export *am, struct metrics *m);
/* Stops the thread (a request in flight gets the sender's grace) and frees.
 * NULL ok. */
void am_export_free(struct am_export *am);

/*
 * key identifies the alert (e.g. "scan/0/3"); labels and annotations are
 * copied. starts_ns: wall clock. A firing alert fired again keeps its
 * startsAt and gets the new annotations. 0 or -ENOMEM. Any thread.
 */
int am_export_fire(struct am_export *am, const char *key, const struct am_pair *labels,
		   size_t n_labels, const struct am_pair *annotations, size_t n_annotations,
		   int64_t starts_ns);
/* Resolves a firing alert (nothing for a key it does not hold). */
void am_export_resolve(struct am_export *am, const char *key, int64_t ends_ns);

struct am_stats {
	uint64_t posts_ok, posts_failed;
	unsigned firing;
};
void am_export_stats(struct am_export *am, struct am_stats *out);
/* Its status as every destination's (GET /api/v1/export, /readyz): pending
 * is the alerts whose state Alertmanager has not taken yet. Any thread. */
struct export_status;
void am_export_status(struct am_export *am, struct export_status *st);

/* ---- the turn, for the thread and for tests (an injected clock) ---- */

/* One turn of the exporters' loop (turn_run()): stores what changed, sends
 * in one POST every alert due at now_ns (CLOCK_MONOTONIC or a test's clock),
 * applies the verdict (a retry: nothing is sent before the backoff ends).
 * Returns when the next send is due (INT64_MAX: none). Not concurrently
 * with itself. */
int64_t am_export_turn(struct am_export *am, int64_t now_ns);

/* ---- pure parts (unit-tested) ---- */

/* RFC 3339 UTC with milliseconds, for startsAt/endsAt. */
void am_format_time(int64_t ns, char *buf, size_t len);
/* Checks "k=v,k2=v2" (Prometheus label names); 0 or -EINVAL. With out,
 * also calls out(k, v, arg) for each pair. */
int am_labels_parse(const char *s, void (*out)(const char *k, const char *v, void *arg), void *arg);

/* The part of Alertmanager's reply body kept (for the log). */
#define AM_REPLY_MAX 512

/*
 * Alertmanager's reply to a push: 0 for a 2xx status, -EIO for any other
 * (0: no answer). body[0..len) is what it said (any bytes, len may be 0):
 * 0.25 answers a bad alert with 400 and a JSON string, a malformed request
 * with 422 and {"code":..,"message":..}, a proxy with text or HTML. msg
 * gets the reason to log: that string or message, else the body's first
 * line, else "HTTP <status>"; printable ASCII only (other bytes as '?'),
 * truncated to msglen, NUL-terminated.
 */
int am_reply(long status, const char *body, size_t len, char *msg, size_t msglen);

#endif
