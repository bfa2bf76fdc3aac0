/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the mptcp collector's live state: the client- and server-side
 * event sequences recorded from a real kernel (tests/data/mptcp/) replayed
 * into it, subflow lifetimes, listeners, the sock_diag resync merge, and
 * events about unknown connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/pbjson.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_state.h"

#define NS 4026531840ull

static int replay(struct mptcp_state *st, uint64_t netns, const char *name, int64_t now,
		  mptcp_subflow_end_fn fn, void *arg)
{
	static char buf[8192] __attribute__((aligned(8)));
	const char *dir = getenv("SYSOBS_TEST_DATA");
	struct mptcp_event ev;
	char path[4096];
	size_t n;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/mptcp/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(mptcp_event_decode((struct nlmsghdr *)buf, n, &ev), 0);
	mptcp_event_side_resolve(&ev, 1); /* recorded on 6.18 */
	return mptcp_state_apply(st, netns, &ev, now, fn, arg);
}

struct lifetimes {
	double v[8];
	int n;
};

static void on_end(double s, void *arg)
{
	struct lifetimes *l = arg;

	if (l->n < 8)
		l->v[l->n++] = s;
}

static void assert_counts(struct mptcp_state *st, size_t conns, size_t subflows)
{
	size_t c, s;

	mptcp_state_counts(st, &c, &s);
	assert_int_equal(c, conns);
	assert_int_equal(s, subflows);
}

#define SEC 1000000000ll

static void test_client_sequence(void **state)
{
	struct mptcp_state *st = mptcp_state_new();
	struct lifetimes l = {0};
	struct mptcp_conn *c;
	Sysobs__V1__MptcpConnectionList *list;
	Sysobs__V1__MptcpConnection *mc;
	struct arena ar = {0};
	char *json;
	size_t len;

	assert_non_null(st);
	assert_int_equal(replay(st, NS, "client-0001-CREATED.bin", 1 * SEC, on_end, &l), 0);
	assert_counts(st, 1, 0);
	assert_int_equal(replay(st, NS, "client-0002-ESTABLISHED.bin", 2 * SEC, on_end, &l), 0);
	assert_counts(st, 1, 1); /* the initial subflow */
	assert_int_equal(replay(st, NS, "client-0003-SUB_ESTABLISHED.bin", 3 * SEC, on_end, &l), 0);
	assert_counts(st, 1, 2);
	assert_int_equal(replay(st, NS, "client-0004-ANNOUNCED.bin", 4 * SEC, on_end, &l), 0);
	assert_int_equal(replay(st, NS, "client-0005-SUB_ESTABLISHED.bin", 5 * SEC, on_end, &l), 0);
	assert_counts(st, 1, 3);

	c = mptcp_state_conn_get(st, NS, 0xdfbc8bbb, 0);
	assert_non_null(c);
	assert_int_equal(c->established, 1);
	assert_int_equal(c->server_side, 0);
	assert_int_equal(c->created_ns, 1 * SEC);
	assert_int_equal(c->n_addrs, 1);
	assert_int_equal(c->addrs[0].id, 5);
	assert_int_equal(c->addrs[0].port, 10080);
	assert_int_equal(c->addrs[0].removed_ns, 0);

	/* Live view as the REST route answers it. */
	list = mptcp_state_msg(st, 0, 1000, &ar);
	assert_non_null(list);
	assert_false(ar.oom);
	assert_int_equal(list->n_connections, 1);
	assert_int_equal(list->n_subflows, 3);
	assert_false(list->truncated);
	assert_int_equal(list->n_data, 1);
	mc = list->data[0];
	assert_int_equal(mc->token, 0xdfbc8bbb);
	assert_string_equal(mc->token_hex, "dfbc8bbb");
	assert_string_equal(mc->family, "ipv4");
	assert_string_equal(mc->saddr, "10.231.1.1");
	assert_string_equal(mc->daddr, "10.231.1.2");
	assert_int_equal(mc->dport, 10080);
	assert_int_equal(mc->n_subflows, 3);
	assert_int_equal(mc->n_addresses, 1);
	assert_string_equal(mc->addresses[0]->addr, "10.231.2.2");
	assert_non_null(mc->addresses[0]->announced);
	assert_int_equal(mc->addresses[0]->announced->seconds, 4);
	assert_null(mc->addresses[0]->removed);
	assert_int_equal(mc->created->seconds, 1);
	assert_int_equal(mc->created->nanos, 0);
	/* As JSON: the shape a user sees (times RFC 3339, absent when never). */
	assert_int_equal(pbjson_encode(&list->base, &json, &len), 0);
	assert_non_null(strstr(json, "\"token_hex\":\"dfbc8bbb\""));
	assert_non_null(strstr(json, "\"created\":\"1970-01-01T00:00:01.000000000Z\""));
	assert_non_null(strstr(json, "\"addr\":\"10.231.2.2\",\"port\":10080,"
				     "\"announced\":\"1970-01-01T00:00:04.000000000Z\"}"));
	assert_non_null(strstr(json, "\"n_connections\":1,\"n_subflows\":3,\"truncated\":false"));
	free(json);
	/* A netns with nothing in it, and a cap below the count. */
	list = mptcp_state_msg(st, NS + 1, 1000, &ar);
	assert_non_null(list);
	assert_int_equal(list->n_connections, 0);
	assert_int_equal(list->n_data, 0);
	list = mptcp_state_msg(st, NS, 0, &ar);
	assert_non_null(list);
	assert_int_equal(list->n_connections, 1);
	assert_int_equal(list->n_data, 0);
	assert_true(list->truncated);
	arena_free(&ar);

	assert_int_equal(replay(st, NS, "client-0006-REMOVED.bin", 6 * SEC, on_end, &l), 0);
	assert_int_equal(c->addrs[0].removed_ns, 6 * SEC);
	assert_int_equal(replay(st, NS, "client-0007-SUB_CLOSED.bin", 8 * SEC, on_end, &l), 0);
	assert_counts(st, 1, 2);
	assert_int_equal(l.n, 1);
	assert_true(l.v[0] == 3.0); /* established at 5 s, closed at 8 s */

	/* CLOSED ends the two remaining subflows (no SUB_CLOSED for them). */
	assert_int_equal(replay(st, NS, "client-0008-CLOSED.bin", 10 * SEC, on_end, &l), 0);
	assert_counts(st, 0, 0);
	assert_int_equal(l.n, 3);
	/* The initial subflow from ESTABLISHED (2 s), the other from 3 s. */
	assert_true((l.v[1] == 8.0 && l.v[2] == 7.0) || (l.v[1] == 7.0 && l.v[2] == 8.0));

	/* Again: CLOSED without CREATED is what a client that fell back gets;
	 * a SUB_CLOSED of an unknown connection stays unmatched. */
	assert_int_equal(replay(st, NS, "client-0008-CLOSED.bin", 11 * SEC, on_end, &l),
			 MPTCP_APPLY_FALLBACK_CLOSED);
	assert_int_equal(replay(st, NS, "client-0007-SUB_CLOSED.bin", 11 * SEC, on_end, &l),
			 -ENOENT);
	mptcp_state_free(st);
}

static void test_server_sequence_priority_listener(void **state)
{
	struct mptcp_state *st = mptcp_state_new();
	struct mptcp_conn *c;
	Sysobs__V1__MptcpConnectionList *list;
	struct arena ar = {0};

	assert_int_equal(replay(st, NS, "server-0001-LISTENER_CREATED.bin", SEC, NULL, NULL), 0);
	assert_int_equal(st->n_listeners, 1);
	assert_int_equal(st->listeners[0].t.sport, 10080);
	assert_int_equal(replay(st, NS, "server-0002-CREATED.bin", SEC, NULL, NULL), 0);
	assert_int_equal(replay(st, NS, "server-0003-ESTABLISHED.bin", SEC, NULL, NULL), 0);
	assert_int_equal(replay(st, NS, "server-0004-SUB_ESTABLISHED.bin", SEC, NULL, NULL), 0);
	assert_int_equal(replay(st, NS, "server-0005-SUB_ESTABLISHED.bin", SEC, NULL, NULL), 0);
	assert_counts(st, 1, 3);
	c = mptcp_state_conn_get(st, NS, 0x8d3046cd, 0);
	assert_non_null(c);
	assert_int_equal(c->server_side, 1);
	/* MP_PRIO from the client: the subflow from 10.231.2.1 on path 1
	 * becomes backup; nothing else changes. */
	assert_int_equal(replay(st, NS, "server-0006-SUB_PRIORITY.bin", 2 * SEC, NULL, NULL), 0);
	assert_counts(st, 1, 3);
	for (uint32_t i = 0; i < c->n_sf; i++)
		assert_int_equal(c->sf[i].backup, c->sf[i].t.dport == 49069 ? 1 : 0);
	assert_int_equal(replay(st, NS, "server-0007-SUB_CLOSED.bin", 3 * SEC, NULL, NULL), 0);
	assert_counts(st, 1, 2);
	list = mptcp_state_msg(st, 0, 1000, &ar);
	assert_non_null(list);
	assert_int_equal(list->n_listeners, 1);
	assert_int_equal(list->listeners[0]->port, 10080);
	assert_int_equal(list->listeners[0]->netns, NS);
	assert_int_equal(list->n_data, 1);
	assert_true(list->data[0]->server_side);
	arena_free(&ar);
	assert_int_equal(replay(st, NS, "server-0008-CLOSED.bin", 4 * SEC, NULL, NULL), 0);
	assert_int_equal(replay(st, NS, "server-0009-LISTENER_CLOSED.bin", 4 * SEC, NULL, NULL), 0);
	assert_counts(st, 0, 0);
	assert_int_equal(st->n_listeners, 0);
	mptcp_state_free(st);
}

/* Tokens are per netns: the same events in two namespaces are two
 * connections. */
static void test_namespaces_apart(void **state)
{
	struct mptcp_state *st = mptcp_state_new();

	assert_int_equal(replay(st, NS, "client-0001-CREATED.bin", SEC, NULL, NULL), 0);
	assert_int_equal(replay(st, NS + 1, "client-0001-CREATED.bin", SEC, NULL, NULL), 0);
	assert_counts(st, 2, 0);
	assert_int_equal(replay(st, NS + 1, "client-0008-CLOSED.bin", SEC, NULL, NULL), 0);
	assert_counts(st, 1, 0);
	assert_non_null(mptcp_state_conn_get(st, NS, 0xdfbc8bbb, 0));
	mptcp_state_free(st);
}

static void test_resync_merge(void **state)
{
	struct mptcp_state *st = mptcp_state_new(), *fresh = mptcp_state_new();
	struct mptcp_subflow sf;
	struct mptcp_conn *c, *f;
	struct mptcp_tuple lt = {.family = AF_INET, .sport = 9999};

	/* Known from events: the recorded connection with 2 subflows, and one
	 * in another netns that a resync of NS must not touch. */
	replay(st, NS, "client-0001-CREATED.bin", 1 * SEC, NULL, NULL);
	replay(st, NS, "client-0002-ESTABLISHED.bin", 2 * SEC, NULL, NULL);
	replay(st, NS, "client-0003-SUB_ESTABLISHED.bin", 3 * SEC, NULL, NULL);
	replay(st, NS, "client-0004-ANNOUNCED.bin", 4 * SEC, NULL, NULL);
	replay(st, NS + 1, "client-0001-CREATED.bin", 1 * SEC, NULL, NULL);
	/* A listener event-known in NS that is gone in the dump. */
	mptcp_state_listener_put(st, NS, &lt, SEC);
	assert_counts(st, 2, 2);
	c = mptcp_state_conn_get(st, NS, 0xdfbc8bbb, 0);

	/* The dump: that connection still has its initial subflow only (path 2
	 * was lost while events were dropped), plus a connection we never saw. */
	f = mptcp_state_conn_get(fresh, NS, 0xdfbc8bbb, 1);
	f->t = c->t;
	f->resynced = 1;
	memset(&sf, 0, sizeof(sf));
	sf.t = c->sf[0].t;
	sf.since_ns = 50 * SEC;
	mptcp_state_subflow_put(fresh, f, &sf);
	f = mptcp_state_conn_get(fresh, NS, 77, 1);
	f->resynced = 1;
	f->created_ns = 50 * SEC;
	sf.t.sport = 1;
	mptcp_state_subflow_put(fresh, f, &sf);
	sf.t.sport = 2;
	sf.loc_id = 2;
	mptcp_state_subflow_put(fresh, f, &sf);

	mptcp_state_resync(st, NS, fresh);
	assert_counts(st, 3, 3);
	assert_int_equal(fresh->n_conns, 0);
	c = mptcp_state_conn_get(st, NS, 0xdfbc8bbb, 0);
	assert_non_null(c);
	assert_int_equal(c->n_sf, 1);
	assert_int_equal(c->created_ns, 1 * SEC);     /* kept from events */
	assert_int_equal(c->sf[0].since_ns, 2 * SEC); /* kept: same 4-tuple */
	assert_int_equal(c->sf[0].since_known, 1);    /* ESTABLISHED said it */
	assert_int_equal(c->n_addrs, 1);	      /* announced address kept */
	assert_int_equal(c->resynced, 0);
	c = mptcp_state_conn_get(st, NS, 77, 0);
	assert_non_null(c);
	assert_int_equal(c->resynced, 1);
	assert_int_equal(c->n_sf, 2);
	assert_int_equal(c->sf[0].since_known, 0); /* only the dump saw it */
	assert_non_null(mptcp_state_conn_get(st, NS + 1, 0xdfbc8bbb, 0));
	assert_int_equal(st->n_listeners, 0);

	/* Events after the resync apply on top (idempotent re-delivery). */
	assert_int_equal(replay(st, NS, "client-0002-ESTABLISHED.bin", 60 * SEC, NULL, NULL), 0);
	assert_counts(st, 3, 3);

	/* Its CLOSED ends its subflows unobserved: their start is unknown. */
	{
		struct lifetimes l = {0};
		struct mptcp_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.type = MPTCP_EV_CLOSED;
		ev.token = 77;
		ev.present = 1u << MPTCP_EVA_TOKEN;
		assert_int_equal(mptcp_state_apply(st, NS, &ev, 70 * SEC, on_end, &l), 0);
		assert_int_equal(l.n, 0);
		assert_counts(st, 2, 1);
	}

	/* An empty dump empties the netns. */
	mptcp_state_resync(st, NS, fresh);
	assert_counts(st, 1, 0);
	mptcp_state_free(fresh);
	mptcp_state_free(st);
}

/* After a restart (issue 21 item 19): a dump-only connection learns its
 * side from a listener's port, its start and side from its CREATED row
 * when the row's tuple is its own, and nothing from another's. */
static void test_restart_recovery(void **state)
{
	struct mptcp_state *st = mptcp_state_new(), *fresh = mptcp_state_new();
	struct mptcp_tuple srv = {.family = AF_INET, .sport = 8080, .dport = 40001};
	struct mptcp_tuple cli = {.family = AF_INET, .sport = 40002, .dport = 8080};
	struct mptcp_tuple lst = {.family = AF_INET, .sport = 8080}; /* 0.0.0.0:8080 */
	struct mptcp_history h = {.server_side = 0, .created_ns = 5 * SEC};
	struct mptcp_conn *c;
	size_t n;
	uint32_t *tok;

	(void)state;
	inet_pton(AF_INET, "10.0.0.1", &srv.saddr);
	inet_pton(AF_INET, "10.0.0.2", &srv.daddr);
	cli.saddr = srv.saddr;
	cli.daddr = srv.daddr;
	c = mptcp_state_conn_get(fresh, NS, 1, 1);
	c->t = srv, c->resynced = 1, c->created_ns = 100 * SEC;
	c = mptcp_state_conn_get(fresh, NS, 2, 1);
	c->t = cli, c->resynced = 1, c->created_ns = 100 * SEC;
	mptcp_state_listener_put(fresh, NS, &lst, 90 * SEC);
	mptcp_state_resync(st, NS, fresh);
	assert_int_equal(mptcp_state_conn_get(st, NS, 1, 0)->server_side, 1);  /* listener port */
	assert_int_equal(mptcp_state_conn_get(st, NS, 2, 0)->server_side, -1); /* not "client" */

	tok = mptcp_state_unknown_starts(st, NS, &n);
	assert_int_equal(n, 2);
	free(tok);
	/* a row of another connection that had token 2: turned away */
	h.t = srv;
	assert_int_equal(mptcp_state_recover(st, NS, 2, &h), 0);
	/* its own row */
	h.t = cli;
	assert_int_equal(mptcp_state_recover(st, NS, 2, &h), 1);
	c = mptcp_state_conn_get(st, NS, 2, 0);
	assert_int_equal(c->server_side, 0);
	assert_int_equal(c->created_ns, 5 * SEC);
	assert_int_equal(c->created_known, 1);
	tok = mptcp_state_unknown_starts(st, NS, &n);
	assert_int_equal(n, 1);
	assert_int_equal(tok[0], 1);
	free(tok);
	/* known: a later row does not move it */
	h.created_ns = 7 * SEC;
	assert_int_equal(mptcp_state_recover(st, NS, 2, &h), 0);
	assert_int_equal(mptcp_state_conn_get(st, NS, 2, 0)->created_ns, 5 * SEC);
	mptcp_state_free(fresh);
	mptcp_state_free(st);
}

static void test_unknown_and_tokenless(void **state)
{
	struct mptcp_state *st = mptcp_state_new();
	struct mptcp_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = 99;
	ev.token = 5;
	ev.present = 1u << MPTCP_EVA_TOKEN;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), 0);
	assert_counts(st, 0, 0);
	/* CREATED without a token cannot be tracked. */
	ev.type = MPTCP_EV_CREATED;
	ev.present = 0;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), -ENOENT);
	/* Subflow events of unknown connections. */
	ev.present = 1u << MPTCP_EVA_TOKEN;
	ev.type = MPTCP_EV_SUB_ESTABLISHED;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), -ENOENT);
	ev.type = MPTCP_EV_ANNOUNCED;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), -ENOENT);
	ev.type = MPTCP_EV_LISTENER_CLOSED;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), -ENOENT);
	assert_counts(st, 0, 0);
	mptcp_state_free(st);
	mptcp_state_free(NULL);
}

/* More announced addresses than kept: the oldest are forgotten. */
static void test_address_cap(void **state)
{
	struct mptcp_state *st = mptcp_state_new();
	struct mptcp_event ev;
	struct mptcp_conn *c;

	memset(&ev, 0, sizeof(ev));
	ev.type = MPTCP_EV_CREATED;
	ev.token = 1;
	ev.present = 1u << MPTCP_EVA_TOKEN;
	mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL);
	ev.type = MPTCP_EV_ANNOUNCED;
	for (int i = 0; i < MPTCP_STATE_MAX_ADDRS + 4; i++) {
		ev.rem_id = i;
		assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), 0);
	}
	c = mptcp_state_conn_get(st, NS, 1, 0);
	assert_int_equal(c->n_addrs, MPTCP_STATE_MAX_ADDRS);
	assert_int_equal(c->addrs[0].id, 4);
	mptcp_state_free(st);
}

/* A subflow event of an IPv6 socket with v4-mapped addresses. */
static void ev_subflow(struct mptcp_event *ev, unsigned type, uint32_t token, int mapped,
		       const char *sa, const char *da, uint16_t sport, uint16_t dport)
{
	char s6[64], d6[64];

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->token = token;
	ev->present = (1u << MPTCP_EVA_TOKEN) | (1u << MPTCP_EVA_FAMILY) | (1u << MPTCP_EVA_SPORT) |
		      (1u << MPTCP_EVA_DPORT);
	ev->sport = sport;
	ev->dport = dport;
	if (mapped) {
		snprintf(s6, sizeof(s6), "::ffff:%s", sa);
		snprintf(d6, sizeof(d6), "::ffff:%s", da);
		ev->family = ev->saddr_family = ev->daddr_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, s6, &ev->saddr), 1);
		assert_int_equal(inet_pton(AF_INET6, d6, &ev->daddr), 1);
	} else {
		ev->family = ev->saddr_family = ev->daddr_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, sa, &ev->saddr), 1);
		assert_int_equal(inet_pton(AF_INET, da, &ev->daddr), 1);
	}
}

/* Events of a dual-stack socket carry ::ffff:a.b.c.d; sock_diag gives the
 * same sockets; the state keeps one (IPv4) form, so a SUB_CLOSED matches a
 * subflow learnt from a resync. */
static void test_v4mapped_one_form(void **state)
{
	struct mptcp_state *st = mptcp_state_new(), *fresh = mptcp_state_new();
	struct mptcp_subflow sf;
	struct mptcp_conn *c;
	struct mptcp_event ev;

	ev_subflow(&ev, MPTCP_EV_ESTABLISHED, 7, 1, "10.0.0.2", "10.0.0.1", 80, 4000);
	assert_int_equal(mptcp_state_apply(st, NS, &ev, SEC, NULL, NULL), 0);
	c = mptcp_state_conn_get(st, NS, 7, 0);
	assert_int_equal(c->t.family, AF_INET);
	assert_int_equal(c->sf[0].t.family, AF_INET);
	/* The resync learns the join subflow (as mptcp_diag_tuple gives it). */
	c = mptcp_state_conn_get(fresh, NS, 7, 1);
	c->resynced = 1;
	memset(&sf, 0, sizeof(sf));
	ev_subflow(&ev, MPTCP_EV_SUB_ESTABLISHED, 7, 1, "10.0.0.2", "10.0.1.1", 80, 4001);
	sf.t.family = AF_INET6;
	sf.t.saddr = ev.saddr;
	sf.t.daddr = ev.daddr;
	sf.t.sport = 80;
	sf.t.dport = 4001;
	mptcp_tuple_canon(&sf.t);
	assert_int_equal(sf.t.family, AF_INET);
	assert_int_equal(mptcp_state_subflow_put(fresh, c, &sf), 0);
	mptcp_state_resync(st, NS, fresh);
	assert_counts(st, 1, 1);
	ev.type = MPTCP_EV_SUB_CLOSED;
	assert_int_equal(mptcp_state_apply(st, NS, &ev, 2 * SEC, NULL, NULL), 0);
	assert_counts(st, 1, 0);
	/* The same again: a SUB_CLOSED of a known connection without its
	 * SUB_ESTABLISHED is a failed join. */
	assert_int_equal(mptcp_state_apply(st, NS, &ev, 2 * SEC, NULL, NULL),
			 MPTCP_APPLY_JOIN_FAILED);
	/* A listener on :: stays IPv6. */
	memset(&sf.t, 0, sizeof(sf.t));
	sf.t.family = AF_INET6;
	mptcp_tuple_canon(&sf.t);
	assert_int_equal(sf.t.family, AF_INET6);
	mptcp_state_free(fresh);
	mptcp_state_free(st);
}

static struct mptcp_conn *dump_conn(struct mptcp_state *d, uint32_t token, int n_sf)
{
	struct mptcp_conn *c = mptcp_state_conn_get(d, NS, token, 1);
	struct mptcp_subflow sf;

	c->resynced = 1;
	for (int i = 0; i < n_sf; i++) {
		memset(&sf, 0, sizeof(sf));
		sf.t.family = AF_INET;
		sf.t.sport = (uint16_t)(1000 + i);
		assert_int_equal(mptcp_state_subflow_put(d, c, &sf), 0);
	}
	return c;
}

/* Only what two dumps in a row agree on is corrected, and only what the
 * state knew before the first of them. */
static void test_reconcile_two_dumps(void **state)
{
	struct mptcp_state *st = mptcp_state_new(), *prev = mptcp_state_new(),
			   *fresh = mptcp_state_new();
	struct mptcp_reconcile_stats rs = {0};
	struct mptcp_conn *c;

	/* In the state: 1 (gone from both dumps: fast-closed), 2 (created
	 * after the previous dump: its CREATED raced it), 3 (one subflow of
	 * two gone from both dumps). */
	c = mptcp_state_conn_get(st, NS, 1, 1);
	c->created_ns = 1 * SEC;
	c = mptcp_state_conn_get(st, NS, 2, 1);
	c->created_ns = 5 * SEC;
	c = dump_conn(st, 3, 2);
	c->created_ns = 1 * SEC;
	c->sf[0].since_ns = c->sf[1].since_ns = 1 * SEC;
	/* Dumps: 3 with its first subflow only; 4 in both (missed events);
	 * 5 in the fresh one only; 6 fell back, in both. */
	dump_conn(prev, 3, 1);
	dump_conn(fresh, 3, 1);
	dump_conn(prev, 4, 2);
	dump_conn(fresh, 4, 2);
	dump_conn(fresh, 5, 1);
	dump_conn(prev, 6, 1)->fallback = 1;
	dump_conn(fresh, 6, 1)->fallback = 1;
	mptcp_state_reconcile(st, NS, fresh, NULL, 4 * SEC, &rs);
	assert_counts(st, 3, 2); /* no previous dump: nothing corrected */
	mptcp_state_reconcile(st, NS, fresh, prev, 4 * SEC, &rs);
	assert_int_equal(rs.conns_removed, 1);
	assert_int_equal(rs.conns_added, 1);
	assert_int_equal(rs.subflows_removed, 1);
	assert_null(mptcp_state_conn_get(st, NS, 1, 0));
	assert_non_null(mptcp_state_conn_get(st, NS, 2, 0));
	assert_non_null(mptcp_state_conn_get(st, NS, 4, 0));
	assert_null(mptcp_state_conn_get(st, NS, 5, 0));
	assert_null(mptcp_state_conn_get(st, NS, 6, 0));
	assert_counts(st, 3, 3); /* 2: none, 3: one, 4: two */
	mptcp_state_free(fresh);
	mptcp_state_free(prev);
	mptcp_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_sequence),
	    cmocka_unit_test(test_server_sequence_priority_listener),
	    cmocka_unit_test(test_namespaces_apart),
	    cmocka_unit_test(test_resync_merge),
	    cmocka_unit_test(test_restart_recovery),
	    cmocka_unit_test(test_unknown_and_tokenless),
	    cmocka_unit_test(test_address_cap),
	    cmocka_unit_test(test_v4mapped_one_form),
	    cmocka_unit_test(test_reconcile_two_dumps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
