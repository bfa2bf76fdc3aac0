// SPDX-License-Identifier: MIT
/*
 * mptcp_subflow_info: subflow TCP state and connection MPTCP counters from
 * the socket dump, into the live state and the mptcp_subflow_samples table;
 * see mptcp_subflow_info.h. No I/O here.
 */
#include "collectors/mptcp/mptcp_subflow_info.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h>
#include <stdio.h>
#include <string.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_state.h"

/* ---- decoders -------------------------------------------------------- */

/* A field of struct T at the kernel's offset is in a buffer of len bytes. */
#define INFO_HAS(T, f, len) (offsetof(T, f) + sizeof(((T *)0)->f) <= (len))

/*
 * struct tcp_info grows at its end (include/uapi/linux/tcp.h); the kernel
 * copies as much as it has (tcp_diag_get_info(): sizeof its own struct).
 * Read into a zeroed struct of this build's size: what the kernel did not
 * send stays 0 and is marked absent in have; what a newer kernel sends past
 * this build's struct is ignored.
 */
int mptcp_tcp_info_decode(const void *buf, size_t len, struct mptcp_tcp_stats *out)
{
	struct tcp_info ti;

	memset(out, 0, sizeof(*out));
	if (!buf || !INFO_HAS(struct tcp_info, tcpi_total_retrans, len))
		return -EINVAL;
	memset(&ti, 0, sizeof(ti));
	memcpy(&ti, buf, len < sizeof(ti) ? len : sizeof(ti));
	out->have = MPTCP_TCPI_BASE;
	out->state = ti.tcpi_state;
	out->ca_state = ti.tcpi_ca_state;
	out->rto_us = ti.tcpi_rto;
	out->snd_mss = ti.tcpi_snd_mss;
	out->unacked = ti.tcpi_unacked;
	out->lost = ti.tcpi_lost;
	out->retrans = ti.tcpi_retrans;
	out->total_retrans = ti.tcpi_total_retrans;
	out->rtt_us = ti.tcpi_rtt;
	out->rttvar_us = ti.tcpi_rttvar;
	out->snd_ssthresh = ti.tcpi_snd_ssthresh;
	out->snd_cwnd = ti.tcpi_snd_cwnd;
	if (INFO_HAS(struct tcp_info, tcpi_pacing_rate, len)) {
		out->have |= MPTCP_TCPI_PACING;
		out->pacing_rate = ti.tcpi_pacing_rate;
	}
	if (INFO_HAS(struct tcp_info, tcpi_bytes_received, len)) {
		out->have |= MPTCP_TCPI_BYTES;
		out->bytes_acked = ti.tcpi_bytes_acked;
		out->bytes_received = ti.tcpi_bytes_received;
	}
	if (INFO_HAS(struct tcp_info, tcpi_segs_in, len)) {
		out->have |= MPTCP_TCPI_SEGS;
		out->segs_out = ti.tcpi_segs_out;
		out->segs_in = ti.tcpi_segs_in;
	}
	if (INFO_HAS(struct tcp_info, tcpi_min_rtt, len)) {
		out->have |= MPTCP_TCPI_MIN_RTT;
		out->min_rtt_us = ti.tcpi_min_rtt;
	}
	if (INFO_HAS(struct tcp_info, tcpi_delivery_rate, len)) {
		out->have |= MPTCP_TCPI_DELIVERY;
		out->delivery_rate = ti.tcpi_delivery_rate;
	}
	if (INFO_HAS(struct tcp_info, tcpi_sndbuf_limited, len)) {
		out->have |= MPTCP_TCPI_LIMITED;
		out->busy_us = ti.tcpi_busy_time;
		out->rwnd_limited_us = ti.tcpi_rwnd_limited;
		out->sndbuf_limited_us = ti.tcpi_sndbuf_limited;
	}
	if (INFO_HAS(struct tcp_info, tcpi_delivered, len)) {
		out->have |= MPTCP_TCPI_DELIVERED;
		out->delivered = ti.tcpi_delivered;
	}
	if (INFO_HAS(struct tcp_info, tcpi_bytes_retrans, len)) {
		out->have |= MPTCP_TCPI_BYTES_SENT;
		out->bytes_sent = ti.tcpi_bytes_sent;
		out->bytes_retrans = ti.tcpi_bytes_retrans;
	}
	return 0;
}

/*
 * struct mptcp_info as the kernel lays it out (include/uapi/linux/mptcp.h);
 * Debian 12's header stops at mptcpi_csum_enabled (5.14), so the later
 * fields are spelled here, at the kernel's offsets: retransmits and bytes_*
 * came in 6.5, subflows_total in 6.8, last_* in 6.10 (the 3 bytes before
 * them were reserved; later kernels took some for endpoint limits, unread
 * here).
 */
struct mptcp_info_layout {
	uint8_t subflows, add_addr_signal, add_addr_accepted;
	uint8_t subflows_max, add_addr_signal_max, add_addr_accepted_max;
	uint32_t flags;
	uint32_t token;
	uint64_t write_seq, snd_una, rcv_nxt;
	uint8_t local_addr_used, local_addr_max, csum_enabled;
	uint32_t retransmits;
	uint64_t bytes_retrans, bytes_sent, bytes_received, bytes_acked;
	uint8_t subflows_total;
	uint8_t reserved[3];
	uint32_t last_data_sent, last_data_recv, last_ack_recv;
};
_Static_assert(offsetof(struct mptcp_info_layout, retransmits) == 44, "mptcp_info layout");
_Static_assert(offsetof(struct mptcp_info_layout, last_ack_recv) == 92, "mptcp_info layout");

int mptcp_conn_info_decode(const void *buf, size_t len, struct mptcp_conn_stats *out)
{
	struct mptcp_info_layout mi;

	memset(out, 0, sizeof(*out));
	if (!buf || !INFO_HAS(struct mptcp_info_layout, token, len))
		return -EINVAL;
	memset(&mi, 0, sizeof(mi));
	memcpy(&mi, buf, len < sizeof(mi) ? len : sizeof(mi));
	out->subflows = mi.subflows;
	out->add_addr_signal = mi.add_addr_signal;
	out->add_addr_accepted = mi.add_addr_accepted;
	out->subflows_max = mi.subflows_max;
	out->add_addr_signal_max = mi.add_addr_signal_max;
	out->add_addr_accepted_max = mi.add_addr_accepted_max;
	out->flags = mi.flags;
	out->token = mi.token;
	if (INFO_HAS(struct mptcp_info_layout, rcv_nxt, len)) {
		out->have |= MPTCP_MPI_BASE;
		out->write_seq = mi.write_seq;
		out->snd_una = mi.snd_una;
		out->rcv_nxt = mi.rcv_nxt;
	}
	if (INFO_HAS(struct mptcp_info_layout, local_addr_max, len)) {
		out->have |= MPTCP_MPI_LOCAL;
		out->local_addr_used = mi.local_addr_used;
		out->local_addr_max = mi.local_addr_max;
	}
	if (INFO_HAS(struct mptcp_info_layout, csum_enabled, len)) {
		out->have |= MPTCP_MPI_CSUM;
		out->csum_enabled = mi.csum_enabled;
	}
	if (INFO_HAS(struct mptcp_info_layout, bytes_acked, len)) {
		out->have |= MPTCP_MPI_BYTES;
		out->retransmits = mi.retransmits;
		out->bytes_retrans = mi.bytes_retrans;
		out->bytes_sent = mi.bytes_sent;
		out->bytes_received = mi.bytes_received;
		out->bytes_acked = mi.bytes_acked;
	}
	if (INFO_HAS(struct mptcp_info_layout, subflows_total, len)) {
		out->have |= MPTCP_MPI_TOTAL;
		out->subflows_total = mi.subflows_total;
	}
	if (INFO_HAS(struct mptcp_info_layout, last_ack_recv, len)) {
		out->have |= MPTCP_MPI_LAST;
		out->last_data_sent_ms = mi.last_data_sent;
		out->last_data_recv_ms = mi.last_data_recv;
		out->last_ack_recv_ms = mi.last_ack_recv;
	}
	return 0;
}

/* ---- into the live state -------------------------------------------- */

static int mptcp_tuple_same(const struct mptcp_tuple *a, const struct mptcp_tuple *b)
{
	return a->sport == b->sport && a->dport == b->dport &&
	       !memcmp(&a->saddr, &b->saddr, sizeof(a->saddr)) &&
	       !memcmp(&a->daddr, &b->daddr, sizeof(a->daddr));
}

/* A counter's growth; a smaller value (the kernel reused the socket's
 * figures? never seen) counts as a restart from 0. */
static uint64_t mptcp_grow(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : now;
}

int mptcp_subflow_info_take(struct mptcp_state *st, uint64_t netns, const struct mptcp_state *fresh,
			    mptcp_subflow_sample_fn fn, void *arg)
{
	struct hash_node *node, *tmp;
	int updated = 0;
	size_t b;

	pthread_mutex_lock(&st->lock);
	hash_for_each_safe(&st->conns, b, node, tmp) {
		struct mptcp_conn *c = hash_entry(node, struct mptcp_conn, node);
		const struct mptcp_conn *f;

		if (c->netns != netns)
			continue;
		/* Lookup only: the dump is not changed. */
		f = mptcp_state_conn_get((struct mptcp_state *)fresh, netns, c->token, 0);
		if (!f)
			continue;
		if (f->info.have && f->info.sampled_ns >= c->info.sampled_ns)
			c->info = f->info;
		for (uint32_t i = 0; i < c->n_sf; i++) {
			struct mptcp_subflow *sf = &c->sf[i];
			const struct mptcp_subflow *fs = NULL;
			struct mptcp_tcp_stats base;
			struct mptcp_subflow_delta d;

			for (uint32_t k = 0; k < f->n_sf && !fs; k++)
				if (f->sf[k].tcp.have && mptcp_tuple_same(&f->sf[k].t, &sf->t))
					fs = &f->sf[k];
			if (!fs)
				continue;
			base = sf->tcp;
			/* A dump on demand taken after this one may already be
			 * in: keep its newer figures, count from this one. */
			if (base.sampled_ns <= fs->tcp.sampled_ns)
				sf->tcp = fs->tcp;
			updated++;
			if (!fn) { /* on demand: the counting stays where it was */
				sf->tcp.base_acked = base.base_acked;
				sf->tcp.base_received = base.base_received;
				sf->tcp.base_retrans = base.base_retrans;
				sf->tcp.based = base.based;
				continue;
			}
			memset(&d, 0, sizeof(d));
			d.netns = netns;
			d.token = c->token;
			d.sf = sf;
			if (base.based) {
				d.acked = mptcp_grow(fs->tcp.bytes_acked, base.base_acked);
				d.received = mptcp_grow(fs->tcp.bytes_received, base.base_received);
				d.retrans = mptcp_grow(fs->tcp.total_retrans, base.base_retrans);
			} else if (sf->since_known) {
				d.acked = fs->tcp.bytes_acked;
				d.received = fs->tcp.bytes_received;
				d.retrans = fs->tcp.total_retrans;
			}
			sf->tcp.base_acked = fs->tcp.bytes_acked;
			sf->tcp.base_received = fs->tcp.bytes_received;
			sf->tcp.base_retrans = fs->tcp.total_retrans;
			sf->tcp.based = 1;
			fn(&d, arg);
		}
	}
	pthread_mutex_unlock(&st->lock);
	return updated;
}

/* ---- history table ------------------------------------------------------ */

void mptcp_subflow_row_fill(uint64_t netns, uint32_t token, const struct mptcp_subflow *sf,
			    struct mptcp_subflow_row *r)
{
	const struct mptcp_tcp_stats *t = &sf->tcp;
	int af = sf->t.family == AF_INET6 ? AF_INET6 : AF_INET;

	memset(r, 0, sizeof(*r));
	r->netns = (uint32_t)netns;
	r->token = token;
	r->loc_id = sf->loc_id;
	r->rem_id = sf->rem_id;
	r->sport = sf->t.sport;
	r->dport = sf->t.dport;
	r->backup = sf->backup;
	if (sf->t.family) {
		inet_ntop(af, &sf->t.saddr, r->saddr, sizeof(r->saddr));
		inet_ntop(af, &sf->t.daddr, r->daddr, sizeof(r->daddr));
	}
#define HAVE(bit, v) ((t->have & (bit)) ? (int64_t)(v) : -1)
	r->rtt_us = HAVE(MPTCP_TCPI_BASE, t->rtt_us);
	r->rttvar_us = HAVE(MPTCP_TCPI_BASE, t->rttvar_us);
	r->min_rtt_us = HAVE(MPTCP_TCPI_MIN_RTT, t->min_rtt_us);
	r->snd_cwnd = HAVE(MPTCP_TCPI_BASE, t->snd_cwnd);
	/* TCP_INFINITE_SSTHRESH (0x7fffffff) until the first loss: no
	 * threshold yet, NULL as ss leaves it out. */
	r->snd_ssthresh =
	    t->snd_ssthresh >= 0x7fffffff ? -1 : HAVE(MPTCP_TCPI_BASE, t->snd_ssthresh);
	r->retrans = HAVE(MPTCP_TCPI_BASE, t->retrans);
	r->total_retrans = HAVE(MPTCP_TCPI_BASE, t->total_retrans);
	r->lost = HAVE(MPTCP_TCPI_BASE, t->lost);
	r->bytes_sent = HAVE(MPTCP_TCPI_BYTES_SENT, t->bytes_sent);
	r->bytes_acked = HAVE(MPTCP_TCPI_BYTES, t->bytes_acked);
	r->bytes_received = HAVE(MPTCP_TCPI_BYTES, t->bytes_received);
	r->bytes_retrans = HAVE(MPTCP_TCPI_BYTES_SENT, t->bytes_retrans);
	r->delivery_rate = HAVE(MPTCP_TCPI_DELIVERY, t->delivery_rate);
	r->pacing_rate = HAVE(MPTCP_TCPI_PACING, t->pacing_rate);
	r->busy_us = HAVE(MPTCP_TCPI_LIMITED, t->busy_us);
	r->rwnd_limited_us = HAVE(MPTCP_TCPI_LIMITED, t->rwnd_limited_us);
	r->sndbuf_limited_us = HAVE(MPTCP_TCPI_LIMITED, t->sndbuf_limited_us);
#undef HAVE
	/* ~0 pacing_rate: no pacing (sk_max_pacing_rate unset); a u64
	 * above INT64_MAX does not fit the column. */
	if (r->pacing_rate < -1)
		r->pacing_rate = -1;
}

#define SF_COL(f, t, n, ...) COL(struct mptcp_subflow_row, f, t, n, __VA_ARGS__)
#define SF_NUM(f)	     SF_COL(f, COL_INT, COL_NULL_NEG)
static const struct event_column mptcp_subflow_cols[] = {
    SF_COL(netns, COL_UINT, COL_NOT_NULL, .filter = COL_FILTER_EQ, .fmin = 1),
    SF_COL(token, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_TOKEN),
    SF_COL(loc_id, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .fmax = 255),
    SF_NUM(rem_id),
    SF_COL(saddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    SF_COL(daddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    SF_COL(sport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port", .fmax = 65535),
    SF_COL(dport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port", .fmax = 65535),
    SF_NUM(backup),
    SF_NUM(rtt_us),
    SF_NUM(rttvar_us),
    SF_NUM(min_rtt_us),
    SF_NUM(snd_cwnd),
    SF_NUM(snd_ssthresh),
    SF_NUM(retrans),
    SF_NUM(total_retrans),
    SF_NUM(lost),
    SF_NUM(bytes_sent),
    SF_NUM(bytes_acked),
    SF_NUM(bytes_received),
    SF_NUM(bytes_retrans),
    SF_NUM(delivery_rate),
    SF_NUM(pacing_rate),
    SF_NUM(busy_us),
    SF_NUM(rwnd_limited_us),
    SF_NUM(sndbuf_limited_us),
    COL_POD(struct mptcp_subflow_row),
    {0},
};

static const char *const mptcp_subflow_show[] = {
    "time",   "token",	  "netns",	 "loc_id",	  "saddr", "daddr",
    "rtt_us", "snd_cwnd", "bytes_acked", "total_retrans", NULL,
};

/* One subflow's (token, loc_id, ts) series is what a reader asks for:
 * "what did path 2 of this connection do at 14:00". */
static const char *const mptcp_subflow_token_cols[] = {"token", "loc_id", "ts", NULL};
static const struct table_index mptcp_subflow_indexes[] = {
    {.name = "token", .columns = mptcp_subflow_token_cols},
    {0},
};

const struct event_table mptcp_subflow_samples_table = {
    .name = "mptcp_subflow_samples",
    .collector = "mptcp",
    .route = "/api/v1/mptcp/subflows",
    .help = "periodic TCP state of the subflows of long-lived MPTCP connections (tcp_info)",
    .cols = mptcp_subflow_cols,
    .row_size = sizeof(struct mptcp_subflow_row),
    .indexes = mptcp_subflow_indexes,
    .message = &sysobs__v1__mptcp_subflow_sample__descriptor,
    .list_message = &sysobs__v1__mptcp_subflow_sample_list__descriptor,
    .show = mptcp_subflow_show,
    .severity = NULL,
};

_Static_assert(sizeof(struct mptcp_subflow_row) <= EVENT_ROW_MAX, "subflow row too large");
