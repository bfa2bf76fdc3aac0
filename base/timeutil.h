/* SPDX-License-Identifier: MIT */
/*
 * Times and durations, once for the whole daemon: the RFC 3339 formatter every
 * JSON answer uses, the time parser behind ?start=/?end=, and the one duration
 * grammar shared by the config file and ?step=. Pure functions over libc
 * (the clock is clock_wall_ns() in base/log.h); times are int64 unix nanoseconds, which
 * span 1677-09-21 to 2262-04-11.
 */
#ifndef SYSOBS_TIMEUTIL_H
#define SYSOBS_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_MSEC 1000000LL
#define NSEC_PER_SEC  1000000000LL

/* "2026-12-03T10:00:00.000000000Z" and its NUL. */
#define TIME_RFC3339_SIZE 31
/* Enough for any duration_format() output ("-292y24w3d23h47m16s854ms", or
 * "-9223372036.854775808") and its NUL. */
#define DURATION_FMT_SIZE 32

/*
 * Formats unix ns as RFC 3339 in UTC with always nine fractional digits,
 * "2026-12-03T10:00:00.000000000Z" (pre-1970 times too). Returns the length
 * written (without the NUL), -ENOSPC if buf holds less than TIME_RFC3339_SIZE,
 * -ERANGE outside years 0001..9999 (which no int64 ns reaches).
 */
int time_format_rfc3339(int64_t unix_ns, char *buf, size_t len);

/* Proleptic Gregorian calendar arithmetic (H. Hinnant's civil_from_days and
 * days_from_civil), exact for every int64 day count: day z since 1970-01-01
 * as y-m-d, and back. Shared by every formatter and parser of dates. */
void time_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
int64_t time_days_from_civil(int64_t y, int m, int d);

/*
 * Parses a point in time into unix ns. Accepted, whole string only:
 *   RFC 3339      "2026-12-02T10:00:00Z", "2026-12-02T12:00:00.25+02:00"
 *                 ('t'/'z' lower case, ' ' for 'T', and ' ' for the '+' of an
 *                 offset, as an unencoded '+' arrives from a URL; second 60
 *                 reads as :59.999999999; fraction digits past the 9th are
 *                 dropped)
 *   unix seconds  "1796205600", "1796205600.25"
 *   now           "now", and "now-15m" / "now+5m"
 *   relative      "-15m", "-1h30m", "+5m" (a leading ' ' is a '+' too): a
 *                 duration_parse_ns() duration before or after now_ns
 * Returns 0, -EINVAL (malformed, empty, NULL) or -ERANGE (well-formed but
 * outside int64 ns, e.g. unix milliseconds by mistake); *out_ns is untouched
 * on error.
 */
int time_parse(const char *s, int64_t now_ns, int64_t *out_ns);

/*
 * The one duration grammar, Prometheus style: a non-negative number and a
 * unit, ms, s, m, h, d, w or y (= 365d), units composable in descending order
 * each at most once ("1h30m", "1d12h", "1h1m1s1ms"); or a plain non-negative
 * number of seconds, the only form with a fraction ("30", "0.5"). No sign, no
 * blanks. Returns 0, -EINVAL or -ERANGE (past int64 ns, ~292 years); *out_ns
 * is untouched on error.
 */
int duration_parse_ns(const char *s, int64_t *out_ns);

/*
 * Formats a duration in the grammar's canonical form, units greedy from the
 * largest and zero units left out, as Prometheus prints them: "15s", "1h30m",
 * "250ms", "1w", "0s". A value that is not a whole number of ms is written as
 * plain seconds ("0.000001"); a negative one gets a leading '-' (which only
 * time_parse() reads back). Returns the length, or -ENOSPC.
 */
int duration_format(int64_t ns, char *buf, size_t len);

#endif
