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
 * Config [collector.mptcp]:
 *   netns   comma list of "self", /run/netns/NAME or /proc/PID/ns/net
 *   rcvbuf  receive buffer of each event socket
 *
 * A watched namespace stays alive while its sockets are open (until stop),
 * even after `ip netns del`.
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

#include "agent/agent.h"
#include "agent/log.h"
#include "api/query.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_nl.h"
#include "collectors/mptcp/mptcp_state.h"
#include "storage/store_query.h"

#define MPTCP_MAX_NETNS	  64
#define MPTCP_RECV_BUDGET 512 /* datagrams per netns per on_ready */
#define MPTCP_PM_CHECK_MS 10000

static const struct cfg_key mptcp_keys[] = {
    {"netns", "self",
     "network namespaces to watch, comma-separated: self (the agent's own), "
     "/run/netns/NAME or /proc/PID/ns/net"},
    {"rcvbuf", "4M", "receive buffer of each event socket (bytes; k/M suffixes)"},
    {0},
};

/* One watched network namespace. */
struct mptcp_watch {
	char path[256];	       /* as configured ("self" for our own) */
	uint64_t ino;	       /* netns inode: the netns id in rows and JSON */
	struct mnl_socket *nl; /* event socket, joined to the events group */
	uint16_t family;       /* mptcp_pm genl family id in that netns */
	int diag_fd;	       /* NETLINK_SOCK_DIAG socket in that netns */
	int pm_type_fd;	       /* /proc/sys/net/mptcp/pm_type of that netns */
	int pm_warned;
	int resync_pending; /* overrun seen, resync once the queue is drained */
	uint64_t overruns;
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

	struct metric *events_total; /* {type} */
	struct metric *resets_total; /* {reason} */
	struct metric *lifetime;
	struct metric_series *ev_series[MPTCP_EV_MAX + 1];
	struct metric_series *lifetime_s;
	struct metric_series *conns_g, *subflows_g, *overruns_c, *unknown_ev_c, *unknown_attr_c,
	    *malformed_c, *unmatched_c, *resyncs_c, *stored_drop_c;
	struct log_ratelimit store_rl;
};

/* ---- history table ---------------------------------------------------- */

static const char *const mptcp_events_migrations[] = {
    "CREATE TABLE mptcp_events ("
    " id INTEGER PRIMARY KEY,"
    " ts INTEGER NOT NULL,"
    " netns INTEGER,"
    " type TEXT NOT NULL,"
    " token INTEGER,"
    " family INTEGER,"
    " saddr TEXT,"
    " daddr TEXT,"
    " sport INTEGER,"
    " dport INTEGER,"
    " loc_id INTEGER,"
    " rem_id INTEGER,"
    " backup INTEGER,"
    " error INTEGER,"
    " flags INTEGER,"
    " timeout INTEGER,"
    " if_idx INTEGER,"
    " reset_reason INTEGER,"
    " reset_flags INTEGER,"
    " server_side INTEGER,"
    " unknown_attrs TEXT);"
    "CREATE INDEX mptcp_events_ts ON mptcp_events(ts);"
    /* Only CREATED and CLOSED rows are indexed by token: a full (token, id)
     * index cost half the insert rate. History by token finds the
     * connection's time span here, then scans that span on the ts index. */
    "CREATE INDEX mptcp_events_token ON mptcp_events(token, ts)"
    " WHERE type IN ('CREATED', 'CLOSED');",
    NULL,
};

static void mptcp_bind_u(sqlite3_stmt *st, int col, const struct mptcp_event *ev, unsigned attr,
			 int64_t v)
{
	if (mptcp_event_has(ev, attr))
		sqlite3_bind_int64(st, col, v);
	else
		sqlite3_bind_null(st, col);
}

/* Runs on the writer thread: text formatting happens there, not in the loop. */
static int mptcp_row_bind(sqlite3_stmt *st, const void *p)
{
	const struct mptcp_row *r = p;
	const struct mptcp_event *ev = &r->ev;
	char type[32], s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], u[256];
	int rc;

	sqlite3_bind_int64(st, 3, (int64_t)r->netns);
	/* Known names are static strings: no copy. */
	if (mptcp_event_type_name(ev->type))
		sqlite3_bind_text(st, 4, mptcp_event_type_name(ev->type), -1, SQLITE_STATIC);
	else
		sqlite3_bind_text(st, 4, mptcp_event_type_str(ev->type, type, sizeof(type)), -1,
				  SQLITE_TRANSIENT);
	mptcp_bind_u(st, 5, ev, MPTCP_EVA_TOKEN, ev->token);
	mptcp_bind_u(st, 6, ev, MPTCP_EVA_FAMILY, ev->family);
	if (ev->saddr_family)
		sqlite3_bind_text(st, 7, mptcp_event_saddr_str(ev, s, sizeof(s)), -1,
				  SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 7);
	if (ev->daddr_family)
		sqlite3_bind_text(st, 8, mptcp_event_daddr_str(ev, d, sizeof(d)), -1,
				  SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 8);
	mptcp_bind_u(st, 9, ev, MPTCP_EVA_SPORT, ev->sport);
	mptcp_bind_u(st, 10, ev, MPTCP_EVA_DPORT, ev->dport);
	mptcp_bind_u(st, 11, ev, MPTCP_EVA_LOC_ID, ev->loc_id);
	mptcp_bind_u(st, 12, ev, MPTCP_EVA_REM_ID, ev->rem_id);
	mptcp_bind_u(st, 13, ev, MPTCP_EVA_BACKUP, ev->backup);
	mptcp_bind_u(st, 14, ev, MPTCP_EVA_ERROR, ev->error);
	mptcp_bind_u(st, 15, ev, MPTCP_EVA_FLAGS, ev->flags);
	mptcp_bind_u(st, 16, ev, MPTCP_EVA_TIMEOUT, ev->timeout);
	mptcp_bind_u(st, 17, ev, MPTCP_EVA_IF_IDX, ev->if_idx);
	mptcp_bind_u(st, 18, ev, MPTCP_EVA_RESET_REASON, ev->reset_reason);
	mptcp_bind_u(st, 19, ev, MPTCP_EVA_RESET_FLAGS, ev->reset_flags);
	/* CREATED/ESTABLISHED always say which side we are: newer kernels
	 * only set FLAGS bit 1 on the server side and send nothing otherwise. */
	if (mptcp_event_has(ev, MPTCP_EVA_SERVER_SIDE) || mptcp_event_has(ev, MPTCP_EVA_FLAGS) ||
	    ev->type == MPTCP_EV_CREATED || ev->type == MPTCP_EV_ESTABLISHED)
		sqlite3_bind_int(st, 20, ev->server_side);
	else
		sqlite3_bind_null(st, 20);
	if (mptcp_event_unknown_str(ev, u, sizeof(u)))
		rc = sqlite3_bind_text(st, 21, u, -1, SQLITE_TRANSIENT);
	else
		rc = sqlite3_bind_null(st, 21);
	return rc;
}

const struct store_table mptcp_events_table = {
    .name = "mptcp_events",
    .collector = "mptcp",
    .migrations = mptcp_events_migrations,
    .insert_sql = "INSERT INTO mptcp_events (id, ts, netns, type, token, family, saddr, daddr,"
		  " sport, dport, loc_id, rem_id, backup, error, flags, timeout, if_idx,"
		  " reset_reason, reset_flags, server_side, unknown_attrs)"
		  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
		  " ?16, ?17, ?18, ?19, ?20, ?21)",
    .bind = mptcp_row_bind,
    .row_size = sizeof(struct mptcp_row),
};

static const struct store_table *const mptcp_tables[] = {&mptcp_events_table, NULL};

_Static_assert(sizeof(struct mptcp_row) <= STORE_ROW_MAX, "mptcp row too large");

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
		w->ino = sb.st_ino;
		return fn(w, p);
	}
	ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0)
		return -errno;
	if (fstat(ns_fd, &sb) < 0) {
		ret = -errno;
		goto out_close_ns;
	}
	w->ino = sb.st_ino;
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

	w->nl = mptcp_events_open(p->rcvbuf, &w->family, &err);
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
	return 0;
}

/* Probe for init: can this netns be entered and does it have mptcp_pm? */
static int mptcp_probe_here(struct mptcp_watch *w, struct mptcp_priv *p)
{
	int err = 0;
	struct mnl_socket *nl = mptcp_events_open(0, &w->family, &err);

	if (!nl)
		return err;
	mnl_socket_close(nl);
	return 0;
}

static void mptcp_watch_close(struct mptcp_watch *w)
{
	if (w->nl)
		mnl_socket_close(w->nl);
	if (w->diag_fd >= 0)
		close(w->diag_fd);
	if (w->pm_type_fd >= 0)
		close(w->pm_type_fd);
	w->nl = NULL;
	w->diag_fd = w->pm_type_fd = -1;
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

/* Parses the netns list into p->w[].path. 0 or -EINVAL (cfg error set). */
static int mptcp_config_netns(struct collector *c, struct mptcp_priv *p)
{
	const char *v = collector_cfg(c, "netns");
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
			ret = cfg_error(&c->agent->cfg, c->section, "netns",
					"'%s': expected self or an absolute path", tok);
			break;
		}
		if (p->n_w == MPTCP_MAX_NETNS || strlen(tok) >= sizeof(p->w[0].path)) {
			ret = cfg_error(&c->agent->cfg, c->section, "netns",
					"too many namespaces or path too long (max %d)",
					MPTCP_MAX_NETNS);
			break;
		}
		for (size_t i = 0; i < p->n_w; i++) {
			if (!strcmp(p->w[i].path, tok)) {
				ret = cfg_error(&c->agent->cfg, c->section, "netns",
						"'%s' listed twice", tok);
				goto out;
			}
		}
		snprintf(p->w[p->n_w].path, sizeof(p->w[0].path), "%s", tok);
		p->n_w++;
	}
	if (!ret && !p->n_w)
		ret = cfg_error(&c->agent->cfg, c->section, "netns", "no namespace to watch");
out:
	free(dup);
	return ret;
}

/* ---- ops ---------------------------------------------------------------- */

static int mptcp_init(struct collector *c)
{
	struct mptcp_priv *p;
	uint64_t rcvbuf;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->priv = p;
	p->c = c;
	p->epfd = -1;
	for (size_t i = 0; i < MPTCP_MAX_NETNS; i++)
		p->w[i].diag_fd = p->w[i].pm_type_fd = -1;
	err = cfg_get_size(&c->agent->cfg, c->section, "rcvbuf", 4096, 1ull << 30, &rcvbuf);
	if (err)
		return err;
	p->rcvbuf = rcvbuf;
	err = mptcp_config_netns(c, p);
	if (err)
		return err;
	p->state = mptcp_state_new();
	if (!p->state)
		return -ENOMEM;
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

static void mptcp_on_subflow_end(double seconds, void *arg)
{
	struct mptcp_priv *p = arg;

	if (p->lifetime_s)
		series_observe(p->lifetime_s, seconds < 0 ? 0 : seconds);
}

static void mptcp_update_gauges(struct mptcp_priv *p)
{
	size_t conns, subflows;

	mptcp_state_counts(p->state, &conns, &subflows);
	series_set(p->conns_g, (double)conns);
	series_set(p->subflows_g, (double)subflows);
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
		mptcp_state_resync(p->state, w->ino, fresh);
		series_add(p->resyncs_c, 1);
		mptcp_update_gauges(p);
	} else {
		clog_warn(p->c, "netns %s: sock_diag resync failed: %s", w->path, strerror(-n));
	}
	mptcp_state_free(fresh);
	return n;
}

static struct metric_series *mptcp_type_series(struct mptcp_priv *p, unsigned type)
{
	const char *name = mptcp_event_type_name(type);
	const char *lv[1] = {name ? name : "unknown"};

	if (!name)
		type = 0; /* every unknown type shares slot 0 */
	if (!p->ev_series[type])
		p->ev_series[type] = metric_series(p->events_total, lv);
	return p->ev_series[type];
}

/* One event message: metrics, live state, history row. */
static void mptcp_handle_event(struct mptcp_priv *p, struct mptcp_watch *w,
			       const struct nlmsghdr *nlh, int64_t now_ns)
{
	struct mptcp_row row;
	struct metric_series *s;
	int err;

	if (mptcp_event_decode(nlh, nlh->nlmsg_len, &row.ev) < 0) {
		series_add(p->malformed_c, 1);
		return;
	}
	row.netns = w->ino;
	if ((s = mptcp_type_series(p, row.ev.type)))
		series_add(s, 1);
	if (!mptcp_event_type_name(row.ev.type))
		series_add(p->unknown_ev_c, 1);
	if (row.ev.n_unknown)
		series_add(p->unknown_attr_c, row.ev.n_unknown);
	if (row.ev.type == MPTCP_EV_SUB_CLOSED &&
	    mptcp_event_has(&row.ev, MPTCP_EVA_RESET_REASON)) {
		const char *r = mptcp_reset_reason_name(row.ev.reset_reason);
		const char *lv[1] = {r ? r : "unknown"};

		if ((s = metric_series(p->resets_total, lv)))
			series_add(s, 1);
	}
	err = mptcp_state_apply(p->state, w->ino, &row.ev, now_ns, mptcp_on_subflow_end, p);
	if (err == -ENOENT)
		series_add(p->unmatched_c, 1);
	if (store_submit(p->c->agent->store, &mptcp_events_table, now_ns, &row) < 0)
		log_ratelimited(&p->store_rl, 10000, LOG_LVL_WARN, "mptcp",
				"event history queue full: rows dropped");
}

/* Drains one netns's event socket (bounded). */
static void mptcp_watch_read(struct mptcp_priv *p, struct mptcp_watch *w)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	int fd = mnl_socket_get_fd(w->nl);

	for (int i = 0; i < MPTCP_RECV_BUDGET; i++) {
		const struct nlmsghdr *nlh;
		int64_t now = clock_wall_ns();
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		size_t left;

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
				series_add(p->overruns_c, 1);
				log_ratelimited(&w->overrun_rl, 5000, LOG_LVL_WARN, "mptcp",
						"netns %s: event socket overrun (%llu so far), "
						"resyncing live state from sock_diag",
						w->path, (unsigned long long)w->overruns);
				continue;
			}
			clog_warn(p->c, "netns %s: recv: %s", w->path, strerror(errno));
			break;
		}
		mptcp_nlmsg_for_each(nlh, buf, (size_t)n, left)
		{
			if (nlh->nlmsg_type == w->family)
				mptcp_handle_event(p, w, nlh, now);
		}
	}
}

static int mptcp_start(struct collector *c)
{
	struct mptcp_priv *p = c->priv;
	struct metrics *m = c->agent->metrics;
	static const char *const type_l[] = {"type", NULL};
	static const char *const reason_l[] = {"reason", NULL};
	static const double bounds[] = {0.01, 0.1, 1, 10, 60, 300, 1800, 3600, 21600, 86400};
	int err;

	p->events_total =
	    metrics_counter(m, "sysobs_mptcp_events_total",
			    "MPTCP path-manager events received, by event type.", type_l);
	p->resets_total =
	    metrics_counter(m, "sysobs_mptcp_subflow_resets_total",
			    "Subflows closed by an MP_TCPRST, by reset reason.", reason_l);
	p->lifetime = metrics_histogram(m, "sysobs_mptcp_subflow_lifetime_seconds",
					"Lifetime of MPTCP subflows from established to closed.",
					NULL, bounds, sizeof(bounds) / sizeof(bounds[0]));
	p->lifetime_s = p->lifetime ? metric_series(p->lifetime, NULL) : NULL;
	p->conns_g = metrics_gauge1(m, "sysobs_mptcp_connections",
				    "Live MPTCP connections in the watched namespaces.");
	p->subflows_g = metrics_gauge1(m, "sysobs_mptcp_subflows",
				       "Live MPTCP subflows (initial one included).");
	p->overruns_c = metrics_counter1(m, "sysobs_mptcp_overruns_total",
					 "Event socket overruns (ENOBUFS: events lost, live state "
					 "resynced from sock_diag).");
	p->resyncs_c = metrics_counter1(m, "sysobs_mptcp_resyncs_total",
					"Live-state rebuilds from sock_diag.");
	p->unknown_ev_c = metrics_counter1(m, "sysobs_mptcp_unknown_events_total",
					   "Events of a type this sysobs does not know.");
	p->unknown_attr_c = metrics_counter1(
	    m, "sysobs_mptcp_unknown_attributes_total",
	    "Event attributes of an unknown type or unexpected size (kept in unknown_attrs).");
	p->malformed_c = metrics_counter1(m, "sysobs_mptcp_malformed_messages_total",
					  "Netlink messages that could not be decoded.");
	p->unmatched_c = metrics_counter1(m, "sysobs_mptcp_unmatched_events_total",
					  "Events about a connection or subflow the live state "
					  "did not know (e.g. after an overrun).");
	if (!p->events_total || !p->resets_total || !p->lifetime_s || !p->conns_g ||
	    !p->subflows_g || !p->overruns_c || !p->resyncs_c || !p->unknown_ev_c ||
	    !p->unknown_attr_c || !p->malformed_c || !p->unmatched_c)
		return -ENOMEM;
	/* Known types start at 0 so rate() works from the first event. */
	for (unsigned t = 1; t <= MPTCP_EV_MAX; t++)
		if (mptcp_event_type_name(t))
			mptcp_type_series(p, t);
	{
		const char *lv[1];

		for (uint32_t r = 0; mptcp_reset_reason_name(r); r++) {
			lv[0] = mptcp_reset_reason_name(r);
			metric_series(p->resets_total, lv);
		}
	}

	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return -errno;
	for (size_t i = 0; i < p->n_w; i++) {
		struct mptcp_watch *w = &p->w[i];
		const char *path = strcmp(w->path, "self") ? w->path : NULL;
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};

		err = mptcp_in_netns(path, mptcp_watch_open_here, w, p);
		if (err) {
			snprintf(c->why, sizeof(c->why), "netns %.160s: %s", w->path,
				 strerror(-err));
			return err;
		}
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, mnl_socket_get_fd(w->nl), &ev) < 0)
			return -errno;
		mptcp_pm_type_check(p, w);
		/* Connections that predate us: subscribed first, then dumped,
		 * so nothing falls in between. */
		mptcp_resync(p, w);
		clog_info(c, "watching netns %s (inode %llu)", w->path, (unsigned long long)w->ino);
	}
	mptcp_update_gauges(p);
	c->fd = p->epfd;
	c->interval_ms = MPTCP_PM_CHECK_MS;
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
		if (evs[i].data.u64 < p->n_w)
			mptcp_watch_read(p, &p->w[evs[i].data.u64]);
	mptcp_update_gauges(p);
	return 0;
}

static int mptcp_collect(struct collector *c)
{
	struct mptcp_priv *p = c->priv;

	for (size_t i = 0; i < p->n_w; i++) {
		struct mptcp_watch *w = &p->w[i];

		mptcp_pm_type_check(p, w);
		/* An overrun whose drain ended exactly on the read budget. */
		if (w->resync_pending) {
			w->resync_pending = 0;
			mptcp_resync(p, w);
		}
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
	mptcp_state_free(p->state);
	free(p);
	c->priv = NULL;
	c->fd = -1;
}

/* ---- routes -------------------------------------------------------------- */

static struct mptcp_priv *mptcp_route_priv(struct collector *c, struct http_response *res)
{
	struct mptcp_priv *p = c->priv;

	if (!p || !p->state || c->state != COLLECTOR_RUNNING) {
		http_reply_error(res, 503, "unavailable", "mptcp collector is %s%s%s",
				 collector_state_name(c->state), c->why[0] ? ": " : "", c->why);
		return NULL;
	}
	return p;
}

/* Token from the URL: decimal, or hex with 0x. */
static int mptcp_token_parse(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/*
 * GET /api/v1/mptcp/connections/{token}?netns=&since=&until=&limit=&cursor=
 * The connection's whole event history, newest first:
 * {"token": N, "data": [...], "next_cursor": "<id>" | null}; 404 if the
 * token was never seen.
 */
/* Column 17 of the history query is reset_reason: its name as well. */
static void mptcp_row_decorate(sqlite3_stmt *st, json_t *row)
{
	const char *reason;

	if (sqlite3_column_type(st, 17) == SQLITE_INTEGER &&
	    (reason = mptcp_reset_reason_name(sqlite3_column_int64(st, 17))))
		json_object_set_new(row, "reset_reason_name", json_string(reason));
}

static void mptcp_route_history(struct collector *c, struct mptcp_priv *p, const char *tok,
				const struct http_request *req, struct http_response *res)
{
	static const char *const history_params[] = {"netns", "since",	"until",
						     "limit", "cursor", NULL};
	const char *netns_s = http_query(req, "netns");
	struct query_window w;
	sqlite3_stmt *st = NULL;
	json_t *out;
	int64_t lo = 0, hi = INT64_MAX;
	uint64_t netns = 0;
	uint32_t token;
	sqlite3 *db;
	int rc;

	if (mptcp_token_parse(tok, &token)) {
		http_reply_error(res, 400, "bad_request",
				 "token must be a decimal or 0x-prefixed hex u32");
		return;
	}
	if (netns_s && cfg_parse_u64(netns_s, &netns)) {
		http_reply_error(res, 400, "bad_request", "netns must be a netns inode number");
		return;
	}
	if (query_params_check(req, history_params, res) || query_window_parse(req, &w, res))
		return;
	db = store_reader_get(c->agent->store);
	if (!db) {
		http_reply_error(res, 503, "unavailable", "no database reader free");
		return;
	}
	/* The token's span: first CREATED to last CLOSED (open-ended while a
	 * CREATED is newer than every CLOSED, i.e. the connection is live). A
	 * token with no CREATED row (connection older than the agent, or its
	 * CREATED lost in an overrun) is searched from the beginning. */
	rc = sqlite3_prepare_v2(db,
				"SELECT min(CASE WHEN type = 'CREATED' THEN ts END),"
				" max(CASE WHEN type = 'CREATED' THEN ts END),"
				" max(CASE WHEN type = 'CLOSED' THEN ts END)"
				" FROM mptcp_events WHERE token = ?1"
				" AND type IN ('CREATED', 'CLOSED') AND (?2 IS NULL OR netns = ?2)",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_db_error;
	sqlite3_bind_int64(st, 1, token);
	if (netns_s)
		sqlite3_bind_int64(st, 2, (int64_t)netns);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		goto out_db_error;
	if (sqlite3_column_type(st, 0) != SQLITE_NULL)
		lo = sqlite3_column_int64(st, 0);
	if (sqlite3_column_type(st, 2) != SQLITE_NULL &&
	    (sqlite3_column_type(st, 1) == SQLITE_NULL ||
	     sqlite3_column_int64(st, 2) >= sqlite3_column_int64(st, 1)))
		hi = sqlite3_column_int64(st, 2);
	sqlite3_finalize(st);
	st = NULL;
	if (lo < w.since_ns)
		lo = w.since_ns;
	if (hi >= w.until_ns)
		hi = w.until_ns - 1;

	rc = sqlite3_prepare_v2(db,
				"SELECT id, ts, netns, type, token, family, saddr, daddr, sport,"
				" dport, loc_id, rem_id, backup, error, flags, timeout, if_idx,"
				" reset_reason, reset_flags, server_side, unknown_attrs"
				" FROM mptcp_events INDEXED BY mptcp_events_ts"
				" WHERE ts >= ?2 AND ts <= ?3 AND token = ?1"
				" AND id < ?4 AND (?5 IS NULL OR netns = ?5)"
				" ORDER BY id DESC LIMIT ?6",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_db_error;
	sqlite3_bind_int64(st, 1, token);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	sqlite3_bind_int64(st, 4, w.cursor);
	if (netns_s)
		sqlite3_bind_int64(st, 5, (int64_t)netns);
	/* One row more than asked tells whether there is a next page. */
	sqlite3_bind_int64(st, 6, (int64_t)w.limit + 1);
	out = store_page_json(st, w.limit, "data", mptcp_row_decorate, &rc);
	if (!out && rc != -ENOMEM)
		goto out_db_error;
	sqlite3_finalize(st);
	store_reader_put(c->agent->store, db);
	if (!out) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	if (!json_array_size(json_object_get(out, "data")) && w.cursor == INT64_MAX &&
	    !http_query(req, "since") && !http_query(req, "until")) {
		json_decref(out);
		http_reply_error(res, 404, "not_found", "no MPTCP events for token %u", token);
		return;
	}
	json_object_set_new(out, "token", json_integer(token));
	(void)p;
	http_reply_json(res, 200, out);
	return;

out_db_error:
	http_reply_error(res, 500, "internal", "query failed: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	store_reader_put(c->agent->store, db);
}

/*
 * GET /api/v1/mptcp/connections[?netns=INODE][&limit=N]: live connections
 * with their subflows and announced addresses, and listeners, of every
 * watched netns (or one); at most limit (default and cap QUERY_LIMIT_MAX)
 * connections, "truncated" says when there were more.
 * GET /api/v1/mptcp/connections/{token}: see mptcp_route_history.
 */
static void mptcp_route_connections(const struct http_request *req, struct http_response *res,
				    void *arg)
{
	static const char *const live_params[] = {"netns", "limit", NULL};
	struct collector *c = arg;
	struct mptcp_priv *p = mptcp_route_priv(c, res);
	const char *sub = req->subpath, *netns_s, *limit_s;
	unsigned limit = QUERY_LIMIT_MAX;
	uint64_t netns = 0;
	json_t *j, *ns;

	if (!p)
		return;
	while (sub && *sub == '/')
		sub++;
	if (sub && *sub) {
		if (strchr(sub, '/')) {
			http_reply_error(res, 404, "not_found", "no such route");
			return;
		}
		mptcp_route_history(c, p, sub, req, res);
		return;
	}
	if (query_params_check(req, live_params, res))
		return;
	netns_s = http_query(req, "netns");
	if (netns_s && (cfg_parse_u64(netns_s, &netns) || !netns)) {
		http_reply_error(res, 400, "bad_request", "netns must be a netns inode number");
		return;
	}
	limit_s = http_query(req, "limit");
	if (limit_s && query_parse_limit(limit_s, QUERY_LIMIT_MAX, &limit)) {
		http_reply_error(res, 400, "bad_request", "limit must be 1..%u", QUERY_LIMIT_MAX);
		return;
	}
	j = mptcp_state_json(p->state, netns, limit);
	if (!j) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	ns = json_array();
	for (size_t i = 0; i < p->n_w; i++)
		json_array_append_new(ns, json_pack("{s:s,s:I,s:I}", "path", p->w[i].path, "netns",
						    (json_int_t)p->w[i].ino, "overruns",
						    (json_int_t)__atomic_load_n(&p->w[i].overruns,
										__ATOMIC_RELAXED)));
	json_object_set_new(j, "namespaces", ns);
	http_reply_json(res, 200, j);
}

static const struct collector_route mptcp_routes[] = {
    {"GET", "/api/v1/mptcp/connections", true, mptcp_route_connections},
    {0},
};

const struct collector_ops mptcp_collector = {
    .name = "mptcp",
    .help = "MPTCP path-manager events (genl mptcp_pm), live subflow state, resets by reason",
    .keys = mptcp_keys,
    .tables = mptcp_tables,
    .routes = mptcp_routes,
    .init = mptcp_init,
    .start = mptcp_start,
    .on_ready = mptcp_on_ready,
    .collect = mptcp_collect,
    .stop = mptcp_stop,
};
