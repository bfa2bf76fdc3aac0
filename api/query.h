/* SPDX-License-Identifier: MIT */
/*
 * The query-parameter vocabulary of every /api/v1 history route, parsed once:
 *   start, end  a time as time_parse() reads it: RFC 3339
 *               ("2026-12-02T10:00:00Z", offsets and fractions allowed), unix
 *               seconds ("1796205600.25"), "now" or relative ("-15m", "+5m")
 *   limit       rows per page, 1..QUERY_LIMIT_MAX, default QUERY_LIMIT_DEFAULT
 *   cursor      the next_cursor of the previous page
 *   step        resolution of /api/v1/series, a duration_parse_ns() duration
 *               ("15s", "1h30m", or seconds), > 0
 * Every parser is strict: a value is entirely well-formed or a 400.
 */
#ifndef SYSOBS_QUERY_H
#define SYSOBS_QUERY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/timeutil.h"

struct http_request;
struct http_response;

#define QUERY_LIMIT_DEFAULT 100
#define QUERY_LIMIT_MAX	    1000

/* The parameters query_window_parse() reads, for a route's allowed list:
 * {"collector", QUERY_WINDOW_PARAMS, NULL}. */
#define QUERY_WINDOW_PARAMS "start", "end", "limit", "cursor"

/* Non-empty decimal in [1, max]; -EINVAL / -ERANGE otherwise. */
int query_parse_limit(const char *s, unsigned max, unsigned *out);
/*
 * A 32-bit identifier (an MPTCP token) in the forms it is printed and
 * stored: exactly 8 hex digits is hex, as printed ("d114306a", also
 * "12345678": the printed form wins); "0x" or "0X" and 1 to 8 hex digits is
 * hex; other digits alone are decimal up to 4294967295 (a decimal of 8
 * digits is written with a leading zero, "012345678", or as 0x...).
 * Pure; 0, or -EINVAL (not one of these forms) / -ERANGE (above 2^32 - 1).
 */
int query_parse_token(const char *s, uint32_t *out);
/* Opaque cursor returned as "next_cursor"; it is the last row id seen. */
int query_parse_cursor(const char *s, int64_t *id);

/* Refuses (400 in res, -EINVAL) query parameters not in allowed (NULL-
 * terminated), naming them and the allowed ones, and repeated parameters
 * other than "name[]" ones. Every route calls it first. */
int query_params_check(const struct http_request *req, const char *const *allowed,
		       struct http_response *res);

/* The paging window every history route takes. */
struct query_window {
	int64_t start_ns;	 /* default: 0 */
	int64_t end_ns;		 /* default: INT64_MAX */
	unsigned limit;		 /* default QUERY_LIMIT_DEFAULT, capped at QUERY_LIMIT_MAX */
	int64_t cursor;		 /* rows with id < cursor; default INT64_MAX */
	bool start_set, end_set; /* given in the request (not the defaults) */
};

/* Parses start/end/limit/cursor, relative times against now_ns; on error
 * writes a 400 into res and returns -EINVAL. start after end is a 400 naming
 * both. */
int query_window_parse_at(const struct http_request *req, int64_t now_ns, struct query_window *w,
			  struct http_response *res);
/* The same against clock_wall_ns(). */
int query_window_parse(const struct http_request *req, struct query_window *w,
		       struct http_response *res);

/* Parses ?step= into *step_ns if given (left untouched if not); on error
 * writes a 400 into res and returns -EINVAL. */
int query_step_parse(const struct http_request *req, int64_t *step_ns, struct http_response *res);

#endif
