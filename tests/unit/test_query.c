/* SPDX-License-Identifier: MIT */
/*
 * Query-parameter parsers (limits, cursors; times and durations are
 * agent/timeutil's, tested in test_timeutil.c), the start/end/limit/cursor
 * window and step on hand-built requests, then the same rules through a real
 * libmicrohttpd server on an ephemeral
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

#include <jansson.h>
#include <zlib.h>

#include <cmocka.h>

#include "api/http.h"
#include "metrics/metrics.h"
#include "api/query.h"

#define S 1000000000LL

/* ---- limit, cursor ---- */

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

/* A fixed "now" for relative times: 2026-12-02T10:00:00Z. */
#define NOW (1796205600 * S)

/* Tokens in every printed form; the 8-digit rule decides the ambiguous. */
static void test_token(void **state)
{
	uint32_t t = 0;

	(void)state;
	assert_int_equal(query_parse_token("d114306a", &t), 0);
	assert_int_equal(t, 0xd114306a);
	assert_int_equal(query_parse_token("D114306A", &t), 0);
	assert_int_equal(t, 0xd114306a);
	assert_int_equal(query_parse_token("0xd114306a", &t), 0);
	assert_int_equal(t, 0xd114306a);
	assert_int_equal(query_parse_token("0X1f", &t), 0);
	assert_int_equal(t, 0x1f);
	assert_int_equal(query_parse_token("3507761258", &t), 0); /* decimal of d114306a */
	assert_int_equal(t, 0xd114306a);
	assert_int_equal(query_parse_token("12345678", &t), 0); /* 8 digits: hex, as printed */
	assert_int_equal(t, 0x12345678);
	assert_int_equal(query_parse_token("012345678", &t), 0); /* ... a decimal with a 0 */
	assert_int_equal(t, 12345678);
	assert_int_equal(query_parse_token("0000002a", &t), 0);
	assert_int_equal(t, 42);
	assert_int_equal(query_parse_token("42", &t), 0);
	assert_int_equal(t, 42);
	assert_int_equal(query_parse_token("4294967295", &t), 0);
	assert_int_equal(t, UINT32_MAX);
	assert_int_equal(query_parse_token("4294967296", &t), -ERANGE);
	assert_int_equal(query_parse_token("", &t), -EINVAL);
	assert_int_equal(query_parse_token("0x", &t), -EINVAL);
	assert_int_equal(query_parse_token("0x123456789", &t), -EINVAL);
	assert_int_equal(query_parse_token("d11430", &t), -EINVAL); /* hex, not 8 digits */
	assert_int_equal(query_parse_token("d114306g", &t), -EINVAL);
	assert_int_equal(query_parse_token("-1", &t), -EINVAL);
	assert_int_equal(query_parse_token("+42", &t), -EINVAL);
	assert_int_equal(query_parse_token(" 42", &t), -EINVAL);
	assert_int_equal(query_parse_token("99999999999", &t), -EINVAL);
}

static void test_window_defaults_to_everything(void **state)
{
	struct http_response res = {0};
	struct query_window w;
	struct http_request r;

	r = (struct http_request){.method = "GET", .path = "/x"};
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.start_ns, 0);
	assert_int_equal(w.end_ns, INT64_MAX);
	assert_int_equal(w.limit, QUERY_LIMIT_DEFAULT);
	assert_int_equal(w.cursor, INT64_MAX);
	assert_false(w.start_set);
	assert_false(w.end_set);
	assert_null(res.body);
}

static void test_window_reads_every_time_form(void **state)
{
	struct http_response res = {0};
	struct query_window w;
	struct http_request r;

	r = REQ("start", "2026-12-02T10:00:00Z", "end", "1796205601.5", "limit", "1000", "cursor",
		"42");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.start_ns, 1796205600 * S);
	assert_int_equal(w.end_ns, 1796205601 * S + S / 2);
	assert_true(w.start_set);
	assert_true(w.end_set);
	assert_int_equal(w.limit, 1000);
	assert_int_equal(w.cursor, 42);

	r = REQ("start", "-15m", "end", "now");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.start_ns, NOW - 900 * S);
	assert_int_equal(w.end_ns, NOW);

	r = REQ("start", "-1h30m");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.start_ns, NOW - 5400 * S);
	assert_true(w.start_set);
	assert_false(w.end_set);

	r = REQ("end", "+5m");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.end_ns, NOW + 300 * S);

	/* query_window_parse() is relative to the wall clock */
	r = REQ("start", "-1h", "end", "now");
	assert_int_equal(query_window_parse(&r, &w, &res), 0);
	assert_int_equal(w.end_ns - w.start_ns, 3600 * S);
	assert_true(w.end_ns > 1796205600 * S - 3650 * 86400 * S); /* a plausible now */
	assert_null(res.body);
}

static void test_window_refuses_bad_values_with_a_400(void **state)
{
	struct http_response res = {0};
	struct query_window w;
	struct http_request r;

	r = REQ("start", "yesterday");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "start: not an RFC 3339 time, unix seconds or a relative time such as -15m: "
		     "\"yesterday\"");

	r = REQ("end", "2026-02-30T00:00:00Z");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "end: not an RFC 3339 time, unix seconds or a relative time such as -15m: "
		     "\"2026-02-30T00:00:00Z\"");

	r = REQ("end", "-15m junk");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "end: not an RFC 3339 time, unix seconds or a relative time such as -15m: "
		     "\"-15m junk\"");

	r = REQ("start", "1796205600000");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "start: time out of range (years 1678-2262; unix seconds, not milliseconds): "
		     "\"1796205600000\"");

	r = REQ("start", "-300y");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "start: time out of range (years 1678-2262; unix seconds, not milliseconds): "
		     "\"-300y\"");

	r = REQ("limit", "0");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"0\"");
	r = REQ("limit", "1001");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"1001\"");
	r = REQ("limit", "ten");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"ten\"");
	r = REQ("limit", "10 ");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "limit: must be an integer from 1 to 1000 (the cap): \"10 \"");

	r = REQ("cursor", "abc");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "cursor: not a next_cursor value from this API: \"abc\"");

	/* a long value is cut in the message */
	char long_v[300];
	memset(long_v, 'x', sizeof(long_v) - 1);
	long_v[sizeof(long_v) - 1] = '\0';
	r = REQ("start", long_v);
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	json_t *j = error_of(&res);
	const char *msg =
	    json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	assert_true(strlen(msg) < 200);
	assert_non_null(strstr(msg, "\"..."));
	json_decref(j);
	free(res.body);
	memset(&res, 0, sizeof(res));
}

static void test_window_start_after_end_names_both(void **state)
{
	struct http_response res = {0};
	struct query_window w;
	struct http_request r;

	r = REQ("start", "2026-12-02T10:00:01Z", "end", "2026-12-02T10:00:00Z");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400,
		     "start \"2026-12-02T10:00:01Z\" is after end \"2026-12-02T10:00:00Z\"");

	r = REQ("start", "-5m", "end", "-10m");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "start \"-5m\" is after end \"-10m\"");

	/* an end before the epoch is after the default start */
	r = REQ("end", "1969-01-01T00:00:00Z");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), -EINVAL);
	assert_error(&res, 400, "start (default) is after end \"1969-01-01T00:00:00Z\"");

	/* equal is an empty window, not an error */
	r = REQ("start", "now", "end", "1796205600");
	assert_int_equal(query_window_parse_at(&r, NOW, &w, &res), 0);
	assert_int_equal(w.start_ns, w.end_ns);
}

static void test_step_takes_the_duration_grammar(void **state)
{
	static const struct {
		const char *s;
		int64_t ns;
	} ok[] = {
	    {"15", 15 * S},    {"0.5", S / 2},		{"15s", 15 * S},
	    {"1m", 60 * S},    {"250ms", 250000000},	{"1h30m", 5400 * S},
	    {"1d", 86400 * S}, {"2w", 14 * 86400 * S},	{"1h1m1s1ms", 3661 * S + 1000000},
	    {"90m", 5400 * S}, {"1y", 365 * 86400 * S},
	};
	static const char *const bad[] = {
	    "", "s", "15x", "1m1h", "1s1s", "1.5s", "-1s", "15 s", "m5", "1ms1s", "abc", "15s ",
	};
	struct http_response res = {0};
	struct http_request r;
	int64_t ns;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ns = 0;
		r = REQ("step", ok[i].s);
		if (query_step_parse(&r, &ns, &res) || ns != ok[i].ns)
			fail_msg("step %s: got %lld", ok[i].s, (long long)ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[160];

		ns = 7;
		r = REQ("step", bad[i]);
		if (query_step_parse(&r, &ns, &res) != -EINVAL)
			fail_msg("step \"%s\" accepted", bad[i]);
		snprintf(want, sizeof(want),
			 "step: not a duration such as 15s, 1m, 1h30m or seconds: \"%s\"", bad[i]);
		assert_error(&res, 400, want);
		assert_int_equal(ns, 7);
	}
	r = REQ("step", "0s");
	assert_int_equal(query_step_parse(&r, &ns, &res), -EINVAL);
	assert_error(&res, 400, "step: must be more than 0: \"0s\"");
	r = REQ("step", "0");
	assert_int_equal(query_step_parse(&r, &ns, &res), -EINVAL);
	assert_error(&res, 400, "step: must be more than 0: \"0\"");
	r = REQ("step", "99999999999w");
	assert_int_equal(query_step_parse(&r, &ns, &res), -EINVAL);
	assert_error(&res, 400, "step: too long (at most 292y): \"99999999999w\"");
	/* absent: the caller's default stays */
	r = REQ("start", "0");
	ns = 42;
	assert_int_equal(query_step_parse(&r, &ns, &res), 0);
	assert_int_equal(ns, 42);
	assert_null(res.body);
}

static void test_params_check(void **state)
{
	static const char *const allowed[] = {"collector", "start", "match[]", NULL};
	struct http_response res = {0};
	struct http_request r;

	r = REQ("collector", "mptcp", "match[]", "a", "match[]", "b");
	assert_int_equal(query_params_check(&r, allowed, &res), 0);
	assert_null(res.body);

	r = REQ("collector", "mptcp", "foo", "1", "bar", "", "foo", "2");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400,
		     "unknown query parameters \"foo\", \"bar\" (allowed: collector, start, "
		     "match[])");

	r = REQ("limt", "5");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400,
		     "unknown query parameter \"limt\" (allowed: collector, start, match[])");

	r = REQ("x", "1");
	assert_int_equal(query_params_check(&r, NULL, &res), -EINVAL);
	assert_error(&res, 400, "unknown query parameter \"x\" (allowed: none)");

	r = REQ("start", "1", "start", "2");
	assert_int_equal(query_params_check(&r, allowed, &res), -EINVAL);
	assert_error(&res, 400, "start: given more than once");

	/* since/until are gone: unknown, with the allowed ones named */
	static const char *const window[] = {QUERY_WINDOW_PARAMS, NULL};
	r = REQ("since", "1", "until", "2");
	assert_int_equal(query_params_check(&r, window, &res), -EINVAL);
	assert_error(&res, 400,
		     "unknown query parameters \"since\", \"until\" (allowed: start, end, limit, "
		     "cursor)");
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

/* A JSON body for the test routes (steals j). */
static void reply_json(struct http_response *res, int status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	http_reply_text(res, status, "application/json", s, s ? strlen(s) : 0);
}

static void h_window(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const allowed[] = {QUERY_WINDOW_PARAMS, NULL};
	struct query_window w;

	if (query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	reply_json(res, 200,
		   json_pack("{s:I,s:I,s:i,s:I}", "start", (json_int_t)w.start_ns, "end",
			     (json_int_t)w.end_ns, "limit", (int)w.limit, "cursor",
			     (json_int_t)w.cursor));
}

static void h_echo(const struct http_request *req, struct http_response *res, void *arg)
{
	reply_json(res, 200, json_pack("{s:I}", "len", (json_int_t)req->body_len));
}

static void h_sub(const struct http_request *req, struct http_response *res, void *arg)
{
	reply_json(res, 200,
		   json_pack("{s:s,s:s,s:s}", "subpath", req->subpath, "tag", (char *)arg, "method",
			     req->method));
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
		/* state-changing routes take JSON (or protobuf) bodies only */
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
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
	r = get(port, "/api/v1/window?start=yesterday");
	assert_int_equal(r.status, 400);
	assert_string_equal(r.ctype, "application/json");
	assert_string_equal(r.body,
			    "{\"error\":{\"code\":\"bad_request\",\"message\":\"start: not "
			    "an RFC 3339 time, unix seconds or a relative time such as -15m: "
			    "\\\"yesterday\\\"\"}}");
	free(r.body);

	/* percent-encoded '+' and a raw one (a space once decoded) agree */
	r = get(port, "/api/v1/window?start=2026-12-02T12:00:00%2B02:00&limit=5");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "start")), 1796205600 * S);
	assert_int_equal(json_integer_value(json_object_get(j, "limit")), 5);
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/window?start=2026-12-02T12:00:00+02:00");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "start")), 1796205600 * S);
	json_decref(j);
	free(r.body);
	/* relative times, with the '+' raw and encoded */
	r = get(port, "/api/v1/window?start=-1h&end=%2B1h");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "end")) -
			     json_integer_value(json_object_get(j, "start")),
			 7200 * S);
	json_decref(j);
	free(r.body);
	r = get(port, "/api/v1/window?start=now&end=+1h");
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "end")) -
			     json_integer_value(json_object_get(j, "start")),
			 3600 * S);
	json_decref(j);
	free(r.body);

	r = get(port, "/api/v1/window?limit=0");
	assert_json_error(&r, 400, "bad_request",
			  "limit: must be an integer from 1 to 1000 (the cap): \"0\"");
	r = get(port, "/api/v1/window?limit=100000");
	assert_json_error(&r, 400, "bad_request",
			  "limit: must be an integer from 1 to 1000 (the cap): \"100000\"");
	r = get(port, "/api/v1/window?start=20&end=10");
	assert_json_error(&r, 400, "bad_request", "start \"20\" is after end \"10\"");
	r = get(port, "/api/v1/window?foo=1&start=1&bar");
	assert_json_error(&r, 400, "bad_request",
			  "unknown query parameters \"foo\", \"bar\" (allowed: start, end, "
			  "limit, cursor)");
	r = get(port, "/api/v1/window?since=1");
	assert_json_error(&r, 400, "bad_request",
			  "unknown query parameter \"since\" (allowed: start, end, limit, cursor)");
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

	/* bodies: up to 64 KiB, then 413 */
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
	/* a chunked body is refused whatever its size: a body needs a
	 * Content-Length (issue #24 item 6) */
	r = http_do(port, "POST", "/api/v1/echo", big, HTTP_BODY_MAX + 10, true);
	assert_json_error(&r, 411, "length_required", NULL);
	r = http_do(port, "POST", "/api/v1/echo", big, 1000, true);
	assert_json_error(&r, 411, "length_required", NULL);
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
	/* refused before routing (a declared body over the limit is
	 * refused with the header, before a byte of it is waited for):
	 * counted as "other" */
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"/api/v1/echo\","
				    "code=\"413\"} ") == -1);
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"other\",code=\"413\"} ") ==
		    1);
	assert_true(metric_value(m, "sysobs_http_requests_total{route=\"other\",code=\"411\"} ") ==
		    2);
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
	    cmocka_unit_test(test_limit),
	    cmocka_unit_test(test_cursor),
	    cmocka_unit_test(test_token),
	    cmocka_unit_test(test_window_defaults_to_everything),
	    cmocka_unit_test(test_window_reads_every_time_form),
	    cmocka_unit_test(test_window_refuses_bad_values_with_a_400),
	    cmocka_unit_test(test_window_start_after_end_names_both),
	    cmocka_unit_test(test_step_takes_the_duration_grammar),
	    cmocka_unit_test(test_params_check),
	    cmocka_unit_test(test_listen_parse),
	    cmocka_unit_test(test_server),
	    cmocka_unit_test(test_server_admin_off_and_bind),
	    cmocka_unit_test(test_server_ipv6),
	    cmocka_unit_test(test_accepts_gzip),
	    cmocka_unit_test(test_gzip_roundtrip),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
