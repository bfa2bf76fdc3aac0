/* SPDX-License-Identifier: MIT */
/*
 * Query-parameter parsing for the /api/v1 routes. The parsers are pure and
 * strict: a value is either entirely well-formed or refused, never read up to
 * the first bad character (strtoll would accept "12abc"). Times and durations
 * are agent/timeutil's, the same grammar as the config file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "api/http.h"
#include "api/query.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Non-negative decimal without sign or junk, fitting in int64 (junk is
 * -EINVAL even past an overflow). */
static int parse_decimal(const char *s, int64_t *out)
{
	bool overflow = false;
	int64_t v = 0;

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			overflow = true;
	}
	if (*s)
		return -EINVAL;
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

int query_parse_limit(const char *s, unsigned max, unsigned *out)
{
	int64_t v;
	int err = parse_decimal(s, &v);

	if (err)
		return err;
	if (v < 1 || v > (int64_t)max)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

int query_parse_cursor(const char *s, int64_t *id)
{
	int64_t v;
	int err = parse_decimal(s, &v);

	if (err)
		return err;
	if (v < 1)
		return -ERANGE; /* ids start at 1: no row lies below 0 */
	*id = v;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 to 8 hex digits, nothing else. */
static int parse_hex32(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	size_t n = strlen(s);

	if (!n || n > 8)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return -EINVAL;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return 0;
}

int query_parse_token(const char *s, uint32_t *out)
{
	uint64_t v = 0;
	size_t n;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_hex32(s + 2, out);
	n = strlen(s);
	/* The printed form (%08x) first: 8 characters are hex, digits only or not. */
	if (n == 8)
		return parse_hex32(s, out);
	if (!n || n > 10 || strspn(s, "0123456789") != n) {
		/* Hex of another length without 0x would be a guess: a token
		 * is printed with 8 digits. */
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/* A user value for an error message: quoted, cut to 64 bytes. */
static const char *quote(const char *s, char *buf, size_t len)
{
	size_t n;

	if (!s)
		return "(default)";
	n = strlen(s);
	if (n > 64)
		snprintf(buf, len, "\"%.64s\"...", s);
	else
		snprintf(buf, len, "\"%s\"", s);
	return buf;
}

static bool key_allowed(const char *key, const char *const *allowed)
{
	for (size_t i = 0; allowed && allowed[i]; i++) {
		if (!strcmp(key, allowed[i]))
			return true;
	}
	return false;
}

int query_params_check(const struct http_request *req, const char *const *allowed,
		       struct http_response *res)
{
	char unknown[512], list[256], q[80];
	size_t n_unknown = 0, un = 0, ln = 0;

	unknown[0] = list[0] = '\0';
	for (size_t i = 0; i < req->n_args; i++) {
		const char *key = req->args[2 * i];
		size_t klen = strlen(key);
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= !strcmp(req->args[2 * j], key);
		if (key_allowed(key, allowed)) {
			/* Only "name[]" keys repeat. */
			if (seen && !(klen > 2 && !strcmp(key + klen - 2, "[]"))) {
				http_reply_error(res, 400, "bad_request",
						 "%s: given more than once", key);
				return -EINVAL;
			}
			continue;
		}
		if (seen)
			continue;
		n_unknown++;
		if (un < sizeof(unknown))
			un += snprintf(unknown + un, sizeof(unknown) - un, "%s%s", un ? ", " : "",
				       quote(key, q, sizeof(q)));
	}
	if (!n_unknown)
		return 0;
	for (size_t i = 0; allowed && allowed[i]; i++) {
		if (ln < sizeof(list))
			ln += snprintf(list + ln, sizeof(list) - ln, "%s%s", i ? ", " : "",
				       allowed[i]);
	}
	http_reply_error(res, 400, "bad_request", "unknown query parameter%s %s (allowed: %s)",
			 n_unknown > 1 ? "s" : "", unknown, ln ? list : "none");
	return -EINVAL;
}

/* Parses one time parameter if present; 400 in res on error. */
static int window_time(const struct http_request *req, const char *key, int64_t now_ns, int64_t *ns,
		       bool *set, struct http_response *res)
{
	const char *s = http_query(req, key);
	char q[80];
	int err;

	if (!s)
		return 0;
	err = time_parse(s, now_ns, ns);
	if (err == -ERANGE) {
		http_reply_error(res, 400, "bad_request",
				 "%s: time out of range (years 1678-2262; unix seconds, not "
				 "milliseconds): %s",
				 key, quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	if (err) {
		http_reply_error(res, 400, "bad_request",
				 "%s: not an RFC 3339 time, unix seconds or a relative time such "
				 "as -15m: %s",
				 key, quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	*set = true;
	return 0;
}

int query_window_parse_at(const struct http_request *req, int64_t now_ns, struct query_window *w,
			  struct http_response *res)
{
	const char *s;
	char q[80];
	int err;

	*w = (struct query_window){
	    .start_ns = 0,
	    .end_ns = INT64_MAX,
	    .limit = QUERY_LIMIT_DEFAULT,
	    .cursor = INT64_MAX,
	};
	if (window_time(req, "start", now_ns, &w->start_ns, &w->start_set, res) ||
	    window_time(req, "end", now_ns, &w->end_ns, &w->end_set, res))
		return -EINVAL;
	if (w->start_ns > w->end_ns) {
		char a[80], b[80];

		http_reply_error(res, 400, "bad_request", "start %s is after end %s",
				 quote(http_query(req, "start"), a, sizeof(a)),
				 quote(http_query(req, "end"), b, sizeof(b)));
		return -EINVAL;
	}
	s = http_query(req, "limit");
	if (s) {
		err = query_parse_limit(s, QUERY_LIMIT_MAX, &w->limit);
		if (err) {
			http_reply_error(res, 400, "bad_request",
					 "limit: must be an integer from 1 to %u (the cap): %s",
					 QUERY_LIMIT_MAX, quote(s, q, sizeof(q)));
			return -EINVAL;
		}
	}
	s = http_query(req, "cursor");
	if (s) {
		err = query_parse_cursor(s, &w->cursor);
		if (err) {
			http_reply_error(res, 400, "bad_request",
					 "cursor: not a next_cursor value from this API: %s",
					 quote(s, q, sizeof(q)));
			return -EINVAL;
		}
	}
	return 0;
}

int query_window_parse(const struct http_request *req, struct query_window *w,
		       struct http_response *res)
{
	return query_window_parse_at(req, clock_wall_ns(), w, res);
}

int query_step_parse(const struct http_request *req, int64_t *step_ns, struct http_response *res)
{
	const char *s = http_query(req, "step");
	int64_t v;
	char q[80];
	int err;

	if (!s)
		return 0;
	err = duration_parse_ns(s, &v);
	if (err == -ERANGE) {
		http_reply_error(res, 400, "bad_request", "step: too long (at most 292y): %s",
				 quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	if (err) {
		http_reply_error(res, 400, "bad_request",
				 "step: not a duration such as 15s, 1m, 1h30m or seconds: %s",
				 quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	if (v <= 0) {
		http_reply_error(res, 400, "bad_request", "step: must be more than 0: %s",
				 quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	*step_ns = v;
	return 0;
}
