// SPDX-License-Identifier: MIT
/* kallsyms parsing and address lookup of the drops collector. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
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

/* Each address costs one pass over the source the first time only; misses
 * (hex) are remembered too. */
static void test_cache(void **state)
{
	struct drops_ksyms *k = drops_ksyms_parse(kallsyms, strlen(kallsyms));
	char buf[128];

	assert_non_null(k);
	assert_int_equal(drops_ksyms_scans(k), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(drops_ksyms_format(k, 0xffffffff810008a4ull, buf, sizeof(buf)), 0);
		assert_string_equal(buf, "__udp4_lib_rcv+0xa4");
		assert_int_equal(drops_ksyms_format(k, 0x1000, buf, sizeof(buf)), -ENOENT);
		assert_string_equal(buf, "0x1000");
	}
	assert_int_equal(drops_ksyms_scans(k), 2);
	/* a neighbour is a new address: resolved on its own, cache stays sorted */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff810008a0ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0xa0");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000104ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "helper_fn+0x4");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff810008a4ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0xa4");
	assert_int_equal(drops_ksyms_scans(k), 4);
	/* a full cache answers hex for new addresses without scanning, and
	 * still answers the cached ones by name */
	drops_ksyms_set_cache_max(k, 0); /* clamps to what is cached: 4 */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000108ull, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(buf, "0xffffffff81000108");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000104ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "helper_fn+0x4");
	assert_int_equal(drops_ksyms_scans(k), 4);
	drops_ksyms_set_cache_max(k, DROPS_KSYM_CACHE_MAX);
	/* a small output buffer truncates, never overflows */
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0000010ull, buf, 8), 0);
	assert_string_equal(buf, "mod_fn+");
	drops_ksyms_free(k);
}

/* The real /proc/kallsyms, as root: a text symbol read from the file comes
 * back as its own name, streamed from the file. */
static void test_proc(void **state)
{
	char line[512], name[256], want[300], buf[128];
	unsigned long long addr = 0;
	struct drops_ksyms *k;
	char type;
	FILE *f;

	if (geteuid() != 0)
		skip();
	f = fopen("/proc/kallsyms", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && type == 'T' &&
		    !strcmp(name, "kfree_skb_list_reason"))
			break;
	fclose(f);
	if (!addr)
		skip(); /* restricted, or an older kernel */
	k = drops_ksyms_load("/proc/kallsyms");
	assert_non_null(k);
	assert_true(drops_ksyms_count(k) > 1000);
	snprintf(want, sizeof(want), "%s+0x10", name);
	assert_int_equal(drops_ksyms_format(k, addr + 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
	assert_int_equal(drops_ksyms_scans(k), 1);
	drops_ksyms_free(k);
	assert_null(drops_ksyms_load("/nonexistent/kallsyms"));
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_restricted),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
