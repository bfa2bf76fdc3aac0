/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the sock_diag resync parser: SOCK_DIAG_BY_FAMILY replies
 * built as the kernel lays them out (inet_diag_msg + attributes) for MPTCP
 * sockets (INET_DIAG_INFO = struct mptcp_info) and for TCP subflows
 * (INET_DIAG_ULP_INFO { NAME "mptcp", MPTCP { TOKEN_LOC, ID_LOC, ID_REM,
 * FLAGS } }). The live dump itself runs in tests/integration/mptcp_burst.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/mptcp.h>
#include <linux/sock_diag.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_state.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define NS 42

static char buf[4096] __attribute__((aligned(8)));

static struct nlmsghdr *diag_msg(int family, int state, const char *src, const char *dst,
				 uint16_t sport, uint16_t dport, uint32_t ifindex)
{
	struct nlmsghdr *nlh;
	struct inet_diag_msg *m;

	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	m = mnl_nlmsg_put_extra_header(nlh, sizeof(*m));
	m->idiag_family = family;
	m->idiag_state = state;
	m->id.idiag_sport = htons(sport);
	m->id.idiag_dport = htons(dport);
	m->id.idiag_if = ifindex;
	inet_pton(family, src, m->id.idiag_src);
	inet_pton(family, dst, m->id.idiag_dst);
	return nlh;
}

static void put_mptcp_info(struct nlmsghdr *nlh, uint32_t token)
{
	struct mptcp_info mi;

	memset(&mi, 0, sizeof(mi));
	mi.mptcpi_token = token;
	mi.mptcpi_subflows = 1;
	mnl_attr_put(nlh, INET_DIAG_INFO, sizeof(mi), &mi);
}

static void put_ulp(struct nlmsghdr *nlh, const char *name, uint32_t token, uint8_t loc,
		    uint8_t rem, uint32_t flags)
{
	struct nlattr *ulp = mnl_attr_nest_start(nlh, INET_DIAG_ULP_INFO), *mp;

	mnl_attr_put_strz(nlh, INET_ULP_INFO_NAME, name);
	mp = mnl_attr_nest_start(nlh, INET_ULP_INFO_MPTCP);
	mnl_attr_put_u32(nlh, MPTCP_SUBFLOW_ATTR_TOKEN_REM, 0x1111);
	mnl_attr_put_u32(nlh, MPTCP_SUBFLOW_ATTR_TOKEN_LOC, token);
	mnl_attr_put_u8(nlh, MPTCP_SUBFLOW_ATTR_ID_LOC, loc);
	mnl_attr_put_u8(nlh, MPTCP_SUBFLOW_ATTR_ID_REM, rem);
	mnl_attr_put_u32(nlh, MPTCP_SUBFLOW_ATTR_FLAGS, flags);
	mnl_attr_nest_end(nlh, mp);
	mnl_attr_nest_end(nlh, ulp);
}

static void test_connection_and_subflows(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	struct nlmsghdr *nlh;
	struct mptcp_conn *c;
	char a[64];

	nlh = diag_msg(AF_INET, 1, "10.231.1.1", "10.231.1.2", 40000, 10080, 0);
	put_mptcp_info(nlh, 0xabcd);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 1);
	c = mptcp_state_conn_get(fresh, NS, 0xabcd, 0);
	assert_non_null(c);
	assert_int_equal(c->resynced, 1);
	assert_int_equal(c->established, 1);
	assert_int_equal(c->t.sport, 40000);
	assert_string_equal(inet_ntop(AF_INET, &c->t.daddr, a, sizeof(a)), "10.231.1.2");

	/* Initial subflow and the path-2 subflow (the peer marked it backup,
	 * bound to if 3). backup is the peer's bit, as in events. */
	nlh = diag_msg(AF_INET, 1, "10.231.1.1", "10.231.1.2", 40000, 10080, 0);
	/* Our own request for backup (BKUP_LOC) is not what events report. */
	put_ulp(nlh, "mptcp", 0xabcd, 0, 0,
		MPTCP_SUBFLOW_FLAG_MCAP_LOC | MPTCP_SUBFLOW_FLAG_BKUP_LOC);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_TCP, NS, fresh, 7), 1);
	nlh = diag_msg(AF_INET, 1, "10.231.2.1", "10.231.1.2", 40001, 10080, 3);
	put_ulp(nlh, "mptcp", 0xabcd, 2, 0,
		MPTCP_SUBFLOW_FLAG_JOIN_LOC | MPTCP_SUBFLOW_FLAG_BKUP_REM);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_TCP, NS, fresh, 7), 1);
	assert_int_equal(c->n_sf, 2);
	assert_int_equal(c->sf[1].loc_id, 2);
	assert_int_equal(c->sf[1].rem_id, 0);
	assert_int_equal(c->sf[1].backup, 1);
	assert_int_equal(c->sf[1].if_idx, 3);
	assert_int_equal(c->sf[0].backup, 0);
	assert_string_equal(inet_ntop(AF_INET, &c->sf[1].t.saddr, a, sizeof(a)), "10.231.2.1");
	mptcp_state_free(fresh);
}

static void test_skipped_and_listener(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	struct nlmsghdr *nlh;

	/* TCP socket with another ULP, and one without any. */
	nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	put_ulp(nlh, "tls", 5, 0, 0, 0);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_TCP, NS, fresh, 7), 0);
	nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_TCP, NS, fresh, 7), 0);
	/* MPTCP socket without a token yet, and without INET_DIAG_INFO. */
	nlh = diag_msg(AF_INET, 2, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	put_mptcp_info(nlh, 0);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 0);
	nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 0);
	assert_int_equal(fresh->n_conns, 0);
	/* An IPv6 listener. */
	nlh = diag_msg(AF_INET6, 10, "::", "::", 10080, 0, 0);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 1);
	assert_int_equal(fresh->n_listeners, 1);
	assert_int_equal(fresh->listeners[0].t.family, AF_INET6);
	assert_int_equal(fresh->listeners[0].t.sport, 10080);
	mptcp_state_free(fresh);
}

/* v4-mapped IPv6 sockets are reported as IPv4, like the events do. */
static void test_v4mapped(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	struct nlmsghdr *nlh;
	struct mptcp_conn *c;
	char a[64];

	nlh = diag_msg(AF_INET6, 1, "::ffff:10.1.1.1", "::ffff:10.1.1.2", 5, 6, 0);
	put_mptcp_info(nlh, 9);
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 1);
	c = mptcp_state_conn_get(fresh, NS, 9, 0);
	assert_int_equal(c->t.family, AF_INET);
	assert_string_equal(inet_ntop(AF_INET, &c->t.saddr, a, sizeof(a)), "10.1.1.1");
	assert_string_equal(inet_ntop(AF_INET, &c->t.daddr, a, sizeof(a)), "10.1.1.2");
	mptcp_state_free(fresh);
}

static void test_malformed(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	struct nlmsghdr *nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	size_t full;

	put_mptcp_info(nlh, 9);
	full = nlh->nlmsg_len;
	assert_int_equal(mptcp_diag_msg_apply(nlh, 20, IPPROTO_MPTCP, NS, fresh, 7), -EINVAL);
	assert_int_equal(mptcp_diag_msg_apply(nlh, full - 1, IPPROTO_MPTCP, NS, fresh, 7), -EINVAL);
	((struct inet_diag_msg *)mnl_nlmsg_get_payload(nlh))->idiag_family = AF_UNIX;
	assert_int_equal(mptcp_diag_msg_apply(nlh, full, IPPROTO_MPTCP, NS, fresh, 7), -EINVAL);
	/* A short mptcp_info (older kernel) still gives the token. */
	nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	{
		struct mptcp_info mi = {.mptcpi_token = 77};

		mnl_attr_put(nlh, INET_DIAG_INFO, offsetof(struct mptcp_info, mptcpi_write_seq),
			     &mi);
	}
	assert_int_equal(mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7), 1);
	assert_non_null(mptcp_state_conn_get(fresh, NS, 77, 0));
	mptcp_state_free(fresh);
}

/* Replays a recorded dump reply (tests/data/mptcp/diag-*.bin) into fresh. */
static int replay_dump(const char *name, int proto, struct mptcp_state *fresh)
{
	static char rbuf[1 << 16] __attribute__((aligned(8)));
	const char *dir = getenv("SYSOBS_TEST_DATA");
	const struct nlmsghdr *nlh;
	char path[4096];
	size_t n, left;
	int added = 0;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/mptcp/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(rbuf, 1, sizeof(rbuf), f);
	fclose(f);
	mptcp_nlmsg_for_each(nlh, rbuf, n, left)
	{
		if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			continue;
		if (mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, proto, NS, fresh, 7) > 0)
			added++;
	}
	return added;
}

/* Real 6.18 replies, client netns, one connection whose path-2 endpoint was
 * switched to backup: the MPTCP socket and its two subflows. The switch was
 * local (BKUP_LOC); events carry the peer's bit (the server got
 * SUB_PRIORITY backup=1, the client nothing), so backup stays 0 here. */
static void test_recorded_client(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	struct mptcp_conn *c;
	char a[64];
	int found = 0;

	assert_int_equal(replay_dump("diag-client-mptcp-ipv4-00.bin", IPPROTO_MPTCP, fresh), 1);
	assert_int_equal(replay_dump("diag-client-tcp-ipv4-00.bin", IPPROTO_TCP, fresh), 2);
	assert_int_equal(fresh->n_conns, 1);
	assert_int_equal(fresh->n_subflows, 2);
	c = mptcp_state_conn_get(fresh, NS, 780287107, 0);
	assert_non_null(c);
	assert_string_equal(inet_ntop(AF_INET, &c->t.saddr, a, sizeof(a)), "10.231.1.1");
	assert_string_equal(inet_ntop(AF_INET, &c->t.daddr, a, sizeof(a)), "10.231.1.2");
	assert_int_equal(c->t.dport, 10080);
	for (uint32_t i = 0; i < c->n_sf; i++) {
		inet_ntop(AF_INET, &c->sf[i].t.saddr, a, sizeof(a));
		if (!strcmp(a, "10.231.2.1")) {
			found++;
			assert_int_equal(c->sf[i].loc_id, 2);
			assert_int_equal(c->sf[i].rem_id, 0);
			assert_int_equal(c->sf[i].backup, 0);
			assert_int_equal(c->sf[i].if_idx, 3);
		} else {
			assert_string_equal(a, "10.231.1.1");
			assert_int_equal(c->sf[i].loc_id, 0);
			assert_int_equal(c->sf[i].backup, 0);
		}
	}
	assert_int_equal(found, 1);
	mptcp_state_free(fresh);
}

/* Server side: the listener and the accepted connection's two subflows. */
static void test_recorded_server(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();

	assert_int_equal(replay_dump("diag-server-mptcp-ipv4-00.bin", IPPROTO_MPTCP, fresh), 2);
	assert_int_equal(fresh->n_listeners, 1);
	assert_int_equal(fresh->listeners[0].t.sport, 10080);
	assert_int_equal(fresh->n_conns, 1);
	replay_dump("diag-server-tcp-ipv4-00.bin", IPPROTO_TCP, fresh);
	assert_int_equal(fresh->n_subflows, 2);
	mptcp_state_free(fresh);
}

/* The MPTCP socket of a connection in state with inode ino and flags. */
static int apply_conn(struct mptcp_state *fresh, int state, uint32_t ino, uint32_t token,
		      uint32_t flags)
{
	struct nlmsghdr *nlh = diag_msg(AF_INET, state, "10.0.0.1", "10.0.0.2", 1000, 80, 0);
	struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	struct mptcp_info mi;

	m->idiag_inode = ino;
	memset(&mi, 0, sizeof(mi));
	mi.mptcpi_token = token;
	mi.mptcpi_flags = flags;
	mnl_attr_put(nlh, INET_DIAG_INFO, sizeof(mi), &mi);
	return mptcp_diag_msg_apply(nlh, nlh->nlmsg_len, IPPROTO_MPTCP, NS, fresh, 7);
}

/* Live until its user closes it: after a DATA_FIN (FIN_WAIT1/2, CLOSING,
 * LAST_ACK, CLOSE) only while the socket has an inode (not orphaned). */
/* One recv() of a dump's answer (mptcp_diag_reply): messages of another
 * request skipped, DONE ends it, the kernel's error is returned; an error
 * message without room for its errno, or a positive one, is -EIO (it was
 * returned as a count of sockets). */
static void test_reply_datagram(void **state)
{
	static char dgram[8192] __attribute__((aligned(8)));
	struct nlmsghdr *nlh, *done;
	struct mptcp_state *fresh = mptcp_state_new();
	struct nlmsgerr *e;
	size_t len;
	int added = 0;

	(void)state;
	nlh = diag_msg(AF_INET, 1, "10.0.0.1", "10.0.0.2", 1000, 80, 0);
	put_mptcp_info(nlh, 0xabc);
	nlh->nlmsg_seq = 7;
	memcpy(dgram, nlh, nlh->nlmsg_len);
	len = NLMSG_ALIGN(nlh->nlmsg_len);
	nlh->nlmsg_seq = 6; /* a stale answer of an earlier request */
	memcpy(dgram + len, nlh, nlh->nlmsg_len);
	len += NLMSG_ALIGN(nlh->nlmsg_len);
	assert_int_equal(mptcp_diag_reply(dgram, len, 7, IPPROTO_MPTCP, NS, fresh, 1, &added), 0);
	assert_int_equal(added, 1);
	done = (struct nlmsghdr *)(dgram + len);
	*done = (struct nlmsghdr){
	    .nlmsg_len = NLMSG_HDRLEN + 4, .nlmsg_type = NLMSG_DONE, .nlmsg_seq = 7};
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 7, IPPROTO_MPTCP, NS, fresh, 1, &added), 1);
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 8, IPPROTO_MPTCP, NS, fresh, 1, &added), 0);
	*done = (struct nlmsghdr){
	    .nlmsg_len = NLMSG_HDRLEN + sizeof(*e), .nlmsg_type = NLMSG_ERROR, .nlmsg_seq = 7};
	e = (struct nlmsgerr *)NLMSG_DATA(done);
	memset(e, 0, sizeof(*e));
	e->error = -EPERM;
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 7, IPPROTO_TCP, NS, fresh, 1, &added), -EPERM);
	e->error = 5;
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 7, IPPROTO_TCP, NS, fresh, 1, &added), -EIO);
	e->error = 0;
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 7, IPPROTO_TCP, NS, fresh, 1, &added), 1);
	done->nlmsg_len = NLMSG_HDRLEN + 4;
	assert_int_equal(
	    mptcp_diag_reply(done, done->nlmsg_len, 7, IPPROTO_TCP, NS, fresh, 1, &added), -EIO);
	assert_int_equal(added, 1);
	mptcp_diag_dump_end(fresh);
	assert_int_equal(fresh->n_conns, 1); /* its MPTCP socket answered: kept */
	mptcp_state_free(fresh);
}

static void test_closing_states_and_fallback(void **state)
{
	struct mptcp_state *fresh = mptcp_state_new();
	static const int fin_states[] = {4, 5, 7, 9, 11};

	for (size_t i = 0; i < sizeof(fin_states) / sizeof(fin_states[0]); i++) {
		assert_int_equal(apply_conn(fresh, fin_states[i], 0, 100 + i, 0), 0);
		assert_int_equal(apply_conn(fresh, fin_states[i], 555, 200 + i, 0), 1);
	}
	/* Not yet accepted: no inode, live. */
	assert_int_equal(apply_conn(fresh, 1, 0, 300, 0), 1);
	assert_int_equal(apply_conn(fresh, 8, 0, 301, 0), 1);
	assert_int_equal(fresh->n_conns, 5 + 2);
	assert_null(mptcp_state_conn_get(fresh, NS, 100, 0));
	assert_non_null(mptcp_state_conn_get(fresh, NS, 202, 0));
	/* Fallen back to TCP: taken, marked. */
	assert_int_equal(apply_conn(fresh, 1, 556, 400, MPTCP_INFO_FLAG_FALLBACK), 1);
	assert_int_equal(mptcp_state_conn_get(fresh, NS, 400, 0)->fallback, 1);
	assert_int_equal(mptcp_state_conn_get(fresh, NS, 300, 0)->fallback, 0);
	assert_int_equal(mptcp_state_conn_get(fresh, NS, 300, 0)->server_side, -1);
	mptcp_state_free(fresh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connection_and_subflows),
	    cmocka_unit_test(test_skipped_and_listener),
	    cmocka_unit_test(test_v4mapped),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_recorded_client),
	    cmocka_unit_test(test_recorded_server),
	    cmocka_unit_test(test_closing_states_and_fallback),
	    cmocka_unit_test(test_reply_datagram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
