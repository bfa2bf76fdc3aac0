/* SPDX-License-Identifier: MIT */
/*
 * Private to the mptcp collector: its state (mptcp.c owns it) and the
 * files that read it (mptcp_routes.c: GET /api/v1/mptcp/connections).
 */
#ifndef SYSOBS_MPTCP_PRIV_H
#define SYSOBS_MPTCP_PRIV_H

#include <libmnl/libmnl.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_mib.h"
#include "collectors/mptcp/mptcp_state.h"

#define MPTCP_MAX_NETNS 64

/* One watched network namespace. */
struct mptcp_watch {
	char path[256];	       /* as configured ("self" for our own) */
	uint64_t ino;	       /* netns inode: the netns id in rows and JSON */
	struct mnl_socket *nl; /* event socket, joined to the events group */
	uint16_t family;       /* mptcp_pm genl family id in that netns */
	int diag_fd;	       /* NETLINK_SOCK_DIAG socket in that netns */
	int pm_type_fd;	       /* /proc/sys/net/mptcp/pm_type of that netns */
	int netstat_fd;	       /* /proc/net/netstat of that netns (MPTcpExt) */
	char ino_s[24];	       /* ino as a label value */
	int pm_warned;
	int resync_pending; /* overrun seen, resync once the queue is drained */
	uint64_t overruns;
	uint64_t join_rejected; /* MPTcpExtMPJoinRejected at the last read */
	int join_rejected_seen;
	struct mptcp_state *prev_dump; /* the last reconciliation's dump */
	int64_t prev_dump_ns;
	struct log_ratelimit overrun_rl;
};

struct mptcp_priv {
	struct collector *c;
	int epfd;
	size_t rcvbuf;
	struct mptcp_watch w[MPTCP_MAX_NETNS];
	size_t n_w;
	struct mptcp_state *state;
	int64_t next_pm_check_ns;
	int64_t reconcile_ns, next_reconcile_ns;
	int absent_side_is_client; /* kernel 5.19+: see mptcp_event_side_resolve() */

	struct mptcp_mib mib; /* scratch of mptcp_mib_read() */
	struct sink_series *fallbacks_c;
	struct sink_series *correction_s[4];
	struct sink_series *ev_series[MPTCP_EV_MAX + 1];
	struct sink_series *lifetime_s;
	struct sink_series *conns_g, *subflows_g, *overruns_c, *unknown_ev_c, *unknown_attr_c,
	    *malformed_c, *unmatched_c, *resyncs_c;
};

extern const struct collector_route mptcp_routes[];

#endif
