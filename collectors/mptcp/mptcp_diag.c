/* SPDX-License-Identifier: MIT */
/* sock_diag resync of the mptcp collector; see mptcp_diag.h. */
#include "collectors/mptcp/mptcp_diag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/mptcp.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "collectors/mptcp/mptcp_state.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

/* TCP states (include/net/tcp_states.h), as masks for idiag_states. */
enum {
	MPTCP_TCP_ESTABLISHED = 1,
	MPTCP_TCP_SYN_SENT = 2,
	MPTCP_TCP_SYN_RECV = 3,
	MPTCP_TCP_FIN_WAIT1 = 4,
	MPTCP_TCP_FIN_WAIT2 = 5,
	MPTCP_TCP_CLOSE = 7,
	MPTCP_TCP_CLOSE_WAIT = 8,
	MPTCP_TCP_LAST_ACK = 9,
	MPTCP_TCP_LISTEN = 10,
	MPTCP_TCP_CLOSING = 11,
};

/* The states a connection reaches after its side sent a DATA_FIN (shutdown
 * or close): FIN_WAIT*, CLOSING, LAST_ACK, and CLOSE once both sides did. */
#define MPTCP_DIAG_FIN_STATES                                                                      \
	((1u << MPTCP_TCP_FIN_WAIT1) | (1u << MPTCP_TCP_FIN_WAIT2) | (1u << MPTCP_TCP_CLOSING) |   \
	 (1u << MPTCP_TCP_LAST_ACK) | (1u << MPTCP_TCP_CLOSE))

/*
 * A connection is live from CREATED until its user closes it: the kernel
 * sends CLOSED from __mptcp_close() (net/mptcp/protocol.c), whatever the
 * state, as long as the connection has its token, i.e. is in the token hash
 * that mptcp_diag walks. A half-closed connection (shutdown(SHUT_WR):
 * FIN_WAIT*, or LAST_ACK after the peer's DATA_FIN), and one both sides
 * shut down (CLOSE, seen on 6.18), whose user still holds the socket is
 * live; after close() the socket is orphaned and the kernel reports inode 0
 * for it (sock_i_ino()), so those states count only with an inode. A
 * connection not yet accepted has no inode either, but it is in SYN_RECV/
 * ESTABLISHED/CLOSE_WAIT, where no inode is needed.
 */
#define MPTCP_DIAG_MSK_STATES                                                                      \
	((1u << MPTCP_TCP_ESTABLISHED) | (1u << MPTCP_TCP_SYN_SENT) | (1u << MPTCP_TCP_SYN_RECV) | \
	 (1u << MPTCP_TCP_CLOSE_WAIT) | (1u << MPTCP_TCP_LISTEN) | MPTCP_DIAG_FIN_STATES)
/* Subflows stay ESTABLISHED while their connection is half-closed (the
 * DATA_FIN is MPTCP-level; checked on 6.18). */
#define MPTCP_DIAG_SF_STATES ((1u << MPTCP_TCP_ESTABLISHED) | (1u << MPTCP_TCP_CLOSE_WAIT))

/* The socket's addresses, in the live state's canonical form
 * (mptcp_tuple_canon: v4-mapped IPv6 becomes IPv4, as in the state). */
static void mptcp_diag_tuple(const struct inet_diag_msg *m, struct mptcp_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = m->idiag_family;
	t->sport = ntohs(m->id.idiag_sport);
	t->dport = ntohs(m->id.idiag_dport);
	if (m->idiag_family == AF_INET) {
		memcpy(&t->saddr, m->id.idiag_src, 4);
		memcpy(&t->daddr, m->id.idiag_dst, 4);
	} else {
		memcpy(&t->saddr, m->id.idiag_src, 16);
		memcpy(&t->daddr, m->id.idiag_dst, 16);
	}
	mptcp_tuple_canon(t);
}

/* MPTCP subflow info inside INET_DIAG_ULP_INFO. 0 if found. */
static int mptcp_diag_ulp_parse(const struct nlattr *ulp, uint32_t *token, uint8_t *loc_id,
				uint8_t *rem_id, uint32_t *flags)
{
	const struct nlattr *a, *b;
	int is_mptcp = 0, found = 0;

	mnl_attr_for_each_nested(a, ulp)
	{
		switch (mnl_attr_get_type(a)) {
		case INET_ULP_INFO_NAME:
			if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0 &&
			    !strcmp(mnl_attr_get_str(a), "mptcp"))
				is_mptcp = 1;
			break;
		case INET_ULP_INFO_MPTCP:
			mnl_attr_for_each_nested(b, a)
			{
				switch (mnl_attr_get_type(b)) {
				case MPTCP_SUBFLOW_ATTR_TOKEN_LOC:
					if (mnl_attr_validate(b, MNL_TYPE_U32) == 0) {
						*token = mnl_attr_get_u32(b);
						found = 1;
					}
					break;
				case MPTCP_SUBFLOW_ATTR_ID_LOC:
					if (mnl_attr_validate(b, MNL_TYPE_U8) == 0)
						*loc_id = mnl_attr_get_u8(b);
					break;
				case MPTCP_SUBFLOW_ATTR_ID_REM:
					if (mnl_attr_validate(b, MNL_TYPE_U8) == 0)
						*rem_id = mnl_attr_get_u8(b);
					break;
				case MPTCP_SUBFLOW_ATTR_FLAGS:
					if (mnl_attr_validate(b, MNL_TYPE_U32) == 0)
						*flags = mnl_attr_get_u32(b);
					break;
				}
			}
			break;
		}
	}
	return is_mptcp && found ? 0 : -ENOENT;
}

/* An MPTCP socket of the dump: a listener, or a connection with its
 * MPTCP-level counters (by the length sent: issue 36). */
static int diag_apply_msk(const struct inet_diag_msg *m, const struct mptcp_tuple *t,
			  const struct nlattr *info, uint64_t netns, struct mptcp_state *fresh,
			  int64_t now_ns)
{
	struct mptcp_info mi = {0};
	struct mptcp_conn *c;

	if (m->idiag_state == MPTCP_TCP_LISTEN)
		return mptcp_state_listener_put(fresh, netns, t, now_ns) ?: 1;
	if (!info)
		return 0;
	/* Older kernels send a shorter struct: take what is there. */
	memcpy(&mi, mnl_attr_get_payload(info),
	       mnl_attr_get_payload_len(info) < sizeof(mi) ? mnl_attr_get_payload_len(info)
							   : sizeof(mi));
	if (!mi.mptcpi_token)
		return 0;
	if (m->idiag_state < 32 && ((1u << m->idiag_state) & MPTCP_DIAG_FIN_STATES) &&
	    !m->idiag_inode)
		return 0; /* closed by its user: CLOSED was sent */
	c = mptcp_state_conn_get(fresh, netns, mi.mptcpi_token, 1);
	if (!c)
		return -ENOMEM;
	c->t = *t;
	c->fallback = !!(mi.mptcpi_flags & MPTCP_INFO_FLAG_FALLBACK);
	c->established =
	    m->idiag_state != MPTCP_TCP_SYN_SENT && m->idiag_state != MPTCP_TCP_SYN_RECV;
	c->resynced = 1;
	c->created_ns = now_ns;
	if (mptcp_conn_info_decode(mnl_attr_get_payload(info), mnl_attr_get_payload_len(info),
				   &c->info) == 0)
		c->info.sampled_ns = now_ns;
	return 1;
}

/* A TCP socket with the MPTCP ULP: a subflow, with its tcp_info (by the
 * length sent: mptcp_subflow_info.h). */
static int diag_apply_subflow(const struct inet_diag_msg *m, const struct mptcp_tuple *t,
			      const struct nlattr *info, const struct nlattr *ulp, uint64_t netns,
			      struct mptcp_state *fresh, int64_t now_ns)
{
	struct mptcp_subflow sf;
	struct mptcp_conn *c;
	uint32_t token = 0, flags = 0;
	uint8_t loc_id = 0, rem_id = 0;

	if (mptcp_diag_ulp_parse(ulp, &token, &loc_id, &rem_id, &flags) || !token)
		return 0;
	/* The connection may be listed later in the dump, or in the other
	 * family's dump: create it; resync drops subflows of unknown ones. */
	c = mptcp_state_conn_get(fresh, netns, token, 1);
	if (!c)
		return -ENOMEM;
	memset(&sf, 0, sizeof(sf));
	sf.t = *t;
	sf.loc_id = loc_id;
	sf.rem_id = rem_id;
	/* Events carry the subflow's `backup` (net/mptcp/pm_netlink.c),
	 * which is the peer's bit: BKUP_REM in the dump (net/mptcp/diag.c:
	 * sf->backup -> BKUP_REM, sf->request_bkup -> BKUP_LOC). */
	sf.backup = !!(flags & MPTCP_SUBFLOW_FLAG_BKUP_REM);
	/* The initial subflow knows the side (`ss` flags M/m): the
	 * peer's MP_CAPABLE seen (MCAP_REM) on both ends, our own
	 * request for it (MCAP_LOC: subflow->request_mptcp) only on
	 * the end that connected. Joins say nothing of the connection:
	 * either end may open one. */
	if (flags & MPTCP_SUBFLOW_FLAG_MCAP_REM)
		c->server_side = (flags & MPTCP_SUBFLOW_FLAG_MCAP_LOC) ? 0 : 1;
	sf.if_idx = (int32_t)m->id.idiag_if;
	sf.since_ns = now_ns;
	if (info && mptcp_tcp_info_decode(mnl_attr_get_payload(info),
					  mnl_attr_get_payload_len(info), &sf.tcp) == 0)
		sf.tcp.sampled_ns = now_ns;
	return mptcp_state_subflow_put(fresh, c, &sf) ?: 1;
}

int mptcp_diag_msg_apply(const struct nlmsghdr *nlh, size_t len, int proto, uint64_t netns,
			 struct mptcp_state *fresh, int64_t now_ns)
{
	const struct inet_diag_msg *m;
	const struct nlattr *attr, *info = NULL, *ulp = NULL;
	const void *payload;
	size_t plen;
	struct mptcp_tuple t;

	if (len < NLMSG_HDRLEN + sizeof(*m) || nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*m) ||
	    nlh->nlmsg_len > len)
		return -EINVAL;
	m = (const struct inet_diag_msg *)((const char *)nlh + NLMSG_HDRLEN);
	if (m->idiag_family != AF_INET && m->idiag_family != AF_INET6)
		return -EINVAL;
	payload = (const char *)m + NLMSG_ALIGN(sizeof(*m));
	plen = nlh->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(sizeof(*m));
	mnl_attr_for_each_payload(payload, plen)
	{
		if (mnl_attr_get_type(attr) == INET_DIAG_INFO)
			info = attr;
		else if (mnl_attr_get_type(attr) == INET_DIAG_ULP_INFO)
			ulp = attr;
	}
	mptcp_diag_tuple(m, &t);
	if (proto == IPPROTO_MPTCP)
		return diag_apply_msk(m, &t, info, netns, fresh, now_ns);
	if (proto == IPPROTO_TCP && ulp)
		return diag_apply_subflow(m, &t, info, ulp, netns, fresh, now_ns);
	return 0;
}

int mptcp_diag_open(void)
{
	struct timeval tv = {.tv_sec = 1};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* One dump request/answer; applies every message. */
static int mptcp_diag_dump_one(int fd, int family, int proto, uint32_t states, uint64_t netns,
			       struct mptcp_state *fresh, int64_t now_ns)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *req;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	static uint32_t seq;
	int added = 0;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = family;
	/* sdiag_protocol is a u8: IPPROTO_MPTCP (262) goes in the
	 * INET_DIAG_REQ_PROTOCOL attribute (Linux 5.9+), which wins. */
	req->sdiag_protocol = proto & 0xff;
	/* MPTCP: struct mptcp_info. TCP: the kernel sends INET_DIAG_ULP_INFO
	 * only along with INET_DIAG_INFO (checked on 6.18), so tcp_info comes
	 * too. */
	req->idiag_ext = 1 << (INET_DIAG_INFO - 1);
	req->idiag_states = states;
	if (proto > 0xff)
		mnl_attr_put_u32(nlh, INET_DIAG_REQ_PROTOCOL, proto);
	if (sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int r;

		if (n < 0)
			return errno == EINTR ? -EINTR : -errno;
		if (n == 0)
			return -EIO;
		r = mptcp_diag_reply(buf, (size_t)n, seq, proto, netns, fresh, now_ns, &added);
		if (r)
			return r < 0 ? r : added;
	}
}

int mptcp_diag_reply(const void *buf, size_t len, uint32_t seq, int proto, uint64_t netns,
		     struct mptcp_state *fresh, int64_t now_ns, int *added)
{
	const struct nlmsghdr *h;
	size_t left;

	mptcp_nlmsg_for_each(h, buf, len, left)
	{
		int r;

		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

			if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
				return -EIO;
			return e->error ? (e->error < 0 ? e->error : -EIO) : 1;
		}
		r = mptcp_diag_msg_apply(h, h->nlmsg_len, proto, netns, fresh, now_ns);
		if (r == -ENOMEM)
			return r;
		if (r > 0)
			(*added)++;
	}
	return 0;
}

int mptcp_diag_dump(int fd, uint64_t netns, struct mptcp_state *fresh, int64_t now_ns)
{
	static const int families[] = {AF_INET, AF_INET6};
	int total = 0, r;

	/* Connections and listeners first, then their subflows. */
	for (size_t i = 0; i < 2; i++) {
		r = mptcp_diag_dump_one(fd, families[i], IPPROTO_MPTCP, MPTCP_DIAG_MSK_STATES,
					netns, fresh, now_ns);
		if (r < 0)
			return r;
		total += r;
	}
	for (size_t i = 0; i < 2; i++) {
		r = mptcp_diag_dump_one(fd, families[i], IPPROTO_TCP, MPTCP_DIAG_SF_STATES, netns,
					fresh, now_ns);
		if (r < 0)
			return r;
		total += r;
	}
	mptcp_diag_dump_end(fresh);
	return total;
}

void mptcp_diag_dump_end(struct mptcp_state *fresh)
{
	struct hash_node *node, *tmp;
	size_t b;

	/* Subflows whose connection was not in the MPTCP dump (closed by the
	 * user in between, or orphaned): drop those connections. */
	hash_for_each_safe(&fresh->conns, b, node, tmp) {
		struct mptcp_conn *c = hash_entry(node, struct mptcp_conn, node);

		if (!c->resynced)
			mptcp_state_conn_drop(fresh, c);
	}
}
