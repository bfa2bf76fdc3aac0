/* SPDX-License-Identifier: MIT */
/* api/negotiate: Accept headers as real clients send them, and garbage. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/negotiate.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define PROM_TEXT "text/plain;version=0.0.4"
#define PROM_OM	  "application/openmetrics-text;version=1.0.0"
#define PROM_PROTOBUF                                                                              \
	"application/"                                                                             \
	"vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

static const char *const metrics_offers[] = {PROM_TEXT, PROM_OM, PROM_PROTOBUF};
static const char *const api_offers[] = {"application/json", "application/x-protobuf"};

static void assert_pick(const char *accept, const char *const *offers, size_t n, int want)
{
	int got = http_negotiate(accept, offers, n);

	if (got != want)
		fail_msg("Accept \"%s\": got %d (%s), want %d (%s)", accept ? accept : "(null)",
			 got,
			 got < 0       ? "406"
			 : offers[got] ? offers[got]
				       : "(null)",
			 want,
			 want < 0	? "406"
			 : offers[want] ? offers[want]
					: "(null)");
}

#define METRICS(accept, want) assert_pick(accept, metrics_offers, N(metrics_offers), want)
#define API(accept, want)     assert_pick(accept, api_offers, N(api_offers), want)

static void test_prometheus_scrape_headers_pick_their_format(void **state)
{
	/* Prometheus 2.42+ with native histograms enabled */
	METRICS("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		"encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
		"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
		"*/*;q=0.1",
		2);
	/* Prometheus 2.x default */
	METRICS("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
		"version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		1);
	/* an OpenMetrics version we do not offer falls to text */
	METRICS("application/openmetrics-text;version=0.0.1,text/plain;version=0.0.4;q=0.5,"
		"*/*;q=0.1",
		0);
	/* a parameter the protobuf offer does not carry does not match it */
	METRICS("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		"encoding=text,text/plain;q=0.5",
		0);
	/* ranges without parameters match offers with them */
	METRICS("application/vnd.google.protobuf", 2);
	METRICS("application/openmetrics-text", 1);
	METRICS("text/plain", 0);
	/* curl, browsers */
	METRICS("*/*", 0);
	METRICS("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;"
		"q=0.8",
		0);
}

static void test_api_clients_get_json_or_protobuf(void **state)
{
	API("application/x-protobuf", 1);
	API("application/json", 0);
	API("application/x-protobuf, application/json", 0); /* equal q: server preference */
	API("application/x-protobuf, application/json;q=0.9", 1);
	API("application/json;q=0.5, application/x-protobuf", 1);
	API("application/*", 0);
	/* specificity ranks ranges for one offer, not offers: a tie at q=1 */
	API("application/*, application/x-protobuf", 0);
	API("application/*;q=0.9, application/x-protobuf", 1);
	API("application/*;q=0.1, application/json;q=0", 1);
	API("text/html", -1);
	API("application/json;charset=utf-8", -1); /* our offer has no charset */
}

static void test_null_or_empty_accept_takes_the_first_offer(void **state)
{
	API(NULL, 0);
	API("", 0);
	API("   ", 0);
	API(" , ,\t,", 0);
	METRICS(NULL, 0);
	assert_int_equal(http_negotiate(NULL, api_offers, 0), -1);
	assert_int_equal(http_negotiate("*/*", NULL, 0), -1);
}

static void test_q_zero_excludes(void **state)
{
	API("*/*;q=0", -1);
	API("*/*; q=0.000", -1);
	API("application/json;q=0, */*", 1);
	API("application/json;q=0, application/x-protobuf;q=0, */*", -1);
	API("application/*;q=0, */*", -1);
	API("application/*;q=0, application/x-protobuf;q=0.001", 1);
	API("application/json;q=0", -1);
}

static void test_more_specific_ranges_take_precedence(void **state)
{
	static const char *const text[] = {"text/plain;format=flowed", "text/plain", "text/html"};

	/* RFC 9110's own example */
	assert_pick(
	    "text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, text/plain;format=fixed;"
	    "q=0.4, */*;q=0.5",
	    text, N(text), 0);
	/* the specific q=0.1 beats the generic q=1 for the same offer */
	assert_pick("text/plain;format=flowed;q=0.1, text/*", text, N(text), 1);
	assert_pick("text/plain;q=0.1, text/html;q=0.2, */*", text, N(text), 2);
	/* order in the header does not matter */
	assert_pick("*/*, text/plain;format=flowed;q=0.1, text/*;q=0.5", text, N(text), 1);
	/* equally specific: the highest q */
	API("application/json;q=0.2, application/json;q=0.9, application/x-protobuf;q=0.5", 0);
}

static void test_parameters_follow_the_rules(void **state)
{
	static const char *const cs[] = {"text/plain;charset=utf-8", "application/json"};
	static const char *const v[] = {"application/x;version=1.0.0", "application/json"};

	/* names case-insensitive; charset values too, others not */
	assert_pick("text/plain;CHARSET=UTF-8", cs, N(cs), 0);
	assert_pick("text/plain; charset=\"utf-8\"", cs, N(cs), 0);
	assert_pick("application/x;VERSION=1.0.0, application/json;q=0.5", v, N(v), 0);
	assert_pick("application/x;version=1.0.0-RC, application/json;q=0.5", v, N(v), 1);
	assert_pick("application/x;version=\"1.0.0\", application/json;q=0.5", v, N(v), 0);
	assert_pick("application/x;version=\"1.\\0.0\", application/json;q=0.5", v, N(v), 0);
	/* types and subtypes are case-insensitive */
	API("APPLICATION/X-PROTOBUF", 1);
	API("Application/Json;Q=0.5, application/x-protobuf;Q=0.4", 0);
	/* q anywhere among the parameters is the weight */
	METRICS("text/plain;q=0.3;version=0.0.4, application/openmetrics-text;q=0.4", 1);
	/* a comma inside a quoted value does not split the list */
	assert_pick("application/x;version=\"1,0\", application/json;q=0.1", v, N(v), 1);
	assert_pick("application/x;foo=\"a,b\";version=1.0.0", v, N(v), -1);
}

static void test_odd_q_values_are_read_leniently(void **state)
{
	API("application/json;q=1.0000, application/x-protobuf;q=0.9", 0);
	API("application/json;q=5, application/x-protobuf", 0); /* past 1 is 1: tie */
	API("application/json;q=99999999999999999999999, application/x-protobuf;q=0.999", 0);
	API("application/json;q=0.5, application/x-protobuf;q=0.5001", 0); /* 3 decimals count */
	API("application/json;q=0., application/x-protobuf;q=0.1", 1);
	/* a malformed q drops its range */
	API("application/json;q=abc, application/x-protobuf;q=0.1", 1);
	API("application/json;q=-1, application/x-protobuf;q=0.1", 1);
	API("application/json;q=, application/x-protobuf;q=0.1", 1);
	API("application/json;q=\"1\", application/x-protobuf;q=0.1", 1);
	API("application/json;q=.5, application/x-protobuf;q=0.1", 1);
	API("application/json;q=0.5x, application/x-protobuf;q=0.1", 1);
}

static void test_blanks_and_empty_elements_are_tolerated(void **state)
{
	API("  application/x-protobuf  ", 1);
	API("application/x-protobuf,", 1);
	API(",,application/x-protobuf,,", 1);
	API("application/x-protobuf ; q=0.5 , application/json ; q=0.4", 1);
	API("application/x-protobuf;;q=0.5;, application/json;q=0.4", 1);
	API("application/x-protobuf;q = 0.5, application/json;q=0.4", 1);
	API("\tapplication/json\t", 0);
}

static void test_garbage_is_refused_without_harm(void **state)
{
	static const char *const bad[] = {
	    "garbage",
	    "application",
	    "application/",
	    "/json",
	    "*",
	    "*/json",
	    "application/json;",
	    "application/json;q",
	    "application/json;=1",
	    "application/json;a=\"unterminated",
	    "application/json;a=\"x\\",
	    "application/json;a=b c",
	    "application/json x",
	    "appli cation/json",
	    "application/json/extra",
	    "application/json\x01",
	    "application/json;a=\"\x01\"",
	    "\"application/json\"",
	    ";;;",
	    "=",
	    "\xff\xfe/\xfd",
	};

	for (size_t i = 0; i < N(bad); i++) {
		int want = strcmp(bad[i], "application/json;") ? -1 : 0;

		assert_pick(bad[i], api_offers, N(api_offers), want);
	}
	/* a bad range among good ones is skipped, the good ones still count */
	API("garbage, application/x-protobuf;q=0.2, */json, application/json;q=0.1", 1);
	API("application/json;a=\"x, application/x-protobuf", -1); /* the quote eats the rest */
}

static void test_long_headers_work(void **state)
{
	char hdr[64 * 40 + 64];
	size_t off = 0;

	/* 64 ranges, the acceptable one last */
	for (int i = 0; i < 63; i++)
		off += (size_t)snprintf(hdr + off, sizeof(hdr) - off, "application/x-%02d;q=0.%d, ",
					i, i % 10);
	snprintf(hdr + off, sizeof(hdr) - off, "application/x-protobuf;q=0.01");
	API(hdr, 1);

	/* 100 KB of blanks and commas, then a range */
	size_t big = 100000;
	char *s = malloc(big + 64);

	assert_non_null(s);
	for (size_t i = 0; i < big; i++)
		s[i] = i % 2 ? ',' : ' ';
	strcpy(s + big, "application/x-protobuf");
	API(s, 1);
	/* 100 KB inside one parameter value */
	memcpy(s, "application/json;a=\"", 20);
	memset(s + 20, 'x', big - 20);
	strcpy(s + big, "\", application/x-protobuf;q=0.5");
	API(s, 1);
	free(s);
}

static void test_bad_offers_are_never_chosen(void **state)
{
	static const char *const offers[] = {NULL, "bad offer", "*/*", "text/*",
					     "application/json"};

	assert_pick("*/*", offers, N(offers), 4);
	assert_pick(NULL, offers, N(offers), 0); /* no header: the first, as documented */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prometheus_scrape_headers_pick_their_format),
	    cmocka_unit_test(test_api_clients_get_json_or_protobuf),
	    cmocka_unit_test(test_null_or_empty_accept_takes_the_first_offer),
	    cmocka_unit_test(test_q_zero_excludes),
	    cmocka_unit_test(test_more_specific_ranges_take_precedence),
	    cmocka_unit_test(test_parameters_follow_the_rules),
	    cmocka_unit_test(test_odd_q_values_are_read_leniently),
	    cmocka_unit_test(test_blanks_and_empty_elements_are_tolerated),
	    cmocka_unit_test(test_garbage_is_refused_without_harm),
	    cmocka_unit_test(test_long_headers_work),
	    cmocka_unit_test(test_bad_offers_are_never_chosen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
