// SPDX-License-Identifier: MIT
/*
 * The mptcp collector's event path: each message of a watched namespace's
 * mptcp_pm event socket into its MptcpEvent row, the live state
 * (mptcp_state.c) and the counters, and the series start() publishes
 * before any event (mptcp_priv.h).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <stdio.h>
#include <string.h>

#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_pod.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_state.h"

/* sysobs_mptcp_join_failures_total{errno} from 0 (mptcp_series_start()). */
static const char *const mptcp_join_errnos[] = {
    "none", "rejected", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH",
};
static const char *const mptcp_correction_kinds[] = {"connection_removed", "connection_added",
						     "subflow_removed", "subflow_added"};

static void mptcp_on_subflow_end(double seconds, void *arg)
{
	struct mptcp_priv *p = arg;

	sink_observe(p->c->sink, p->lifetime_s, seconds < 0 ? 0 : seconds);
}

static struct sink_series *mptcp_type_series(struct mptcp_priv *p, unsigned type)
{
	const char *name = mptcp_event_type_name(type);
	const char *lv[1] = {name ? name : "unknown"};

	if (!name)
		type = 0; /* every unknown type shares slot 0 */
	if (!p->ev_series[type])
		p->ev_series[type] = collector_series(p->c, MPTCP_M_EVENTS, lv);
	return p->ev_series[type];
}

/* The series of join failures for the event's ERROR (an errno; u8). */
static struct sink_series *mptcp_join_failure_series(struct mptcp_priv *p,
						     const struct mptcp_event *ev)
{
	char buf[24];
	const char *name = NULL;
	const char *lv[1];

	if (!mptcp_event_has(ev, MPTCP_EVA_ERROR) || !ev->error) {
		name = "none";
	} else {
		name = strerrorname_np(ev->error);
		if (!name) {
			snprintf(buf, sizeof(buf), "%u", ev->error);
			name = buf;
		}
	}
	lv[0] = name;
	return collector_series(p->c, MPTCP_M_JOIN_FAILURES, lv);
}

/* One event message: metrics, live state, history row. */
static void mptcp_handle_event(struct mptcp_priv *p, struct mptcp_watch *w,
			       const struct nlmsghdr *nlh, int64_t now_ns)
{
	struct sink *k = p->c->sink;
	struct mptcp_event ev;
	const struct sink_pod *pod;
	struct mptcp_row row;
	int err;

	if (mptcp_event_decode(nlh, nlh->nlmsg_len, &ev) < 0) {
		sink_add(k, p->malformed_c, 1);
		return;
	}
	mptcp_event_side_resolve(&ev, p->absent_side_is_client);
	sink_add(k, mptcp_type_series(p, ev.type), 1);
	if (!mptcp_event_type_name(ev.type))
		sink_add(k, p->unknown_ev_c, 1);
	if (ev.n_unknown)
		sink_add(k, p->unknown_attr_c, ev.n_unknown);
	if (ev.type == MPTCP_EV_SUB_CLOSED && mptcp_event_has(&ev, MPTCP_EVA_RESET_REASON)) {
		const char *r = mptcp_reset_reason_name(ev.reset_reason);
		const char *lv[1] = {r ? r : "unknown"};

		sink_add(k, collector_series(p->c, MPTCP_M_RESETS, lv), 1);
	}
	err = mptcp_state_apply(p->state, w->ino, &ev, now_ns, mptcp_on_subflow_end, p);
	if (err == -ENOENT)
		sink_add(k, p->unmatched_c, 1);
	else if (err == MPTCP_APPLY_FALLBACK_CLOSED)
		sink_add(k, p->fallbacks_c, 1);
	else if (err == MPTCP_APPLY_JOIN_FAILED)
		sink_add(k, mptcp_join_failure_series(p, &ev), 1);
	mptcp_row_fill(&ev, (uint32_t)w->ino, &row);
	/* A replay's namespaces are another host's: no pod of this one. */
	pod = p->replaying ? NULL : mptcp_watch_pod(p->c, w, now_ns);
	if (pod)
		SINK_POD_ROW_SET(&row, pod);
	sink_event(k, &mptcp_events_table, now_ns, &row);
}

/* One datagram of w's event socket (mptcp_priv.h): each message of the
 * mptcp_pm family through mptcp_handle_event(), the others skipped. */
void mptcp_buffer_handle(struct mptcp_priv *p, struct mptcp_watch *w, const void *buf, size_t len,
			 int64_t now_ns)
{
	const struct nlmsghdr *nlh;
	size_t left;

	mptcp_nlmsg_for_each(nlh, buf, len, left)
	{
		if (nlh->nlmsg_type == w->family)
			mptcp_handle_event(p, w, nlh, now_ns);
	}
}

/* The series start publishes (mptcp_priv.h): the label-less ones kept,
 * and every known event type, reset reason and join errno from 0. */
void mptcp_series_start(struct mptcp_priv *p)
{
	p->fallbacks_c = collector_series1(p->c, MPTCP_M_FALLBACKS);
	for (size_t i = 0; i < 4; i++)
		p->correction_s[i] =
		    collector_series(p->c, MPTCP_M_CORRECTIONS, &mptcp_correction_kinds[i]);
	p->lifetime_s = collector_series1(p->c, MPTCP_M_LIFETIME);
	p->conns_g = collector_series1(p->c, MPTCP_M_CONNS);
	p->subflows_g = collector_series1(p->c, MPTCP_M_SUBFLOWS);
	p->overruns_c = collector_series1(p->c, MPTCP_M_OVERRUNS);
	p->resyncs_c = collector_series1(p->c, MPTCP_M_RESYNCS);
	p->unknown_ev_c = collector_series1(p->c, MPTCP_M_UNKNOWN_EVENTS);
	p->unknown_attr_c = collector_series1(p->c, MPTCP_M_UNKNOWN_ATTRS);
	p->malformed_c = collector_series1(p->c, MPTCP_M_MALFORMED);
	p->unmatched_c = collector_series1(p->c, MPTCP_M_UNMATCHED);
	/* Known types start at 0 so rate() works from the first event. */
	for (unsigned t = 1; t <= MPTCP_EV_MAX; t++)
		if (mptcp_event_type_name(t))
			mptcp_type_series(p, t);
	for (uint32_t r = 0; mptcp_reset_reason_name(r); r++)
		collector_series(p->c, MPTCP_M_RESETS,
				 (const char *const[]){mptcp_reset_reason_name(r)});
	/* So do the join failures SysobsMPTCPJoinsFailing sums by errno:
	 * increase() misses the first failure of a series that appears with it.
	 * The errnos a failed join gets (a RST to the SYN, no answer, an
	 * unreachable path), none (no ERROR) and rejected (the MIB's
	 * MPJoinRejected of a watched netns). */
	for (size_t i = 0; i < sizeof(mptcp_join_errnos) / sizeof(*mptcp_join_errnos); i++)
		collector_series(p->c, MPTCP_M_JOIN_FAILURES,
				 (const char *const[]){mptcp_join_errnos[i]});
}
