/* SPDX-License-Identifier: MIT */
/* A subflow's TCP state and a connection's MPTCP counters as API messages
 * (mptcp_subflow_msg.c). NULL when never sampled or out of memory. */
#ifndef SYSOBS_MPTCP_SUBFLOW_MSG_H
#define SYSOBS_MPTCP_SUBFLOW_MSG_H

#include "base/arena.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

Sysobs__V1__MptcpSubflowTcp *mptcp_subflow_tcp_msg(struct arena *ar,
						   const struct mptcp_tcp_stats *t);
Sysobs__V1__MptcpConnectionInfo *mptcp_conn_info_msg(struct arena *ar,
						     const struct mptcp_conn_stats *i);

#endif
