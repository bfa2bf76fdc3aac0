// SPDX-License-Identifier: MIT
/* mptcp_routes: the mptcp collector's own route (the live state); its
 * history is the generic route of mptcp_events. */
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "base/config.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_pod.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow.h"

#define MPTCP_LIVE_LIMIT_MAX 1000 /* connections per answer: the default and the cap */

/*
 * GET /api/v1/mptcp/connections[?netns=INODE][&limit=N][&refresh=1] -> MptcpConnectionList:
 * live connections with their subflows and announced addresses, and
 * listeners, of every watched netns (or one); at most limit connections
 * ("truncated" says when there were more), and the namespaces watched.
 * refresh=1 takes the subflows' TCP state from a socket dump made now
 * instead of the last reconciliation's (mptcp_subflow_refresh()).
 * A connection's history is GET /api/v1/mptcp/events?token=N (the generic
 * history route of mptcp_events).
 */
static void mptcp_route_connections(struct collector *c, const struct route_request *req,
				    struct route_reply *rep)
{
	struct mptcp_priv *p = c->priv;
	const char *netns_s = route_arg(req, "netns"), *limit_s = route_arg(req, "limit");
	const char *refresh_s = route_arg(req, "refresh");
	uint64_t netns = 0, limit = MPTCP_LIVE_LIMIT_MAX;
	Sysobs__V1__MptcpConnectionList *list;

	if (!p || !p->state) {
		route_error(rep, 503, "unavailable", "the mptcp collector is not started");
		return;
	}
	if (netns_s && (cfg_parse_u64(netns_s, &netns) || !netns || netns > UINT32_MAX)) {
		route_error(rep, 400, "bad_request", "netns: a netns inode number, not \"%.64s\"",
			    netns_s);
		return;
	}
	if (limit_s && (cfg_parse_u64(limit_s, &limit) || !limit || limit > MPTCP_LIVE_LIMIT_MAX)) {
		route_error(rep, 400, "bad_request", "limit: 1..%d, not \"%.64s\"",
			    MPTCP_LIVE_LIMIT_MAX, limit_s);
		return;
	}
	if (refresh_s && strcmp(refresh_s, "0") && strcmp(refresh_s, "1")) {
		route_error(rep, 400, "bad_request", "refresh: 0 or 1, not \"%.64s\"", refresh_s);
		return;
	}
	if (refresh_s && !strcmp(refresh_s, "1")) {
		int err = mptcp_subflow_refresh(p, netns);

		if (err) {
			route_error(rep, 503, "unavailable", "socket dump failed: %s",
				    strerror(-err));
			return;
		}
	}
	list = mptcp_state_msg(p->state, netns, (size_t)limit, req->arena);
	if (!list) {
		route_error(rep, 500, "internal", "out of memory");
		return;
	}
	list->namespaces =
	    arena_alloc(req->arena, (p->n_w ? p->n_w : 1) * sizeof(*list->namespaces));
	if (!list->namespaces) {
		route_error(rep, 500, "internal", "out of memory");
		return;
	}
	for (size_t i = 0; i < p->n_w; i++) {
		Sysobs__V1__MptcpNamespace *ns = arena_alloc(req->arena, sizeof(*ns));

		if (!ns) {
			route_error(rep, 500, "internal", "out of memory");
			return;
		}
		sysobs__v1__mptcp_namespace__init(ns);
		ns->path = arena_strdup(req->arena, p->w[i].path);
		ns->netns = (uint32_t)__atomic_load_n(&p->w[i].ino, __ATOMIC_RELAXED);
		ns->overruns = __atomic_load_n(&p->w[i].overruns, __ATOMIC_RELAXED);
		list->namespaces[list->n_namespaces++] = ns;
	}
	/* A replay's inodes are another host's: no name of this one. */
	if (!p->replaying)
		mptcp_state_msg_names(list, req->arena);
	mptcp_pod_list(p, list, req->arena);
	rep->msg = &list->base;
}

static const char *const mptcp_live_params[] = {"netns", "limit", "refresh", NULL};
static const char *const mptcp_connection_show[] = {
    "token_hex", "netns", "server_side", "saddr", "daddr", "established", "subflows", NULL,
};

const struct collector_route mptcp_routes[] = {
    {
	.path = "/api/v1/mptcp/connections",
	.params = mptcp_live_params,
	.help = "live connections with subflows and announced addresses, listeners, namespaces",
	.fn = mptcp_route_connections,
	.list = &sysobs__v1__mptcp_connection_list__descriptor,
	.show = mptcp_connection_show,
    },
    {0},
};
