/* SPDX-License-Identifier: MIT */
/*
 * Alertmanager v2 push for hosts without Prometheus rules: POST
 * <url>/api/v2/alerts with a JSON array of alerts. A firing alert is sent
 * at once and re-sent every resend period (Alertmanager resolves an alert
 * by itself after resolve_timeout without updates); a resolved one is sent
 * once with endsAt and then forgotten. Failures are retried with backoff.
 *
 * Everything network-bound runs on the alerter's own thread: fire/resolve
 * only update a table under a mutex and never block the collector.
 */
#ifndef SYSOBS_IFS_ALERT_H
#define SYSOBS_IFS_ALERT_H

#include <jansson.h>
#include <stdint.h>

struct ifs_alerter;

struct ifs_alert_stats {
	uint64_t posts_ok, posts_failed;
	unsigned firing;
};

/*
 * url: Alertmanager base URL ("http://127.0.0.1:9093"). extra_labels:
 * "k=v,k2=v2" added to every alert (may be NULL). resend_ms: period of
 * re-sends while firing. NULL with errno on failure (EINVAL: bad labels,
 * ENOENT: libcurl cannot be loaded; the config check says so first).
 */
struct ifs_alerter *ifs_alert_new(const char *url, const char *extra_labels, uint64_t resend_ms);
void ifs_alert_free(struct ifs_alerter *a); /* accepts NULL; joins the thread */

/* key identifies the alert (e.g. "scan/0/3"); labels and annotations are
 * JSON objects of strings and are stolen. starts_ns: wall clock. */
void ifs_alert_fire(struct ifs_alerter *a, const char *key, json_t *labels, json_t *annotations,
		    int64_t starts_ns);
/* Resolves a firing alert (no-op for an unknown key). */
void ifs_alert_resolve(struct ifs_alerter *a, const char *key, int64_t ends_ns);

void ifs_alert_get_stats(struct ifs_alerter *a, struct ifs_alert_stats *out);

/* RFC 3339 UTC with milliseconds, for startsAt/endsAt. Pure. */
void ifs_alert_format_time(int64_t ns, char *buf, size_t len);
/* Parses "k=v,k2=v2" into a JSON object; NULL on a syntax error. Pure. */
json_t *ifs_alert_parse_labels(const char *s);

/* The part of Alertmanager's reply body the push keeps (for the log). */
#define IFS_ALERT_REPLY_MAX 512

/*
 * Alertmanager's reply to a push: 0 for a 2xx status, -EIO for any other
 * (0: no answer). body[0..len) is what it said (any bytes, len may be 0):
 * 0.25 answers a bad alert with 400 and a JSON string, a malformed request
 * with 422 and {"code":..,"message":..}, a proxy with text or HTML. msg
 * gets the reason to log: that string or message, else the body's first
 * line, else "HTTP <status>"; printable ASCII only (other bytes as '?'),
 * truncated to msglen, NUL-terminated. Pure.
 */
int ifs_alert_reply(long status, const char *body, size_t len, char *msg, size_t msglen);

#endif
