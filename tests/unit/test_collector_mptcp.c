// SPDX-License-Identifier: MIT
/*
 * The mptcp collector's event path without root or an MPTCP kernel: generic
 * netlink datagrams built here byte for byte (libmnl, as the kernel's
 * mptcp_pm events group sends them) go through mptcp_buffer_handle(), the
 * function the event socket's reader calls per datagram. One connection's
 * life (CREATED and ESTABLISHED in one datagram, a join, its reset with a
 * reason, CLOSED), an event about an unknown connection, a message of
 * another family, a malformed one and one cut short: the MptcpEvent rows,
 * the connection table and the sysobs_mptcp_* counters are asserted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "base/arena.h"
#include "collectors/mptcp/mptcp_pod.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_state.h"
#include "recording_sink.h"

#define SEC	    1000000000ll
#define PM_FAMILY   0x20 /* the mptcp_pm family id the watch resolved */
#define NETNS	    4026531993u
#define CLIENT_PORT 40000

extern const struct collector_ops mptcp_collector;

struct fixture {
	struct recording_sink rs;
	struct collector c;
	struct mptcp_priv *p;
};

/* One datagram being built: messages appended one after another. */
struct dgram {
	char buf[4096] __attribute__((aligned(8)));
	size_t len;
};

/* Appends a message of event cmd (of the mptcp_pm family) to d. */
static struct nlmsghdr *msg_add(struct dgram *d, uint8_t cmd)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);
	struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));

	nlh->nlmsg_type = PM_FAMILY;
	g->cmd = cmd;
	g->version = 1;
	return nlh;
}

static void msg_end(struct dgram *d, const struct nlmsghdr *nlh)
{
	d->len += NLMSG_ALIGN(nlh->nlmsg_len);
}

/* TOKEN, FAMILY and the IPv4 tuple saddr:sport -> 10.0.0.2:80. */
static void put_tuple(struct nlmsghdr *nlh, uint32_t token, const char *saddr, uint16_t sport)
{
	struct in_addr s, d;

	assert_int_equal(inet_pton(AF_INET, saddr, &s), 1);
	assert_int_equal(inet_pton(AF_INET, "10.0.0.2", &d), 1);
	mnl_attr_put_u32(nlh, MPTCP_EVA_TOKEN, token);
	mnl_attr_put_u16(nlh, MPTCP_EVA_FAMILY, AF_INET);
	mnl_attr_put(nlh, MPTCP_EVA_SADDR4, 4, &s);
	mnl_attr_put(nlh, MPTCP_EVA_DADDR4, 4, &d);
	mnl_attr_put_u16(nlh, MPTCP_EVA_SPORT, htons(sport));
	mnl_attr_put_u16(nlh, MPTCP_EVA_DPORT, htons(80));
}

/* A connection event of token 7's initial subflow, client side. */
static void conn_event(struct dgram *d, uint8_t cmd)
{
	struct nlmsghdr *nlh = msg_add(d, cmd);

	put_tuple(nlh, 7, "10.0.0.1", CLIENT_PORT);
	mnl_attr_put_u8(nlh, MPTCP_EVA_SERVER_SIDE, 0);
	msg_end(d, nlh);
}

/* A subflow event of token's join from 10.0.1.1:40001. */
static struct nlmsghdr *subflow_event(struct dgram *d, uint8_t cmd, uint32_t token)
{
	struct nlmsghdr *nlh = msg_add(d, cmd);

	put_tuple(nlh, token, "10.0.1.1", CLIENT_PORT + 1);
	mnl_attr_put_u8(nlh, MPTCP_EVA_LOC_ID, 1);
	mnl_attr_put_u8(nlh, MPTCP_EVA_REM_ID, 0);
	mnl_attr_put_u8(nlh, MPTCP_EVA_BACKUP, 0);
	return nlh;
}

static void feed(struct fixture *fx, const struct dgram *d, int64_t at_s)
{
	mptcp_buffer_handle(fx->p, &fx->p->w[0], d->buf, d->len, at_s * SEC);
}

static double counter(struct fixture *fx, const char *name, const char *labels)
{
	struct rs_series *s = rs_find(&fx->rs, name, labels);

	assert_non_null(s);
	return s->value;
}

static const struct mptcp_row *row_at(struct fixture *fx, size_t i, const char *type)
{
	const struct mptcp_row *row;

	assert_true(i < fx->rs.n_rows);
	assert_ptr_equal(fx->rs.rows[i].t, &mptcp_events_table);
	row = (const struct mptcp_row *)fx->rs.rows[i].row;
	assert_string_equal(row->type, type);
	assert_int_equal(row->netns, NETNS);
	return row;
}

static void assert_counts(struct fixture *fx, size_t conns, size_t subflows)
{
	size_t c, s;

	mptcp_state_counts(fx->p->state, &c, &s);
	assert_int_equal(c, conns);
	assert_int_equal(s, subflows);
}

/* What start() makes of the collector before its sockets: the watch of
 * one netns, the series from 0. */
static int fixture_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	rs_init(&fx->rs, "mptcp");
	fx->c = (struct collector){.ops = &mptcp_collector, .fd = -1};
	rs_collector_attach(&fx->rs, &fx->c);
	fx->p = calloc(1, sizeof(*fx->p));
	if (!fx->p)
		return -1;
	fx->c.priv = fx->p;
	fx->p->c = &fx->c;
	fx->p->epfd = -1;
	fx->p->rec_fd = -1;
	fx->p->state = mptcp_state_new();
	fx->p->w[0].ino = NETNS;
	fx->p->w[0].family = PM_FAMILY;
	if (!fx->p->state)
		return -1;
	mptcp_series_start(fx->p);
	*state = fx;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *fx = *state;

	mptcp_collector.stop(&fx->c);
	free(fx);
	return 0;
}

static void connection_life(void **state)
{
	struct fixture *fx = *state;
	const struct mptcp_row *row;
	struct mptcp_conn *conn;
	struct rs_series *life;
	struct dgram d = {0};
	struct nlmsghdr *nlh;

	assert_true(counter(fx, "sysobs_mptcp_events_total", "CREATED") == 0);
	assert_true(counter(fx, "sysobs_mptcp_subflow_resets_total", "badperf") == 0);

	/* CREATED and ESTABLISHED in one datagram */
	conn_event(&d, MPTCP_EV_CREATED);
	conn_event(&d, MPTCP_EV_ESTABLISHED);
	feed(fx, &d, 100);
	assert_int_equal(fx->rs.n_rows, 2);
	row = row_at(fx, 0, "CREATED");
	assert_int_equal(fx->rs.rows[0].ts_ns, 100 * SEC);
	assert_int_equal(row->token, 7);
	assert_int_equal(row->family, AF_INET);
	assert_string_equal(row->saddr, "10.0.0.1");
	assert_string_equal(row->daddr, "10.0.0.2");
	assert_int_equal(row->sport, CLIENT_PORT);
	assert_int_equal(row->dport, 80);
	assert_int_equal(row->server_side, 0);
	assert_int_equal(row->reset_reason, -1);
	row_at(fx, 1, "ESTABLISHED");
	conn = mptcp_state_conn_get(fx->p->state, NETNS, 7, 0);
	assert_non_null(conn);
	assert_int_equal(conn->established, 1);
	assert_int_equal(conn->created_ns, 100 * SEC);
	assert_int_equal(conn->created_known, 1);
	assert_int_equal(conn->server_side, 0);
	assert_int_equal(conn->t.sport, CLIENT_PORT);
	assert_counts(fx, 1, 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CREATED") == 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "ESTABLISHED") == 1);

	/* a join */
	d.len = 0;
	msg_end(&d, subflow_event(&d, MPTCP_EV_SUB_ESTABLISHED, 7));
	feed(fx, &d, 101);
	row = row_at(fx, 2, "SUB_ESTABLISHED");
	assert_string_equal(row->saddr, "10.0.1.1");
	assert_int_equal(row->loc_id, 1);
	assert_int_equal(conn->n_sf, 2);
	assert_counts(fx, 1, 2);

	/* the join reset by the peer: bad performance, ECONNRESET */
	d.len = 0;
	nlh = subflow_event(&d, MPTCP_EV_SUB_CLOSED, 7);
	mnl_attr_put_u8(nlh, MPTCP_EVA_ERROR, 104);
	mnl_attr_put_u32(nlh, MPTCP_EVA_RESET_REASON, 5);
	mnl_attr_put_u32(nlh, MPTCP_EVA_RESET_FLAGS, 0);
	msg_end(&d, nlh);
	feed(fx, &d, 103);
	row = row_at(fx, 3, "SUB_CLOSED");
	assert_int_equal(row->reset_reason, 5);
	assert_string_equal(row->reset_reason_name, "badperf");
	assert_int_equal(row->error, 104);
	assert_int_equal(conn->n_sf, 1);
	assert_counts(fx, 1, 1);
	assert_true(counter(fx, "sysobs_mptcp_subflow_resets_total", "badperf") == 1);
	assert_true(counter(fx, "sysobs_mptcp_subflow_resets_total", "mptcp") == 0);
	life = rs_find(&fx->rs, "sysobs_mptcp_subflow_lifetime_seconds", "");
	assert_non_null(life);
	assert_int_equal(life->observations, 1);
	assert_true(life->value == 2); /* 101 s -> 103 s */
	/* a join that was established is no failed join */
	assert_true(counter(fx, "sysobs_mptcp_join_failures_total", "ECONNRESET") == 0);

	/* CLOSED: the connection and its initial subflow end */
	d.len = 0;
	conn_event(&d, MPTCP_EV_CLOSED);
	feed(fx, &d, 110);
	row_at(fx, 4, "CLOSED");
	assert_null(mptcp_state_conn_get(fx->p->state, NETNS, 7, 0));
	assert_counts(fx, 0, 0);
	assert_int_equal(life->observations, 2);
	assert_true(life->value == 2 + 10); /* ESTABLISHED at 100 s -> 110 s */
	assert_true(counter(fx, "sysobs_mptcp_events_total", "SUB_ESTABLISHED") == 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "SUB_CLOSED") == 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CLOSED") == 1);
	assert_true(counter(fx, "sysobs_mptcp_unmatched_events_total", "") == 0);
	assert_true(counter(fx, "sysobs_mptcp_malformed_messages_total", "") == 0);
	assert_int_equal(fx->rs.n_rows, 5);
}

static void unmatched_foreign_malformed_and_short(void **state)
{
	struct fixture *fx = *state;
	struct dgram d = {0};
	struct nlmsghdr *nlh;
	size_t full;

	/* a join of a connection the state never saw: stored, counted */
	msg_end(&d, subflow_event(&d, MPTCP_EV_SUB_ESTABLISHED, 99));
	/* a message of another family in the same datagram: skipped */
	nlh = msg_add(&d, MPTCP_EV_CREATED);
	nlh->nlmsg_type = NLMSG_ERROR;
	msg_end(&d, nlh);
	/* a genetlink header cut short: malformed, no row */
	nlh = msg_add(&d, MPTCP_EV_CREATED);
	nlh->nlmsg_len = NLMSG_HDRLEN + 2;
	msg_end(&d, nlh);
	feed(fx, &d, 200);
	assert_int_equal(fx->rs.n_rows, 1);
	assert_int_equal(((const struct mptcp_row *)fx->rs.rows[0].row)->token, 99);
	assert_true(counter(fx, "sysobs_mptcp_unmatched_events_total", "") == 1);
	assert_true(counter(fx, "sysobs_mptcp_malformed_messages_total", "") == 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "SUB_ESTABLISHED") == 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CREATED") == 0);
	assert_counts(fx, 0, 0);

	/* a datagram shorter than its message says: the message is not seen */
	d.len = 0;
	conn_event(&d, MPTCP_EV_CREATED);
	full = d.len;
	d.len = full - 4;
	feed(fx, &d, 201);
	assert_int_equal(fx->rs.n_rows, 1);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CREATED") == 0);
	assert_true(counter(fx, "sysobs_mptcp_malformed_messages_total", "") == 1);
	/* whole, the same bytes are a connection */
	d.len = full;
	feed(fx, &d, 202);
	assert_int_equal(fx->rs.n_rows, 2);
	/* the initial subflow counts from ESTABLISHED */
	assert_counts(fx, 1, 0);
	assert_int_equal(mptcp_state_conn_get(fx->p->state, NETNS, 7, 0)->established, 0);
}

/* The pod whose sandbox the watched namespace is, on every row from when
 * the agent's name service knows it, and its info series (gone when the
 * watch enters another namespace); a namespace of no pod is asked about
 * every 0.1 s at most, for a minute after the first miss. */
static void rows_by_pod(void **state)
{
	struct fixture *fx = *state;
	const struct mptcp_row *row;
	struct rs_series *info;
	struct dgram d = {0};

	conn_event(&d, MPTCP_EV_CREATED);
	feed(fx, &d, 100);
	row = row_at(fx, 0, "CREATED");
	assert_string_equal(row->pod, "");
	assert_int_equal(fx->rs.pod_lookups, 1);

	/* the runtime lists the sandbox: asked again 0.1 s later */
	rs_pod_add(&fx->rs, NETNS, "web-1", "shop", "0b7c1f5e-uid");
	d.len = 0;
	conn_event(&d, MPTCP_EV_ESTABLISHED);
	feed(fx, &d, 100);
	assert_string_equal(row_at(fx, 1, "ESTABLISHED")->pod, "");
	d.len = 0;
	msg_end(&d, subflow_event(&d, MPTCP_EV_SUB_ESTABLISHED, 7));
	feed(fx, &d, 101);
	row = row_at(fx, 2, "SUB_ESTABLISHED");
	assert_string_equal(row->pod, "web-1");
	assert_string_equal(row->pod_namespace, "shop");
	assert_string_equal(row->pod_uid, "0b7c1f5e-uid");
	assert_int_equal(fx->rs.pod_lookups, 2);
	/* kept: no lookup per event */
	d.len = 0;
	conn_event(&d, MPTCP_EV_CLOSED);
	feed(fx, &d, 102);
	assert_string_equal(row_at(fx, 3, "CLOSED")->pod, "web-1");
	assert_int_equal(fx->rs.pod_lookups, 2);
	/* the join of the netns label to the pod */
	info =
	    rs_find(&fx->rs, "sysobs_mptcp_netns_pod_info", "4026531993,web-1,shop,0b7c1f5e-uid");
	assert_non_null(info);
	assert_true(info->value == 1);
	assert_false(info->gone);

	/* the path now names another namespace, of no pod */
	fx->p->w[0].ino = NETNS + 1;
	for (int i = 0; i < 40; i++) {
		d.len = 0;
		conn_event(&d, MPTCP_EV_CREATED);
		feed(fx, &d, 200 + 2 * i);
		row = (const struct mptcp_row *)fx->rs.rows[fx->rs.n_rows - 1].row;
		assert_int_equal(row->netns, NETNS + 1);
		assert_string_equal(row->pod, "");
	}
	assert_int_equal(fx->rs.pod_lookups, 2 + 31); /* 200 s .. 260 s */
	assert_true(info->gone);
}

/* The live route's answer: connections and namespaces of a pod's namespace
 * carry its names, the others none; the service is asked only about the
 * namespace whose watch found its pod (a miss would make it refresh). */
static void live_list_by_pod(void **state)
{
	struct fixture *fx = *state;
	Sysobs__V1__MptcpNamespace ns[2], *nsp[2] = {&ns[0], &ns[1]};
	Sysobs__V1__MptcpConnection conn[2], *connp[2] = {&conn[0], &conn[1]};
	Sysobs__V1__MptcpConnectionList list;
	struct arena ar = {0};

	sysobs__v1__mptcp_connection_list__init(&list);
	for (int i = 0; i < 2; i++) {
		sysobs__v1__mptcp_namespace__init(&ns[i]);
		sysobs__v1__mptcp_connection__init(&conn[i]);
		ns[i].netns = conn[i].netns = NETNS + (uint32_t)i;
	}
	list.namespaces = nsp;
	list.n_namespaces = 2;
	list.data = connp;
	list.n_data = 2;
	rs_pod_add(&fx->rs, NETNS, "web-1", "shop", "0b7c1f5e-uid");
	fx->p->n_w = 2;
	fx->p->w[1].ino = NETNS + 1;
	assert_non_null(mptcp_watch_pod(&fx->c, &fx->p->w[0], 100 * SEC));
	assert_null(mptcp_watch_pod(&fx->c, &fx->p->w[1], 100 * SEC));
	assert_int_equal(fx->rs.pod_lookups, 2);
	mptcp_pod_list(fx->p, &list, &ar);
	assert_int_equal(fx->rs.pod_lookups, 3);
	assert_int_equal(ns[0]._pod_case, SYSOBS__V1__MPTCP_NAMESPACE___POD_POD);
	assert_string_equal(ns[0].pod, "web-1");
	assert_string_equal(conn[0].pod, "web-1");
	assert_string_equal(conn[0].pod_namespace, "shop");
	assert_string_equal(conn[0].pod_uid, "0b7c1f5e-uid");
	assert_int_equal(conn[0]._pod_case, SYSOBS__V1__MPTCP_CONNECTION___POD_POD);
	assert_int_equal(conn[1]._pod_case, 0);
	assert_int_equal(ns[1]._pod_case, 0);
	fx->p->n_w = 0; /* no sockets of theirs for stop() to close */
	arena_free(&ar);
}

/* The recording of golden.mptcp (tests/data/golden/mptcp/events.rec: real
 * datagrams of 6.18, two namespaces) through mptcp_replay_load() and
 * mptcp_replay_run(), as [collector.mptcp] replay = FILE does at init and
 * start: its namespaces become the watches, every event a row at the
 * recorded spacing from the start, the counters and the live state as the
 * kernel's events left them. A copy cut inside a record is refused with
 * nothing applied. */
static void replay_of_a_recording(void **state)
{
	struct fixture *fx = *state;
	struct mptcp_priv *p = fx->p;
	const char *dir = getenv("SYSOBS_TEST_DATA");
	char path[512], cut[] = "/tmp/sysobs-mptcp-cut-XXXXXX";
	const struct mptcp_row *row;
	FILE *in;
	char buf[4096];
	size_t n;
	int fd;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/golden/mptcp/events.rec", dir);
	/* the fixture's watch is not a recorded one */
	memset(&p->w[0], 0, sizeof(p->w[0]));
	p->n_w = 0;

	/* cut 3 bytes short: refused, no watch, no row */
	in = fopen(path, "rb");
	assert_non_null(in);
	n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	assert_true(n > 100 && n < sizeof(buf));
	fd = mkstemp(cut);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, n - 3), (ssize_t)(n - 3));
	close(fd);
	assert_int_equal(mptcp_replay_load(p, cut), -EINVAL);
	unlink(cut);
	assert_non_null(strstr(fx->c.why, "truncated record"));
	assert_int_equal(p->n_w, 0);
	assert_int_equal(fx->rs.n_rows, 0);
	mptcp_replay_free(p);

	assert_int_equal(mptcp_replay_load(p, path), 0);
	assert_int_equal(p->n_w, 2);
	assert_string_equal(p->w[0].path, "/run/netns/sysobs-mp-374-a");
	assert_string_equal(p->w[1].path, "/run/netns/sysobs-mp-374-b");
	assert_int_equal(p->w[0].ino, 4026532375u);
	assert_string_equal(p->w[1].ino_s, "4026532440");
	assert_int_equal(p->absent_side_is_client, 1);
	assert_int_equal(p->w[0].diag_fd, -1);
	mptcp_replay_run(p, 1000 * SEC);
	/* 12 events of the client, 11 of the server (ip mptcp monitor's lines) */
	assert_int_equal(fx->rs.n_rows, 23);
	/* times from the first record (the first WATCH) on, in order */
	assert_true(fx->rs.rows[0].ts_ns > 1000 * SEC && fx->rs.rows[22].ts_ns < 1010 * SEC);
	for (size_t i = 1; i < fx->rs.n_rows; i++)
		assert_true(fx->rs.rows[i].ts_ns >= fx->rs.rows[i - 1].ts_ns);
	row = (const struct mptcp_row *)fx->rs.rows[0].row;
	assert_string_equal(row->type, "LISTENER_CREATED");
	assert_int_equal(row->netns, 4026532440u);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CREATED") == 4);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "SUB_ESTABLISHED") == 6);
	assert_true(counter(fx, "sysobs_mptcp_events_total", "CLOSED") == 3);
	assert_true(counter(fx, "sysobs_mptcp_unmatched_events_total", "") == 0);
	/* the aborted connection's server end sent no CLOSED: still live */
	assert_counts(fx, 1, 2);
	assert_non_null(mptcp_state_conn_get(p->state, 4026532440u, 0x2625e526, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(connection_life, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(unmatched_foreign_malformed_and_short, fixture_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(rows_by_pod, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(live_list_by_pod, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(replay_of_a_recording, fixture_setup, fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
