// SPDX-License-Identifier: MIT
/* Folded kernel stacks of sampled drops (collectors/drops/drops_stack.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_stack.h"

static const char kallsyms[] = "ffffffff81000000 T bpf_trace_run4\n"
			       "ffffffff81000100 T sk_skb_reason_drop\n"
			       "ffffffff81000200 T __udp4_lib_rcv\n"
			       "ffffffff81000300 T ip_protocol_deliver_rcu\n"
			       "ffffffff81000400 T ip_local_deliver_finish\n"
			       "ffffffff81000500 T bpf_helper_in_the_middle\n"
			       "ffffffffc0000000 t bpf_prog_6deef7357e7b4530_drops_tp_btf\t[bpf]\n"
			       "ffffffffc0100000 t mod_rcv\t[openvswitch]\n";

static void test_fold(void **state)
{
	struct drops_ksyms *k = drops_ksyms_parse(kallsyms, strlen(kallsyms));
	/* innermost first: the program, the tracepoint, then the stack */
	const uint64_t frames[] = {
	    0xffffffffc0000010ull, 0xffffffff81000010ull, 0xffffffff81000120ull,
	    0xffffffff81000230ull, 0xffffffff81000340ull, 0xffffffff81000350ull,
	    0xffffffff81000510ull, 0xffffffffc0100010ull, 0xdead0000ull,
	};
	char buf[512];

	assert_non_null(k);
	assert_int_equal(drops_stack_fold(k, frames, 9, buf, sizeof(buf)), 7);
	/* outermost first, offsets and modules dropped, a repeated function
	 * twice (two frames), a BPF-named frame inside the stack kept, an
	 * address no symbol covers as hex */
	assert_string_equal(buf, "0xdead0000;mod_rcv;bpf_helper_in_the_middle;"
				 "ip_protocol_deliver_rcu;ip_protocol_deliver_rcu;__udp4_lib_rcv;"
				 "sk_skb_reason_drop");
	/* cut at the outer end: the frames nearest the drop stay */
	assert_int_equal(drops_stack_fold(k, frames, 9, buf, 50), 2);
	assert_string_equal(buf, "__udp4_lib_rcv;sk_skb_reason_drop");
	assert_int_equal(drops_stack_fold(k, frames, 9, buf, 10), 0);
	assert_string_equal(buf, "");
	/* no frames, or only tracing ones */
	assert_int_equal(drops_stack_fold(k, frames, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(drops_stack_fold(k, frames, 2, buf, sizeof(buf)), 0);
	/* no symbols at all: hex addresses */
	assert_int_equal(drops_stack_fold(NULL, frames + 8, 1, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "0xdead0000");
	drops_ksyms_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_fold)};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
