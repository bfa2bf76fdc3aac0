/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of subflow health (collectors/mptcp/mptcp_subflow_info.c): the
 * tcp_info and mptcp_info decoders on INET_DIAG_INFO recorded from a 6.18
 * kernel (tests/data/mptcp/diag-*.bin: a 280-byte tcp_info, longer than
 * this build's 232-byte struct; a 96-byte mptcp_info), the same bytes cut
 * to the lengths older kernels send, the figures copied into the live
 * state with the metrics' counting, and the history row.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_nl.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

#define NS 42

static char buf[8192] __attribute__((aligned(8)));

static size_t load(const char *name)
{
	const char *dir = getenv("SYSOBS_TEST_DATA");
	char path[4096];
	size_t n;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/mptcp/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > 0);
	return n;
}

/* The INET_DIAG_INFO payload of the socket with local port sport in a
 * recorded dump datagram; its length in *len. */
static const void *diag_info(size_t n, uint16_t sport, size_t *len)
{
	const struct nlmsghdr *h;
	size_t left;

	mptcp_nlmsg_for_each(h, buf, n, left)
	{
		const struct inet_diag_msg *m = mnl_nlmsg_get_payload(h);
		const struct nlattr *a;

		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || ntohs(m->id.idiag_sport) != sport)
			continue;
		mnl_attr_for_each(a, h, sizeof(*m))
		{
			if (mnl_attr_get_type(a) == INET_DIAG_INFO) {
				*len = mnl_attr_get_payload_len(a);
				return mnl_attr_get_payload(a);
			}
		}
	}
	fail_msg("no INET_DIAG_INFO for port %u", sport);
	return NULL;
}

/* The client's initial subflow (port 37886) as a 6.18 kernel sends it. */
static void test_tcp_info_recorded(void **state)
{
	struct mptcp_tcp_stats t;
	size_t len;
	const void *ti = diag_info(load("diag-client-tcp-ipv4-00.bin"), 37886, &len);

	(void)state;
	assert_int_equal(len, 280); /* longer than this build's struct: read up to it */
	assert_true(len > sizeof(struct tcp_info));
	assert_int_equal(mptcp_tcp_info_decode(ti, len, &t), 0);
	assert_int_equal(t.have, MPTCP_TCPI_BASE | MPTCP_TCPI_PACING | MPTCP_TCPI_BYTES |
				     MPTCP_TCPI_SEGS | MPTCP_TCPI_MIN_RTT | MPTCP_TCPI_DELIVERY |
				     MPTCP_TCPI_LIMITED | MPTCP_TCPI_DELIVERED |
				     MPTCP_TCPI_BYTES_SENT);
	assert_int_equal(t.state, 1); /* ESTABLISHED */
	assert_int_equal(t.rtt_us, 64);
	assert_int_equal(t.rttvar_us, 36);
	assert_int_equal(t.snd_cwnd, 11);
	assert_int_equal(t.snd_ssthresh, 0x7fffffff); /* no loss yet */
	assert_int_equal(t.total_retrans, 0);
	assert_int_equal(t.bytes_acked, 6); /* "hello"; the SYN counts */
	assert_int_equal(t.bytes_sent, 5);
	assert_int_equal(t.bytes_received, 0);
	assert_int_equal(t.snd_mss, 1448);
}

/* The same bytes cut to older kernels' lengths: 2.6 (up to total_retrans,
 * 104), 4.1 (bytes_received, 136), 4.10 (sndbuf_limited, 192); shorter than
 * 2.6 is refused. */
static void test_tcp_info_by_length(void **state)
{
	struct mptcp_tcp_stats t;
	size_t len;
	const void *ti = diag_info(load("diag-client-tcp-ipv4-00.bin"), 37886, &len);

	(void)state;
	assert_int_equal(mptcp_tcp_info_decode(ti, 104, &t), 0);
	assert_int_equal(t.have, MPTCP_TCPI_BASE);
	assert_int_equal(t.rtt_us, 64);
	assert_int_equal(t.bytes_acked, 0); /* not sent: absent, not read */

	assert_int_equal(mptcp_tcp_info_decode(ti, 136, &t), 0);
	assert_int_equal(t.have, MPTCP_TCPI_BASE | MPTCP_TCPI_PACING | MPTCP_TCPI_BYTES);
	assert_int_equal(t.bytes_acked, 6);

	assert_int_equal(mptcp_tcp_info_decode(ti, 192, &t), 0);
	assert_true(t.have & MPTCP_TCPI_LIMITED);
	assert_false(t.have & MPTCP_TCPI_BYTES_SENT);
	assert_int_equal(t.bytes_sent, 0);

	assert_int_equal(mptcp_tcp_info_decode(ti, 103, &t), -EINVAL);
	assert_int_equal(t.have, 0);
	assert_int_equal(mptcp_tcp_info_decode(NULL, 0, &t), -EINVAL);
}

/* The client's MPTCP socket: 96 bytes (6.10+), token as the decoder tests
 * assert for the same recording; cut to 5.7 (40), 5.14 (43), 6.5 (80). */
static void test_mptcp_info(void **state)
{
	struct mptcp_conn_stats i;
	size_t len;
	const void *mi = diag_info(load("diag-client-mptcp-ipv4-00.bin"), 37886, &len);

	(void)state;
	assert_int_equal(len, 96);
	assert_int_equal(mptcp_conn_info_decode(mi, len, &i), 0);
	assert_int_equal(i.have, MPTCP_MPI_BASE | MPTCP_MPI_LOCAL | MPTCP_MPI_CSUM |
				     MPTCP_MPI_BYTES | MPTCP_MPI_TOTAL | MPTCP_MPI_LAST);
	assert_int_equal(i.token, 780287107);
	assert_int_equal(i.subflows, 1);
	assert_int_equal(i.subflows_total, 2);
	assert_int_equal(i.bytes_sent, 5);
	assert_true(i.write_seq == 15024230038868507145ull);

	assert_int_equal(mptcp_conn_info_decode(mi, 40, &i), 0);
	assert_int_equal(i.have, MPTCP_MPI_BASE);
	assert_int_equal(i.token, 780287107);
	assert_int_equal(mptcp_conn_info_decode(mi, 43, &i), 0);
	assert_int_equal(i.have, MPTCP_MPI_BASE | MPTCP_MPI_LOCAL | MPTCP_MPI_CSUM);
	assert_int_equal(mptcp_conn_info_decode(mi, 80, &i), 0);
	assert_true(i.have & MPTCP_MPI_BYTES);
	assert_false(i.have & MPTCP_MPI_TOTAL);
	assert_int_equal(i.subflows_total, 0);
	assert_int_equal(mptcp_conn_info_decode(mi, 15, &i), -EINVAL);
}

/* The recorded dump through mptcp_diag_msg_apply(): the subflows carry
 * their tcp_info and the connection its mptcp_info. */
static void test_dump_carries_figures(void **state)
{
	struct mptcp_state *st = mptcp_state_new();
	const struct nlmsghdr *h;
	struct mptcp_conn *c;
	size_t n, left;

	(void)state;
	n = load("diag-client-mptcp-ipv4-00.bin");
	mptcp_nlmsg_for_each(h, buf, n, left)
	    mptcp_diag_msg_apply(h, h->nlmsg_len, 262, NS, st, 1000);
	n = load("diag-client-tcp-ipv4-00.bin");
	mptcp_nlmsg_for_each(h, buf, n, left)
	    mptcp_diag_msg_apply(h, h->nlmsg_len, 6, NS, st, 1000);
	c = mptcp_state_conn_get(st, NS, 780287107, 0);
	assert_non_null(c);
	assert_int_equal(c->info.subflows_total, 2);
	assert_int_equal(c->info.sampled_ns, 1000);
	assert_int_equal(c->n_sf, 2);
	for (uint32_t i = 0; i < c->n_sf; i++) {
		assert_true(c->sf[i].tcp.have & MPTCP_TCPI_BYTES_SENT);
		assert_int_equal(c->sf[i].tcp.sampled_ns, 1000);
		assert_int_equal(c->sf[i].tcp.rtt_us, c->sf[i].t.sport == 37886 ? 64 : 19);
	}
	mptcp_state_free(st);
}

/* ---- mptcp_subflow_info_take ---------------------------------------------- */

static struct mptcp_subflow_delta seen[8];
static int n_seen;

static void on_sample(const struct mptcp_subflow_delta *d, void *arg)
{
	(void)arg;
	assert_true(n_seen < 8);
	seen[n_seen++] = *d;
}

static void put_sf(struct mptcp_state *st, uint32_t token, uint16_t sport, int since_known,
		   uint64_t acked, uint32_t retrans, uint32_t rtt)
{
	struct mptcp_conn *c = mptcp_state_conn_get(st, NS, token, 1);
	struct mptcp_subflow sf;

	assert_non_null(c);
	memset(&sf, 0, sizeof(sf));
	sf.t.family = AF_INET;
	sf.t.sport = sport;
	sf.t.dport = 80;
	sf.loc_id = sport == 1000 ? 0 : 2;
	sf.since_ns = 1;
	sf.since_known = (uint8_t)since_known;
	if (acked || rtt) {
		sf.tcp.have = MPTCP_TCPI_BASE | MPTCP_TCPI_BYTES;
		sf.tcp.bytes_acked = acked;
		sf.tcp.total_retrans = retrans;
		sf.tcp.rtt_us = rtt;
	}
	assert_int_equal(mptcp_state_subflow_put(st, c, &sf), 0);
}

/* Counting: a subflow an event saw start counts from 0, one found running
 * from its first sample; a sample on demand changes the figures and not
 * the counting; a subflow absent from the dump keeps its last figures. */
static void test_take_counts(void **state)
{
	struct mptcp_state *st = mptcp_state_new(), *d1 = mptcp_state_new(),
			   *d2 = mptcp_state_new(), *d3 = mptcp_state_new();
	struct mptcp_conn *c;

	(void)state;
	put_sf(st, 7, 1000, 1, 0, 0, 0); /* seen established by an event */
	put_sf(st, 7, 2000, 0, 0, 0, 0); /* found running by a dump */
	put_sf(d1, 7, 1000, 0, 500, 1, 100);
	put_sf(d1, 7, 2000, 0, 9000, 4, 200);
	n_seen = 0;
	assert_int_equal(mptcp_subflow_info_take(st, NS, d1, on_sample, NULL), 2);
	assert_int_equal(n_seen, 2);
	for (int i = 0; i < 2; i++) {
		if (seen[i].sf->t.sport == 1000) {
			assert_int_equal(seen[i].acked, 500);
			assert_int_equal(seen[i].retrans, 1);
		} else {
			assert_int_equal(seen[i].acked, 0);
			assert_int_equal(seen[i].retrans, 0);
		}
	}
	/* On demand: figures move, nothing counted. */
	put_sf(d2, 7, 1000, 0, 800, 3, 110);
	n_seen = 0;
	assert_int_equal(mptcp_subflow_info_take(st, NS, d2, NULL, NULL), 1);
	c = mptcp_state_conn_get(st, NS, 7, 0);
	assert_int_equal(c->sf[0].tcp.bytes_acked, 800);
	assert_int_equal(c->sf[0].tcp.rtt_us, 110);
	assert_int_equal(c->sf[1].tcp.bytes_acked, 9000); /* kept */
	/* The next reconciliation counts from the last counted sample. */
	put_sf(d3, 7, 1000, 0, 1500, 3, 120);
	put_sf(d3, 7, 2000, 0, 9100, 4, 210);
	n_seen = 0;
	assert_int_equal(mptcp_subflow_info_take(st, NS, d3, on_sample, NULL), 2);
	for (int i = 0; i < 2; i++) {
		if (seen[i].sf->t.sport == 1000) {
			assert_int_equal(seen[i].acked, 1000);
			assert_int_equal(seen[i].retrans, 2);
		} else {
			assert_int_equal(seen[i].acked, 100);
			assert_int_equal(seen[i].retrans, 0);
		}
	}
	/* An event about a known subflow keeps the figures. */
	put_sf(st, 7, 1000, 1, 0, 0, 0);
	assert_int_equal(c->sf[0].tcp.bytes_acked, 1500);
	/* A dump older than the figures (an on-demand dump came in after
	 * the reconciliation's was taken): the figures stay, the counting
	 * moves to the older dump's values. */
	c->sf[0].tcp.sampled_ns = 200;
	{
		struct mptcp_conn *f = mptcp_state_conn_get(d3, NS, 7, 0);

		f->sf[0].tcp.sampled_ns = 100;
		f->sf[0].tcp.bytes_acked = 1600;
		f->sf[1].tcp.sampled_ns = 100;
	}
	n_seen = 0;
	assert_int_equal(mptcp_subflow_info_take(st, NS, d3, on_sample, NULL), 2);
	assert_int_equal(c->sf[0].tcp.bytes_acked, 1500);
	assert_int_equal(c->sf[0].tcp.sampled_ns, 200);
	assert_int_equal(c->sf[0].tcp.base_acked, 1600);
	/* Another netns's dump changes nothing here. */
	assert_int_equal(mptcp_subflow_info_take(st, NS + 1, d3, on_sample, NULL), 0);
	mptcp_state_free(st);
	mptcp_state_free(d1);
	mptcp_state_free(d2);
	mptcp_state_free(d3);
}

/* The history row: absent fields are NULL (-1), ssthresh before the first
 * loss too. */
static void test_row_fill(void **state)
{
	struct mptcp_subflow sf;
	struct mptcp_subflow_row r;
	size_t len;
	const void *ti = diag_info(load("diag-client-tcp-ipv4-00.bin"), 37886, &len);

	(void)state;
	memset(&sf, 0, sizeof(sf));
	sf.t.family = AF_INET;
	inet_pton(AF_INET, "10.231.2.1", &sf.t.saddr);
	inet_pton(AF_INET, "10.231.1.2", &sf.t.daddr);
	sf.t.sport = 33873;
	sf.t.dport = 10080;
	sf.loc_id = 2;
	assert_int_equal(mptcp_tcp_info_decode(ti, len, &sf.tcp), 0);
	mptcp_subflow_row_fill(NS, 780287107, &sf, &r);
	assert_int_equal(r.netns, NS);
	assert_int_equal(r.token, 780287107);
	assert_int_equal(r.loc_id, 2);
	assert_string_equal(r.saddr, "10.231.2.1");
	assert_string_equal(r.daddr, "10.231.1.2");
	assert_int_equal(r.rtt_us, 64);
	assert_int_equal(r.snd_cwnd, 11);
	assert_int_equal(r.snd_ssthresh, -1);
	assert_int_equal(r.bytes_acked, 6);
	assert_int_equal(r.bytes_sent, 5);
	assert_int_equal(mptcp_tcp_info_decode(ti, 104, &sf.tcp), 0);
	mptcp_subflow_row_fill(NS, 780287107, &sf, &r);
	assert_int_equal(r.rtt_us, 64);
	assert_int_equal(r.bytes_acked, -1);
	assert_int_equal(r.min_rtt_us, -1);
	assert_int_equal(r.delivery_rate, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tcp_info_recorded), cmocka_unit_test(test_tcp_info_by_length),
	    cmocka_unit_test(test_mptcp_info),	      cmocka_unit_test(test_dump_carries_figures),
	    cmocka_unit_test(test_take_counts),	      cmocka_unit_test(test_row_fill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
