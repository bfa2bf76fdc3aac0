// SPDX-License-Identifier: MIT
/* kallsyms parsing and address lookup of the drops collector. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/drops/drops_ksym.h"

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81000100 t helper_fn\n"
			       "ffffffff81001000 D some_data\n"
			       "ffffffff81002000 W weak_fn\n"
			       "ffffffffc0000000 t mod_fn\t[openvswitch]\n"
			       "garbage line\n"
			       "ffffffff81000800 T __udp4_lib_rcv"; /* unsorted, no final \n */

static void test_lookup(void **state)
{
	struct drops_ksyms *k = drops_ksyms_parse(kallsyms, strlen(kallsyms));
	char buf[128];

	assert_non_null(k);
	assert_int_equal(drops_ksyms_count(k), 5); /* data and garbage left out */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000000ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "_stext+0x0");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff810008a4ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0xa4");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000104ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "helper_fn+0x4");
	/* Data symbols do not cover text: the lookup lands on the text before. */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81001004ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0x804");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0000010ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "mod_fn+0x10 [openvswitch]");
	/* Below the first symbol, or far past the last. */
	assert_int_equal(drops_ksyms_format(k, 0x1000, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(buf, "0x1000");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc1000000ull, buf, sizeof(buf)), -ENOENT);
	drops_ksyms_free(k);
}

/* kptr_restrict hides addresses as zeros: nothing to look up, hex output. */
static void test_restricted(void **state)
{
	static const char text[] = "0000000000000000 T _stext\n0000000000000000 t foo\n";
	struct drops_ksyms *k = drops_ksyms_parse(text, strlen(text));
	char buf[64];

	assert_non_null(k);
	assert_int_equal(drops_ksyms_count(k), 0);
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000000ull, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(buf, "0xffffffff81000000");
	assert_int_equal(drops_ksyms_format(NULL, 0x10, buf, sizeof(buf)), -ENOENT);
	drops_ksyms_free(k);
}

/* The real /proc/kallsyms, as root: kfree_skb_reason's callers are there. */
static void test_proc(void **state)
{
	struct drops_ksyms *k;

	if (geteuid() != 0)
		skip();
	k = drops_ksyms_load("/proc/kallsyms");
	assert_non_null(k);
	assert_true(drops_ksyms_count(k) > 1000);
	drops_ksyms_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_restricted),
	    cmocka_unit_test(test_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
