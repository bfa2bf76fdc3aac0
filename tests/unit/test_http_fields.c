/* SPDX-License-Identifier: MIT */
/*
 * http_fields_check (api/http_header.c): the fields of a request that
 * libmicrohttpd parsed itself (a kept-alive connection's next requests,
 * every request over TLS) are held to the first request's rules, with the
 * same statuses and error codes (issue 30).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/http_internal.h"

#define F(n, v)                                                                                    \
	{                                                                                          \
		.name = n, .name_len = sizeof(n) - 1, .value = v, .value_len = sizeof(v) - 1       \
	}

static char msg[128];
static const char *code;

static int check(const struct http_field *f, size_t n, const char *method, const char *version)
{
	msg[0] = '\0';
	code = NULL;
	return http_fields_check(f, n, method, version, msg, sizeof(msg), &code);
}

static void accepts_a_scrape_and_http10_without_host(void **state)
{
	const struct http_field scrape[] = {
	    F("Host", "127.0.0.1:9559"),
	    F("User-Agent", "Prometheus/2.42.0"),
	    F("Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
	    F("Accept-Encoding", "gzip"),
	    F("X-Prometheus-Scrape-Timeout-Seconds", "10"),
	    F("X-Empty", ""),
	    F("X-Obs-Text", "caf\xc3\xa9\twith a tab"),
	};

	(void)state;
	assert_int_equal(check(scrape, 7, "GET", "HTTP/1.1"), 0);
	assert_int_equal(check(NULL, 0, "GET", "HTTP/1.0"), 0);
	assert_int_equal(check(scrape, 1, "POST", "HTTP/1.1"), 0);
}

static void refuses_host_name_and_value_faults(void **state)
{
	const struct http_field two_hosts[] = {F("Host", "a"), F("Host", "b")};
	const struct http_field space[] = {F("Host", "a"), F("X-A ", "1")};
	const struct http_field ctl[] = {F("Host", "a"), F("X-A", "1\x01")};
	const struct http_field del[] = {F("Host", "a"), F("X-A", "1\x7f")};
	const struct http_field empty_name[] = {F("Host", "a"), F("", "1")};

	(void)state;
	assert_int_equal(check(NULL, 0, "GET", "HTTP/1.1"), 400);
	assert_string_equal(code, "bad_request");
	assert_non_null(strstr(msg, "without Host"));
	assert_int_equal(check(two_hosts, 2, "GET", "HTTP/1.1"), 400);
	assert_non_null(strstr(msg, "more than one Host"));
	assert_int_equal(check(space, 2, "GET", "HTTP/1.1"), 400);
	assert_non_null(strstr(msg, "not a token"));
	assert_int_equal(check(ctl, 2, "GET", "HTTP/1.1"), 400);
	assert_non_null(strstr(msg, "control byte"));
	assert_int_equal(check(del, 2, "GET", "HTTP/1.1"), 400);
	assert_int_equal(check(empty_name, 2, "GET", "HTTP/1.1"), 400);
}

static void refuses_too_many_fields_and_cookies(void **state)
{
	static struct http_field f[HTTP_HEADER_FIELDS + 1];
	static char cookies[3 * HTTP_COOKIES_MAX + 1];
	struct http_field c[] = {F("Host", "a"),
				 {.name = "Cookie", .name_len = 6, .value = cookies}};

	(void)state;
	f[0] = (struct http_field)F("Host", "a");
	for (int i = 1; i <= HTTP_HEADER_FIELDS; i++)
		f[i] = (struct http_field)F("X-A", "y");
	assert_int_equal(check(f, HTTP_HEADER_FIELDS, "GET", "HTTP/1.1"), 0);
	assert_int_equal(check(f, HTTP_HEADER_FIELDS + 1, "GET", "HTTP/1.1"), 431);
	assert_string_equal(code, "header_too_large");
	/* "a;b" k times: k + 1 cookies (split at ';' as libmicrohttpd does) */
	for (int i = 0; i < HTTP_COOKIES_MAX; i++)
		memcpy(cookies + 3 * i, "a;b", 3);
	c[1].value_len = 3 * (HTTP_COOKIES_MAX - 1);
	assert_int_equal(check(c, 2, "GET", "HTTP/1.1"), 0);
	c[1].value_len = 3 * HTTP_COOKIES_MAX;
	assert_int_equal(check(c, 2, "GET", "HTTP/1.1"), 431);
	assert_string_equal(code, "header_too_large");
}

static void refuses_body_framing_as_the_first_request(void **state)
{
	const struct http_field te[] = {F("Host", "a"), F("Transfer-Encoding", "chunked")};
	const struct http_field te_cl[] = {F("Host", "a"), F("Transfer-Encoding", "chunked"),
					   F("Content-Length", "2")};
	const struct http_field big[] = {F("Host", "a"), F("Content-Length", "1000000000000")};
	const struct http_field spaced[] = {F("Host", "a"), F("Content-Length", "2 ")};
	const struct http_field get_body[] = {F("Host", "a"), F("Content-Length", "2")};
	const struct http_field zero[] = {F("Host", "a"), F("Content-Length", "0")};

	(void)state;
	assert_int_equal(check(te, 2, "POST", "HTTP/1.1"), 411);
	assert_string_equal(code, "length_required");
	assert_int_equal(check(te_cl, 3, "POST", "HTTP/1.1"), 400);
	assert_int_equal(check(big, 2, "POST", "HTTP/1.1"), 413);
	assert_string_equal(code, "payload_too_large");
	assert_int_equal(check(spaced, 2, "POST", "HTTP/1.1"), 400);
	assert_int_equal(check(get_body, 2, "GET", "HTTP/1.1"), 400);
	assert_int_equal(check(get_body, 2, "HEAD", "HTTP/1.1"), 400);
	assert_int_equal(check(get_body, 2, "POST", "HTTP/1.1"), 0);
	assert_int_equal(check(zero, 2, "GET", "HTTP/1.1"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(accepts_a_scrape_and_http10_without_host),
	    cmocka_unit_test(refuses_host_name_and_value_faults),
	    cmocka_unit_test(refuses_too_many_fields_and_cookies),
	    cmocka_unit_test(refuses_body_framing_as_the_first_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
