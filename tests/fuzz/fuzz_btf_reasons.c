// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the drop reason names read from kernel BTF
 * (collectors/drops/drops_btf.c): the input is raw BTF as
 * /sys/kernel/btf/vmlinux holds it, parsed by libbpf (btf__new), then
 * enum skb_drop_reason, skb_drop_reason_subsys and the subsystems'
 * *drop_reason* enums read as the collector reads them, and the
 * kfree_skb tracepoint's arity. Every name read is a string within its
 * bound that maps back to a value named; reading the same BTF again adds
 * nothing. The seeds are BTF that clang (-target bpf -g) encodes from this
 * kernel's (6.18) enums as `bpftool btf dump ... format c` prints them, with
 * and without openvswitch's ovs_drop_reason, and a pre-6.4 enum without
 * subsystems.
 */
#include <errno.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "collectors/drops/drops_btf.h"
#include "tests/fuzz/fuzz_common.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static void check_reasons(struct drops_reasons *r, const struct btf *btf)
{
	size_t n = drops_reasons_count(r);
	char buf[DROPS_REASON_NAME_MAX + 16];

	for (size_t i = 0; i < n; i++) {
		const char *name = drops_reason_at(r, i);
		uint32_t v;

		FUZZ_CHECK(name && strnlen(name, DROPS_REASON_NAME_MAX) < DROPS_REASON_NAME_MAX,
			   "reason %zu", i);
		FUZZ_CHECK(!drops_reason_value(r, name, &v) && drops_reason_name(r, v),
			   "\"%s\" names no value", name);
		drops_reason_is_drop(r, v);
		drops_reason_subsys_unnamed(r, v);
		drops_reason_format(r, v, buf, sizeof(buf));
	}
	FUZZ_CHECK(drops_reason_at(r, n) == NULL, "a reason past the count");
	drops_reason_format(r, 0xdeadbeef, buf, sizeof(buf));
	FUZZ_CHECK(drops_reasons_add_btf(r, btf) == 0 && drops_reasons_count(r) == n,
		   "the same BTF read twice added reasons");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drops_reasons *r;
	struct btf *btf;
	int nargs;

	libbpf_set_print(quiet);
	btf = btf__new(data, size);
	if (!btf)
		return 0;
	nargs = drops_btf_kfree_skb_nargs(btf);
	FUZZ_CHECK(nargs == -ENOENT || (nargs >= 0 && nargs < 0xffff), "nargs %d", nargs);
	r = drops_reasons_new(btf);
	if (r) {
		check_reasons(r, btf);
		drops_reasons_free(r);
	} else {
		FUZZ_CHECK(errno == ENOENT || errno == ENOMEM, "errno %d", errno);
	}
	btf__free(btf);
	return 0;
}
