// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the MPTCP collector's sock_diag resync
 * (collectors/mptcp/mptcp_diag.c): the input is what recv() returns for
 * the dumps, read as the collector reads them (mptcp_diag_reply): first as
 * the answer to the MPTCP dump, with the request's sequence number the
 * first message's, then as the answer to the TCP (subflow) dump, with the
 * last message's; inet_diag_msg, INET_DIAG_INFO (mptcp_info, tcp_info, by
 * length) and INET_DIAG_ULP_INFO per message. Then the dump's end drops
 * connections without their MPTCP socket, and the state renders as the
 * API's rows. A reply ends, continues or fails with an errno; every socket
 * counted added is in the state. The seeds are this kernel's (6.18)
 * answers, captured on loopback with one MPTCP connection: the MPTCP dump
 * with its NLMSG_DONE, the first datagram of the TCP dump (the subflows
 * with their ULP info, then plain TCP sockets), DONE alone, an empty IPv6
 * dump, and the whole resync in one buffer.
 */
#include <errno.h>
#include <netinet/in.h>

#include "base/arena.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_state.h"
#include "tests/fuzz/fuzz_common.h"

static uint32_t last_seq(const void *buf, size_t len)
{
	const struct nlmsghdr *h;
	uint32_t seq = 0;
	size_t left;

	mptcp_nlmsg_for_each(h, buf, len, left) seq = h->nlmsg_seq;
	return seq;
}

static void check_pass(const void *buf, size_t len, uint32_t seq, int proto,
		       struct mptcp_state *fresh, size_t *total)
{
	size_t conns0, sf0, conns, sf;
	int added = 0, r;

	mptcp_state_counts(fresh, &conns0, &sf0);
	r = mptcp_diag_reply(buf, len, seq, proto, 1, fresh, 1000, &added);
	FUZZ_CHECK(r <= 1, "reply %d", r);
	FUZZ_CHECK(added >= 0, "added %d", added);
	mptcp_state_counts(fresh, &conns, &sf);
	/* (a subflow may bring its connection: TCP's count is not bounded so) */
	FUZZ_CHECK(proto == IPPROTO_TCP || conns + sf <= conns0 + sf0 + (size_t)added,
		   "%zu+%zu in the state after %d added", conns, sf, added);
	*total += (size_t)added;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mptcp_state *fresh;
	struct arena ar = {0};
	size_t total = 0;
	uint32_t first;
	void *copy;

	if (size > 1 << 20)
		return 0;
	/* An aligned private copy, as the recv() buffer is. */
	copy = malloc(size ? size : 1);
	fresh = mptcp_state_new();
	if (!copy || !fresh) {
		free(copy);
		mptcp_state_free(fresh);
		return 0;
	}
	memcpy(copy, data, size);
	first = size >= sizeof(struct nlmsghdr) ? ((const struct nlmsghdr *)copy)->nlmsg_seq : 0;
	check_pass(copy, size, first, IPPROTO_MPTCP, fresh, &total);
	check_pass(copy, size, last_seq(copy, size), IPPROTO_TCP, fresh, &total);
	mptcp_diag_dump_end(fresh);
	mptcp_state_msg(fresh, 0, 1000, &ar);
	arena_free(&ar);
	mptcp_state_free(fresh);
	free(copy);
	return 0;
}
