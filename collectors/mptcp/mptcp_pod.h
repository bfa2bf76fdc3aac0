/* SPDX-License-Identifier: MIT */
/*
 * The Kubernetes pod of a namespace the mptcp collector watches (the pod
 * whose sandbox it is), for its rows and its live route (mptcp_pod.c).
 */
#ifndef SYSOBS_MPTCP_POD_H
#define SYSOBS_MPTCP_POD_H

#include <stdint.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/mptcp/mptcp_priv.h"

struct arena;

/* The pod of w's namespace (cached in w, main thread), or NULL for none
 * known (a namespace of no pod, or not listed by the runtime yet); once
 * found, its sysobs_mptcp_netns_pod_info series is 1. */
const struct sink_pod *mptcp_watch_pod(struct collector *c, struct mptcp_watch *w, int64_t now_ns);
/* w lets go of its namespace: its pod forgotten, its info series gone. */
void mptcp_pod_forget(struct collector *c, struct mptcp_watch *w);

/* The pod of every namespace of list whose watch found one, and of its
 * connections, asked of the agent's name service now (any thread). */
void mptcp_pod_list(const struct mptcp_priv *p, Sysobs__V1__MptcpConnectionList *list,
		    struct arena *ar);

#endif
