/* SPDX-License-Identifier: MIT */
/*
 * Times and durations. The parsers are strict: a value is either entirely
 * well-formed or refused, never read up to the first bad character
 * (strtoll/strptime would accept "12abc" or silently normalise "2026-02-30").
 * They are hand-written because glibc's strptime has no offsets or fractions
 * and neither glibc nor jansson parses RFC 3339 or Prometheus durations. The
 * formatter does civil-from-days arithmetic instead of gmtime_r(): it runs
 * once per row of every JSON answer, and gmtime_r() would also bound it to
 * time_t.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/timeutil.h"

#define SEC_PER_DAY 86400LL

/* ---- formatting ---- */

/* y-m-d of a day count since 1970-01-01, proleptic Gregorian (H. Hinnant's
 * civil_from_days; exact for every int64 day count we can be given). */
void time_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* n decimal digits of v, zero-padded, at p. */
static char *put_digits(char *p, int64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + n;
}

int time_format_rfc3339(int64_t unix_ns, char *buf, size_t len)
{
	int64_t secs = unix_ns / NSEC_PER_SEC, frac = unix_ns % NSEC_PER_SEC, days, sod, y;
	char *p = buf;
	int m, d;

	if (frac < 0) {
		frac += NSEC_PER_SEC;
		secs--;
	}
	days = secs / SEC_PER_DAY;
	sod = secs % SEC_PER_DAY;
	if (sod < 0) {
		sod += SEC_PER_DAY;
		days--;
	}
	time_civil_from_days(days, &y, &m, &d);
	if (y < 1 || y > 9999)
		return -ERANGE;
	if (!buf || len < TIME_RFC3339_SIZE)
		return -ENOSPC;
	p = put_digits(p, y, 4);
	*p++ = '-';
	p = put_digits(p, m, 2);
	*p++ = '-';
	p = put_digits(p, d, 2);
	*p++ = 'T';
	p = put_digits(p, sod / 3600, 2);
	*p++ = ':';
	p = put_digits(p, sod / 60 % 60, 2);
	*p++ = ':';
	p = put_digits(p, sod % 60, 2);
	*p++ = '.';
	p = put_digits(p, frac, 9);
	*p++ = 'Z';
	*p = '\0';
	return (int)(p - buf);
}

/* ---- parsing helpers ---- */

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

/* All the digits at *p (at least one, else false), advancing *p. A value past
 * int64 sets *overflow and reads on, so that the syntax is still checked
 * whole: "99999999999999999999x" is malformed before it is too large. */
static bool digits_u(const char **p, int64_t *out, bool *overflow)
{
	const char *s = *p;
	int64_t v = 0;

	if (!is_digit(*s))
		return false;
	for (; is_digit(*s); s++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			*overflow = true;
	}
	*p = s;
	*out = v;
	return true;
}

/* ".ddd" at *p if there is a '.', as ns (digits past the 9th are checked,
 * then dropped), advancing *p. False on a '.' without digits. */
static bool fraction_ns(const char **p, int64_t *ns)
{
	const char *s = *p;
	int64_t v = 0, scale = NSEC_PER_SEC / 10;

	*ns = 0;
	if (*s != '.')
		return true;
	if (!is_digit(*++s))
		return false;
	for (; is_digit(*s); s++) {
		v += (*s - '0') * scale;
		scale /= 10;
	}
	*ns = v;
	*p = s;
	return true;
}

/* secs * 1e9 + frac without overflowing on the way to INT64_MIN; *out is
 * untouched on -ERANGE. */
static int secs_to_ns(int64_t secs, int64_t frac, int64_t *out)
{
	int64_t v;

	if (secs < 0 && frac > 0) {
		secs++;
		frac -= NSEC_PER_SEC;
	}
	if (__builtin_mul_overflow(secs, NSEC_PER_SEC, &v) || __builtin_add_overflow(v, frac, &v))
		return -ERANGE;
	*out = v;
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
int64_t time_days_from_civil(int64_t y, int m, int d)
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
 * RFC 3339 date-time: YYYY-MM-DD{T|t| }HH:MM:SS[.frac]{Z|z|{+|-| }HH:MM}.
 * A space is also taken for the '+' of an offset: a '+' left unencoded in a
 * URL arrives as a space. Second 60 (a leap second) reads as :59.999999999.
 */
static int parse_rfc3339(const char *s, int64_t *ns)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, secs;
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
	if (!fraction_ns(&p, &frac))
		return -EINVAL;
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
		frac = NSEC_PER_SEC - 1;
	}
	secs = time_days_from_civil(y, mo, d) * SEC_PER_DAY + h * 3600 + mi * 60 + sec -
	       (int64_t)sign * (oh * 3600 + om * 60);
	return secs_to_ns(secs, frac, ns);
}

/* Non-negative decimal seconds with an optional fraction: "30", "0.5". */
static int parse_seconds(const char *s, int64_t *ns)
{
	bool overflow = false;
	int64_t secs, frac;
	const char *p = s;

	if (!digits_u(&p, &secs, &overflow) || !fraction_ns(&p, &frac) || *p)
		return -EINVAL;
	if (overflow)
		return -ERANGE;
	return secs_to_ns(secs, frac, ns);
}

/* ---- durations ---- */

static const struct duration_unit {
	const char *name;
	int64_t ns;
} units[] = {
    /* largest first: the order a composite duration must follow */
    {"y", 365 * SEC_PER_DAY *NSEC_PER_SEC},
    {"w", 7 * SEC_PER_DAY *NSEC_PER_SEC},
    {"d", SEC_PER_DAY *NSEC_PER_SEC},
    {"h", 3600 * NSEC_PER_SEC},
    {"m", 60 * NSEC_PER_SEC},
    {"s", NSEC_PER_SEC},
    {"ms", NSEC_PER_MSEC},
};

#define N_UNITS (sizeof(units) / sizeof(units[0]))

/* The unit named at *p, advancing *p; N_UNITS if none. "ms" is tried before
 * "m". */
static size_t unit_at(const char **p)
{
	size_t best = N_UNITS, best_len = 0;

	for (size_t u = 0; u < N_UNITS; u++) {
		size_t n = strlen(units[u].name);

		if (n > best_len && !strncmp(*p, units[u].name, n)) {
			best = u;
			best_len = n;
		}
	}
	*p += best_len;
	return best;
}

int duration_parse_ns(const char *s, int64_t *out_ns)
{
	size_t next_unit = 0;
	bool overflow = false;
	int64_t total = 0;
	const char *p;

	if (!s || !out_ns || !is_digit(*s))
		return -EINVAL;
	/* A number alone, or with a fraction, is seconds. */
	for (p = s; is_digit(*p); p++)
		;
	if (!*p || *p == '.')
		return parse_seconds(s, out_ns);
	p = s;
	while (*p) {
		int64_t v, part;
		size_t u;

		if (!digits_u(&p, &v, &overflow))
			return -EINVAL;
		u = unit_at(&p);
		if (u == N_UNITS || u < next_unit)
			return -EINVAL; /* no unit, an unknown one, out of order or repeated */
		next_unit = u + 1;
		if (__builtin_mul_overflow(v, units[u].ns, &part) ||
		    __builtin_add_overflow(total, part, &total))
			overflow = true;
	}
	if (overflow)
		return -ERANGE;
	*out_ns = total;
	return 0;
}

int duration_format(int64_t ns, char *buf, size_t len)
{
	uint64_t v = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	char tmp[DURATION_FMT_SIZE];
	size_t n = 0;

	if (ns < 0)
		tmp[n++] = '-';
	if (!v) {
		n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "0s");
	} else if (v % NSEC_PER_MSEC) {
		/* Below the smallest unit: plain seconds, trailing zeros cut. */
		n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%llu.%09llu",
				      (unsigned long long)(v / NSEC_PER_SEC),
				      (unsigned long long)(v % NSEC_PER_SEC));
		while (tmp[n - 1] == '0')
			n--;
		tmp[n] = '\0';
	} else {
		for (size_t u = 0; u < N_UNITS; u++) {
			uint64_t q = v / (uint64_t)units[u].ns;

			if (!q)
				continue;
			v -= q * (uint64_t)units[u].ns;
			n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%llu%s",
					      (unsigned long long)q, units[u].name);
		}
	}
	if (!buf || n >= len)
		return -ENOSPC;
	memcpy(buf, tmp, n + 1);
	return (int)n;
}

/* ---- points in time ---- */

/* now_ns plus or minus the duration at s. */
static int parse_relative(char sign, const char *s, int64_t now_ns, int64_t *out_ns)
{
	int64_t d, t;
	int err = duration_parse_ns(s, &d);

	if (err)
		return err;
	if (sign == '-' ? __builtin_sub_overflow(now_ns, d, &t)
			: __builtin_add_overflow(now_ns, d, &t))
		return -ERANGE;
	*out_ns = t;
	return 0;
}

int time_parse(const char *s, int64_t now_ns, int64_t *out_ns)
{
	int y;

	if (!s || !out_ns || !*s)
		return -EINVAL;
	if (!strncmp(s, "now", 3)) {
		if (!s[3]) {
			*out_ns = now_ns;
			return 0;
		}
		s += 3;
		if (*s != '-' && *s != '+' && *s != ' ')
			return -EINVAL;
	}
	/* ' ': a '+' left unencoded in a URL. */
	if (*s == '-' || *s == '+' || *s == ' ')
		return parse_relative(*s, s + 1, now_ns, out_ns);
	/* A date starts with four digits and a dash; anything else must be a
	 * number. */
	if (digits_n(s, 4, &y) && s[4] == '-')
		return parse_rfc3339(s, out_ns);
	return parse_seconds(s, out_ns);
}
