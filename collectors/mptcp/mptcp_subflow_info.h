/* SPDX-License-Identifier: MIT */
/*
 * Subflow health of the mptcp collector (issue 36): the TCP state of every
 * subflow (struct tcp_info) and the MPTCP-level counters of every connection
 * (struct mptcp_info), both from INET_DIAG_INFO of the socket dump the
 * collector already takes at each reconciliation (mptcp_diag.c), or on
 * demand (GET /api/v1/mptcp/connections?refresh=1).
 *
 * The decoders are pure and take the struct by the length the kernel sent:
 * a field is known only when the kernel's struct reaches past it, so older
 * kernels (a shorter tcp_info or mptcp_info) give fewer fields and newer
 * ones (a longer struct) are read up to what this build knows.
 *
 * The rest is pure too: copying a dump's figures into the live state, and
 * one history row (table mptcp_subflow_samples) per subflow.
 */
#ifndef SYSOBS_MPTCP_SUBFLOW_INFO_H
#define SYSOBS_MPTCP_SUBFLOW_INFO_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/sink.h"

struct mptcp_state;
struct mptcp_subflow;
struct mptcp_conn;

/* Which fields of struct mptcp_tcp_stats the kernel's tcp_info held (by the
 * kernel version that added them to the end of the struct). */
enum {
	MPTCP_TCPI_BASE = 1u << 0,	 /* rtt .. total_retrans (2.6) */
	MPTCP_TCPI_PACING = 1u << 1,	 /* pacing_rate (3.15) */
	MPTCP_TCPI_BYTES = 1u << 2,	 /* bytes_acked, bytes_received (4.1) */
	MPTCP_TCPI_SEGS = 1u << 3,	 /* segs_out, segs_in (4.2) */
	MPTCP_TCPI_MIN_RTT = 1u << 4,	 /* min_rtt (4.6) */
	MPTCP_TCPI_DELIVERY = 1u << 5,	 /* delivery_rate (4.9) */
	MPTCP_TCPI_LIMITED = 1u << 6,	 /* busy, rwnd_limited, sndbuf_limited (4.10) */
	MPTCP_TCPI_DELIVERED = 1u << 7,	 /* delivered (4.18) */
	MPTCP_TCPI_BYTES_SENT = 1u << 8, /* bytes_sent, bytes_retrans (4.19) */
};

/* A subflow's TCP state: times in microseconds, rates in bytes per second,
 * windows in segments, as tcp_info has them. */
struct mptcp_tcp_stats {
	uint32_t have; /* MPTCP_TCPI_*; 0: never sampled */
	uint8_t state, ca_state;
	uint32_t rto_us, snd_mss, unacked, lost, retrans, total_retrans;
	uint32_t rtt_us, rttvar_us, snd_ssthresh, snd_cwnd, min_rtt_us;
	uint32_t segs_out, segs_in, delivered;
	uint64_t pacing_rate, delivery_rate;
	uint64_t bytes_acked, bytes_received, bytes_sent, bytes_retrans;
	uint64_t busy_us, rwnd_limited_us, sndbuf_limited_us;
	int64_t sampled_ns; /* wall clock of the dump */
	/* The counters as the metrics last counted them (the reconciliation
	 * only: a sample on demand updates the figures, not the counting). */
	uint64_t base_acked, base_received;
	uint32_t base_retrans;
	uint8_t based; /* base_* hold a sample */
};

/* Which fields of struct mptcp_conn_stats the kernel's mptcp_info held. */
enum {
	MPTCP_MPI_BASE = 1u << 0,  /* subflows .. rcv_nxt (5.7) */
	MPTCP_MPI_LOCAL = 1u << 1, /* local_addr_used, local_addr_max (5.12) */
	MPTCP_MPI_CSUM = 1u << 2,  /* csum_enabled (5.14) */
	MPTCP_MPI_BYTES = 1u << 3, /* retransmits, bytes_* (6.5) */
	MPTCP_MPI_TOTAL = 1u << 4, /* subflows_total (6.8) */
	MPTCP_MPI_LAST = 1u << 5,  /* last_data_sent/recv, last_ack_recv (6.10) */
};

/* A connection's MPTCP-level counters (struct mptcp_info). */
struct mptcp_conn_stats {
	uint32_t have; /* MPTCP_MPI_*; 0: never sampled */
	uint8_t subflows, add_addr_signal, add_addr_accepted;
	uint8_t subflows_max, add_addr_signal_max, add_addr_accepted_max;
	uint8_t local_addr_used, local_addr_max, csum_enabled, subflows_total;
	uint32_t flags, token, retransmits;
	uint64_t write_seq, snd_una, rcv_nxt;
	uint64_t bytes_retrans, bytes_sent, bytes_received, bytes_acked;
	uint32_t last_data_sent_ms, last_data_recv_ms, last_ack_recv_ms;
	int64_t sampled_ns;
};

/* Pure: struct tcp_info of len bytes (INET_DIAG_INFO of a TCP socket) into
 * *out (zeroed first). 0, or -EINVAL when len is below the 2.6 struct
 * (the fields up to tcpi_total_retrans). */
int mptcp_tcp_info_decode(const void *buf, size_t len, struct mptcp_tcp_stats *out);

/* Pure: struct mptcp_info of len bytes (INET_DIAG_INFO of an MPTCP socket)
 * into *out. 0, or -EINVAL when len does not reach the token. */
int mptcp_conn_info_decode(const void *buf, size_t len, struct mptcp_conn_stats *out);

/* What mptcp_subflow_info_take() reports of one subflow it updated: the
 * growth of its counters since they were last counted. A subflow counted
 * for the first time counts from 0 if an event saw it start (after the
 * agent did), else from this sample (it predates the agent: its bytes so
 * far are no rate). */
struct mptcp_subflow_delta {
	uint64_t netns;
	uint32_t token;
	const struct mptcp_subflow *sf; /* its new state (valid during the call) */
	uint64_t acked, received, retrans;
};
typedef void (*mptcp_subflow_sample_fn)(const struct mptcp_subflow_delta *d, void *arg);

/*
 * Copies the figures of a socket dump of netns (fresh: subflows' tcp_info,
 * connections' mptcp_info) into the live state st, under its lock: to each
 * subflow of st found in fresh (same token, same 4-tuple), and to each
 * connection. With fn (the reconciliation, on the main thread), the
 * counters are counted: fn is called under the lock for every subflow that
 * got a sample, with their growth. Without (a sample on demand), only the
 * figures change. Returns the number of subflows updated.
 */
int mptcp_subflow_info_take(struct mptcp_state *st, uint64_t netns, const struct mptcp_state *fresh,
			    mptcp_subflow_sample_fn fn, void *arg);

/* One row of table mptcp_subflow_samples: a subflow's state at a sample.
 * Numbers of fields the kernel did not give are -1 (NULL). */
struct mptcp_subflow_row {
	int64_t token, loc_id, rem_id, sport, dport, backup;
	int64_t rtt_us, rttvar_us, min_rtt_us, snd_cwnd, snd_ssthresh;
	int64_t retrans, total_retrans, lost;
	int64_t bytes_sent, bytes_acked, bytes_received, bytes_retrans;
	int64_t delivery_rate, pacing_rate, busy_us, rwnd_limited_us, sndbuf_limited_us;
	uint32_t netns;
	char saddr[INET6_ADDRSTRLEN], daddr[INET6_ADDRSTRLEN];
	SINK_POD_ROW_FIELDS; /* as in struct mptcp_row */
};

/* Pure: the row of subflow sf of connection token in netns. */
void mptcp_subflow_row_fill(uint64_t netns, uint32_t token, const struct mptcp_subflow *sf,
			    struct mptcp_subflow_row *r);

extern const struct event_table mptcp_subflow_samples_table;

#endif
