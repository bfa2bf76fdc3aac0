/* SPDX-License-Identifier: MIT */
/*
 * agent/timeutil: the RFC 3339 formatter, the time parser (RFC 3339, unix
 * seconds, now, relative), the one duration grammar and its formatter; and
 * agent/buf, the growable buffer.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/timeutil.h"

#define S   1000000000LL
#define MS  1000000LL
#define MIN (60 * S)
#define H   (3600 * S)
#define D   (86400 * S)

/* A fixed "now" for relative times: 2026-12-02T10:00:00Z. */
#define NOW (1796205600 * S)

static void assert_time(const char *s, int64_t want)
{
	int64_t ns = -12345;
	int err = time_parse(s, NOW, &ns);

	if (err || ns != want)
		fail_msg("\"%s\": got err %d ns %lld, want %lld", s, err, (long long)ns,
			 (long long)want);
}

static void assert_time_err(const char *s, int want_err)
{
	int64_t ns = -12345;
	int err = time_parse(s, NOW, &ns);

	if (err != want_err)
		fail_msg("\"%s\": got err %d (ns %lld), want %d", s, err, (long long)ns, want_err);
	assert_int_equal(ns, -12345); /* untouched on error */
}

static void assert_format(int64_t ns, const char *want)
{
	char buf[TIME_RFC3339_SIZE];
	int n = time_format_rfc3339(ns, buf, sizeof(buf));

	if (n != (int)strlen(want) || strcmp(buf, want))
		fail_msg("%lld: got %d \"%s\", want \"%s\"", (long long)ns, n, n > 0 ? buf : "",
			 want);
}

/* ---- formatting ---- */

static void test_format_always_writes_nine_fraction_digits(void **state)
{
	assert_format(0, "1970-01-01T00:00:00.000000000Z");
	assert_format(1, "1970-01-01T00:00:00.000000001Z");
	assert_format(1796205600 * S, "2026-12-02T10:00:00.000000000Z");
	assert_format(1796205600 * S + 250000000, "2026-12-02T10:00:00.250000000Z");
	assert_format(1709164800 * S, "2024-02-29T00:00:00.000000000Z");
	assert_format(951782400 * S - 1, "2000-02-28T23:59:59.999999999Z");
	assert_format(1735689599 * S, "2024-12-31T23:59:59.000000000Z");
}

static void test_format_writes_pre_1970_times(void **state)
{
	assert_format(-1, "1969-12-31T23:59:59.999999999Z");
	assert_format(-S, "1969-12-31T23:59:59.000000000Z");
	assert_format(-S - 1, "1969-12-31T23:59:58.999999999Z");
	assert_format(-D, "1969-12-31T00:00:00.000000000Z");
	assert_format(-2208988800 * S, "1900-01-01T00:00:00.000000000Z");
	assert_format(-951868800 * S, "1939-11-03T00:00:00.000000000Z");
}

static void test_format_covers_the_whole_int64_range(void **state)
{
	assert_format(INT64_MAX, "2262-04-11T23:47:16.854775807Z");
	assert_format(INT64_MIN, "1677-09-21T00:12:43.145224192Z");
}

static void test_format_agrees_with_gmtime_day_by_day(void **state)
{
	char buf[TIME_RFC3339_SIZE], want[64];
	struct tm tm;

	/* Every day from 1677 to 2262, at a time of day that changes too. */
	for (int64_t secs = -9223372036LL + 86400; secs < 9223372036LL; secs += 86400 + 3607) {
		time_t t = (time_t)secs;

		assert_non_null(gmtime_r(&t, &tm));
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.000000042Z",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec);
		assert_int_equal(time_format_rfc3339(secs * S + 42, buf, sizeof(buf)), 30);
		if (strcmp(buf, want))
			fail_msg("%lld: \"%s\", gmtime says \"%s\"", (long long)secs, buf, want);
	}
}

static void test_format_refuses_a_short_buffer(void **state)
{
	char buf[TIME_RFC3339_SIZE];

	assert_int_equal(time_format_rfc3339(0, buf, TIME_RFC3339_SIZE - 1), -ENOSPC);
	assert_int_equal(time_format_rfc3339(0, buf, 0), -ENOSPC);
	assert_int_equal(time_format_rfc3339(0, NULL, 0), -ENOSPC);
	assert_int_equal(time_format_rfc3339(0, buf, TIME_RFC3339_SIZE), 30);
}

/* ---- parsing ---- */

static void test_parse_reads_rfc3339(void **state)
{
	assert_time("2026-12-02T10:00:00Z", 1796205600 * S);
	assert_time("2026-12-02t10:00:00z", 1796205600 * S);
	assert_time("2026-12-02 10:00:00Z", 1796205600 * S);
	assert_time("1970-01-01T00:00:00Z", 0);
	assert_time("1969-12-31T23:59:59Z", -1 * S);
	/* offsets: local time minus the offset */
	assert_time("2026-12-02T12:00:00+02:00", 1796205600 * S);
	assert_time("2026-12-02T04:30:00-05:30", 1796205600 * S);
	assert_time("2026-12-02T10:00:00+00:00", 1796205600 * S);
	assert_time("2026-12-02T10:00:00-00:00", 1796205600 * S);
	/* '+' that a URL turned into a space */
	assert_time("2026-12-02T12:00:00 02:00", 1796205600 * S);
	/* crossing a day and a year through the offset */
	assert_time("2027-01-01T01:00:00+02:00", 1798758000 * S);
	/* fractions: ns kept, digits past the 9th dropped */
	assert_time("2026-12-02T10:00:00.5Z", 1796205600 * S + 500000000);
	assert_time("2026-12-02T10:00:00.123456789Z", 1796205600 * S + 123456789);
	assert_time("2026-12-02T10:00:00.1234567891234Z", 1796205600 * S + 123456789);
	assert_time("2026-12-02T10:00:00.000000001+01:00", (1796205600 - 3600) * S + 1);
	/* leap years */
	assert_time("2024-02-29T00:00:00Z", 1709164800 * S);
	assert_time("2000-02-29T00:00:00Z", 951782400 * S);
	assert_time("2024-12-31T23:59:59Z", 1735689599 * S);
	/* a leap second reads as the last ns of :59 */
	assert_time("2016-12-31T23:59:60Z", 1483228799 * S + 999999999);
	/* the int64 ns range */
	assert_time("2262-04-11T23:47:16.854775807Z", INT64_MAX);
	assert_time("1677-09-21T00:12:43.145224192Z", INT64_MIN);
}

static void test_parse_reads_unix_seconds(void **state)
{
	assert_time("0", 0);
	assert_time("1796205600", 1796205600 * S);
	assert_time("1796205600.25", 1796205600 * S + 250000000);
	assert_time("1796205600.000000001", 1796205600 * S + 1);
	assert_time("1796205600.0000000019", 1796205600 * S + 1);
	assert_time("9223372036.854775807", INT64_MAX);
	assert_time("2026", 2026 * S); /* four digits alone are seconds */
}

static void test_parse_reads_now_and_relative_times(void **state)
{
	assert_time("now", NOW);
	assert_time("-15m", NOW - 15 * MIN);
	assert_time("-1h30m", NOW - 90 * MIN);
	assert_time("+5m", NOW + 5 * MIN);
	/* '+' that a URL turned into a space: " 1796205600" too is relative */
	assert_time(" 5m", NOW + 5 * MIN);
	assert_time(" 60", NOW + MIN);
	assert_time("-1d12h", NOW - 36 * H);
	assert_time("-250ms", NOW - 250 * MS);
	assert_time("-30", NOW - 30 * S); /* plain seconds, as in durations */
	assert_time("-0.5", NOW - S / 2);
	assert_time("-0s", NOW);
	assert_time("-1w", NOW - 7 * D);
	assert_time("-1y", NOW - 365 * D);
	assert_time("now-15m", NOW - 15 * MIN);
	assert_time("now+1h", NOW + H);
	/* relative to a pre-1970 now */
	int64_t ns;
	assert_int_equal(time_parse("-1s", 0, &ns), 0);
	assert_int_equal(ns, -S);
}

static void test_parse_refuses_malformed_times(void **state)
{
	static const char *const bad[] = {
	    "2026-13-01T00:00:00Z", /* month 13 */
	    "2026-00-01T00:00:00Z", /* month 0 */
	    "2026-02-29T00:00:00Z", /* not a leap year */
	    "1900-02-29T00:00:00Z", /* centuries are not */
	    "2026-04-31T00:00:00Z", /* April has 30 */
	    "2026-01-00T00:00:00Z", /* day 0 */
	    "2026-01-32T00:00:00Z",
	    "2026-01-01T24:00:00Z",
	    "2026-01-01T23:60:00Z",
	    "2026-01-01T23:59:61Z",
	    "2026-01-01T00:00:00",	/* no offset */
	    "2026-01-01T00:00:00Zjunk", /* trailing junk */
	    "2026-01-01T00:00:00Z ",
	    "2026-01-01T00:00:00+0200", /* offset without colon */
	    "2026-01-01T00:00:00+24:00",
	    "2026-01-01T00:00:00+02:60",
	    "2026-01-01T00:00:00+02:00x",
	    "2026-01-01T00:00:00.Z", /* fraction without digits */
	    "2026-01-01T00:00Z",     /* no seconds */
	    "2026-1-01T00:00:00Z",
	    "2026-01-01X00:00:00Z",
	    "2026-01-01", /* date only */
	    "+2026-01-01T00:00:00Z",
	    "yesterday",
	    "",
	    " ",
	    "1796205600 ",
	    "1e9",
	    "0x10",
	    "1796205600.",
	    ".5",
	    "1.2.3",
	    "12abc",
	    /* relative and now */
	    "-",
	    "+",
	    "--15m",
	    "-+15m",
	    "- 15m",
	    "-15m ",
	    "-15 m",
	    "-15M",
	    "-m",
	    "-1h1h",
	    "-1m1h",
	    "-1.5h",
	    "-15x",
	    "NOW",
	    "now ",
	    "nowx",
	    "now1",
	    "now-",
	    "now--1m",
	    "now-15m junk",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_time_err(bad[i], -EINVAL);
	assert_int_equal(time_parse(NULL, NOW, &(int64_t){0}), -EINVAL);
	assert_int_equal(time_parse("now", NOW, NULL), -EINVAL);
}

static void test_parse_refuses_times_past_int64_ns(void **state)
{
	int64_t ns = 5;

	assert_time_err("9999-12-31T23:59:59Z", -ERANGE);
	assert_time_err("2262-04-11T23:47:16.854775808Z", -ERANGE);
	assert_time_err("0001-01-01T00:00:00Z", -ERANGE);
	assert_time_err("1796205600000", -ERANGE); /* milliseconds by mistake */
	assert_time_err("99999999999999999999999", -ERANGE);
	assert_time_err("-99999999999999999999999s", -ERANGE);
	assert_time_err("-300y", -ERANGE);
	/* junk wins over size: the value is malformed before it is too large */
	assert_time_err("99999999999999999999999x", -EINVAL);
	/* overflow of now plus or minus a valid duration */
	assert_int_equal(time_parse("+1s", INT64_MAX, &ns), -ERANGE);
	assert_int_equal(time_parse("-1s", INT64_MIN, &ns), -ERANGE);
	assert_int_equal(time_parse("-200y", INT64_MIN / 2, &ns), -ERANGE);
	assert_int_equal(ns, 5);
}

static void test_format_then_parse_gives_back_the_same_ns(void **state)
{
	static const int64_t fixed[] = {
	    0,
	    1,
	    -1,
	    S,
	    -S,
	    1796205600 * S,
	    1796205600 * S + 123456789,
	    INT64_MAX,
	    INT64_MIN,
	    INT64_MIN + 1,
	    INT64_MAX - 1,
	    951782400 * S,
	    -2208988800 * S + 999999999,
	};
	char buf[TIME_RFC3339_SIZE];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int64_t back;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		assert_int_equal(time_format_rfc3339(fixed[i], buf, sizeof(buf)), 30);
		assert_int_equal(time_parse(buf, NOW, &back), 0);
		assert_int_equal(back, fixed[i]);
	}
	/* and 100000 values spread over the whole int64 range (xorshift64) */
	for (int i = 0; i < 100000; i++) {
		int64_t ns;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ns = (int64_t)x;
		assert_int_equal(time_format_rfc3339(ns, buf, sizeof(buf)), 30);
		if (time_parse(buf, NOW, &back) || back != ns)
			fail_msg("%lld -> \"%s\" -> %lld", (long long)ns, buf, (long long)back);
	}
}

/* ---- durations ---- */

static void assert_duration(const char *s, int64_t want)
{
	int64_t ns = -12345;
	int err = duration_parse_ns(s, &ns);

	if (err || ns != want)
		fail_msg("\"%s\": got err %d ns %lld, want %lld", s, err, (long long)ns,
			 (long long)want);
}

static void assert_duration_err(const char *s, int want_err)
{
	int64_t ns = -12345;
	int err = duration_parse_ns(s, &ns);

	if (err != want_err)
		fail_msg("\"%s\": got err %d (ns %lld), want %d", s, err, (long long)ns, want_err);
	assert_int_equal(ns, -12345);
}

static void test_duration_reads_each_unit(void **state)
{
	assert_duration("250ms", 250 * MS);
	assert_duration("15s", 15 * S);
	assert_duration("5m", 5 * MIN);
	assert_duration("24h", 24 * H);
	assert_duration("7d", 7 * D);
	assert_duration("2w", 14 * D);
	assert_duration("1y", 365 * D);
	assert_duration("0s", 0);
	assert_duration("0ms", 0);
	assert_duration("007s", 7 * S);
	assert_duration("90m", 90 * MIN); /* no carrying into hours required */
	assert_duration("1000ms", S);
}

static void test_duration_composes_units_in_descending_order(void **state)
{
	assert_duration("1h30m", 90 * MIN);
	assert_duration("1d12h", 36 * H);
	assert_duration("1h1m1s1ms", H + MIN + S + MS);
	assert_duration("1y1w1d1h1m1s1ms", 365 * D + 7 * D + D + H + MIN + S + MS);
	assert_duration("1m500ms", MIN + 500 * MS);
	assert_duration("1h0m", H);
}

static void test_duration_reads_plain_seconds(void **state)
{
	assert_duration("30", 30 * S);
	assert_duration("0", 0);
	assert_duration("0.5", S / 2);
	assert_duration("1.000000001", S + 1);
	assert_duration("9223372036.854775807", INT64_MAX);
}

static void test_duration_refuses_malformed_values(void **state)
{
	static const char *const bad[] = {
	    "",	    "s",    "m",    "ms",   "h1",    "1h1h",  "1m1h", "1ms1s", "1s1s", "1.5h",
	    "1.5s", "-1s",  "+1s",  "1x",   "15 s",  " 15s",  "15s ", "1H",    "1M",   "1mss",
	    "1sm",  "1h30", "1e3s", "0x1s", "1..5",  ".5",    "5.",   "1.5.5", "1hm",  "1ms5",
	    "1us",  "1ns",  "1mo",  "- 1s", "1h-1m", "1h 1m", "inf",  "nan",   "1,5s", "1_000s",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_duration_err(bad[i], -EINVAL);
	assert_int_equal(duration_parse_ns(NULL, &(int64_t){0}), -EINVAL);
	assert_int_equal(duration_parse_ns("1s", NULL), -EINVAL);
}

static void test_duration_refuses_values_past_int64_ns(void **state)
{
	assert_duration_err("99999999999999999999s", -ERANGE);
	assert_duration_err("99999999999999999999", -ERANGE);
	assert_duration_err("9223372036.854775808", -ERANGE);
	assert_duration_err("293y", -ERANGE);
	assert_duration_err("292y1000w", -ERANGE); /* each part fits, the sum does not */
	assert_duration_err("9223372037s", -ERANGE);
	assert_duration("292y", 292 * 365 * D);
	/* junk is reported before size */
	assert_duration_err("99999999999999999999x", -EINVAL);
	assert_duration_err("99999999999999999999s1h", -EINVAL);
}

static void assert_duration_format(int64_t ns, const char *want)
{
	char buf[DURATION_FMT_SIZE];
	int n = duration_format(ns, buf, sizeof(buf));

	if (n != (int)strlen(want) || strcmp(buf, want))
		fail_msg("%lld: got %d \"%s\", want \"%s\"", (long long)ns, n, n > 0 ? buf : "",
			 want);
}

static void test_duration_format_writes_the_canonical_form(void **state)
{
	assert_duration_format(0, "0s");
	assert_duration_format(15 * S, "15s");
	assert_duration_format(90 * MIN, "1h30m");
	assert_duration_format(250 * MS, "250ms");
	assert_duration_format(S + 500 * MS, "1s500ms");
	assert_duration_format(7 * D, "1w");
	assert_duration_format(8 * D, "1w1d");
	assert_duration_format(365 * D, "1y");
	assert_duration_format(36 * H, "1d12h");
	assert_duration_format(H + MIN + S + MS, "1h1m1s1ms");
	/* below the smallest unit: plain seconds */
	assert_duration_format(1, "0.000000001");
	assert_duration_format(S + 1000, "1.000001");
	assert_duration_format(INT64_MAX, "9223372036.854775807");
	assert_duration_format(292 * 365 * D + 999 * MS, "292y999ms");
	/* negative: a sign only time_parse() reads back */
	assert_duration_format(-15 * MIN, "-15m");
	assert_duration_format(INT64_MIN, "-9223372036.854775808");
}

static void test_duration_format_reads_back(void **state)
{
	static const int64_t v[] = {
	    0,
	    1,
	    MS,
	    S,
	    MIN,
	    H,
	    D,
	    7 * D,
	    365 * D,
	    90 * MIN,
	    1500 * MS,
	    INT64_MAX,
	    S / 3,
	    12345678901234567,
	    292 * 365 * D + 1,
	};
	char buf[DURATION_FMT_SIZE];
	int64_t back;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_true(duration_format(v[i], buf, sizeof(buf)) > 0);
		assert_int_equal(duration_parse_ns(buf, &back), 0);
		assert_int_equal(back, v[i]);
	}
}

static void test_duration_format_refuses_a_short_buffer(void **state)
{
	char buf[8];

	assert_int_equal(duration_format(90 * MIN, buf, 5), -ENOSPC); /* "1h30m" + NUL */
	assert_int_equal(duration_format(90 * MIN, buf, 6), 5);
	assert_string_equal(buf, "1h30m");
	assert_int_equal(duration_format(0, NULL, 0), -ENOSPC);
}

static void test_now_is_the_wall_clock(void **state)
{
	struct timespec ts;
	int64_t before, now;

	clock_gettime(CLOCK_REALTIME, &ts);
	before = (int64_t)ts.tv_sec * S + ts.tv_nsec;
	now = clock_wall_ns();
	assert_true(now >= before);
	assert_true(now - before < 10 * S);
}

/* ---- buf ---- */

static void test_buf_appends_and_stays_nul_terminated(void **state)
{
	struct buf b = {0};
	size_t len = 0;
	char *s;

	buf_puts(&b, "hello");
	assert_string_equal(b.p, "hello");
	buf_putc(&b, ',');
	buf_append(&b, " world!!", 6);
	assert_int_equal(b.len, 12);
	assert_string_equal(b.p, "hello, world");
	buf_printf(&b, " %d %s", 42, "x");
	assert_string_equal(b.p, "hello, world 42 x");
	buf_append(&b, NULL, 0);
	assert_false(b.oom);
	s = buf_steal(&b, &len);
	assert_string_equal(s, "hello, world 42 x");
	assert_int_equal(len, strlen(s));
	assert_null(b.p); /* reset */
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(s);
}

static void test_buf_grows_past_its_first_allocation(void **state)
{
	struct buf b = {0};
	char big[5000];
	size_t len;
	char *s;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "%04d;", i);
	assert_int_equal(b.len, 5000);
	buf_printf(&b, "%s", big); /* longer than the room left: printed twice */
	buf_puts(&b, big);
	assert_int_equal(b.len, 5000 + 2 * 4999);
	assert_true(b.cap > b.len);
	assert_int_equal(strlen(b.p), b.len);
	assert_memory_equal(b.p + 4995, "0999;aaaa", 9);
	assert_int_equal(b.p[b.len - 1], 'a');
	s = buf_steal(&b, &len);
	assert_int_equal(len, 14998);
	free(s);
}

static void test_buf_keeps_binary_data(void **state)
{
	struct buf b = {0};

	buf_append(&b, "a\0b", 3);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.p, "a\0b", 4); /* and the NUL after */
	buf_free(&b);
	assert_null(b.p);
}

static void test_buf_steal_of_nothing_is_an_empty_string(void **state)
{
	struct buf b = {0};
	size_t len = 99;
	char *s = buf_steal(&b, &len);

	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	buf_free(&b);
	buf_free(NULL);
}

static void test_buf_out_of_memory_is_sticky(void **state)
{
	struct buf b = {0};
	size_t len = 99;

	buf_puts(&b, "abc");
	/* a request no allocator grants */
	assert_int_equal(buf_reserve(&b, SIZE_MAX - 2), -ENOMEM);
	assert_true(b.oom);
	buf_puts(&b, "def"); /* ignored */
	buf_printf(&b, "%d", 1);
	buf_putc(&b, 'x');
	assert_int_equal(b.len, 3);
	assert_int_equal(buf_reserve(&b, 1), -ENOMEM);
	errno = 0;
	assert_null(buf_steal(&b, &len));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(len, 99);
	assert_null(b.p);
	assert_false(b.oom); /* freed and reset for reuse */
	buf_puts(&b, "again");
	assert_string_equal(b.p, "again");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_always_writes_nine_fraction_digits),
	    cmocka_unit_test(test_format_writes_pre_1970_times),
	    cmocka_unit_test(test_format_covers_the_whole_int64_range),
	    cmocka_unit_test(test_format_agrees_with_gmtime_day_by_day),
	    cmocka_unit_test(test_format_refuses_a_short_buffer),
	    cmocka_unit_test(test_parse_reads_rfc3339),
	    cmocka_unit_test(test_parse_reads_unix_seconds),
	    cmocka_unit_test(test_parse_reads_now_and_relative_times),
	    cmocka_unit_test(test_parse_refuses_malformed_times),
	    cmocka_unit_test(test_parse_refuses_times_past_int64_ns),
	    cmocka_unit_test(test_format_then_parse_gives_back_the_same_ns),
	    cmocka_unit_test(test_duration_reads_each_unit),
	    cmocka_unit_test(test_duration_composes_units_in_descending_order),
	    cmocka_unit_test(test_duration_reads_plain_seconds),
	    cmocka_unit_test(test_duration_refuses_malformed_values),
	    cmocka_unit_test(test_duration_refuses_values_past_int64_ns),
	    cmocka_unit_test(test_duration_format_writes_the_canonical_form),
	    cmocka_unit_test(test_duration_format_reads_back),
	    cmocka_unit_test(test_duration_format_refuses_a_short_buffer),
	    cmocka_unit_test(test_now_is_the_wall_clock),
	    cmocka_unit_test(test_buf_appends_and_stays_nul_terminated),
	    cmocka_unit_test(test_buf_grows_past_its_first_allocation),
	    cmocka_unit_test(test_buf_keeps_binary_data),
	    cmocka_unit_test(test_buf_steal_of_nothing_is_an_empty_string),
	    cmocka_unit_test(test_buf_out_of_memory_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
