/* SPDX-License-Identifier: MIT */
/*
 * mptcp collector: MPTCP path-manager events from generic netlink (family
 * "mptcp_pm", group "mptcp_pm_events"), one socket per watched network
 * namespace, all in a private epoll fd exposed as c->fd.
 *
 * Each event is decoded (mptcp_decode.c), applied to the live state
 * (mptcp_state.c), counted in metrics and stored as one mptcp_events row.
 * An overrun (ENOBUFS) is counted, logged rate-limited, and repaired by
 * rebuilding that netns's live state from sock_diag (mptcp_diag.c).
 *
 * Every `reconcile` the live state of each netns is compared with a fresh
 * sock_diag dump (mptcp_state_reconcile: a difference seen in two dumps in a
 * row is corrected and counted), so what sends no event (MP_FASTCLOSE) cannot
 * leave a connection live for ever.
 *
 * Config [collector.mptcp]:
 *   netns      comma list of "self", /run/netns/NAME or /proc/PID/ns/net
 *   rcvbuf     receive buffer of each event socket
 *   reconcile  period of the comparison with the socket dump
 *   record     FILE: every datagram received also appended there
 *   replay     FILE: a recording's datagrams instead of live ones
 *              (mptcp_replay.c: nothing live runs then)
 *
 * A path-named namespace is looked up again at every collect (its inode by
 * stat(2)): one deleted is released (its sockets closed, so the kernel can
 * free it), and one created again under the same path (a container
 * restart) is entered and watched like a new one (mptcp_watch_follow).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/log.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_mib.h"
#include "collectors/mptcp/mptcp_nl.h"
#include "collectors/mptcp/mptcp_pod.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_rec.h"
#include "collectors/mptcp/mptcp_recover.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

#define MPTCP_RECV_BUDGET 512 /* datagrams per netns per on_ready */
#define MPTCP_PM_CHECK_MS 10000

struct mptcp_cfg {
	const char *netns; /* comma list, parsed by mptcp_config_netns() */
	uint64_t rcvbuf;
	uint64_t reconcile;	     /* ms */
	uint64_t subflow_history;    /* ms, 0: off */
	const char *record, *replay; /* "": none (mptcp_replay.c) */
	uint64_t record_max_size;    /* bytes */
};

static const struct cfg_key mptcp_keys[] = {
    CFG_KEY(struct mptcp_cfg, netns, CFG_STRING, "self", 0, 0,
	    "network namespaces to watch, comma-separated: self (the agent's own), "
	    "/run/netns/NAME or /proc/PID/ns/net"),
    CFG_KEY(struct mptcp_cfg, rcvbuf, CFG_SIZE, "4M", 4096, 1ull << 30,
	    "receive buffer of each event socket (bytes; k/M suffixes)"),
    CFG_KEY(struct mptcp_cfg, reconcile, CFG_DURATION, "10s", 500, 3600000,
	    "period of the comparison of the live state with the MPTCP socket dump (sock_diag); "
	    "a difference seen in two dumps in a row is corrected and counted (also the subflows' "
	    "tcp_info period)"),
    CFG_KEY(struct mptcp_cfg, subflow_history, CFG_DURATION, "60s", 0, 86400000,
	    "period of the mptcp_subflow_samples history rows: one per subflow that lived that "
	    "long, at the next reconciliation (0: none)"),
    CFG_KEY(struct mptcp_cfg, record, CFG_STRING, "", 0, 0,
	    "file the event sockets' datagrams are recorded into as they arrive (created, or "
	    "appended to if it is a recording: any other file is refused; docs/mptcp.md); "
	    "empty: none"),
    CFG_KEY(struct mptcp_cfg, record_max_size, CFG_SIZE, "64M", 1024, 128 << 20,
	    "the recording stops (logged) before a record would take the file past this size; "
	    "what it holds stays a whole recording (a replay reads at most 256M)"),
    CFG_KEY(struct mptcp_cfg, replay, CFG_STRING, "", 0, 0,
	    "a recording (made with record) replayed at start instead of watching live: its "
	    "namespaces replace netns, and no socket dump, MIB read, pod lookup or subflow "
	    "sampling runs (docs/mptcp.md); empty: live"),
    {0},
};

static const char *const mptcp_type_l[] = {"type", NULL};
static const char *const mptcp_reason_l[] = {"reason", NULL};
static const char *const mptcp_kind_l[] = {"kind", NULL};
static const char *const mptcp_errno_l[] = {"errno", NULL};
static const char *const mptcp_mib_l[] = {"netns", "counter", NULL};
static const char *const mptcp_sf_l[] = {"netns", "loc_id", NULL};
static const char *const mptcp_pod_l[] = {"netns", "pod", "pod_namespace", "pod_uid", NULL};
/* Subflow smoothed RTT: 100 us (a LAN) .. 10 s (a bufferbloated path). */
// clang-format off
static const double mptcp_srtt_bounds[] = {
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
};
// clang-format on
/* 1 ms (a join torn down at once) .. 1 day (long-lived connections), about
 * 1-2-5 per decade below a minute, then minutes and hours. */
// clang-format off
static const double mptcp_lifetime_bounds[] = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60,
    300, 900, 1800, 3600, 7200, 21600, 43200, 86400,
};
// clang-format on

static const struct metric_desc mptcp_metrics[] = {
    [MPTCP_M_EVENTS] = {"sysobs_mptcp_events_total",
			"MPTCP path-manager events received, by event type.", METRIC_KIND_COUNTER,
			mptcp_type_l},
    [MPTCP_M_RESETS] = {"sysobs_mptcp_subflow_resets_total",
			"Subflows closed by an MP_TCPRST, by reset reason.", METRIC_KIND_COUNTER,
			mptcp_reason_l},
    [MPTCP_M_LIFETIME] = {"sysobs_mptcp_subflow_lifetime_seconds",
			  "Lifetime of MPTCP subflows, from SUB_ESTABLISHED (the connection's "
			  "ESTABLISHED for the initial subflow) to SUB_CLOSED or CLOSED; subflows "
			  "whose start only a socket dump saw are not observed.",
			  METRIC_KIND_HISTOGRAM, NULL, mptcp_lifetime_bounds,
			  sizeof(mptcp_lifetime_bounds) / sizeof(mptcp_lifetime_bounds[0])},
    [MPTCP_M_CONNS] = {"sysobs_mptcp_connections",
		       "Live MPTCP connections in the watched namespaces.", METRIC_KIND_GAUGE},
    [MPTCP_M_SUBFLOWS] = {"sysobs_mptcp_subflows", "Live MPTCP subflows (initial one included).",
			  METRIC_KIND_GAUGE},
    [MPTCP_M_OVERRUNS] = {"sysobs_mptcp_overruns_total",
			  "Event socket overruns (ENOBUFS: events lost, live state resynced "
			  "from sock_diag).",
			  METRIC_KIND_COUNTER},
    [MPTCP_M_RESYNCS] = {"sysobs_mptcp_resyncs_total", "Live-state rebuilds from sock_diag.",
			 METRIC_KIND_COUNTER},
    [MPTCP_M_UNKNOWN_EVENTS] = {"sysobs_mptcp_unknown_events_total",
				"Events of a type this sysobs does not know.", METRIC_KIND_COUNTER},
    [MPTCP_M_UNKNOWN_ATTRS] = {"sysobs_mptcp_unknown_attributes_total",
			       "Event attributes of an unknown type or unexpected size (kept in "
			       "unknown_attrs).",
			       METRIC_KIND_COUNTER},
    [MPTCP_M_MALFORMED] = {"sysobs_mptcp_malformed_messages_total",
			   "Netlink messages that could not be decoded.", METRIC_KIND_COUNTER},
    [MPTCP_M_UNMATCHED] = {"sysobs_mptcp_unmatched_events_total",
			   "Events about a connection, subflow or listener the live state did not "
			   "know, other than a client fallback's CLOSED and a failed join's "
			   "SUB_CLOSED (e.g. after an overrun).",
			   METRIC_KIND_COUNTER},
    [MPTCP_M_CORRECTIONS] = {"sysobs_mptcp_reconcile_corrections_total",
			     "Live-state corrections by the periodic comparison with the MPTCP "
			     "socket dump (what the events missed), by kind.",
			     METRIC_KIND_COUNTER, mptcp_kind_l},
    [MPTCP_M_FALLBACKS] = {"sysobs_mptcp_client_fallbacks_total",
			   "Connections closed without CREATED: clients that fell back to TCP at "
			   "the handshake (the kernel sends them CLOSED only).",
			   METRIC_KIND_COUNTER},
    [MPTCP_M_JOIN_FAILURES] =
	{"sysobs_mptcp_join_failures_total",
	 "Subflows closed without SUB_ESTABLISHED (joins that failed), by "
	 "the error the kernel reported (none: no ERROR attribute), and joins "
	 "a watched netns refused by its limits (rejected: MPJoinRejected).",
	 METRIC_KIND_COUNTER, mptcp_errno_l},
    [MPTCP_M_MIB] =
	{"sysobs_mptcp_mib_total",
	 "The kernel's MPTcpExt MIB counters of each watched namespace (/proc/net/netstat "
	 "read inside it), by counter name as the kernel spells it without the MPTcpExt "
	 "prefix (nstat: MPTcpExt<counter>).",
	 METRIC_KIND_COUNTER, mptcp_mib_l},
    [MPTCP_M_MIB_GAUGE] = {"sysobs_mptcp_mib_current",
			   "The MPTcpExt MIB entries that are gauges (MPCurrEstab: established "
			   "MPTCP connections), per watched namespace.",
			   METRIC_KIND_GAUGE, mptcp_mib_l},
    [MPTCP_M_SF_SRTT] =
	{"sysobs_mptcp_subflow_srtt_seconds",
	 "Smoothed RTT of each subflow at each reconciliation (tcp_info of the socket "
	 "dump), by netns and local endpoint id (0: the initial subflow).",
	 METRIC_KIND_HISTOGRAM, mptcp_sf_l, mptcp_srtt_bounds,
	 sizeof(mptcp_srtt_bounds) / sizeof(mptcp_srtt_bounds[0])},
    [MPTCP_M_SF_ACKED] = {"sysobs_mptcp_subflow_acked_bytes_total",
			  "Bytes the peer acknowledged on subflows (tcp_info bytes_acked growth "
			  "between reconciliations), by netns and local endpoint id.",
			  METRIC_KIND_COUNTER, mptcp_sf_l},
    [MPTCP_M_SF_RECEIVED] = {"sysobs_mptcp_subflow_received_bytes_total",
			     "Bytes received on subflows (tcp_info bytes_received growth), by "
			     "netns and local endpoint id.",
			     METRIC_KIND_COUNTER, mptcp_sf_l},
    [MPTCP_M_SF_RETRANS] = {"sysobs_mptcp_subflow_retransmits_total",
			    "Segments retransmitted on subflows (tcp_info total_retrans growth), "
			    "by netns and local endpoint id.",
			    METRIC_KIND_COUNTER, mptcp_sf_l},
    [MPTCP_M_NETNS_POD] = {"sysobs_mptcp_netns_pod_info",
			   "1 for each watched namespace that is a Kubernetes pod's sandbox, "
			   "with the pod's names: joins the netns label of the other series to "
			   "the pod (docs/kubernetes.md).",
			   METRIC_KIND_GAUGE, mptcp_pod_l},
    [MPTCP_M_N] = {0},
};

static const struct event_table *const mptcp_tables[] = {&mptcp_events_table,
							 &mptcp_subflow_samples_table, NULL};

/* ---- network namespaces ---------------------------------------------- */

/* Runs fn in the netns at path (NULL: the current one) by switching the
 * calling thread there and back: sockets keep the netns they were created
 * in, and so does a /proc/sys/net file opened there. */
static int mptcp_in_netns(const char *path, int (*fn)(struct mptcp_watch *, struct mptcp_priv *),
			  struct mptcp_watch *w, struct mptcp_priv *p)
{
	int self_fd, ns_fd, ret, back;
	struct stat sb;

	if (!path) {
		if (stat("/proc/thread-self/ns/net", &sb) < 0)
			return -errno;
		__atomic_store_n(&w->ino, (uint64_t)sb.st_ino, __ATOMIC_RELAXED);
		w->dev = sb.st_dev;
		return fn(w, p);
	}
	ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0)
		return -errno;
	if (fstat(ns_fd, &sb) < 0) {
		ret = -errno;
		goto out_close_ns;
	}
	/* Read by HTTP threads (the namespaces of the live route). */
	__atomic_store_n(&w->ino, (uint64_t)sb.st_ino, __ATOMIC_RELAXED);
	w->dev = sb.st_dev;
	self_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self_fd < 0) {
		ret = -errno;
		goto out_close_ns;
	}
	if (setns(ns_fd, CLONE_NEWNET) < 0) {
		ret = errno == EINVAL ? -ENOTDIR : -errno; /* not a netns file */
		goto out_close_self;
	}
	ret = fn(w, p);
	back = setns(self_fd, CLONE_NEWNET);
	if (back < 0) {
		/* Cannot happen short of a kernel bug; staying in the wrong
		 * netns would silently mislead every other collector. */
		log_err("mptcp", "cannot return to the agent's netns: %s", strerror(errno));
		abort();
	}
out_close_self:
	close(self_fd);
out_close_ns:
	close(ns_fd);
	return ret;
}

/* Opens the sockets of one watch in the current netns. */
static int mptcp_watch_open_here(struct mptcp_watch *w, struct mptcp_priv *p)
{
	int err = 0;

	w->nl = mptcp_events_open(p->rcvbuf, &w->family, NULL, &err);
	if (!w->nl)
		return err;
	w->diag_fd = mptcp_diag_open();
	if (w->diag_fd < 0) {
		err = w->diag_fd;
		mnl_socket_close(w->nl);
		w->nl = NULL;
		return err;
	}
	/* Optional: pm_type exists from Linux 6.0. */
	w->pm_type_fd = open("/proc/sys/net/mptcp/pm_type", O_RDONLY | O_CLOEXEC);
	/* A proc/net file shows the netns it was opened in, for ever; the
	 * thread's own (it is the one that switched netns). */
	w->netstat_fd = open("/proc/thread-self/net/netstat", O_RDONLY | O_CLOEXEC);
	mptcp_subflow_open_here(p, w);
	snprintf(w->ino_s, sizeof(w->ino_s), "%llu", (unsigned long long)w->ino);
	return 0;
}

/* Probe for init: can this netns be entered and does it have mptcp_pm?
 * Its reply also says whether the kernel reports the side (one kernel for
 * every netns: any probe's answer is the same). */
static int mptcp_probe_here(struct mptcp_watch *w, struct mptcp_priv *p)
{
	int err = 0;
	struct mnl_socket *nl = mptcp_events_open(0, &w->family, &p->absent_side_is_client, &err);

	if (!nl)
		return err;
	mnl_socket_close(nl);
	return 0;
}

static void mptcp_watch_close(struct mptcp_watch *w)
{
	mptcp_state_free(w->prev_dump);
	w->prev_dump = NULL;
	if (w->nl)
		mnl_socket_close(w->nl);
	if (w->diag_fd >= 0)
		close(w->diag_fd);
	if (w->pm_type_fd >= 0)
		close(w->pm_type_fd);
	if (w->netstat_fd >= 0)
		close(w->netstat_fd);
	w->nl = NULL;
	w->diag_fd = w->pm_type_fd = w->netstat_fd = -1;
}

/* Trap (KERNEL.md): with net.mptcp.pm_type=1 the kernel behaves, while
 * anyone listens on the events group, as if a userspace PM were present and
 * accepts joins / ADD_ADDR. Warn once per netns. */
static void mptcp_pm_type_check(struct mptcp_priv *p, struct mptcp_watch *w)
{
	char buf[16];
	ssize_t n;

	if (w->pm_type_fd < 0 || w->pm_warned)
		return;
	n = pread(w->pm_type_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = 0;
	if (atoi(buf) == 1) {
		w->pm_warned = 1;
		clog_warn(p->c,
			  "netns %s (%llu): net.mptcp.pm_type=1 (userspace PM); while sysobs "
			  "listens on mptcp_pm_events this kernel accepts MP_JOIN/ADD_ADDR as if "
			  "a userspace path manager were running",
			  w->path, (unsigned long long)w->ino);
	}
}

/* ---- config ------------------------------------------------------------ */

/* Parses the netns list into p->w[].path. 0 or -EINVAL (collector_config_error). */
static int mptcp_config_netns(struct collector *c, struct mptcp_priv *p)
{
	const struct mptcp_cfg *cfg = c->cfg;
	const char *v = cfg->netns;
	char *dup, *save = NULL, *tok;
	int ret = 0;

	if (!v || !*v)
		v = "self";
	dup = strdup(v);
	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		tok = cfg_trim(tok);
		if (!*tok)
			continue;
		if (strcmp(tok, "self") && tok[0] != '/') {
			ret = collector_config_error(
			    c, "netns", "'%s': expected self or an absolute path", tok);
			break;
		}
		if (p->n_w == MPTCP_MAX_NETNS || strlen(tok) >= sizeof(p->w[0].path)) {
			ret = collector_config_error(
			    c, "netns", "too many namespaces or path too long (max %d)",
			    MPTCP_MAX_NETNS);
			break;
		}
		for (size_t i = 0; i < p->n_w; i++) {
			if (!strcmp(p->w[i].path, tok)) {
				ret = collector_config_error(c, "netns", "'%s' listed twice", tok);
				goto out;
			}
		}
		snprintf(p->w[p->n_w].path, sizeof(p->w[0].path), "%s", tok);
		p->n_w++;
	}
	if (!ret && !p->n_w)
		ret = collector_config_error(c, "netns", "no namespace to watch");
out:
	free(dup);
	return ret;
}

/* mptcp_config_netns() into a scratch mptcp_priv: no namespace entered;
 * record and replay not both. */
static int mptcp_check_config(struct collector *c)
{
	const struct mptcp_cfg *cfg = c->cfg;
	struct mptcp_priv *p = calloc(1, sizeof(*p));
	int err = p ? mptcp_config_netns(c, p) : -ENOMEM;

	free(p);
	if (cfg->record[0] && cfg->replay[0])
		err = collector_config_error(c, "replay",
					     "replay and record exclude each other (a replay "
					     "receives nothing to record)");
	return err;
}

/* ---- ops ---------------------------------------------------------------- */

static int mptcp_init(struct collector *c)
{
	const struct mptcp_cfg *cfg = c->cfg;
	struct mptcp_priv *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->priv = p;
	p->c = c;
	p->epfd = -1;
	p->rec_fd = -1;
	for (size_t i = 0; i < MPTCP_MAX_NETNS; i++)
		p->w[i].diag_fd = p->w[i].pm_type_fd = p->w[i].netstat_fd = -1;
	p->rcvbuf = cfg->rcvbuf;
	p->reconcile_ns = (int64_t)cfg->reconcile * 1000000;
	p->state = mptcp_state_new();
	if (!p->state || mptcp_subflow_init(p, cfg->subflow_history))
		return -ENOMEM;
	if (cfg->replay[0])
		return mptcp_replay_load(p, cfg->replay);
	err = mptcp_config_netns(c, p);
	if (!err && cfg->record[0])
		err = mptcp_record_open(p, cfg->record, cfg->record_max_size);
	if (err)
		return err;
	/* Probe every netns now, so a missing namespace or a kernel without
	 * MPTCP makes the collector unavailable with a reason. */
	for (size_t i = 0; i < p->n_w; i++) {
		struct mptcp_watch *w = &p->w[i];
		const char *path = strcmp(w->path, "self") ? w->path : NULL;

		err = mptcp_in_netns(path, mptcp_probe_here, w, p);
		if (err == -ENOENT && !path)
			return collector_unavailable(c, -ENODEV,
						     "no generic netlink family %s (kernel "
						     "without CONFIG_MPTCP?)",
						     MPTCP_GENL_NAME);
		if (err == -EPERM || err == -EACCES)
			return collector_unavailable(c, -EPERM,
						     "netns %s: joining %s needs CAP_NET_ADMIN "
						     "(and CAP_SYS_ADMIN to enter a netns)",
						     w->path, MPTCP_GENL_EVENTS_GRP);
		if (err == -ENOTDIR)
			return collector_unavailable(
			    c, -ENOENT, "netns %s: not a network namespace file", w->path);
		if (err)
			return collector_unavailable(c, err, "netns %s: %s", w->path,
						     err == -ENOENT ? "no such namespace, or no "
								      "MPTCP in it"
								    : strerror(-err));
	}
	return 0;
}

static void mptcp_update_gauges(struct mptcp_priv *p)
{
	size_t conns, subflows;

	mptcp_state_counts(p->state, &conns, &subflows);
	sink_set(p->c->sink, p->conns_g, (double)conns);
	sink_set(p->c->sink, p->subflows_g, (double)subflows);
}

/* Start times and sides of connections a dump showed, from the history. */
static void mptcp_recover(struct mptcp_priv *p, struct mptcp_watch *w)
{
	int n = mptcp_recover_starts(p->c->sink, p->state, w->ino);

	if (n < 0)
		clog_warn(p->c,
			  "netns %s: history not readable (%s): connections that predate the "
			  "agent keep an unknown start time",
			  w->path, strerror(-n));
	else if (n > 0)
		clog_info(p->c, "netns %s: start time and side of %d connections from history",
			  w->path, n);
}

/* Rebuilds the live state of one netns from sock_diag. */
static int mptcp_resync(struct mptcp_priv *p, struct mptcp_watch *w)
{
	struct mptcp_state *fresh = mptcp_state_new();
	int n;

	if (!fresh)
		return -ENOMEM;
	n = mptcp_diag_dump(w->diag_fd, w->ino, fresh, clock_wall_ns());
	if (n >= 0) {
		/* The next reconciliation starts over from its own dump. */
		mptcp_state_free(w->prev_dump);
		w->prev_dump = NULL;
		mptcp_state_resync(p->state, w->ino, fresh);
		sink_add(p->c->sink, p->resyncs_c, 1);
		mptcp_recover(p, w);
		mptcp_update_gauges(p);
	} else {
		clog_warn(p->c, "netns %s: sock_diag resync failed: %s", w->path, strerror(-n));
	}
	mptcp_state_free(fresh);
	return n;
}

/*
 * Joins this netns refused (its net.mptcp limits: `ip mptcp limits set
 * subflows 0`) into join_failures_total{errno="rejected"}. No event says so:
 * the kernel checks the limit at the third ACK (subflow_syn_recv_sock), so
 * the joining side reports SUB_ESTABLISHED then SUB_CLOSED with neither
 * ERROR nor RESET_REASON, and the refusing side sends no event at all; only
 * its MIB counts MPJoinRejected. Counted from the agent's start (the first
 * read is the baseline).
 */
static void mptcp_join_rejected_note(struct mptcp_priv *p, struct mptcp_watch *w, uint64_t v)
{
	if (w->join_rejected_seen && v > w->join_rejected)
		sink_add(p->c->sink,
			 collector_series(p->c, MPTCP_M_JOIN_FAILURES,
					  (const char *const[]){"rejected"}),
			 (double)(v - w->join_rejected));
	w->join_rejected = v;
	w->join_rejected_seen = 1;
}

/* Publishes the MPTcpExt MIB of w: every counter the kernel has, as it
 * spells it (new kernels' counters appear by themselves). */
static void mptcp_mib_read(struct mptcp_priv *p, struct mptcp_watch *w)
{
	static char buf[1 << 16];
	size_t len = 0;
	ssize_t n;
	int cnt;

	if (w->netstat_fd < 0)
		return;
	/* A seq_file: read from offset 0 each time, to its end. */
	while (len < sizeof(buf) &&
	       (n = pread(w->netstat_fd, buf + len, sizeof(buf) - len, (off_t)len)) > 0)
		len += (size_t)n;
	cnt = mptcp_mib_parse(buf, len, &p->mib);
	if (cnt < 0) {
		clog_warn(p->c, "netns %s: /proc/net/netstat: MPTcpExt lines do not parse",
			  w->path);
		return;
	}
	for (size_t i = 0; i < p->mib.n; i++) {
		const char *lv[2] = {w->ino_s, p->mib.name[i]};
		int gauge = mptcp_mib_is_gauge(p->mib.name[i]);

		sink_set(p->c->sink,
			 collector_series(p->c, gauge ? MPTCP_M_MIB_GAUGE : MPTCP_M_MIB, lv),
			 (double)p->mib.value[i]);
		if (!strcmp(p->mib.name[i], "MPJoinRejected"))
			mptcp_join_rejected_note(p, w, p->mib.value[i]);
	}
}

/* Drains one netns's event socket (bounded). */
static void mptcp_watch_read(struct mptcp_priv *p, struct mptcp_watch *w)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	int fd = mnl_socket_get_fd(w->nl);

	for (int i = 0; i < MPTCP_RECV_BUDGET; i++) {
		int64_t now = clock_wall_ns();
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* Queue drained: what it held is older than a dump
				 * taken now, so only now is a resync exact. */
				if (w->resync_pending) {
					w->resync_pending = 0;
					mptcp_resync(p, w);
				}
				break;
			}
			if (errno == ENOBUFS) {
				/* The kernel dropped events for this socket. */
				/* Read by HTTP threads. */
				__atomic_add_fetch(&w->overruns, 1, __ATOMIC_RELAXED);
				w->resync_pending = 1;
				sink_add(p->c->sink, p->overruns_c, 1);
				mptcp_record(p, w, MPTCP_REC_OVERRUN, NULL, 0, now);
				log_ratelimited(&w->overrun_rl, 5000, LOG_LVL_WARN, "mptcp",
						"netns %s: event socket overrun (%llu so far), "
						"resyncing live state from sock_diag",
						w->path, (unsigned long long)w->overruns);
				continue;
			}
			clog_warn(p->c, "netns %s: recv: %s", w->path, strerror(errno));
			break;
		}
		mptcp_record(p, w, MPTCP_REC_DGRAM, buf, (size_t)n, now);
		mptcp_buffer_handle(p, w, buf, (size_t)n, now);
	}
}

/*
 * One periodic reconciliation of w: the event queue is drained first (what
 * it held is then in the state), the socket dump taken, and differences
 * seen in this dump and the previous one corrected (mptcp_state_reconcile).
 */
static void mptcp_reconcile(struct mptcp_priv *p, struct mptcp_watch *w)
{
	struct mptcp_reconcile_stats rs = {0};
	struct mptcp_state *fresh;
	int64_t now;
	int n;

	mptcp_watch_read(p, w);
	if (w->resync_pending)
		return; /* an overrun's resync comes first */
	fresh = mptcp_state_new();
	if (!fresh)
		return;
	now = clock_wall_ns();
	n = mptcp_diag_dump(w->diag_fd, w->ino, fresh, now);
	if (n < 0) {
		clog_warn(p->c, "netns %s: sock_diag reconciliation failed: %s", w->path,
			  strerror(-n));
		mptcp_state_free(fresh);
		return;
	}
	mptcp_state_reconcile(p->state, w->ino, fresh, w->prev_dump, w->prev_dump_ns, &rs);
	mptcp_subflow_sample(p, w, fresh, now);
	mptcp_state_free(w->prev_dump);
	w->prev_dump = fresh;
	w->prev_dump_ns = now;
	sink_add(p->c->sink, p->correction_s[0], rs.conns_removed);
	sink_add(p->c->sink, p->correction_s[1], rs.conns_added);
	sink_add(p->c->sink, p->correction_s[2], rs.subflows_removed);
	sink_add(p->c->sink, p->correction_s[3], rs.subflows_added);
	if (rs.conns_removed || rs.conns_added || rs.subflows_removed || rs.subflows_added) {
		clog_info(p->c,
			  "netns %s: reconciled with the socket dump: connections -%u +%u, "
			  "subflows -%u +%u",
			  w->path, rs.conns_removed, rs.conns_added, rs.subflows_removed,
			  rs.subflows_added);
		mptcp_update_gauges(p);
	}
}

/* Enters the namespace of watch i and watches it: sockets opened and
 * polled, its MIB read, its live connections dumped. */
static int mptcp_watch_start(struct mptcp_priv *p, size_t i)
{
	struct mptcp_watch *w = &p->w[i];
	const char *path = strcmp(w->path, "self") ? w->path : NULL;
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
	int err;

	err = mptcp_in_netns(path, mptcp_watch_open_here, w, p);
	if (err) {
		mptcp_watch_close(w);
		mptcp_subflow_close(p, w);
		return err;
	}
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, mnl_socket_get_fd(w->nl), &ev) < 0) {
		err = -errno;
		mptcp_watch_close(w);
		mptcp_subflow_close(p, w);
		return err;
	}
	mptcp_record(p, w, MPTCP_REC_WATCH, NULL, 0, clock_wall_ns());
	mptcp_pm_type_check(p, w);
	mptcp_mib_read(p, w);
	/* Connections that predate us: subscribed first, then dumped,
	 * so nothing falls in between. */
	mptcp_resync(p, w);
	return 0;
}

/*
 * Lets go of the namespace watch w was in: its sockets and files closed (the
 * last references the agent held on it, so the kernel can free a deleted
 * one), its connections and listeners out of the live state, its MIB series
 * gone from /metrics after the stale grace.
 */
static void mptcp_watch_release(struct mptcp_priv *p, struct mptcp_watch *w)
{
	struct mptcp_state *none = mptcp_state_new();

	mptcp_watch_close(w); /* a closed fd leaves the epoll set by itself */
	mptcp_subflow_close(p, w);
	if (none) {
		mptcp_state_resync(p->state, w->ino, none);
		mptcp_state_free(none);
	}
	for (size_t i = 0; i < p->mib.n; i++) {
		const char *lv[2] = {w->ino_s, p->mib.name[i]};
		size_t fam = mptcp_mib_is_gauge(p->mib.name[i]) ? MPTCP_M_MIB_GAUGE : MPTCP_M_MIB;

		sink_series_gone(p->c->sink, collector_family(p->c, fam),
				 collector_series(p->c, fam, lv));
	}
	mptcp_pod_forget(p->c, w);
	w->pm_warned = 0;
	w->resync_pending = 0;
	w->join_rejected_seen = 0;
	mptcp_update_gauges(p);
}

/*
 * Follows the path of watch i to the namespace it names now: `ip netns del`
 * removes /run/netns/NAME (released here: the agent would otherwise keep
 * the dead namespace alive and watch it for ever), `ip netns add` of the
 * same name (a container restart) makes it a new namespace with another
 * inode (watched from now on). "self" never changes.
 */
static void mptcp_watch_follow(struct mptcp_priv *p, size_t i)
{
	struct mptcp_watch *w = &p->w[i];
	uint64_t was = w->ino;
	struct stat sb;
	int err;

	if (!strcmp(w->path, "self"))
		return;
	if (stat(w->path, &sb) < 0) {
		if (w->nl) {
			mptcp_watch_release(p, w);
			clog_warn(p->c,
				  "netns %s (inode %llu) is gone (%s): released, watched again "
				  "when the path names a namespace",
				  w->path, (unsigned long long)was, strerror(errno));
		}
		return;
	}
	if (w->nl && (uint64_t)sb.st_ino == w->ino && sb.st_dev == w->dev)
		return;
	if (w->nl)
		mptcp_watch_release(p, w);
	err = mptcp_watch_start(p, i);
	if (err) {
		/* e.g. the path exists before `ip netns add` has mounted the
		 * namespace on it: tried again at the next collect. */
		log_ratelimited(&w->follow_rl, 60000, LOG_LVL_WARN, "mptcp",
				"netns %s (inode %llu): cannot watch it: %s%s", w->path,
				(unsigned long long)w->ino, strerror(-err),
				err == -EPERM ? " (entering a namespace needs CAP_SYS_ADMIN, "
						"gone with the privilege drop: [agent] user = "
						"root, or restart sysobsd)"
					      : "");
		return;
	}
	clog_warn(p->c, "netns %s is a new namespace (inode %llu, was %llu): watching it", w->path,
		  (unsigned long long)w->ino, (unsigned long long)was);
}

static int mptcp_start(struct collector *c)
{
	struct mptcp_priv *p = c->priv;
	int err;

	mptcp_series_start(p);
	if (p->replaying) {
		mptcp_replay_run(p, clock_wall_ns());
		mptcp_update_gauges(p);
		return 0; /* no fd, no interval: nothing live */
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return -errno;
	for (size_t i = 0; i < p->n_w; i++) {
		struct mptcp_watch *w = &p->w[i];

		err = mptcp_watch_start(p, i);
		if (err) {
			snprintf(c->why, sizeof(c->why), "netns %.160s: %s", w->path,
				 strerror(-err));
			return err;
		}
		clog_info(c, "watching netns %s (inode %llu)", w->path, (unsigned long long)w->ino);
	}
	mptcp_update_gauges(p);
	c->fd = p->epfd;
	c->interval_ms = MPTCP_PM_CHECK_MS;
	if ((uint64_t)p->reconcile_ns / 1000000 < c->interval_ms)
		c->interval_ms = (uint64_t)p->reconcile_ns / 1000000;
	p->next_reconcile_ns = clock_wall_ns() + p->reconcile_ns;
	return 0;
}

static int mptcp_on_ready(struct collector *c)
{
	struct mptcp_priv *p = c->priv;
	struct epoll_event evs[MPTCP_MAX_NETNS];
	int n = epoll_wait(p->epfd, evs, MPTCP_MAX_NETNS, 0);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++)
		if (evs[i].data.u64 < p->n_w && p->w[evs[i].data.u64].nl)
			mptcp_watch_read(p, &p->w[evs[i].data.u64]);
	mptcp_update_gauges(p);
	return 0;
}

static int mptcp_collect(struct collector *c)
{
	struct mptcp_priv *p = c->priv;
	int64_t now = clock_wall_ns();
	int reconcile = now >= p->next_reconcile_ns;

	if (p->replaying)
		return 0;
	if (reconcile)
		p->next_reconcile_ns = now + p->reconcile_ns;
	for (size_t i = 0; i < p->n_w; i++) {
		struct mptcp_watch *w = &p->w[i];

		mptcp_watch_follow(p, i);
		if (!w->nl)
			continue; /* its path names no namespace now */
		mptcp_pm_type_check(p, w);
		mptcp_watch_pod(c, w, now);
		mptcp_mib_read(p, w);
		/* An overrun whose drain ended exactly on the read budget. */
		if (w->resync_pending) {
			w->resync_pending = 0;
			mptcp_resync(p, w);
		}
		if (reconcile)
			mptcp_reconcile(p, w);
	}
	return 0;
}

static void mptcp_stop(struct collector *c)
{
	struct mptcp_priv *p = c->priv;

	if (!p)
		return;
	for (size_t i = 0; i < p->n_w; i++)
		mptcp_watch_close(&p->w[i]);
	if (p->epfd >= 0)
		close(p->epfd);
	mptcp_subflow_free(p);
	mptcp_replay_free(p);
	mptcp_state_free(p->state);
	free(p);
	c->priv = NULL;
	c->fd = -1;
}

const struct collector_ops mptcp_collector = {
    .name = "mptcp",
    .help = "MPTCP path-manager events (genl mptcp_pm), live subflow state, resets by reason",
    .keys = mptcp_keys,
    .cfg_size = sizeof(struct mptcp_cfg),
    .metrics = mptcp_metrics,
    .tables = mptcp_tables,
    .routes = mptcp_routes,
    .check_config = mptcp_check_config,
    .init = mptcp_init,
    .start = mptcp_start,
    .on_ready = mptcp_on_ready,
    .collect = mptcp_collect,
    .stop = mptcp_stop,
};
