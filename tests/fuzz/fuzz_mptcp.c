/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the MPTCP event decoder. The input is a netlink datagram as
 * recv() returns it (one or more messages); every message goes through
 * mptcp_event_decode() and the text helpers, as the collector does. The
 * corpus is tests/data/mptcp/ (messages recorded from a real kernel). The
 * same bytes also go through the MPTcpExt MIB parser (/proc/net/netstat text),
 * and the tcp_info / mptcp_info decoders (the whole buffer as the struct,
 * and each INET_DIAG_INFO through the sock_diag path).
 */
#include <libmnl/libmnl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_mib.h"
#include "collectors/mptcp/mptcp_nl.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nlmsghdr *nlh;
	struct mptcp_event ev;
	uint16_t family;
	uint32_t group;
	char s[64], d[64], t[32], u[256];
	struct mptcp_state *st;
	struct arena ar = {0};
	void *copy;
	size_t left;

	if (size > 1 << 20)
		return 0;
	/* An aligned private copy, as a recv() buffer would be. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	/* The whole buffer as one message, whatever its header claims. */
	{
		static struct mptcp_mib mib;

		mptcp_mib_parse(copy, size, &mib);
	}
	if (mptcp_event_decode(copy, size, &ev) == 0) {
		mptcp_event_saddr_str(&ev, s, sizeof(s));
		mptcp_event_daddr_str(&ev, d, sizeof(d));
		mptcp_event_type_str(ev.type, t, sizeof(t));
		mptcp_event_unknown_str(&ev, u, sizeof(u));
		mptcp_reset_reason_name(ev.reset_reason);
	}
	mptcp_genl_family_parse(copy, size, &family, &group);
	{
		struct mptcp_tcp_stats ts;
		struct mptcp_conn_stats cs;

		mptcp_tcp_info_decode(copy, size, &ts);
		mptcp_conn_info_decode(copy, size, &cs);
	}
	/* And walked as the collector walks a datagram. */
	mptcp_nlmsg_for_each(nlh, copy, size, left)
	{
		if (mptcp_event_decode(nlh, nlh->nlmsg_len, &ev) == 0) {
			mptcp_event_unknown_str(&ev, u, sizeof(u));
			mptcp_event_side_resolve(&ev, 1);
		}
	}
	/* The same datagram as a sock_diag reply of either dump. */
	st = mptcp_state_new();
	if (st) {
		mptcp_nlmsg_for_each(nlh, copy, size, left)
		{
			mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, 262, 1, st, 1);
			mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, 6, 1, st, 1);
		}
		mptcp_state_msg(st, 0, 1000, &ar);
		arena_free(&ar);
		/* The dump's figures into a live state that knows the same
		 * connections (the reconciliation's path), and the rows. */
		{
			struct mptcp_state *live = mptcp_state_new();

			if (live) {
				mptcp_nlmsg_for_each(nlh, copy, size, left)
				    mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, 6, 1, live, 0);
				mptcp_subflow_info_take(live, 1, st, NULL, NULL);
				mptcp_state_msg(live, 0, 1000, &ar);
				arena_free(&ar);
				mptcp_state_free(live);
			}
		}
		mptcp_state_free(st);
	}
	free(copy);
	return 0;
}
