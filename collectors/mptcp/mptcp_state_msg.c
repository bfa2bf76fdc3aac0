/* SPDX-License-Identifier: MIT */
/*
 * The mptcp collector's live state as API messages (GET
 * /api/v1/mptcp/connections): copied out under the state's lock, built
 * into the request's arena after (see mptcp_state.h).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "base/netns_name.h"
#include "api/proto/pbmsg.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow_msg.h"

/* The text of an address in the arena, NULL when the family is unknown. */
static char *mptcp_msg_addr(struct arena *ar, uint8_t family, const struct in6_addr *a)
{
	char buf[INET6_ADDRSTRLEN];

	if ((family != AF_INET && family != AF_INET6) || !inet_ntop(family, a, buf, sizeof(buf)))
		return NULL;
	return arena_strdup(ar, buf);
}

static const char *mptcp_family_name(uint8_t family)
{
	return family == AF_INET ? "ipv4" : family == AF_INET6 ? "ipv6" : "unknown";
}

/* Sets an optional string field: absent when s is NULL. */
#define MSG_OPT_STR(m, field, FIELD_CASE, s)                                                       \
	do {                                                                                       \
		if (((m)->field = (s)))                                                            \
			(m)->_##field##_case = FIELD_CASE;                                         \
	} while (0)

static Sysobs__V1__MptcpSubflow *mptcp_subflow_msg(struct arena *ar, const struct mptcp_subflow *sf)
{
	Sysobs__V1__MptcpSubflow *m =
	    PBMSG_NEW(ar, Sysobs__V1__MptcpSubflow, sysobs__v1__mptcp_subflow__descriptor);

	if (!m)
		return NULL;
	m->family = arena_strdup(ar, mptcp_family_name(sf->t.family));
	MSG_OPT_STR(m, saddr, SYSOBS__V1__MPTCP_SUBFLOW___SADDR_SADDR,
		    mptcp_msg_addr(ar, sf->t.family, &sf->t.saddr));
	MSG_OPT_STR(m, daddr, SYSOBS__V1__MPTCP_SUBFLOW___DADDR_DADDR,
		    mptcp_msg_addr(ar, sf->t.family, &sf->t.daddr));
	m->sport = sf->t.sport;
	m->dport = sf->t.dport;
	m->loc_id = sf->loc_id;
	m->rem_id = sf->rem_id;
	m->backup = !!sf->backup;
	m->if_idx = sf->if_idx;
	m->since = pbmsg_time(ar, sf->since_ns);
	m->tcp = mptcp_subflow_tcp_msg(ar, &sf->tcp);
	return m;
}

static Sysobs__V1__MptcpAddress *mptcp_address_msg(struct arena *ar, const struct mptcp_addr *a)
{
	Sysobs__V1__MptcpAddress *m =
	    PBMSG_NEW(ar, Sysobs__V1__MptcpAddress, sysobs__v1__mptcp_address__descriptor);

	if (!m)
		return NULL;
	m->id = a->id;
	MSG_OPT_STR(m, addr, SYSOBS__V1__MPTCP_ADDRESS___ADDR_ADDR,
		    mptcp_msg_addr(ar, a->family, &a->addr));
	m->port = a->port;
	m->announced = pbmsg_time(ar, a->announced_ns);
	m->removed = pbmsg_time(ar, a->removed_ns);
	return m;
}

static Sysobs__V1__MptcpConnection *mptcp_conn_msg(struct arena *ar, const struct mptcp_conn *c)
{
	Sysobs__V1__MptcpConnection *m =
	    PBMSG_NEW(ar, Sysobs__V1__MptcpConnection, sysobs__v1__mptcp_connection__descriptor);

	if (!m)
		return NULL;
	m->netns = (uint32_t)c->netns;
	m->token = c->token;
	m->token_hex = arena_printf(ar, "%08x", c->token);
	m->family = arena_strdup(ar, mptcp_family_name(c->t.family));
	MSG_OPT_STR(m, saddr, SYSOBS__V1__MPTCP_CONNECTION___SADDR_SADDR,
		    mptcp_msg_addr(ar, c->t.family, &c->t.saddr));
	MSG_OPT_STR(m, daddr, SYSOBS__V1__MPTCP_CONNECTION___DADDR_DADDR,
		    mptcp_msg_addr(ar, c->t.family, &c->t.daddr));
	m->sport = c->t.sport;
	m->dport = c->t.dport;
	if (c->server_side >= 0) {
		m->server_side = c->server_side == 1;
		m->_server_side_case = SYSOBS__V1__MPTCP_CONNECTION___SERVER_SIDE_SERVER_SIDE;
	}
	m->established = !!c->established;
	m->resynced = !!c->resynced;
	m->fallback = !!c->fallback;
	m->flags = c->flags;
	/* not the time a dump first showed it, which is no start time */
	if (c->created_known)
		m->created = pbmsg_time(ar, c->created_ns);
	m->established_at = pbmsg_time(ar, c->established_ns);
	m->info = mptcp_conn_info_msg(ar, &c->info);
	m->subflows = arena_alloc(ar, (c->n_sf ? c->n_sf : 1) * sizeof(*m->subflows));
	m->addresses = arena_alloc(ar, (c->n_addrs ? c->n_addrs : 1) * sizeof(*m->addresses));
	if (!m->subflows || !m->addresses)
		return NULL;
	for (uint32_t i = 0; i < c->n_sf; i++)
		if (!(m->subflows[m->n_subflows++] = mptcp_subflow_msg(ar, &c->sf[i])))
			return NULL;
	for (uint32_t i = 0; i < c->n_addrs; i++)
		if (!(m->addresses[m->n_addresses++] = mptcp_address_msg(ar, &c->addrs[i])))
			return NULL;
	return m;
}

static Sysobs__V1__MptcpListener *mptcp_listener_msg(struct arena *ar,
						     const struct mptcp_listener *l)
{
	Sysobs__V1__MptcpListener *m =
	    PBMSG_NEW(ar, Sysobs__V1__MptcpListener, sysobs__v1__mptcp_listener__descriptor);

	if (!m)
		return NULL;
	m->netns = (uint32_t)l->netns;
	m->family = arena_strdup(ar, mptcp_family_name(l->t.family));
	MSG_OPT_STR(m, addr, SYSOBS__V1__MPTCP_LISTENER___ADDR_ADDR,
		    mptcp_msg_addr(ar, l->t.family, &l->t.saddr));
	m->port = l->t.sport;
	m->since = pbmsg_time(ar, l->since_ns);
	return m;
}

/* A connection copied out of the state, so the message is built without the
 * lock; c.sf points into the snapshot's own subflow array. */
struct mptcp_conn_snap {
	struct mptcp_conn c;
};

Sysobs__V1__MptcpConnectionList *mptcp_state_msg(struct mptcp_state *st, uint64_t netns,
						 size_t max_conns, struct arena *ar)
{
	Sysobs__V1__MptcpConnectionList *out = NULL;
	struct mptcp_listener *lsnap = NULL;
	struct mptcp_conn_snap *snap = NULL;
	struct mptcp_subflow *sfs = NULL;
	size_t n_conns = 0, n_subflows = 0, n_snap = 0, n_sf = 0, n_ls = 0;
	size_t cap_snap, cap_sf, b;
	struct hash_node *node, *tmp;

	/* Copy under the lock (memcpy only), build the message after: the main
	 * thread never waits on a large answer being built. */
	pthread_mutex_lock(&st->lock);
	cap_snap = st->n_conns < max_conns ? st->n_conns : max_conns;
	cap_sf = st->n_subflows;
	snap = calloc(cap_snap ? cap_snap : 1, sizeof(*snap));
	sfs = calloc(cap_sf ? cap_sf : 1, sizeof(*sfs));
	lsnap = calloc(st->n_listeners ? st->n_listeners : 1, sizeof(*lsnap));
	if (!snap || !sfs || !lsnap) {
		pthread_mutex_unlock(&st->lock);
		goto out_free;
	}
	hash_for_each_safe(&st->conns, b, node, tmp) {
		struct mptcp_conn *c = hash_entry(node, struct mptcp_conn, node);

		if (netns && c->netns != netns)
			continue;
		n_conns++;
		n_subflows += c->n_sf;
		if (n_snap == cap_snap || n_sf + c->n_sf > cap_sf)
			continue;
		snap[n_snap].c = *c;
		snap[n_snap].c.node.next = NULL;
		if (c->n_sf) /* c->sf is NULL without subflows: memcpy(x, NULL, 0) is UB */
			memcpy(&sfs[n_sf], c->sf, c->n_sf * sizeof(*sfs));
		snap[n_snap].c.sf = &sfs[n_sf];
		n_sf += c->n_sf;
		n_snap++;
	}
	for (size_t i = 0; i < st->n_listeners; i++)
		if (!netns || st->listeners[i].netns == netns)
			lsnap[n_ls++] = st->listeners[i];
	pthread_mutex_unlock(&st->lock);

	out = PBMSG_NEW(ar, Sysobs__V1__MptcpConnectionList,
			sysobs__v1__mptcp_connection_list__descriptor);
	if (!out)
		goto out_free;
	out->n_connections = (uint32_t)n_conns;
	out->n_subflows = (uint32_t)n_subflows;
	out->truncated = n_snap < n_conns;
	out->data = arena_alloc(ar, (n_snap ? n_snap : 1) * sizeof(*out->data));
	out->listeners = arena_alloc(ar, (n_ls ? n_ls : 1) * sizeof(*out->listeners));
	if (!out->data || !out->listeners)
		goto out_nomem;
	for (size_t i = 0; i < n_snap; i++)
		if (!(out->data[out->n_data++] = mptcp_conn_msg(ar, &snap[i].c)))
			goto out_nomem;
	for (size_t i = 0; i < n_ls; i++)
		if (!(out->listeners[out->n_listeners++] = mptcp_listener_msg(ar, &lsnap[i])))
			goto out_nomem;
	goto out_free;

out_nomem:
	out = NULL;
out_free:
	free(snap);
	free(sfs);
	free(lsnap);
	return out;
}

/* The host's name of namespace inum (netns_name.h), in ar; NULL if none. */
static char *mptcp_netns_name(struct arena *ar, uint32_t inum)
{
	char name[64];

	return netns_name_lookup(inum, name, sizeof(name)) ? NULL : arena_strdup(ar, name);
}

void mptcp_state_msg_names(Sysobs__V1__MptcpConnectionList *list, struct arena *ar)
{
	for (size_t i = 0; i < list->n_data; i++) {
		Sysobs__V1__MptcpConnection *m = list->data[i];

		if ((m->netns_name = mptcp_netns_name(ar, m->netns)))
			m->_netns_name_case = SYSOBS__V1__MPTCP_CONNECTION___NETNS_NAME_NETNS_NAME;
	}
	for (size_t i = 0; i < list->n_listeners; i++) {
		Sysobs__V1__MptcpListener *m = list->listeners[i];

		if ((m->netns_name = mptcp_netns_name(ar, m->netns)))
			m->_netns_name_case = SYSOBS__V1__MPTCP_LISTENER___NETNS_NAME_NETNS_NAME;
	}
	for (size_t i = 0; i < list->n_namespaces; i++) {
		Sysobs__V1__MptcpNamespace *m = list->namespaces[i];

		if ((m->netns_name = mptcp_netns_name(ar, m->netns)))
			m->_netns_name_case = SYSOBS__V1__MPTCP_NAMESPACE___NETNS_NAME_NETNS_NAME;
	}
}
