/* SPDX-License-Identifier: MIT */
/*
 * Query-parameter parsers (times, limits, cursors, steps) as pure functions,
 * then the same rules through a real libmicrohttpd server on an ephemeral
 * loopback port, driven with libcurl: 400s with their exact JSON, unknown
 * parameters, 404/405/413, prefix routes, HEAD, the listen-address parser and
 * the request counters the server keeps.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "api/http.h"
#include "api/metrics.h"
#include "api/query.h"

#define S 1000000000LL

/* ---- time ---- */

static void assert_time(const char *s, int64_t want)
{
	int64_t ns = -12345;
	int err = query_parse_time(s, &ns);

	if (err || ns != want)
		fail_msg("%s: got err %d ns %lld, want %lld", s, err, (long long)ns,
			 (long long)want);
}

static void assert_time_err(const char *s, int want_err)
{
	int64_t ns = -12345;
	int err = query_parse_time(s, &ns);

	if (err != want_err)
		fail_msg("%s: got err %d (ns %lld), want %d", s, err, (long long)ns, want_err);
	assert_int_equal(ns, -12345); /* untouched on error */
}

static void test_time_rfc3339(void **state)
{
	/* 2026-12-02T10:00:00Z = 1796205600 */
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
	/* fractions: any number of digits, ns kept, the rest dropped */
	assert_time("2026-12-02T10:00:00.5Z", 1796205600 * S + 500000000);
	assert_time("2026-12-02T10:00:00.123456789Z", 1796205600 * S + 123456789);
	assert_time("2026-12-02T10:00:00.1234567891234Z", 1796205600 * S + 123456789);
	assert_time("2026-12-02T10:00:00.000000001+01:00", (1796205600 - 3600) * S + 1);
	/* leap years */
	assert_time("2024-02-29T00:00:00Z", 1709164800 * S);
	assert_time("2000-02-29T00:00:00Z", 951782400 * S);
	assert_time("2024-12-31T23:59:59Z", 1735689599 * S);
	/* leap second reads as the last ns of :59 */
	assert_time("2016-12-31T23:59:60Z", 1483228799 * S + 999999999);
	/* the int64 ns range */
	assert_time("2262-04-11T23:47:16.854775807Z", INT64_MAX);
	assert_time("1677-09-21T00:12:43.145224192Z", INT64_MIN);
}

static void test_time_rfc3339_invalid(void **state)
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
	    "now",
	    "",
	    " 1796205600",
	    "1796205600 ",
	    "-1",
	    "1e9",
	    "0x10",
	    "1796205600.",
	    ".5",
	    "1.2.3",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_time_err(bad[i], -EINVAL);
	assert_int_equal(query_parse_time(NULL, &(int64_t){0}), -EINVAL);
	/* well-formed, but past what int64 ns holds */
	assert_time_err("9999-12-31T23:59:59Z", -ERANGE);
	assert_time_err("2262-04-11T23:47:16.854775808Z", -ERANGE);
	assert_time_err("0001-01-01T00:00:00Z", -ERANGE);
	assert_time_err("1796205600000", -ERANGE); /* milliseconds by mistake */
	assert_time_err("99999999999999999999999", -ERANGE);
}

static void test_time_unix(void **state)
{
	assert_time("0", 0);
	assert_time("1796205600", 1796205600 * S);
	assert_time("1796205600.25", 1796205600 * S + 250000000);
	assert_time("1796205600.000000001", 1796205600 * S + 1);
	assert_time("1796205600.0000000019", 1796205600 * S + 1);
	assert_time("9223372036.854775807", INT64_MAX);
	assert_time("2026", 2026 * S); /* four digits alone are seconds */
}

static void test_time_format(void **state)
{
	static const struct {
		int64_t ns;
		const char *s;
	} cases[] = {
	    {0, "1970-01-01T00:00:00Z"},
	    {1796205600 * S, "2026-12-02T10:00:00Z"},
	    {1796205600 * S + 250000000, "2026-12-02T10:00:00.25Z"},
	    {1796205600 * S + 1, "2026-12-02T10:00:00.000000001Z"},
	    {-1, "1969-12-31T23:59:59.999999999Z"},
	    {1709164800 * S, "2024-02-29T00:00:00Z"},
	};
	char buf[48];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t back;

		assert_int_equal(query_format_time(cases[i].ns, buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i].s);
		/* and it reads back */
		assert_int_equal(query_parse_time(buf, &back), 0);
		assert_int_equal(back, cases[i].ns);
	}
	assert_int_equal(query_format_time(0, buf, 10), -ENOSPC);
}

/* ---- limit, cursor, step ---- */

static void test_limit(void **state)
{
	unsigned v = 77;

	assert_int_equal(query_parse_limit("1", 1000, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(query_parse_limit("1000", 1000, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(query_parse_limit("007", 1000, &v), 0);
	assert_int_equal(v, 7);
	v = 77;
	assert_int_equal(query_parse_limit("0", 1000, &v), -ERANGE);
	assert_int_equal(query_parse_limit("1001", 1000, &v), -ERANGE);
	assert_int_equal(query_parse_limit("99999999999999999999999", 1000, &v), -ERANGE);
	assert_int_equal(query_parse_limit("", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit("-1", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit("+5", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit("5x", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit("5 ", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit("1.5", 1000, &v), -EINVAL);
	assert_int_equal(query_parse_limit(NULL, 1000, &v), -EINVAL);
	assert_int_equal(v, 77);
}

static void test_cursor(void **state)
{
	int64_t id = 5;

	assert_int_equal(query_parse_cursor("1", &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(query_parse_cursor("9223372036854775807", &id), 0);
	assert_int_equal(id, INT64_MAX);
	id = 5;
	assert_int_equal(query_parse_cursor("9223372036854775808", &id), -ERANGE);
	assert_int_equal(query_parse_cursor("0", &id), -ERANGE);
	assert_int_equal(query_parse_cursor("-3", &id), -EINVAL);
	assert_int_equal(query_parse_cursor("abc", &id), -EINVAL);
	assert_int_equal(query_parse_cursor("12abc", &id), -EINVAL);
	assert_int_equal(query_parse_cursor("", &id), -EINVAL);
	assert_int_equal(id, 5);
}

static void test_step(void **state)
{
	static const struct {
		const char *s;
		int64_t ns;
	} ok[] = {
	    {"15", 15 * S},    {"0.5", S / 2},	       {"15s", 15 * S},
	    {"1m", 60 * S},    {"250ms", 250000000},   {"1h30m", 5400 * S},
	    {"1d", 86400 * S}, {"2w", 14 * 86400 * S}, {"1h1m1s1ms", 3661 * S + 1000000},
	    {"90m", 5400 * S},
	};
	static const char *const bad[] = {
	    "", "s", "15x", "1m1h", "1s1s", "1.5s", "-1s", "15 s", "m5", "1ms1s", "abc",
	};
	int64_t ns;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ns = 0;
		if (query_parse_step(ok[i].s, &ns) || ns != ok[i].ns)
			fail_msg("step %s: got %lld", ok[i].s, (long long)ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (query_parse_step(bad[i], &ns) != -EINVAL)
			fail_msg("step \"%s\" accepted", bad[i]);
	}
	assert_int_equal(query_parse_step("0", &ns), -ERANGE);
	assert_int_equal(query_parse_step("0s", &ns), -ERANGE);
	assert_int_equal(query_parse_step("99999999999w", &ns), -ERANGE);
}

/* ---- the window and parameter checks on hand-built requests ---- */

static json_t *error_of(struct http_response *res)
{
	json_error_t je;
	json_t *j = json_loadb(res->body, res->len, 0, &je);

	assert_non_null(j);
	assert_string_equal(res->content_type, "application/json");
	return j;
}

static void assert_error(struct http_response *res, int status, const char *message)
{
	json_t *j = error_of(res);
	const char *code = NULL, *msg = NULL;

	assert_int_equal(res->status, status);
	assert_int_equal(json_unpack(j, "{s:{s:s,s:s}}", "error", "code", &code, "message", &msg),
			 0);
	assert_string_equal(code, "bad_request");
	if (strcmp(msg, message))
		fail_msg("message \"%s\", want \"%s\"", msg, message);
	json_decref(j);
	free(res->body);
	memset(res, 0, sizeof(*res));
}

#define REQ(...)                                                                                   \
	((struct http_request){.method = "GET",                                                    \
			       .path = "/api/v1/events",                                           \
			       .args = (const char *const[]){__VA_ARGS__},                         \
			       .n_args =                                                           \
				   sizeof((const char *[]){__VA_ARGS__}) / (2 * sizeof(char *))})

static void test_window(void **state)
{
	struct http_response res = {0};
	struct query_window w;
	struct http_request r;

	r = (struct http_request){.method = "GET", .path = "/x"};
	assert_int_equal(query_window_parse(&r, &w, &res), 0);
	assert_int_equal(w.since_ns, 0);
	assert_int_equal(w.until_ns, INT64_MAX);
	assert_int_equal(w.limit, QUERY_LIMIT_DEFAULT);
	assert_int_equal(w.cursor, INT64_MAX);
	assert_null(res.body);

	r = REQ("since", "2026-12-02T10:00:00Z", "until", "1796205601.5", "limit", "1000", "cursor",
		"42");
	assert_int_equal(query_window_parse(&r, &w, &res), 0);
	assert_int_equal(w.since_ns, 1796205600 * S);
	assert_int_equal(w.until_ns, 1796205601 * S + S / 2);
	assert_int_equal(w.limit, 1000);
	assert_int_equal(w.cursor, 42);

	r = REQ("since", "yesterday");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "since: not an RFC 3339 time or unix seconds: \"yesterday\"");

	r = REQ("until", "2026-02-30T00:00:00Z");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "until: not an RFC 3339 time or unix seconds: \"2026-02-30T00:00:00Z\"");

	r = REQ("since", "1796205600000");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "since: time out of range (years 1678-2262; unix seconds, not milliseconds): "
		     "\"1796205600000\"");

	r = REQ("since", "2026-12-02T10:00:01Z", "until", "2026-12-02T10:00:00Z");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "since \"2026-12-02T10:00:01Z\" is after until \"2026-12-02T10:00:00Z\"");

	/* an until before the epoch is after the default since */
	r = REQ("until", "1969-01-01T00:00:00Z");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "since (default) is after until \"1969-01-01T00:00:00Z\"");

	r = REQ("limit", "0");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"0\"");
	r = REQ("limit", "1001");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"1001\"");
	r = REQ("limit", "ten");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"ten\"");

	r = REQ("cursor", "abc");
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	assert_error(&res, 400, "cursor: not a next_cursor value from this API: \"abc\"");

	/* a long value is cut in the message */
	char long_v[300];
	memset(long_v, 'x', sizeof(long_v) - 1);
	long_v[sizeof(long_v) - 1] = '\0';
	r = REQ("since", long_v);
	assert_int_equal(query_window_parse(&r, &w, &res), -EINVAL);
	json_t *j = error_of(&res);
	const char *msg =
	    json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	assert_true(strlen(msg) < 160);
	assert_non_null(strstr(msg, "\"..."));
	json_decref(j);
	free(res.body);
	memset(&res, 0, sizeof(res));
}

static void test_params_check(void **state)
{
	static const char *const allowed[] = {"collector", "since", "match[]", NULL};
	struct http_response res = {0};
	struct http_request r;

	r = REQ("collector", "mptcp", "match[]", "a", "match[]", "b");
	assert_int_equal(query_params_check(&r, allowed, &res), 0);
	assert_null(res.body);

	r = REQ("collector", "mptcp", "foo", "1", "bar", "", "foo", "2");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400,
		     "unknown query parameters \"foo\", \"bar\" (allowed: collector, since, "
		     "match[])");

	r = REQ("limt", "5");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400,
		     "unknown query parameter \"limt\" (allowed: collector, since, match[])");

	r = REQ("x", "1");
	assert_int_equal(query_params_check(&r, NULL, &res), -EINVAL);
	assert_error(&res, 400, "unknown query parameter \"x\" (allowed: none)");

	r = REQ("since", "1", "since", "2");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400, "since: given more than once");
}

/* ---- gzip ---- */

static void test_accepts_gzip(void **state)
{
	(void)state;
	assert_true(http_accepts_gzip("gzip"));
	assert_true(http_accepts_gzip("gzip, deflate, br"));
	assert_true(http_accepts_gzip("deflate, GZIP;q=0.5"));
	assert_true(http_accepts_gzip("br;q=1.0, gzip;q=0.8, *;q=0.1"));
	assert_true(http_accepts_gzip("*"));
	assert_true(http_accepts_gzip(" gzip ; q=1"));
	assert_false(http_accepts_gzip(NULL));
	assert_false(http_accepts_gzip(""));
	assert_false(http_accepts_gzip("identity"));
	assert_false(http_accepts_gzip("gzip;q=0"));
	assert_false(http_accepts_gzip("gzip;q=0.000, deflate"));
	assert_false(http_accepts_gzip("x-gzip2, deflate")); /* not a prefix match */
	assert_false(http_accepts_gzip("deflate;q=0.5, br"));
}

/* Round trip through zlib's own inflate (gzip framing). */
static void test_gzip_roundtrip(void **state)
{
	size_t len = 200000, zlen = 0;
	char *in = malloc(len), *z = NULL, *back = malloc(len + 1);
	z_stream s = {0};

	(void)state;
	assert_non_null(in);
	assert_non_null(back);
	for (size_t i = 0; i < len; i++)
		in[i] = "sysobs_packet_drops_total{reason=\"NO_SOCKET\"} 42\n"[i % 47];
	assert_int_equal(http_gzip(in, len, &z, &zlen), 0);
	assert_true(zlen > 18 && zlen < len / 10);
	assert_int_equal((unsigned char)z[0], 0x1f); /* gzip magic */
	assert_int_equal((unsigned char)z[1], 0x8b);
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zlen;
	s.next_out = (Bytef *)back;
	s.avail_out = (uInt)len + 1;
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
	assert_int_equal(s.total_out, len);
	assert_memory_equal(in, back, len);
	inflateEnd(&s);
	free(z);
	/* empty input is a valid (tiny) gzip member too */
	assert_int_equal(http_gzip("", 0, &z, &zlen), 0);
	assert_true(zlen >= 18);
	free(z);
	free(in);
	free(back);
}

/* ---- listen addresses ---- */

static void test_listen_parse(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	static const char *const bad[] = {
	    "",
	    "9464",
	    "127.0.0.1",
	    "127.0.0.1:",
	    "127.0.0.1:65536",
	    "127.0.0.1:-1",
	    "127.0.0.1:94x",
	    "::1:9464",
	    "[::1]",
	    "[::1]9464",
	    "[]:9464",
	    "[nope]:1",
	    "999.0.0.1:1",
	    "example.org:80",
	    "127.0.0.1:0000009464",
	};

	assert_int_equal(http_listen_parse("127.0.0.1:9464", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_LOOPBACK);

	assert_int_equal(http_listen_parse("[::1]:9464", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9464);
	assert_true(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr));

	assert_int_equal(http_listen_parse("0.0.0.0:0", &ss, &len), 0);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 0);
	assert_int_equal(http_listen_parse(":9464", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_ANY);
	assert_int_equal(http_listen_parse("localhost:80", &ss, &len), 0);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_LOOPBACK);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (http_listen_parse(bad[i], &ss, &len) != -EINVAL)
			fail_msg("listen \"%s\" accepted", bad[i]);
	}
}

/* ---- a live server ---- */

static void h_window(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const allowed[] = {"since", "until", "limit", "cursor", NULL};
	struct query_window w;

	if (query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	http_reply_json(res, 200,
			json_pack("{s:I,s:I,s:i,s:I}", "since", (json_int_t)w.since_ns, "until",
				  (json_int_t)w.until_ns, "limit", (int)w.limit, "cursor",
				  (json_int_t)w.cursor));
}

static void h_echo(const struct http_request *req, struct http_response *res, void *arg)
{
	http_reply_json(res, 200, json_pack("{s:I}", "len", (json_int_t)req->body_len));
}

static void h_sub(const struct http_request *req, struct http_response *res, void *arg)
{
	http_reply_json(res, 200,
			json_pack("{s:s,s:s,s:s}", "subpath", req->subpath, "tag", (char *)arg,
				  "method", req->method));
}

static void h_silent(const struct http_request *req, struct http_response *res, void *arg)
{
}

struct reply {
	long status;
	char *body;
	size_t len;
	char ctype[128];
	char allow[128];
};

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	char *b = realloc(r->body, r->len + sz * n + 1);

	if (!b)
		return 0;
	memcpy(b + r->len, p, sz * n);
	r->body = b;
	r->len += sz * n;
	r->body[r->len] = '\0';
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = sz * n;

	if (len > 6 && !strncasecmp(p, "Allow:", 6))
		snprintf(r->allow, sizeof(r->allow), "%.*s", (int)(len - 9), p + 7);
	return len;
}

/* method, path (with query), optional body; chunked sends it without a
 * Content-Length. */
static struct reply http_do(uint16_t port, const char *method, const char *path, const char *body,
			    size_t body_len, bool chunked)
{
	struct reply r = {0};
	struct curl_slist *hdrs = NULL;
	char url[2048];
	char *ct = NULL;
	CURL *c = curl_easy_init();

	assert_non_null(c);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
		hdrs = curl_slist_append(hdrs, "Expect:");
		if (chunked)
			hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	}
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	snprintf(r.ctype, sizeof(r.ctype), "%s", ct ? ct : "");
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return r;
}

static struct reply get(uint16_t port, const char *path)
{
	return http_do(port, "GET", path, NULL, 0, false);
}

static void assert_json_error(struct reply *r, long status, const char *code, const char *msg)
{
	json_t *j = json_loads(r->body ? r->body : "", 0, NULL);
	const char *c = NULL, *m = NULL;

	if (r->status != status)
		fail_msg("status %ld, want %ld; body %s", r->status, status, r->body);
	assert_non_null(j);
	assert_string_equal(r->ctype, "application/json");
	assert_int_equal(json_unpack(j, "{s:{s:s,s:s}}", "error", "code", &c, "message", &m), 0);
	assert_string_equal(c, code);
	if (msg && strcmp(m, msg))
		fail_msg("message \"%s\", want \"%s\"", m, msg);
	json_decref(j);
	free(r->body);
}

static double metric_value(struct metrics *m, const char *line_prefix)
{
	char *buf, *p;
	size_t len;
	double v = -1;

	assert_int_equal(metrics_render_text(m, &buf, &len), 0);
	p = strstr(buf, line_prefix);
	if (p)
		v = strtod(p + strlen(line_prefix), NULL);
	free(buf);
	return v;
}

static void test_server(void **state)
{
	struct http_config cfg = {.listen = "127.0.0.1:0",
				  .max_connections = 16,
				  .timeout_s = 5,
				  .threads = 2,
				  .admin = true};
	struct metrics *m = metrics_new();
	struct http_server *h = http_new(&cfg, m);
	struct reply r;
	uint16_t port;
	json_t *j;

	assert_non_null(h);
	assert_int_equal(http_route(h, "GET", "/api/v1/window", false, h_window, NULL), 0);
	assert_int_equal(http_route(h, "POST", "/api/v1/echo", false, h_echo, NULL), 0);
	assert_int_equal(http_route(h, "GET", "/api/v1/pre", true, h_sub, "pre"), 0);
	assert_int_equal(http_route(h, "GET", "/api/v1/pre/deeper", true, h_sub, "deeper"), 0);
	assert_int_equal(http_route(h, "DELETE", "/api/v1/pre/deeper", true, h_sub, "del"), 0);
	assert_int_equal(http_route(h, "GET", "/silent", false, h_silent, NULL), 0);
	assert_int_equal(http_route(h, "GET", "/api/v1/window", false, h_window, NULL), -EEXIST);
	assert_int_equal(http_route(h, "GET", "relative", false, h_window, NULL), -EINVAL);
	assert_int_equal(http_start(h), 0);
	port = http_port(h);
	assert_true(port > 0);
	assert_int_equal(http_route(h, "GET", "/late", false, h_window, NULL), -EBUSY);

	/* the example of the issue, byte for byte */
	r = get(port, "/api/v1/window?since=yesterday");
	assert_int_equal(r.status, 400);
	assert_string_equal(r.ctype, "application/json");
	assert_string_equal(r.body, "{\"error\":{\"code\":\"bad_request\",\"message\":\"since: not "
				    "an RFC 3339 time or unix seconds: \\\"yesterday\\\"\"}}");
	free(r.body);

	/* percent-encoded '+' and a raw one (a space once decoded) agree */
	r = get(port, "/api/v1/window?since=2026-12-02T12:00:00%2B02:00&limit=5");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "since")), 1796205600 * S);
	assert_int_equal(json_integer_value(json_object_get(j, "limit")), 5);
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/window?since=2026-12-02T12:00:00+02:00");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "since")), 1796205600 * S);
	json_decref(j);
	free(r.body);

	r = get(port, "/api/v1/window?limit=0");
	assert_json_error(&r, 400, "bad_request",
			  "limit: must be an integer from 1 to 1000 (the cap): \"0\"");
	r = get(port, "/api/v1/window?limit=100000");
	assert_json_error(&r, 400, "bad_request",
			  "limit: must be an integer from 1 to 1000 (the cap): \"100000\"");
	r = get(port, "/api/v1/window?since=20&until=10");
	assert_json_error(&r, 400, "bad_request", "since \"20\" is after until \"10\"");
	r = get(port, "/api/v1/window?foo=1&since=1&bar");
	assert_json_error(&r, 400, "bad_request",
			  "unknown query parameters \"foo\", \"bar\" (allowed: since, until, "
			  "limit, cursor)");
	/* too many parameters */
	char many[2048] = "/api/v1/window?";
	for (int i = 0; i < HTTP_ARGS_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "a%d=1&", i);
	r = get(port, many);
	assert_json_error(&r, 400, "bad_request", "more than 64 query parameters");

	/* unknown path, wrong method */
	r = get(port, "/nope");
	assert_json_error(&r, 404, "not_found", "no such route: /nope");
	r = get(port, "/api/v1/windowx");
	assert_json_error(&r, 404, "not_found", NULL);
	r = http_do(port, "POST", "/api/v1/window", "x", 1, false);
	assert_string_equal(r.allow, "GET, HEAD");
	assert_json_error(&r, 405, "method_not_allowed",
			  "method POST not allowed on /api/v1/window (allowed: GET, HEAD)");
	r = http_do(port, "PUT", "/api/v1/pre/deeper/x", NULL, 0, false);
	assert_string_equal(r.allow, "GET, DELETE, HEAD");
	assert_json_error(&r, 405, "method_not_allowed", NULL);

	/* HEAD is GET without a body */
	r = http_do(port, "HEAD", "/api/v1/window", NULL, 0, false);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.ctype, "application/json");
	assert_int_equal(r.len, 0);
	free(r.body);

	/* prefix routes: the most specific wins; "/api/v1/prex" is not under
	 * "/api/v1/pre" */
	r = get(port, "/api/v1/pre");
	j = json_loads(r.body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "subpath")), "");
	assert_string_equal(json_string_value(json_object_get(j, "tag")), "pre");
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/pre/abc/def");
	j = json_loads(r.body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "subpath")), "/abc/def");
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/pre/deeper/x");
	j = json_loads(r.body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "tag")), "deeper");
	assert_string_equal(json_string_value(json_object_get(j, "subpath")), "/x");
	json_decref(j);
	free(r.body);
	r = http_do(port, "DELETE", "/api/v1/pre/deeper", NULL, 0, false);
	j = json_loads(r.body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "tag")), "del");
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/prex");
	assert_json_error(&r, 404, "not_found", NULL);

	/* bodies: up to 64 KiB, then 413, declared or chunked */
	char *big = malloc(HTTP_BODY_MAX + 10);
	memset(big, 'b', HTTP_BODY_MAX + 10);
	r = http_do(port, "POST", "/api/v1/echo", big, HTTP_BODY_MAX, false);
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "len")), HTTP_BODY_MAX);
	json_decref(j);
	free(r.body);
	r = http_do(port, "POST", "/api/v1/echo", big, HTTP_BODY_MAX + 1, false);
	assert_json_error(&r, 413, "payload_too_large", "request body larger than 65536 bytes");
	r = http_do(port, "POST", "/api/v1/echo", big, HTTP_BODY_MAX + 10, true);
	assert_json_error(&r, 413, "payload_too_large", NULL);
	r = http_do(port, "POST", "/api/v1/echo", big, 1000, true);
	assert_int_equal(r.status, 200);
	free(r.body);
	free(big);

	/* a handler that answers nothing yields a 500, not a hang */
	r = get(port, "/silent");
	assert_json_error(&r, 500, "internal", NULL);

	/* counters by registered route, never by raw URL */
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"/api/v1/window\","
				    "code=\"400\"} ") >= 6);
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"other\",code=\"404\"} ") ==
		    3);
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"/api/v1/pre\","
				    "code=\"404\"} ") == -1);
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"/api/v1/echo\","
				    "code=\"413\"} ") == 2);
	assert_true(metric_value(m, "sysobs_http_request_duration_seconds_count{route=\"/api/v1/"
				    "pre\"} ") == 2);
	char *text;
	size_t len;
	assert_int_equal(metrics_render_text(m, &text, &len), 0);
	assert_null(strstr(text, "yesterday"));
	assert_null(strstr(text, "/nope"));
	free(text);

	http_free(h);
	metrics_free(m);
}

static void test_server_admin_off_and_bind(void **state)
{
	struct http_config cfg = {.listen = "127.0.0.1:0", .threads = 1};
	struct http_server *h = http_new(&cfg, NULL), *h2;
	struct reply r;

	assert_non_null(h);
	assert_int_equal(http_route(h, "POST", "/api/v1/echo", false, h_echo, NULL), 0);
	assert_int_equal(http_start(h), 0);
	r = http_do(http_port(h), "POST", "/api/v1/echo", "x", 1, false);
	assert_json_error(&r, 403, "forbidden", NULL);

	/* the same port again: EADDRINUSE comes back as such */
	char listen[32];
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", http_port(h));
	cfg.listen = listen;
	h2 = http_new(&cfg, NULL);
	assert_non_null(h2);
	assert_int_equal(http_start(h2), -EADDRINUSE);
	http_free(h2);
	http_free(h);

	cfg.listen = "nonsense";
	errno = 0;
	assert_null(http_new(&cfg, NULL));
	assert_int_equal(errno, EINVAL);
	http_free(NULL);
}

static void test_server_ipv6(void **state)
{
	struct http_config cfg = {.listen = "[::1]:0", .threads = 1};
	struct http_server *h = http_new(&cfg, NULL);
	int err;

	assert_non_null(h);
	assert_int_equal(http_route(h, "GET", "/w", false, h_window, NULL), 0);
	err = http_start(h);
	if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT) {
		http_free(h);
		print_message("SKIP: no IPv6 loopback here\n");
		skip();
	}
	assert_int_equal(err, 0);
	char url[64];
	snprintf(url, sizeof(url), "http://[::1]:%u/w?limit=3", http_port(h));
	CURL *c = curl_easy_init();
	struct reply r = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	assert_int_equal(r.status, 200);
	free(r.body);
	http_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time_rfc3339),   cmocka_unit_test(test_time_rfc3339_invalid),
	    cmocka_unit_test(test_time_unix),	   cmocka_unit_test(test_time_format),
	    cmocka_unit_test(test_limit),	   cmocka_unit_test(test_cursor),
	    cmocka_unit_test(test_step),	   cmocka_unit_test(test_window),
	    cmocka_unit_test(test_params_check),   cmocka_unit_test(test_listen_parse),
	    cmocka_unit_test(test_server),	   cmocka_unit_test(test_server_admin_off_and_bind),
	    cmocka_unit_test(test_server_ipv6),	   cmocka_unit_test(test_accepts_gzip),
	    cmocka_unit_test(test_gzip_roundtrip),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
