/* SPDX-License-Identifier: MIT */
/*
 * Query-parameter parsing shared by every /api/v1 route. Pure functions,
 * unit-tested. Times are RFC 3339 ("2026-12-02T10:00:00Z", offsets and
 * fractions allowed) or unix seconds ("1796205600", "1796205600.25").
 */
#ifndef SYSOBS_QUERY_H
#define SYSOBS_QUERY_H

#include <stddef.h>
#include <stdint.h>

struct http_request;
struct http_response;

#define QUERY_LIMIT_DEFAULT 100
#define QUERY_LIMIT_MAX	    1000

int query_parse_time(const char *s, int64_t *ns);
/* Non-empty decimal in [1, max]; -EINVAL / -ERANGE otherwise. */
int query_parse_limit(const char *s, unsigned max, unsigned *out);
/* Opaque cursor returned as "next_cursor"; it is the last row id seen. */
int query_parse_cursor(const char *s, int64_t *id);
/* Step of /api/v1/series: duration like "15s", "1m" or seconds. */
int query_parse_step(const char *s, int64_t *ns);

/* Formats unix ns as RFC 3339 UTC, "2026-12-02T10:00:00.25Z" (fraction only
 * when non-zero, trailing zeros dropped). 0, -ENOSPC or -ERANGE. */
int query_format_time(int64_t ns, char *buf, size_t len);

/* Refuses (400 in res, -EINVAL) query parameters not in allowed (NULL-
 * terminated), naming them and the allowed ones, and repeated parameters
 * other than "name[]" ones. Every route calls it first. */
int query_params_check(const struct http_request *req, const char *const *allowed,
		       struct http_response *res);

/* The paging window every history route takes. */
struct query_window {
	int64_t since_ns; /* default: 0 */
	int64_t until_ns; /* default: INT64_MAX */
	unsigned limit;	  /* default QUERY_LIMIT_DEFAULT, capped at QUERY_LIMIT_MAX */
	int64_t cursor;	  /* rows with id < cursor; default INT64_MAX */
};

/* Parses since/until/limit/cursor; on error writes a 400 into res and
 * returns -EINVAL. */
int query_window_parse(const struct http_request *req, struct query_window *w,
		       struct http_response *res);

#endif
