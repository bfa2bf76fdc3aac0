// SPDX-License-Identifier: MIT
/*
 * mptcp_table: the mptcp_events history table: its columns, indexes,
 * migrations and severity for the event exporters, and the row of one
 * decoded path-manager event (mptcp_row_fill(), pure). Used by the
 * collector (mptcp.c) and the restart recovery (mptcp_recover.c).
 */
#include <stdio.h>
#include <string.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"

/* ---- history table ---------------------------------------------------- */

static const char *const mptcp_types[] = {
    "CREATED",		"ESTABLISHED",	   "CLOSED",	 "ANNOUNCED",
    "REMOVED",		"SUB_ESTABLISHED", "SUB_CLOSED", "SUB_PRIORITY",
    "LISTENER_CREATED", "LISTENER_CLOSED", NULL,
};
static const struct col_domain mptcp_type_domain = {.values = mptcp_types};

#define MPTCP_COL(f, t, n, ...) COL(struct mptcp_row, f, t, n, __VA_ARGS__)
static const struct event_column mptcp_cols[] = {
    MPTCP_COL(netns, COL_UINT, COL_NOT_NULL, .filter = COL_FILTER_EQ, .fmin = 1),
    MPTCP_COL(type, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ENUM,
	      .domain = &mptcp_type_domain),
    MPTCP_COL(token, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_TOKEN),
    MPTCP_COL(family, COL_INT, COL_NULL_NEG),
    MPTCP_COL(saddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    MPTCP_COL(daddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    MPTCP_COL(sport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port",
	      .fmax = 65535),
    MPTCP_COL(dport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port",
	      .fmax = 65535),
    MPTCP_COL(loc_id, COL_INT, COL_NULL_NEG),
    MPTCP_COL(rem_id, COL_INT, COL_NULL_NEG),
    MPTCP_COL(backup, COL_INT, COL_NULL_NEG),
    MPTCP_COL(error, COL_INT, COL_NULL_NEG),
    MPTCP_COL(flags, COL_INT, COL_NULL_NEG),
    MPTCP_COL(timeout, COL_INT, COL_NULL_NEG),
    MPTCP_COL(if_idx, COL_INT, COL_NULL_NEG),
    MPTCP_COL(reset_reason, COL_INT, COL_NULL_NEG),
    MPTCP_COL(reset_flags, COL_INT, COL_NULL_NEG),
    MPTCP_COL(server_side, COL_INT, COL_NULL_NEG),
    MPTCP_COL(unknown_attrs, COL_TEXT, COL_NULL_EMPTY),
    MPTCP_COL(reset_reason_name, COL_TEXT, COL_NULL_EMPTY),
    MPTCP_COL(deny_join_id0, COL_INT, COL_NULL_NEG),
    /* ?pod=&pod_namespace=: the pod whose sandbox the namespace is */
    COL_POD(struct mptcp_row),
    {0},
};

/* Only CREATED and CLOSED rows are indexed by token, which gives a
 * connection's time span: a full (token, id) index cost half the insert
 * rate. The store adds this index's condition to a query whose filter
 * implies it (a type among these), so that SQLite uses it; the generic
 * history route's ?token=N query cannot (it has no condition on type). */
static const char *const mptcp_token_cols[] = {"token", "ts", NULL};
static const struct row_value mptcp_span_types[] = {ROW_TEXT("CREATED"), ROW_TEXT("CLOSED")};
static const struct row_cond mptcp_token_where[] = {
    ROW_COND_IN("type", mptcp_span_types),
    {0},
};
static const struct table_index mptcp_indexes[] = {
    {.name = "token", .columns = mptcp_token_cols, .where = mptcp_token_where},
    {0},
};

/* 2: rows written before reset_reason_name was a column get the name of
 * their reset_reason. */
static const struct table_migration mptcp_migrations[] = {
    {.column = "reset_reason_name",
     .from = "reset_reason",
     .names = mptcp_reset_names,
     .n_names = MPTCP_RESET_NAMES},
    {0},
};

/*
 * How grave an event is for the event exporters: WARN for a subflow that
 * ended in an error or a reset (the kernel sends ERROR only when the
 * subflow's sk_err is set, RESET_REASON only when an MP_RST or TCP RST was
 * seen: a refused join, a timeout, a peer's reset), since MPTCP survives
 * the loss of a subflow, so it is not an ERROR of the host; every other
 * event (connections, subflows, addresses coming and going) is INFO.
 */
static int mptcp_events_severity(const void *row)
{
	const struct mptcp_row *r = row;

	return r->error > 0 || r->reset_reason >= 0 ? EVENT_SEVERITY_WARN : EVENT_SEVERITY_INFO;
}

static const char *const mptcp_event_show[] = {
    "time", "type", "token", "netns", "saddr", "daddr", "reset_reason_name", NULL,
};

const struct event_table mptcp_events_table = {
    .name = "mptcp_events",
    .collector = "mptcp",
    .route = "/api/v1/mptcp/events",
    .help = "every path-manager event: connections, subflows, addresses, resets",
    .cols = mptcp_cols,
    .row_size = sizeof(struct mptcp_row),
    .indexes = mptcp_indexes,
    .migrations = mptcp_migrations,
    .message = &sysobs__v1__mptcp_event__descriptor,
    .list_message = &sysobs__v1__mptcp_event_list__descriptor,
    .show = mptcp_event_show,
    .severity = mptcp_events_severity,
};

_Static_assert(sizeof(struct mptcp_row) <= EVENT_ROW_MAX, "mptcp row too large");

static int64_t mptcp_attr(const struct mptcp_event *ev, unsigned attr, int64_t v)
{
	return mptcp_event_has(ev, attr) ? v : -1;
}

void mptcp_row_fill(const struct mptcp_event *ev, uint32_t netns, struct mptcp_row *r)
{
	const char *reason;

	r->netns = netns;
	mptcp_event_type_str(ev->type, r->type, sizeof(r->type));
	r->token = mptcp_attr(ev, MPTCP_EVA_TOKEN, ev->token);
	r->family = mptcp_attr(ev, MPTCP_EVA_FAMILY, ev->family);
	r->saddr[0] = r->daddr[0] = '\0';
	if (ev->saddr_family)
		mptcp_event_saddr_str(ev, r->saddr, sizeof(r->saddr));
	if (ev->daddr_family)
		mptcp_event_daddr_str(ev, r->daddr, sizeof(r->daddr));
	r->sport = mptcp_attr(ev, MPTCP_EVA_SPORT, ev->sport);
	r->dport = mptcp_attr(ev, MPTCP_EVA_DPORT, ev->dport);
	r->loc_id = mptcp_attr(ev, MPTCP_EVA_LOC_ID, ev->loc_id);
	r->rem_id = mptcp_attr(ev, MPTCP_EVA_REM_ID, ev->rem_id);
	r->backup = mptcp_attr(ev, MPTCP_EVA_BACKUP, ev->backup);
	r->error = mptcp_attr(ev, MPTCP_EVA_ERROR, ev->error);
	r->flags = mptcp_attr(ev, MPTCP_EVA_FLAGS, ev->flags);
	r->timeout = mptcp_attr(ev, MPTCP_EVA_TIMEOUT, ev->timeout);
	r->if_idx = mptcp_attr(ev, MPTCP_EVA_IF_IDX, ev->if_idx);
	r->reset_reason = mptcp_attr(ev, MPTCP_EVA_RESET_REASON, ev->reset_reason);
	r->reset_flags = mptcp_attr(ev, MPTCP_EVA_RESET_FLAGS, ev->reset_flags);
	/* Unknown unless the kernel said it (mptcp_event_side_resolve()). */
	r->server_side = ev->side;
	r->deny_join_id0 =
	    mptcp_event_has(ev, MPTCP_EVA_FLAGS) ? !!(ev->flags & MPTCP_EV_FLAG_DENY_JOIN_ID0) : -1;
	r->unknown_attrs[0] = '\0';
	r->pod[0] = r->pod_namespace[0] = r->pod_uid[0] = '\0';
	mptcp_event_unknown_str(ev, r->unknown_attrs, sizeof(r->unknown_attrs));
	reason = r->reset_reason >= 0 ? mptcp_reset_reason_name((uint32_t)r->reset_reason) : NULL;
	snprintf(r->reset_reason_name, sizeof(r->reset_reason_name), "%s", reason ? reason : "");
}
