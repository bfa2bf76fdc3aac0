/* SPDX-License-Identifier: MIT */
/*
 * The mptcp collector's history table, shared with its tests and benchmark:
 * one row per event, flattened from the decoded event by mptcp_row_fill()
 * (attributes the kernel did not send are -1 / "" and stored as NULL).
 */
#ifndef SYSOBS_MPTCP_H
#define SYSOBS_MPTCP_H

#include <netinet/in.h>
#include <stdint.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/sink.h"
#include "storage/table.h"

struct mptcp_row {
	int64_t token, family, sport, dport, loc_id, rem_id, backup, error, flags, timeout, if_idx,
	    reset_reason, reset_flags, server_side, deny_join_id0; /* -1: not sent */
	uint32_t netns;						   /* netns inode */
	char type[24];
	char saddr[INET6_ADDRSTRLEN], daddr[INET6_ADDRSTRLEN];
	char reset_reason_name[24];
	char unknown_attrs[128];
	/* The pod whose sandbox netns is (agent's name service), "" none */
	SINK_POD_ROW_FIELDS;
};

/* The history row of one decoded event seen in netns. Pure. server_side
 * is ev->side (NULL when unknown: call mptcp_event_side_resolve() first);
 * deny_join_id0 is FLAGS bit 0 (NULL without FLAGS). */
void mptcp_row_fill(const struct mptcp_event *ev, uint32_t netns, struct mptcp_row *r);

extern const struct event_table mptcp_events_table;

#endif
