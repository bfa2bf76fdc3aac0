/* SPDX-License-Identifier: MIT */
/* Live MPTCP state of the mptcp collector: connections, subflows and
 * listeners from events and socket dumps; see mptcp_state.h (its API
 * messages: mptcp_state_msg.c). */
#include "collectors/mptcp/mptcp_state.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MPTCP_STATE_BUCKETS 4096 /* to start with */

static struct mptcp_conn *mptcp_conn_of(struct hash_node *n)
{
	return hash_entry(n, struct mptcp_conn, node);
}

struct mptcp_state *mptcp_state_new(void)
{
	struct mptcp_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	if (hash_init(&st->conns, MPTCP_STATE_BUCKETS)) {
		free(st);
		return NULL;
	}
	pthread_mutex_init(&st->lock, NULL);
	return st;
}

static void mptcp_conn_free(struct mptcp_conn *c)
{
	if (!c)
		return;
	free(c->sf);
	free(c);
}

/* Drops every connection and listener; the lock is the caller's business. */
static void mptcp_state_clear(struct mptcp_state *st)
{
	struct hash_node *node, *tmp;
	size_t b;

	hash_for_each_safe(&st->conns, b, node, tmp)
		mptcp_conn_free(mptcp_conn_of(node));
	hash_reset(&st->conns);
	st->n_conns = 0;
	st->n_subflows = 0;
	st->n_listeners = 0;
}

void mptcp_state_free(struct mptcp_state *st)
{
	if (!st)
		return;
	mptcp_state_clear(st);
	hash_fini(&st->conns);
	free(st->listeners);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static uint64_t mptcp_conn_hash(uint64_t netns, uint32_t token)
{
	uint64_t h = (netns * 0x9e3779b97f4a7c15ull) ^ (token * 0xff51afd7ed558ccdull);

	return h ^ (h >> 29);
}

struct mptcp_conn *mptcp_state_conn_get(struct mptcp_state *st, uint64_t netns, uint32_t token,
					int create)
{
	uint64_t h = mptcp_conn_hash(netns, token);
	struct mptcp_conn *c;

	for (struct hash_node *n = hash_chain(&st->conns, h); n; n = n->next) {
		c = mptcp_conn_of(n);
		if (c->netns == netns && c->token == token)
			return c;
	}
	if (!create)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->netns = netns;
	c->token = token;
	c->server_side = -1;
	hash_add(&st->conns, &c->node, h);
	st->n_conns++;
	return c;
}

/* Unlinks c, which is in st, from the table (does not free it). */
static void mptcp_state_conn_unlink(struct mptcp_state *st, struct mptcp_conn *c)
{
	hash_del(&st->conns, &c->node);
	st->n_conns--;
	st->n_subflows -= c->n_sf;
}

void mptcp_state_conn_drop(struct mptcp_state *st, struct mptcp_conn *c)
{
	mptcp_state_conn_unlink(st, c);
	mptcp_conn_free(c);
}

static int mptcp_tuple_eq(const struct mptcp_tuple *a, const struct mptcp_tuple *b)
{
	return a->sport == b->sport && a->dport == b->dport &&
	       !memcmp(&a->saddr, &b->saddr, sizeof(a->saddr)) &&
	       !memcmp(&a->daddr, &b->daddr, sizeof(a->daddr));
}

static int mptcp_addr_v4mapped(const struct in6_addr *a)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(a, pfx, sizeof(pfx));
}

static int mptcp_addr_zero(const struct in6_addr *a)
{
	static const struct in6_addr zero;

	return !memcmp(a, &zero, sizeof(zero));
}

void mptcp_tuple_canon(struct mptcp_tuple *t)
{
	int s4 = mptcp_addr_v4mapped(&t->saddr), d4 = mptcp_addr_v4mapped(&t->daddr);

	if (t->family != AF_INET6 || !(s4 || d4) || (!s4 && !mptcp_addr_zero(&t->saddr)) ||
	    (!d4 && !mptcp_addr_zero(&t->daddr)))
		return;
	t->family = AF_INET;
	memmove(&t->saddr, (char *)&t->saddr + 12, 4);
	memset((char *)&t->saddr + 4, 0, 12);
	memmove(&t->daddr, (char *)&t->daddr + 12, 4);
	memset((char *)&t->daddr + 4, 0, 12);
}

static void mptcp_tuple_from_event(struct mptcp_tuple *t, const struct mptcp_event *ev)
{
	memset(t, 0, sizeof(*t));
	t->family = ev->saddr_family   ? ev->saddr_family
		    : ev->daddr_family ? ev->daddr_family
				       : (uint8_t)ev->family;
	t->saddr = ev->saddr;
	t->daddr = ev->daddr;
	t->sport = ev->sport;
	t->dport = ev->dport;
	mptcp_tuple_canon(t);
}

static struct mptcp_subflow *mptcp_conn_subflow_find(struct mptcp_conn *c,
						     const struct mptcp_tuple *t)
{
	for (uint32_t i = 0; i < c->n_sf; i++)
		if (mptcp_tuple_eq(&c->sf[i].t, t))
			return &c->sf[i];
	return NULL;
}

int mptcp_state_subflow_put(struct mptcp_state *st, struct mptcp_conn *c,
			    const struct mptcp_subflow *sf)
{
	struct mptcp_subflow *old = mptcp_conn_subflow_find(c, &sf->t);

	if (old) {
		int64_t since = old->since_ns;
		uint8_t known = old->since_known;
		struct mptcp_tcp_stats tcp = old->tcp;

		*old = *sf;
		if (since) {
			old->since_ns = since;
			old->since_known = known;
		}
		if (!sf->tcp.have) /* an event: the last dump's figures stay */
			old->tcp = tcp;
		return 0;
	}
	if (c->n_sf == c->cap_sf) {
		uint32_t cap = c->cap_sf ? c->cap_sf * 2 : 4;
		struct mptcp_subflow *n = realloc(c->sf, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->sf = n;
		c->cap_sf = cap;
	}
	c->sf[c->n_sf++] = *sf;
	st->n_subflows++;
	return 0;
}

static void mptcp_conn_subflow_del(struct mptcp_state *st, struct mptcp_conn *c,
				   struct mptcp_subflow *sf)
{
	*sf = c->sf[--c->n_sf];
	st->n_subflows--;
}

static struct mptcp_listener *mptcp_state_listener_find(struct mptcp_state *st, uint64_t netns,
							const struct mptcp_tuple *t)
{
	for (size_t i = 0; i < st->n_listeners; i++) {
		struct mptcp_listener *l = &st->listeners[i];

		if (l->netns == netns && l->t.family == t->family && l->t.sport == t->sport &&
		    !memcmp(&l->t.saddr, &t->saddr, sizeof(t->saddr)))
			return l;
	}
	return NULL;
}

int mptcp_state_listener_put(struct mptcp_state *st, uint64_t netns, const struct mptcp_tuple *t,
			     int64_t since_ns)
{
	struct mptcp_listener *l = mptcp_state_listener_find(st, netns, t);

	if (l)
		return 0;
	if (st->n_listeners == st->cap_listeners) {
		size_t cap = st->cap_listeners ? st->cap_listeners * 2 : 8;
		struct mptcp_listener *n = realloc(st->listeners, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->listeners = n;
		st->cap_listeners = cap;
	}
	l = &st->listeners[st->n_listeners++];
	memset(l, 0, sizeof(*l));
	l->netns = netns;
	l->t = *t;
	l->since_ns = since_ns;
	return 0;
}

/* ANNOUNCED / REMOVED: the peer's address list of one connection. */
static void mptcp_conn_addr_event(struct mptcp_conn *c, const struct mptcp_event *ev,
				  int64_t now_ns)
{
	struct mptcp_addr *a = NULL;

	for (uint32_t i = 0; i < c->n_addrs; i++)
		if (c->addrs[i].id == ev->rem_id)
			a = &c->addrs[i];
	if (!a) {
		if (c->n_addrs == MPTCP_STATE_MAX_ADDRS) {
			/* Full: forget the oldest entry. */
			memmove(&c->addrs[0], &c->addrs[1], sizeof(c->addrs[0]) * (c->n_addrs - 1));
			c->n_addrs--;
		}
		a = &c->addrs[c->n_addrs++];
		memset(a, 0, sizeof(*a));
		a->id = ev->rem_id;
	}
	if (ev->type == MPTCP_EV_ANNOUNCED) {
		a->family = ev->daddr_family ? ev->daddr_family : (uint8_t)ev->family;
		a->addr = ev->daddr;
		a->port = ev->dport;
		a->announced_ns = now_ns;
		a->removed_ns = 0;
	} else {
		a->removed_ns = now_ns;
	}
}

/* CLOSED: the connection and the subflows still open with it (the kernel
 * sends no SUB_CLOSED for those) end. */
static int apply_closed(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
			int64_t now_ns, mptcp_subflow_end_fn end_fn, void *arg)
{
	struct mptcp_conn *c = mptcp_state_conn_get(st, netns, ev->token, 0);

	if (!c)
		return mptcp_event_has(ev, MPTCP_EVA_TOKEN) ? MPTCP_APPLY_FALLBACK_CLOSED : -ENOENT;
	if (end_fn)
		for (uint32_t i = 0; i < c->n_sf; i++)
			if (c->sf[i].since_known)
				end_fn((double)(now_ns - c->sf[i].since_ns) / 1e9, arg);
	mptcp_state_conn_unlink(st, c);
	mptcp_conn_free(c);
	return 0;
}

/* CREATED and ESTABLISHED: the connection, and with ESTABLISHED its
 * initial subflow, which gets no SUB_ESTABLISHED of its own. */
static int apply_created(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
			 const struct mptcp_tuple *t, int64_t now_ns)
{
	struct mptcp_subflow sf = {0};
	struct mptcp_conn *c;

	if (!mptcp_event_has(ev, MPTCP_EVA_TOKEN))
		return -ENOENT;
	c = mptcp_state_conn_get(st, netns, ev->token, 1);
	if (!c)
		return -ENOMEM;
	if (t->family)
		c->t = *t;
	if (ev->side >= 0)
		c->server_side = ev->side;
	if (mptcp_event_has(ev, MPTCP_EVA_FLAGS))
		c->flags = ev->flags;
	c->resynced = 0;
	if (!c->created_ns)
		c->created_ns = now_ns;
	if (ev->type == MPTCP_EV_CREATED) {
		if (!c->created_known) {
			c->created_ns = now_ns;
			c->created_known = 1;
		}
		return 0;
	}
	c->established = 1;
	c->established_ns = now_ns;
	if (!t->family)
		return 0;
	sf.t = *t;
	sf.since_ns = now_ns;
	sf.since_known = 1;
	return mptcp_state_subflow_put(st, c, &sf);
}

/* SUB_ESTABLISHED adds a subflow; SUB_PRIORITY changes a known one's
 * backup flag (or adds it, if its SUB_ESTABLISHED was missed). */
static int apply_subflow(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
			 const struct mptcp_tuple *t, int64_t now_ns)
{
	struct mptcp_conn *c = mptcp_state_conn_get(st, netns, ev->token, 0);
	struct mptcp_subflow sf = {0}, *old;

	if (!c)
		return -ENOENT;
	old = mptcp_conn_subflow_find(c, t);
	if (ev->type == MPTCP_EV_SUB_PRIORITY && old) {
		old->backup = ev->backup;
		return 0;
	}
	sf.t = *t;
	sf.loc_id = ev->loc_id;
	sf.rem_id = ev->rem_id;
	sf.backup = ev->backup;
	sf.if_idx = ev->if_idx;
	sf.since_ns = now_ns;
	sf.since_known = 1;
	return mptcp_state_subflow_put(st, c, &sf);
}

static int apply_sub_closed(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
			    const struct mptcp_tuple *t, int64_t now_ns,
			    mptcp_subflow_end_fn end_fn, void *arg)
{
	struct mptcp_conn *c = mptcp_state_conn_get(st, netns, ev->token, 0);
	struct mptcp_subflow *old;

	if (!c)
		return -ENOENT;
	old = mptcp_conn_subflow_find(c, t);
	if (!old)
		return MPTCP_APPLY_JOIN_FAILED;
	if (end_fn && old->since_known)
		end_fn((double)(now_ns - old->since_ns) / 1e9, arg);
	mptcp_conn_subflow_del(st, c, old);
	return 0;
}

static int mptcp_state_apply_locked(struct mptcp_state *st, uint64_t netns,
				    const struct mptcp_event *ev, int64_t now_ns,
				    mptcp_subflow_end_fn end_fn, void *arg)
{
	struct mptcp_listener *l;
	struct mptcp_conn *c;
	struct mptcp_tuple t;

	mptcp_tuple_from_event(&t, ev);
	switch (ev->type) {
	case MPTCP_EV_LISTENER_CREATED:
		return mptcp_state_listener_put(st, netns, &t, now_ns);
	case MPTCP_EV_LISTENER_CLOSED:
		l = mptcp_state_listener_find(st, netns, &t);
		if (!l)
			return -ENOENT;
		*l = st->listeners[--st->n_listeners];
		return 0;
	case MPTCP_EV_CLOSED:
		return apply_closed(st, netns, ev, now_ns, end_fn, arg);
	case MPTCP_EV_CREATED:
	case MPTCP_EV_ESTABLISHED:
		return apply_created(st, netns, ev, &t, now_ns);
	case MPTCP_EV_ANNOUNCED:
	case MPTCP_EV_REMOVED:
		c = mptcp_state_conn_get(st, netns, ev->token, 0);
		if (!c)
			return -ENOENT;
		mptcp_conn_addr_event(c, ev, now_ns);
		return 0;
	case MPTCP_EV_SUB_ESTABLISHED:
	case MPTCP_EV_SUB_PRIORITY:
		return apply_subflow(st, netns, ev, &t, now_ns);
	case MPTCP_EV_SUB_CLOSED:
		return apply_sub_closed(st, netns, ev, &t, now_ns, end_fn, arg);
	}
	return 0; /* unknown type: nothing to track */
}

int mptcp_state_apply(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
		      int64_t now_ns, mptcp_subflow_end_fn end_fn, void *arg)
{
	int ret;

	pthread_mutex_lock(&st->lock);
	ret = mptcp_state_apply_locked(st, netns, ev, now_ns, end_fn, arg);
	pthread_mutex_unlock(&st->lock);
	return ret;
}

/*
 * The side of a connection only a socket dump knows when its initial
 * subflow is gone (the dump's subflow flags give it while it lives,
 * mptcp_diag.c): the server's when its local port is one an MPTCP listener
 * of the dump listens on (at its address, or a wildcard one: a v6 wildcard
 * takes IPv4 too); unknown (-1) otherwise, never "client" (its listener may
 * have closed since). A client socket bound to a listener's port on purpose
 * (SO_REUSEPORT) would be taken for a server here: only a guess.
 */
static int8_t mptcp_side_from_listeners(const struct mptcp_state *d, uint64_t netns,
					const struct mptcp_tuple *t)
{
	for (size_t i = 0; i < d->n_listeners; i++) {
		const struct mptcp_listener *l = &d->listeners[i];

		if (l->netns != netns || l->t.sport != t->sport)
			continue;
		if (mptcp_addr_zero(&l->t.saddr) ||
		    (l->t.family == t->family && !memcmp(&l->t.saddr, &t->saddr, sizeof(t->saddr))))
			return 1;
	}
	return -1;
}

void mptcp_state_resync(struct mptcp_state *st, uint64_t netns, struct mptcp_state *fresh)
{
	struct hash_node *node, *tmp;
	size_t b;

	pthread_mutex_lock(&st->lock);
	/* Connections of netns that are gone. */
	hash_for_each_safe(&st->conns, b, node, tmp) {
		struct mptcp_conn *c = mptcp_conn_of(node);

		if (c->netns != netns || mptcp_state_conn_get(fresh, netns, c->token, 0))
			continue;
		mptcp_state_conn_drop(st, c);
	}
	/* Connections in the dump: move them over, keeping what only events
	 * told us (creation time, server side, addresses, subflow ages). */
	hash_for_each_safe(&fresh->conns, b, node, tmp) {
		struct mptcp_conn *f = mptcp_conn_of(node);
		struct mptcp_conn *old = mptcp_state_conn_get(st, netns, f->token, 0);

		if (f->netns != netns)
			continue;
		mptcp_state_conn_unlink(fresh, f);
		if (f->fallback && !old) {
			mptcp_conn_free(f);
			continue;
		}
		if (old) {
			for (uint32_t i = 0; i < f->n_sf; i++) {
				struct mptcp_subflow *o = mptcp_conn_subflow_find(old, &f->sf[i].t);

				if (o) {
					f->sf[i].since_ns = o->since_ns;
					f->sf[i].since_known = o->since_known;
				}
			}
			f->created_ns = old->created_ns;
			f->created_known = old->created_known;
			f->established_ns = old->established_ns;
			f->server_side = old->server_side;
			f->flags = old->flags;
			f->resynced = old->resynced;
			/* f->fallback: the dump's word */
			memcpy(f->addrs, old->addrs, sizeof(f->addrs));
			f->n_addrs = old->n_addrs;
			mptcp_state_conn_drop(st, old);
		} else if (f->server_side < 0) {
			f->server_side = mptcp_side_from_listeners(fresh, netns, &f->t);
		}
		hash_add(&st->conns, &f->node, mptcp_conn_hash(netns, f->token));
		st->n_conns++;
		st->n_subflows += f->n_sf;
	}
	/* Listeners: the dump's set, with the older "since" where known. */
	for (size_t i = 0; i < fresh->n_listeners; i++) {
		struct mptcp_listener *o =
		    mptcp_state_listener_find(st, netns, &fresh->listeners[i].t);

		if (o)
			fresh->listeners[i].since_ns = o->since_ns;
	}
	for (size_t i = 0; i < st->n_listeners;) {
		if (st->listeners[i].netns == netns)
			st->listeners[i] = st->listeners[--st->n_listeners];
		else
			i++;
	}
	for (size_t i = 0; i < fresh->n_listeners; i++)
		if (fresh->listeners[i].netns == netns)
			mptcp_state_listener_put(st, netns, &fresh->listeners[i].t,
						 fresh->listeners[i].since_ns);
	pthread_mutex_unlock(&st->lock);
	mptcp_state_clear(fresh);
}

uint32_t *mptcp_state_unknown_starts(struct mptcp_state *st, uint64_t netns, size_t *n)
{
	struct hash_node *node, *tmp;
	uint32_t *out = NULL;
	size_t cap = 0, b;

	*n = 0;
	pthread_mutex_lock(&st->lock);
	hash_for_each_safe(&st->conns, b, node, tmp) {
		const struct mptcp_conn *c = mptcp_conn_of(node);

		if (c->netns != netns || c->created_known)
			continue;
		if (*n == cap) {
			uint32_t *p = realloc(out, (cap = cap ? cap * 2 : 64) * sizeof(*p));

			if (!p) {
				free(out);
				out = NULL;
				goto out;
			}
			out = p;
		}
		out[(*n)++] = c->token;
	}
out:
	pthread_mutex_unlock(&st->lock);
	return out;
}

int mptcp_state_recover(struct mptcp_state *st, uint64_t netns, uint32_t token,
			const struct mptcp_history *h)
{
	struct mptcp_conn *c;
	int taken = 0;

	pthread_mutex_lock(&st->lock);
	c = mptcp_state_conn_get(st, netns, token, 0);
	if (c && !c->created_known && h->created_ns && mptcp_tuple_eq(&c->t, &h->t)) {
		c->created_ns = h->created_ns;
		c->created_known = 1;
		if (h->server_side >= 0)
			c->server_side = h->server_side;
		taken = 1;
	}
	pthread_mutex_unlock(&st->lock);
	return taken;
}

/* The connection of a dump, const (the lookup does not create). */
static const struct mptcp_conn *mptcp_dump_conn(const struct mptcp_state *d, uint64_t netns,
						uint32_t token)
{
	return d ? mptcp_state_conn_get((struct mptcp_state *)d, netns, token, 0) : NULL;
}

static int mptcp_dump_has_subflow(const struct mptcp_conn *c, const struct mptcp_tuple *t)
{
	return c && mptcp_conn_subflow_find((struct mptcp_conn *)c, t);
}

void mptcp_state_reconcile(struct mptcp_state *st, uint64_t netns, const struct mptcp_state *fresh,
			   const struct mptcp_state *prev, int64_t prev_ns,
			   struct mptcp_reconcile_stats *out)
{
	struct hash_node *node, *tmp;
	size_t b;

	if (!prev)
		return;
	pthread_mutex_lock(&st->lock);
	/* What the state has and the kernel no longer has. */
	hash_for_each_safe(&st->conns, b, node, tmp) {
		struct mptcp_conn *c = mptcp_conn_of(node);
		const struct mptcp_conn *f, *p;

		if (c->netns != netns)
			continue;
		f = mptcp_dump_conn(fresh, netns, c->token);
		p = mptcp_dump_conn(prev, netns, c->token);
		if (!f && !p && c->created_ns < prev_ns) {
			mptcp_state_conn_drop(st, c);
			out->conns_removed++;
			continue;
		}
		if (!f)
			continue;
		c->fallback = f->fallback;
		for (uint32_t i = 0; i < c->n_sf;) {
			struct mptcp_subflow *sf = &c->sf[i];

			if (!mptcp_dump_has_subflow(f, &sf->t) &&
			    !mptcp_dump_has_subflow(p, &sf->t) && sf->since_ns < prev_ns) {
				mptcp_conn_subflow_del(st, c, sf);
				out->subflows_removed++;
				continue;
			}
			i++;
		}
		/* Subflows the kernel had in both dumps. */
		for (uint32_t i = 0; i < f->n_sf; i++) {
			if (!mptcp_dump_has_subflow(p, &f->sf[i].t) ||
			    mptcp_conn_subflow_find(c, &f->sf[i].t))
				continue;
			if (mptcp_state_subflow_put(st, c, &f->sf[i]) == 0)
				out->subflows_added++;
		}
	}
	/* What the kernel had in both dumps and the state does not know. */
	hash_for_each_safe(&fresh->conns, b, node, tmp) {
		const struct mptcp_conn *f = mptcp_conn_of(node);
		struct mptcp_conn *c;

		if (f->netns != netns || f->fallback || !mptcp_dump_conn(prev, netns, f->token) ||
		    mptcp_state_conn_get(st, netns, f->token, 0))
			continue;
		c = mptcp_state_conn_get(st, netns, f->token, 1);
		if (!c)
			break;
		c->t = f->t;
		c->server_side = f->server_side;
		c->established = f->established;
		c->resynced = 1;
		c->created_ns = f->created_ns;
		out->conns_added++;
		for (uint32_t i = 0; i < f->n_sf; i++)
			mptcp_state_subflow_put(st, c, &f->sf[i]);
	}
	pthread_mutex_unlock(&st->lock);
}

void mptcp_state_counts(struct mptcp_state *st, size_t *conns, size_t *subflows)
{
	pthread_mutex_lock(&st->lock);
	*conns = st->n_conns;
	*subflows = st->n_subflows;
	pthread_mutex_unlock(&st->lock);
}
