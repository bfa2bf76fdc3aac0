/* SPDX-License-Identifier: MIT */
/* Unit tests of the MPTcpExt MIB parser (/proc/net/netstat). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/mptcp/mptcp_mib.h"

static struct mptcp_mib mib;

static int parse(const char *text)
{
	return mptcp_mib_parse(text, strlen(text), &mib);
}

static void test_netstat_text(void **state)
{
	const char *t = "TcpExt: SyncookiesSent EmbryonicRsts\n"
			"TcpExt: 0 7\n"
			"IpExt: InNoRoutes\n"
			"IpExt: 3\n"
			"MPTcpExt: MPCapableSYNRX MPFastcloseRx MPCurrEstab\n"
			"MPTcpExt: 12 2 18446744073709551615\n";

	assert_int_equal(parse(t), 3);
	assert_string_equal(mib.name[0], "MPCapableSYNRX");
	assert_int_equal(mib.value[0], 12);
	assert_string_equal(mib.name[1], "MPFastcloseRx");
	assert_int_equal(mib.value[1], 2);
	assert_true(mib.value[2] == UINT64_MAX);
	assert_true(mptcp_mib_is_gauge(mib.name[2]));
	assert_false(mptcp_mib_is_gauge(mib.name[1]));
	/* Not terminated at the end: len bounds it. */
	assert_int_equal(mptcp_mib_parse(t, strlen(t) - 2, &mib), 3); /* len bounds it */
	assert_true(mib.value[2] == 1844674407370955161ull);
}

static void test_no_mptcp_and_bad_text(void **state)
{
	assert_int_equal(parse("TcpExt: A\nTcpExt: 1\n"), 0);
	assert_int_equal(parse(""), 0);
	assert_int_equal(parse("MPTcpExt: A B\n"), -EINVAL);		  /* no values */
	assert_int_equal(parse("MPTcpExt: A B\nMPTcpExt: 1\n"), -EINVAL); /* fewer */
	assert_int_equal(parse("MPTcpExt: A\nMPTcpExt: 1 2\n"), -EINVAL); /* more */
	assert_int_equal(parse("MPTcpExt: A\nMPTcpExt: x\n"), -EINVAL);	  /* not a number */
	assert_int_equal(parse("MPTcpExt: A\nMPTcpExt: 18446744073709551616\n"), -EINVAL);
	assert_int_equal(parse("MPTcpExt: A\nMPTcpExt: -1\n"), -EINVAL);
	assert_int_equal(
	    parse("MPTcpExt: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
		  "MPTcpExt: 1\n"),
	    -EINVAL); /* name too long */
}

static void test_too_many(void **state)
{
	static char t[65536];
	size_t n = 0;

	n += (size_t)snprintf(t + n, sizeof(t) - n, "MPTcpExt:");
	for (int i = 0; i < MPTCP_MIB_MAX + 10; i++)
		n += (size_t)snprintf(t + n, sizeof(t) - n, " C%d", i);
	n += (size_t)snprintf(t + n, sizeof(t) - n, "\nMPTcpExt:");
	for (int i = 0; i < MPTCP_MIB_MAX + 10; i++)
		n += (size_t)snprintf(t + n, sizeof(t) - n, " %d", i);
	assert_int_equal(parse(t), MPTCP_MIB_MAX);
	assert_int_equal(mib.value[MPTCP_MIB_MAX - 1], MPTCP_MIB_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_netstat_text),
	    cmocka_unit_test(test_no_mptcp_and_bad_text),
	    cmocka_unit_test(test_too_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
