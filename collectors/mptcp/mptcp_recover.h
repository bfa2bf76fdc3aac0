/* SPDX-License-Identifier: MIT */
/*
 * mptcp_recover: what an agent restart would forget about the connections
 * that outlive it. A socket dump (sock_diag) tells which connections exist,
 * not when they began nor which side this host is; the agent's own history
 * does: the CREATED row of each (its time, server_side). Read through the
 * sink, the collector's only way to its stored rows.
 */
#ifndef SYSOBS_MPTCP_RECOVER_H
#define SYSOBS_MPTCP_RECOVER_H

#include <stdint.h>

struct sink;
struct mptcp_state;

/* Gives the connections of netns whose start the state does not know the
 * creation time and side of their CREATED row, when that row's initial
 * subflow is theirs. How many were recovered, or -errno (history not
 * readable now: they stay unknown). */
int mptcp_recover_starts(struct sink *k, struct mptcp_state *st, uint64_t netns);

#endif
