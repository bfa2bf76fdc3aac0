/* SPDX-License-Identifier: MIT */
/*
 * Query-parameter parsing for the /api/v1 routes. The parsers are pure and
 * strict: a value is either entirely well-formed or refused, never read up to
 * the first bad character (strtoll/strptime would accept "12abc" or silently
 * normalise "2026-02-30"). The RFC 3339 parser is hand-written because neither
 * glibc (strptime has no offsets or fractions) nor jansson provides one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/http.h"
#include "api/query.h"

#define NS_PER_S 1000000000LL

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Exactly n digits at s into *out. */
static bool digits_n(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Fraction digits after a '.', as nanoseconds (digits past the 9th are
 * checked, then dropped). Returns the number of characters used, 0 if none. */
static size_t fraction_ns(const char *s, int64_t *ns)
{
	int64_t v = 0, scale = 100000000;
	size_t i;

	for (i = 0; is_digit(s[i]); i++) {
		v += (s[i] - '0') * scale;
		scale /= 10;
	}
	*ns = v;
	return i;
}

/* secs * 1e9 + frac without overflowing on the way to INT64_MIN. */
static int secs_to_ns(int64_t secs, int64_t frac, int64_t *out)
{
	if (secs < 0 && frac > 0) {
		secs++;
		frac -= NS_PER_S;
	}
	if (__builtin_mul_overflow(secs, NS_PER_S, out) || __builtin_add_overflow(*out, frac, out))
		return -ERANGE;
	return 0;
}

static bool leap_year(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * RFC 3339 date-time: YYYY-MM-DD{T|t| }HH:MM:SS[.frac]{Z|z|{+|-}HH:MM}.
 * A space is also taken for the '+' of an offset: a '+' left unencoded in a
 * URL arrives as a space. Second 60 (a leap second) reads as :59.999999999.
 */
static int parse_rfc3339(const char *s, int64_t *ns)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, secs, out;
	const char *p;

	if (strlen(s) < 20)
		return -EINVAL;
	if (!digits_n(s, 4, &y) || s[4] != '-' || !digits_n(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits_n(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits_n(s + 11, 2, &h) || s[13] != ':' || !digits_n(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits_n(s + 17, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	p = s + 19;
	if (*p == '.') {
		size_t n = fraction_ns(p + 1, &frac);

		if (!n)
			return -EINVAL;
		p += 1 + n;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-' || *p == ' ') {
		sign = *p == '-' ? -1 : 1;
		if (!digits_n(p + 1, 2, &oh) || p[3] != ':' || !digits_n(p + 4, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL; /* trailing junk */
	if (sec == 60) {
		sec = 59;
		frac = NS_PER_S - 1;
	}
	secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	       (int64_t)sign * (oh * 3600 + om * 60);
	if (secs_to_ns(secs, frac, &out))
		return -ERANGE;
	*ns = out;
	return 0;
}

/* Unix seconds: digits, optionally '.' and more digits. */
static int parse_unix(const char *s, int64_t *ns)
{
	int64_t secs = 0, frac = 0, out;
	const char *p = s;

	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++) {
		if (__builtin_mul_overflow(secs, 10, &secs) ||
		    __builtin_add_overflow(secs, *p - '0', &secs))
			return -ERANGE;
	}
	if (*p == '.') {
		size_t n = fraction_ns(p + 1, &frac);

		if (!n)
			return -EINVAL;
		p += 1 + n;
	}
	if (*p)
		return -EINVAL;
	if (secs_to_ns(secs, frac, &out))
		return -ERANGE;
	*ns = out;
	return 0;
}

int query_parse_time(const char *s, int64_t *ns)
{
	if (!s || !*s || !ns)
		return -EINVAL;
	/* A date starts with four digits and a dash; anything else must be a
	 * number. */
	if (strlen(s) > 4 && s[4] == '-')
		return parse_rfc3339(s, ns);
	return parse_unix(s, ns);
}

/* Non-negative decimal without sign or junk, fitting in int64. */
static int parse_decimal(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			return -ERANGE;
	}
	if (*s)
		return -EINVAL;
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

/*
 * Step: seconds as a number ("15", "0.5"), or a Prometheus-style duration of
 * units in decreasing order, each at most once: "1h30m", "15s", "250ms",
 * "1d", "1w". Must be > 0.
 */
int query_parse_step(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		int64_t ns;
	} units[] = {
	    {"w", 7 * 86400 * NS_PER_S}, {"d", 86400 * NS_PER_S}, {"h", 3600 * NS_PER_S},
	    {"m", 60 * NS_PER_S},	 {"s", NS_PER_S},	  {"ms", 1000000},
	};
	size_t next_unit = 0;
	int64_t total = 0;
	const char *p = s;
	int err;

	if (!s || !*s || !ns)
		return -EINVAL;
	/* Plain seconds? */
	for (p = s; is_digit(*p) || *p == '.'; p++)
		;
	if (!*p) {
		err = parse_unix(s, &total);
		if (err)
			return err;
		if (total <= 0)
			return -ERANGE;
		*ns = total;
		return 0;
	}
	p = s;
	while (*p) {
		int64_t v = 0, part;
		size_t u;

		if (!is_digit(*p))
			return -EINVAL;
		for (; is_digit(*p); p++) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *p - '0', &v))
				return -ERANGE;
		}
		/* "ms" before "m": try the longer unit name first. */
		if (p[0] == 'm' && p[1] == 's')
			u = 5;
		else {
			for (u = 0; u < 5; u++) {
				if (*p == units[u].unit[0])
					break;
			}
			if (u == 5)
				return -EINVAL;
		}
		if (u < next_unit)
			return -EINVAL; /* out of order or repeated */
		next_unit = u + 1;
		p += strlen(units[u].unit);
		if (__builtin_mul_overflow(v, units[u].ns, &part) ||
		    __builtin_add_overflow(total, part, &total))
			return -ERANGE;
	}
	if (total <= 0)
		return -ERANGE;
	*ns = total;
	return 0;
}

int query_format_time(int64_t ns, char *buf, size_t len)
{
	int64_t secs = ns / NS_PER_S, frac = ns % NS_PER_S;
	time_t t;
	struct tm tm;
	int n;

	if (frac < 0) {
		frac += NS_PER_S;
		secs--;
	}
	t = (time_t)secs;
	if (!gmtime_r(&t, &tm))
		return -ERANGE;
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	if (frac) {
		char f[11];
		int fl = snprintf(f, sizeof(f), ".%09lld", (long long)frac);

		while (f[fl - 1] == '0')
			f[--fl] = '\0';
		if ((size_t)(n + fl) >= len)
			return -ENOSPC;
		memcpy(buf + n, f, fl + 1);
		n += fl;
	}
	if ((size_t)n + 2 > len)
		return -ENOSPC;
	buf[n] = 'Z';
	buf[n + 1] = '\0';
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
static int window_time(const struct http_request *req, const char *key, int64_t *ns,
		       struct http_response *res)
{
	const char *s = http_query(req, key);
	char q[80];
	int err;

	if (!s)
		return 0;
	err = query_parse_time(s, ns);
	if (err == -ERANGE) {
		http_reply_error(res, 400, "bad_request",
				 "%s: time out of range (years 1678-2262; unix seconds, not "
				 "milliseconds): %s",
				 key, quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	if (err) {
		http_reply_error(res, 400, "bad_request",
				 "%s: not an RFC 3339 time or unix seconds: %s", key,
				 quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	return 0;
}

int query_window_parse(const struct http_request *req, struct query_window *w,
		       struct http_response *res)
{
	const char *s;
	char q[80];
	int err;

	w->since_ns = 0;
	w->until_ns = INT64_MAX;
	w->limit = QUERY_LIMIT_DEFAULT;
	w->cursor = INT64_MAX;

	if (window_time(req, "since", &w->since_ns, res) ||
	    window_time(req, "until", &w->until_ns, res))
		return -EINVAL;
	if (w->since_ns > w->until_ns) {
		char a[80], b[80];

		http_reply_error(res, 400, "bad_request", "since %s is after until %s",
				 quote(http_query(req, "since"), a, sizeof(a)),
				 quote(http_query(req, "until"), b, sizeof(b)));
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
