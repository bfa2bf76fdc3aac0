/* SPDX-License-Identifier: MIT */
/*
 * [http] allow (api/http_allow.c): the grammar, the default that follows
 * listen, CIDR matching in both families (IPv4-mapped clients as IPv4), and
 * what "admits other hosts" means for the start-up warning.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/http.h"
#include "api/http_allow.h"

static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss = {0};

	if (strchr(s, ':')) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		a6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, s, &a6->sin6_addr), 1);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

		a4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, s, &a4->sin_addr), 1);
	}
	return ss;
}

static bool allows(const struct http_allow *al, const char *client)
{
	struct sockaddr_storage ss = addr(client);

	return http_allow_match(al, &ss);
}

static struct http_allow parse_ok(const char *spec, const char *listen)
{
	struct sockaddr_storage ls;
	struct http_allow al;
	socklen_t len;
	char msg[256] = "";

	assert_int_equal(http_listen_parse(listen, &ls, &len), 0);
	if (http_allow_parse(spec, &ls, &al, msg, sizeof(msg)))
		fail_msg("allow \"%s\": %s", spec, msg);
	return al;
}

static void test_default_follows_listen(void **state)
{
	struct http_allow al;

	(void)state;
	al = parse_ok("", "127.0.0.1:9559");
	assert_true(al.automatic);
	assert_true(allows(&al, "127.0.0.1"));
	assert_true(allows(&al, "127.3.2.1"));
	assert_true(allows(&al, "::1"));
	assert_true(allows(&al, "::ffff:127.0.0.1"));
	assert_false(allows(&al, "10.0.0.1"));
	assert_false(allows(&al, "::2"));
	assert_false(http_allow_remote(&al));
	al = parse_ok(NULL, "localhost:9559");
	assert_false(allows(&al, "192.0.2.1"));
	al = parse_ok(" , ", "[::1]:9559");
	assert_false(allows(&al, "2001:db8::1"));
	/* beyond loopback: any, so one change of listen serves other hosts */
	al = parse_ok("", "0.0.0.0:9559");
	assert_true(al.automatic && al.any);
	assert_true(allows(&al, "192.0.2.1"));
	assert_true(allows(&al, "2001:db8::1"));
	assert_true(http_allow_remote(&al));
	al = parse_ok("", "10.1.2.3:9559");
	assert_true(allows(&al, "198.51.100.7"));
}

static void test_cidrs(void **state)
{
	struct http_allow al;
	char d[256];

	(void)state;
	al = parse_ok("10.0.0.0/8, 192.0.2.7 2001:db8::/32,loopback", "0.0.0.0:9559");
	assert_false(al.automatic);
	assert_true(allows(&al, "10.255.1.2"));
	assert_false(allows(&al, "11.0.0.1"));
	assert_true(allows(&al, "192.0.2.7"));
	assert_false(allows(&al, "192.0.2.8"));
	assert_true(allows(&al, "::ffff:10.1.1.1")); /* mapped: as IPv4 */
	assert_true(allows(&al, "2001:db8:ffff::1"));
	assert_false(allows(&al, "2001:db9::1"));
	assert_true(allows(&al, "127.0.0.1"));
	assert_true(http_allow_remote(&al));
	/* host bits are dropped; odd prefixes match bit by bit */
	al = parse_ok("10.1.2.3/8 172.16.0.0/12 203.0.113.129/25", "0.0.0.0:1");
	assert_true(allows(&al, "10.9.9.9"));
	assert_true(allows(&al, "172.31.255.255"));
	assert_false(allows(&al, "172.32.0.0"));
	assert_true(allows(&al, "203.0.113.128"));
	assert_false(allows(&al, "203.0.113.127"));
	http_allow_describe(&al, d, sizeof(d));
	assert_string_equal(d, "10.0.0.0/8, 172.16.0.0/12, 203.0.113.128/25");
	/* /0 of one family is that family only */
	al = parse_ok("0.0.0.0/0", "0.0.0.0:1");
	assert_true(allows(&al, "198.51.100.1"));
	assert_false(allows(&al, "2001:db8::1"));
	al = parse_ok("any", "127.0.0.1:1");
	assert_true(allows(&al, "2001:db8::1"));
	http_allow_describe(&al, d, sizeof(d));
	assert_string_equal(d, "any");
	/* loopback alone, and loopback CIDRs, admit no other host */
	al = parse_ok("127.0.0.1, ::1", "0.0.0.0:1");
	assert_false(http_allow_remote(&al));
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
	    "10.0.0.0/33",  "::/129",	    "10.0.0.0/", "10.0.0.0/x",	 "10.0.0.0/-1",	  "10.0.0",
	    "host.example", "127.0.0.1:80", "[::1]",	 "10.0.0.0/8/8", "10.0.0.1 nope",
	};
	struct http_allow al;
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = '\0';
		assert_int_equal(http_allow_check(bad[i], msg, sizeof(msg)), -EINVAL);
		assert_non_null(strstr(msg, "is not an address"));
	}
	assert_int_equal(http_allow_check("10.0.0.0/8", msg, sizeof(msg)), 0);
	assert_int_equal(http_allow_parse("10.0.0.0/8", NULL, &al, msg, sizeof(msg)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_follows_listen),
	    cmocka_unit_test(test_cidrs),
	    cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
