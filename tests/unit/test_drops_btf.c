// SPDX-License-Identifier: MIT
/*
 * Drop reason names from BTF: against the running kernel's BTF (checked
 * against the tracepoint's own print format when tracefs is mounted), and
 * against small BTF built here with values shifted from any real kernel, so
 * the resolver is proven to go by value, never by position.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/btf.h>

#include "collectors/drops/drops_btf.h"

#define VMLINUX "/sys/kernel/btf/vmlinux"

static void enum_add(struct btf *btf, const char *name, const char *const *names,
		     const long long *vals, size_t n)
{
	assert_true(btf__add_enum(btf, name, 4) > 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(btf__add_enum_value(btf, names[i], vals[i]), 0);
}

/* A kernel where reasons were inserted and reordered: nothing sits where the
 * real 6.18 enum has it. */
static struct btf *fake_kernel_btf(void)
{
	static const char *const reasons[] = {
	    "SKB_DROP_REASON_NETFILTER_DROP",
	    "SKB_DROP_REASON_NOT_SPECIFIED",
	    "SKB_NOT_DROPPED_YET",
	    "SKB_DROP_REASON_NO_SOCKET",
	    "SKB_CONSUMED",
	    "SKB_DROP_REASON_MAX",
	    "SKB_DROP_REASON_SUBSYS_MASK",
	};
	static const long long reason_vals[] = {40, 41, 100, 77, 101, 102, 0xffff0000};
	static const char *const subsys[] = {
	    "SKB_DROP_REASON_SUBSYS_CORE",
	    "SKB_DROP_REASON_SUBSYS_OPENVSWITCH",
	    "SKB_DROP_REASON_SUBSYS_NUM",
	};
	static const long long subsys_vals[] = {0, 1, 2};
	static const char *const ovs[] = {
	    "__OVS_DROP_REASON",
	    "OVS_DROP_LAST_ACTION",
	    "OVS_DROP_ACTION_ERROR",
	    "OVS_DROP_MAX",
	};
	static const long long ovs_vals[] = {0x10000, 0x10001, 0x10002, 0x10003};
	struct btf *btf = btf__new_empty();

	assert_non_null(btf);
	enum_add(btf, "skb_drop_reason", reasons, reason_vals, 7);
	enum_add(btf, "skb_drop_reason_subsys", subsys, subsys_vals, 3);
	enum_add(btf, "ovs_drop_reason", ovs, ovs_vals, 4);
	return btf;
}

static void test_fake_names_by_value(void **state)
{
	struct btf *btf = fake_kernel_btf();
	struct drops_reasons *r = drops_reasons_new(btf);
	char buf[DROPS_REASON_NAME_MAX];
	uint32_t v;

	assert_non_null(r);
	assert_string_equal(drops_reason_name(r, 77), "NO_SOCKET");
	assert_string_equal(drops_reason_name(r, 40), "NETFILTER_DROP");
	assert_string_equal(drops_reason_name(r, 41), "NOT_SPECIFIED");
	assert_string_equal(drops_reason_name(r, 100), "NOT_DROPPED_YET");
	assert_string_equal(drops_reason_name(r, 101), "CONSUMED");
	/* Bounds and masks are not reasons. */
	assert_null(drops_reason_name(r, 102));
	assert_null(drops_reason_name(r, 0xffff0000));
	/* Where the real kernel has NO_SOCKET there is nothing here. */
	assert_null(drops_reason_name(r, 3));
	assert_string_equal(drops_reason_format(r, 3, buf, sizeof(buf)), "UNKNOWN_3");
	assert_int_equal(drops_reason_value(r, "NO_SOCKET", &v), 0);
	assert_int_equal(v, 77);
	assert_int_equal(drops_reason_value(r, "NOPE", &v), -ENOENT);
	drops_reasons_free(r);
	btf__free(btf);
}

static void test_fake_not_drops(void **state)
{
	struct btf *btf = fake_kernel_btf();
	struct drops_reasons *r = drops_reasons_new(btf);

	assert_false(drops_reason_is_drop(r, 100));
	assert_false(drops_reason_is_drop(r, 101));
	assert_true(drops_reason_is_drop(r, 0)); /* 0 is nothing special here */
	assert_true(drops_reason_is_drop(r, 77));
	drops_reasons_free(r);
	btf__free(btf);
}

static void test_fake_subsystems(void **state)
{
	struct btf *btf = fake_kernel_btf();
	struct drops_reasons *r = drops_reasons_new(btf);
	char buf[DROPS_REASON_NAME_MAX];

	assert_string_equal(drops_reason_name(r, 0x10001), "OVS_DROP_LAST_ACTION");
	assert_string_equal(drops_reason_name(r, 0x10002), "OVS_DROP_ACTION_ERROR");
	assert_null(drops_reason_name(r, 0x10000)); /* "__" marker */
	assert_null(drops_reason_name(r, 0x10003)); /* _MAX bound */
	assert_true(drops_reason_subsys_unnamed(r, 0x10009));
	assert_false(drops_reason_subsys_unnamed(r, 0x10001));
	/* Subsystem 5 is not declared by this kernel. */
	assert_false(drops_reason_subsys_unnamed(r, 0x50001));
	assert_string_equal(drops_reason_format(r, 0x50001, buf, sizeof(buf)), "UNKNOWN_327681");
	drops_reasons_free(r);
	btf__free(btf);
}

/* A subsystem enum that lives in a module's split BTF. */
static void test_module_split_btf(void **state)
{
	static const char *const names[] = {"MOD_DROP_FIRST", "MOD_DROP_SECOND"};
	static const long long vals[] = {0x10005, 0x10006};
	struct btf *base = fake_kernel_btf();
	struct drops_reasons *r = drops_reasons_new(base);
	struct btf *mod;

	/* The base has only the OVS names; 0x10005 is unnamed until the module. */
	assert_true(drops_reason_subsys_unnamed(r, 0x10005));
	mod = btf__new_empty_split(base);
	assert_non_null(mod);
	enum_add(mod, "mod_drop_reason", names, vals, 2);
	assert_int_equal(drops_reasons_add_btf(r, mod), 2);
	assert_string_equal(drops_reason_name(r, 0x10005), "MOD_DROP_FIRST");
	assert_string_equal(drops_reason_name(r, 0x10006), "MOD_DROP_SECOND");
	/* Adding again changes nothing. */
	assert_int_equal(drops_reasons_add_btf(r, mod), 0);
	btf__free(mod);
	drops_reasons_free(r);
	btf__free(base);
}

static void test_no_reason_enum(void **state)
{
	struct btf *btf = btf__new_empty();

	assert_true(btf__add_int(btf, "int", 4, BTF_INT_SIGNED) > 0);
	errno = 0;
	assert_null(drops_reasons_new(btf));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(drops_btf_kfree_skb_nargs(btf), -ENOENT);
	btf__free(btf);
}

/* typedef void (*btf_trace_kfree_skb)(void *, <nargs pointer args>) */
static struct btf *tracepoint_btf(int nargs)
{
	struct btf *btf = btf__new_empty();
	int voidp, proto, ptr;

	voidp = btf__add_ptr(btf, 0);
	proto = btf__add_func_proto(btf, 0);
	assert_true(voidp > 0 && proto > 0);
	for (int i = 0; i <= nargs; i++)
		assert_int_equal(btf__add_func_param(btf, "", voidp), 0);
	ptr = btf__add_ptr(btf, proto);
	assert_true(btf__add_typedef(btf, "btf_trace_kfree_skb", ptr) > 0);
	return btf;
}

static void test_tracepoint_arity(void **state)
{
	for (int n = 2; n <= 4; n++) {
		struct btf *btf = tracepoint_btf(n);

		assert_int_equal(drops_btf_kfree_skb_nargs(btf), n);
		btf__free(btf);
	}
}

/* The running kernel: names agree with the tracepoint's print format, which
 * the kernel generates from the same enum (skb:kfree_skb format file). */
static void test_vmlinux(void **state)
{
	static const char *const formats[] = {
	    "/sys/kernel/tracing/events/skb/kfree_skb/format",
	    "/sys/kernel/debug/tracing/events/skb/kfree_skb/format",
	};
	struct drops_reasons *r;
	struct btf *btf;
	char buf[65536], *p;
	size_t n = 0, checked = 0;
	uint32_t v;
	FILE *f = NULL;

	if (access(VMLINUX, R_OK))
		skip();
	btf = btf__parse(VMLINUX, NULL);
	assert_non_null(btf);
	assert_true(drops_btf_kfree_skb_nargs(btf) >= 3);
	r = drops_reasons_new(btf);
	assert_non_null(r);
	assert_true(drops_reasons_count(r) > 10);
	assert_int_equal(drops_reason_value(r, "NO_SOCKET", &v), 0);
	assert_true(drops_reason_is_drop(r, v));
	assert_int_equal(drops_reason_value(r, "NETFILTER_DROP", &v), 0);
	if (drops_reason_value(r, "CONSUMED", &v) == 0)
		assert_false(drops_reason_is_drop(r, v));
	if (drops_reason_value(r, "NOT_DROPPED_YET", &v) == 0)
		assert_false(drops_reason_is_drop(r, v));

	for (size_t i = 0; i < 2 && !f; i++)
		f = fopen(formats[i], "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	/* print fmt: ... __print_symbolic(REC->reason, { 2, "NOT_SPECIFIED" }, ...) */
	for (p = strstr(buf, "{ "); p; p = strstr(p + 1, "{ ")) {
		unsigned long val;
		char name[DROPS_REASON_NAME_MAX];

		if (sscanf(p, "{ %lu, \"%63[A-Z0-9_]\" }", &val, name) != 2)
			continue;
		if (!strcmp(name, "MAX")) /* the bound, listed by the format too */
			continue;
		assert_non_null(drops_reason_name(r, val));
		assert_string_equal(drops_reason_name(r, val), name);
		checked++;
	}
	if (n)
		print_message("checked %zu reasons against the tracepoint format\n", checked);
	else
		print_message("tracefs not mounted: BTF-only checks\n");
	drops_reasons_free(r);
	btf__free(btf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fake_names_by_value),
	    cmocka_unit_test(test_fake_not_drops),
	    cmocka_unit_test(test_fake_subsystems),
	    cmocka_unit_test(test_module_split_btf),
	    cmocka_unit_test(test_no_reason_enum),
	    cmocka_unit_test(test_tracepoint_arity),
	    cmocka_unit_test(test_vmlinux),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
