// SPDX-License-Identifier: MIT
/*
 * mptcp_subflow_msg: a subflow's TCP state and a connection's MPTCP counters
 * as API messages (MptcpSubflowTcp, MptcpConnectionInfo in GET
 * /api/v1/mptcp/connections), from the live state's copy (mptcp_state_msg.c
 * builds the rest). A field the kernel did not give stays absent.
 */
#include <string.h>

#include "api/proto/pbmsg.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/mptcp/mptcp_subflow_msg.h"

/* Sets scalar field name of m to v and marks it present (a proto3
 * optional: a one-member oneof for protoc-c 1.4, a has_ flag later). */
static void mptcp_msg_opt(ProtobufCMessage *m, const char *name, uint64_t v)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
	char *p;

	if (!f)
		return;
	p = (char *)m + f->offset;
	switch (f->type) {
	case PROTOBUF_C_TYPE_UINT64:
		*(uint64_t *)p = v;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = v != 0;
		break;
	default:
		*(uint32_t *)p = (uint32_t)v;
		break;
	}
	if (!f->quantifier_offset)
		return;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
	else
		*(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
}

Sysobs__V1__MptcpSubflowTcp *mptcp_subflow_tcp_msg(struct arena *ar,
						   const struct mptcp_tcp_stats *t)
{
	Sysobs__V1__MptcpSubflowTcp *m;
	ProtobufCMessage *b;

	if (!t->have)
		return NULL;
	m = PBMSG_NEW(ar, Sysobs__V1__MptcpSubflowTcp, sysobs__v1__mptcp_subflow_tcp__descriptor);
	if (!m)
		return NULL;
	b = &m->base;
	m->sampled = pbmsg_time(ar, t->sampled_ns);
	m->state = t->state;
	m->ca_state = t->ca_state;
	m->rtt_us = t->rtt_us;
	m->rttvar_us = t->rttvar_us;
	m->snd_cwnd = t->snd_cwnd;
	m->rto_us = t->rto_us;
	m->snd_mss = t->snd_mss;
	m->unacked = t->unacked;
	m->lost = t->lost;
	m->retrans = t->retrans;
	m->total_retrans = t->total_retrans;
	/* TCP_INFINITE_SSTHRESH until the first loss: none yet (ss alike). */
	if (t->snd_ssthresh < 0x7fffffff)
		mptcp_msg_opt(b, "snd_ssthresh", t->snd_ssthresh);
	if (t->have & MPTCP_TCPI_MIN_RTT)
		mptcp_msg_opt(b, "min_rtt_us", t->min_rtt_us);
	if (t->have & MPTCP_TCPI_BYTES_SENT) {
		mptcp_msg_opt(b, "bytes_sent", t->bytes_sent);
		mptcp_msg_opt(b, "bytes_retrans", t->bytes_retrans);
	}
	if (t->have & MPTCP_TCPI_BYTES) {
		mptcp_msg_opt(b, "bytes_acked", t->bytes_acked);
		mptcp_msg_opt(b, "bytes_received", t->bytes_received);
	}
	if (t->have & MPTCP_TCPI_DELIVERY)
		mptcp_msg_opt(b, "delivery_rate", t->delivery_rate);
	/* ~0: no pacing rate (sk_pacing_rate unset) */
	if ((t->have & MPTCP_TCPI_PACING) && t->pacing_rate != UINT64_MAX)
		mptcp_msg_opt(b, "pacing_rate", t->pacing_rate);
	if (t->have & MPTCP_TCPI_LIMITED) {
		mptcp_msg_opt(b, "busy_us", t->busy_us);
		mptcp_msg_opt(b, "rwnd_limited_us", t->rwnd_limited_us);
		mptcp_msg_opt(b, "sndbuf_limited_us", t->sndbuf_limited_us);
	}
	if (t->have & MPTCP_TCPI_SEGS) {
		mptcp_msg_opt(b, "segs_out", t->segs_out);
		mptcp_msg_opt(b, "segs_in", t->segs_in);
	}
	if (t->have & MPTCP_TCPI_DELIVERED)
		mptcp_msg_opt(b, "delivered", t->delivered);
	return m;
}

Sysobs__V1__MptcpConnectionInfo *mptcp_conn_info_msg(struct arena *ar,
						     const struct mptcp_conn_stats *i)
{
	Sysobs__V1__MptcpConnectionInfo *m;
	ProtobufCMessage *b;

	if (!i->have)
		return NULL;
	m = PBMSG_NEW(ar, Sysobs__V1__MptcpConnectionInfo,
		      sysobs__v1__mptcp_connection_info__descriptor);
	if (!m)
		return NULL;
	b = &m->base;
	m->sampled = pbmsg_time(ar, i->sampled_ns);
	m->subflows = i->subflows;
	m->add_addr_signal = i->add_addr_signal;
	m->add_addr_accepted = i->add_addr_accepted;
	m->subflows_max = i->subflows_max;
	m->add_addr_signal_max = i->add_addr_signal_max;
	m->add_addr_accepted_max = i->add_addr_accepted_max;
	m->flags = i->flags;
	m->write_seq = i->write_seq;
	m->snd_una = i->snd_una;
	m->rcv_nxt = i->rcv_nxt;
	if (i->have & MPTCP_MPI_LOCAL) {
		mptcp_msg_opt(b, "local_addr_used", i->local_addr_used);
		mptcp_msg_opt(b, "local_addr_max", i->local_addr_max);
	}
	if (i->have & MPTCP_MPI_CSUM)
		mptcp_msg_opt(b, "csum_enabled", i->csum_enabled);
	if (i->have & MPTCP_MPI_BYTES) {
		mptcp_msg_opt(b, "retransmits", i->retransmits);
		mptcp_msg_opt(b, "bytes_retrans", i->bytes_retrans);
		mptcp_msg_opt(b, "bytes_sent", i->bytes_sent);
		mptcp_msg_opt(b, "bytes_received", i->bytes_received);
		mptcp_msg_opt(b, "bytes_acked", i->bytes_acked);
	}
	if (i->have & MPTCP_MPI_TOTAL)
		mptcp_msg_opt(b, "subflows_total", i->subflows_total);
	if (i->have & MPTCP_MPI_LAST) {
		mptcp_msg_opt(b, "last_data_sent_ms", i->last_data_sent_ms);
		mptcp_msg_opt(b, "last_data_recv_ms", i->last_data_recv_ms);
		mptcp_msg_opt(b, "last_ack_recv_ms", i->last_ack_recv_ms);
	}
	return m;
}
