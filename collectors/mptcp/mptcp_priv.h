/* SPDX-License-Identifier: MIT */
/*
 * Private to the mptcp collector: its state (mptcp.c owns it) and the
 * files that read it (mptcp_routes.c: GET /api/v1/mptcp/connections).
 */
#ifndef SYSOBS_MPTCP_PRIV_H
#define SYSOBS_MPTCP_PRIV_H

#include <libmnl/libmnl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_mib.h"
#include "collectors/mptcp/mptcp_state.h"

#define MPTCP_MAX_NETNS 64

/* The pod of a watched namespace (mptcp_pod.c): for inode ino. */
struct mptcp_pod_cache {
	uint64_t ino;
	bool found;
	int64_t first_miss_ns; /* the first lookup that found no pod, 0 none */
	int64_t next_ns;       /* no pod found: not asked again before */
	struct sink_pod names;
	struct sink_series *info; /* sysobs_mptcp_netns_pod_info, once found */
};

/* One watched network namespace. */
struct mptcp_watch {
	char path[256];	       /* as configured ("self" for our own) */
	uint64_t ino;	       /* netns inode: the netns id in rows and JSON */
	uint64_t dev;	       /* st_dev of the netns file (nsfs) */
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
	struct log_ratelimit follow_rl; /* the path names no usable namespace */
	struct mptcp_pod_cache pod;	/* main thread */
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
	int absent_side_is_client; /* mptcp_genl_family_reports_side(), set by the probe */

	struct mptcp_subflow_ctx *sub; /* subflow health (mptcp_subflow.c) */

	int rec_fd;		    /* record = FILE: the recording, -1 none (mptcp_replay.c) */
	uint64_t rec_size, rec_max; /* its bytes, record_max_size */
	const char *rec_path;
	bool replaying; /* replay = FILE: nothing live runs */
	char *replay;	/* its whole file, checked, until replayed at start */
	size_t replay_len;

	struct mptcp_mib mib; /* scratch of mptcp_mib_read() */
	struct sink_series *fallbacks_c;
	struct sink_series *correction_s[4];
	struct sink_series *ev_series[MPTCP_EV_MAX + 1];
	struct sink_series *lifetime_s;
	struct sink_series *conns_g, *subflows_g, *overruns_c, *unknown_ev_c, *unknown_attr_c,
	    *malformed_c, *unmatched_c, *resyncs_c;
};

/* Index of each family in mptcp.c's ops->metrics (collector_family()). */
enum {
	MPTCP_M_EVENTS,
	MPTCP_M_RESETS,
	MPTCP_M_LIFETIME,
	MPTCP_M_CONNS,
	MPTCP_M_SUBFLOWS,
	MPTCP_M_OVERRUNS,
	MPTCP_M_RESYNCS,
	MPTCP_M_UNKNOWN_EVENTS,
	MPTCP_M_UNKNOWN_ATTRS,
	MPTCP_M_MALFORMED,
	MPTCP_M_UNMATCHED,
	MPTCP_M_CORRECTIONS,
	MPTCP_M_FALLBACKS,
	MPTCP_M_JOIN_FAILURES,
	MPTCP_M_MIB,
	MPTCP_M_MIB_GAUGE,
	MPTCP_M_SF_SRTT, /* subflow health (mptcp_subflow.c) */
	MPTCP_M_SF_ACKED,
	MPTCP_M_SF_RECEIVED,
	MPTCP_M_SF_RETRANS,
	MPTCP_M_NETNS_POD, /* mptcp_pod.c */
	MPTCP_M_N,
};

extern const struct collector_route mptcp_routes[];

/*
 * mptcp.c, on the main thread; also the seam unit tests drive the event
 * path through (tests/unit/test_collector_mptcp.c), as iproute2's
 * ipmptcp.c replays messages into its handler:
 * mptcp_series_start(): the series start() publishes, before any event;
 * mptcp_buffer_handle(): one datagram of w's event socket read at now_ns,
 * each event into its MptcpEvent row, the live state and the counters.
 */
void mptcp_series_start(struct mptcp_priv *p);
void mptcp_buffer_handle(struct mptcp_priv *p, struct mptcp_watch *w, const void *buf, size_t len,
			 int64_t now_ns);

/*
 * mptcp_replay.c: record = FILE and replay = FILE (format: mptcp_rec.h).
 * mptcp_record_open(): opens path to append to (init): a new recording, or
 * the whole one there (a config error for any other file, left untouched); mptcp_record(): one
 * record of kind (mptcp_rec_kind) about w (WATCH: its path and family, buf unused), nothing without
 * a recording; mptcp_replay_load(): reads and checks path, its namespaces into p->w (init; a config
 * error naming the offset if the file is bad); mptcp_replay_run(): every record through
 * mptcp_buffer_handle(), the first at start_ns; mptcp_replay_free(): closes and frees both.
 */
int mptcp_record_open(struct mptcp_priv *p, const char *path, uint64_t max_size);
void mptcp_record(struct mptcp_priv *p, const struct mptcp_watch *w, unsigned kind, const void *buf,
		  size_t len, int64_t now_ns);
int mptcp_replay_load(struct mptcp_priv *p, const char *path);
void mptcp_replay_run(struct mptcp_priv *p, int64_t start_ns);
void mptcp_replay_free(struct mptcp_priv *p);

#endif
