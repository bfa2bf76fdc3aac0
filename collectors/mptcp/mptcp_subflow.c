// SPDX-License-Identifier: MIT
/*
 * mptcp_subflow: subflow health on the collector's side; see
 * mptcp_subflow.h. Nothing here runs on the event path: the figures come
 * from the socket dump the reconciliation takes anyway (INET_DIAG_INFO is
 * already requested for the subflows' ULP info), or from a dump on demand.
 */
#include "collectors/mptcp/mptcp_subflow.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_nl.h"
#include "collectors/mptcp/mptcp_pod.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

struct mptcp_subflow_ctx {
	int64_t history_ns;			  /* 0: no rows */
	int64_t next_history_ns[MPTCP_MAX_NETNS]; /* per watch */
	int fd[MPTCP_MAX_NETNS];		  /* on-demand sock_diag sockets */
	pthread_mutex_t refresh_lock;		  /* the fds, refresh_start_ns, seq */
	int64_t refresh_start_ns;		  /* when the last dump on demand began */
	uint32_t seq;
	/* the endpoint ids each watch has series of (main thread), declared
	 * gone when the watch lets its namespace go */
	uint8_t loc_seen[MPTCP_MAX_NETNS][32];
};

int mptcp_subflow_init(struct mptcp_priv *p, uint64_t history_ms)
{
	struct mptcp_subflow_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->history_ns = (int64_t)history_ms * 1000000;
	for (size_t i = 0; i < MPTCP_MAX_NETNS; i++)
		x->fd[i] = -1;
	pthread_mutex_init(&x->refresh_lock, NULL);
	p->sub = x;
	return 0;
}

void mptcp_subflow_free(struct mptcp_priv *p)
{
	struct mptcp_subflow_ctx *x = p ? p->sub : NULL;

	if (!x)
		return;
	for (size_t i = 0; i < MPTCP_MAX_NETNS; i++)
		if (x->fd[i] >= 0)
			close(x->fd[i]);
	pthread_mutex_destroy(&x->refresh_lock);
	free(x);
	p->sub = NULL;
}

void mptcp_subflow_open_here(struct mptcp_priv *p, struct mptcp_watch *w)
{
	size_t i = (size_t)(w - p->w);

	if (!p->sub || i >= MPTCP_MAX_NETNS)
		return;
	/* Without it only ?refresh=1 is lost; the reconciliation's figures
	 * stay. A namespace watched again (re-created) gets a new one. */
	pthread_mutex_lock(&p->sub->refresh_lock);
	if (p->sub->fd[i] >= 0)
		close(p->sub->fd[i]);
	p->sub->fd[i] = mptcp_diag_open();
	pthread_mutex_unlock(&p->sub->refresh_lock);
}

void mptcp_subflow_close(struct mptcp_priv *p, struct mptcp_watch *w)
{
	static const int fams[] = {MPTCP_M_SF_SRTT, MPTCP_M_SF_ACKED, MPTCP_M_SF_RECEIVED,
				   MPTCP_M_SF_RETRANS};
	size_t i = (size_t)(w - p->w);
	struct collector *c = p->c;

	if (!p->sub || i >= MPTCP_MAX_NETNS)
		return;
	/* The namespace's per-endpoint series leave /metrics after the stale
	 * grace, as its MIB series do (mptcp_watch_release). */
	for (unsigned id = 0; id < 256; id++) {
		char ids[4];
		const char *lv[2] = {w->ino_s, ids};

		if (!(p->sub->loc_seen[i][id / 8] & (1u << (id % 8))))
			continue;
		snprintf(ids, sizeof(ids), "%u", id);
		for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
			sink_series_gone(c->sink, collector_family(c, (size_t)fams[f]),
					 collector_series(c, (size_t)fams[f], lv));
	}
	memset(p->sub->loc_seen[i], 0, sizeof(p->sub->loc_seen[i]));
	pthread_mutex_lock(&p->sub->refresh_lock);
	if (p->sub->fd[i] >= 0)
		close(p->sub->fd[i]);
	p->sub->fd[i] = -1;
	pthread_mutex_unlock(&p->sub->refresh_lock);
}

/* ---- at each reconciliation (main thread) ------------------------------ */

struct mptcp_sample_ctx {
	struct mptcp_priv *p;
	struct mptcp_watch *w;
	int64_t now_ns;
	int history; /* rows this time */
};

static void loc_seen_mark(struct mptcp_priv *p, const struct mptcp_watch *w, unsigned id)
{
	size_t i = (size_t)(w - p->w);

	if (i < MPTCP_MAX_NETNS && id < 256)
		p->sub->loc_seen[i][id / 8] |= (uint8_t)(1u << (id % 8));
}

static void mptcp_subflow_on_sample(const struct mptcp_subflow_delta *d, void *arg)
{
	struct mptcp_sample_ctx *s = arg;
	struct collector *c = s->p->c;
	const struct mptcp_subflow *sf = d->sf;
	char id[4];
	const char *lv[2] = {s->w->ino_s, id};

	snprintf(id, sizeof(id), "%u", sf->loc_id);
	loc_seen_mark(s->p, s->w, sf->loc_id);
	sink_observe(c->sink, collector_series(c, MPTCP_M_SF_SRTT, lv),
		     (double)sf->tcp.rtt_us / 1e6);
	/* Even 0: the series exist from a path's first sample, so increase()
	 * and rate() see its first bytes and retransmits. */
	sink_add(c->sink, collector_series(c, MPTCP_M_SF_ACKED, lv), (double)d->acked);
	sink_add(c->sink, collector_series(c, MPTCP_M_SF_RECEIVED, lv), (double)d->received);
	sink_add(c->sink, collector_series(c, MPTCP_M_SF_RETRANS, lv), (double)d->retrans);
	/* A row for a subflow that has lived at least one history period
	 * (since_ns: its start, or when a dump first showed it). */
	if (s->history && sf->since_ns && s->now_ns - sf->since_ns >= s->p->sub->history_ns) {
		const struct sink_pod *pod;
		struct mptcp_subflow_row r;

		mptcp_subflow_row_fill(d->netns, d->token, sf, &r);
		pod = mptcp_watch_pod(c, s->w, s->now_ns);
		if (pod)
			SINK_POD_ROW_SET(&r, pod);
		sink_event(c->sink, &mptcp_subflow_samples_table, sf->tcp.sampled_ns, &r);
	}
}

void mptcp_subflow_sample(struct mptcp_priv *p, struct mptcp_watch *w,
			  const struct mptcp_state *fresh, int64_t now_ns)
{
	struct mptcp_subflow_ctx *x = p->sub;
	size_t i = (size_t)(w - p->w);
	struct mptcp_sample_ctx s = {.p = p, .w = w, .now_ns = now_ns};

	if (!x || i >= MPTCP_MAX_NETNS)
		return;
	if (x->history_ns && now_ns >= x->next_history_ns[i]) {
		/* The first pass only sets the clock: a row needs a period. */
		s.history = x->next_history_ns[i] != 0;
		x->next_history_ns[i] = now_ns + x->history_ns;
	}
	mptcp_subflow_info_take(p->state, w->ino, fresh, mptcp_subflow_on_sample, &s);
}

/* ---- on demand (any thread) --------------------------------------------- */

/* One dump of proto in family on fd into fresh; buf is the caller's. */
static int mptcp_subflow_dump_one(int fd, uint32_t seq, int family, int proto, uint64_t netns,
				  struct mptcp_state *fresh, int64_t now_ns, char *buf,
				  size_t buflen)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *req;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = family;
	req->sdiag_protocol = proto & 0xff;
	req->idiag_ext = 1 << (INET_DIAG_INFO - 1);
	/* Established (and close-wait) sockets: subflows and connections
	 * carrying data; the reconciliation covers the other states. */
	req->idiag_states = (1u << 1) | (1u << 8);
	if (proto > 0xff)
		mnl_attr_put_u32(nlh, INET_DIAG_REQ_PROTOCOL, proto);
	if (sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, buflen, 0);
		const struct nlmsghdr *h;
		size_t left;

		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		mptcp_nlmsg_for_each(h, buf, (size_t)n, left)
		{
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

				if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
					return -EIO;
				return e->error;
			}
			if (mptcp_diag_msg_apply(h, h->nlmsg_len, proto, netns, fresh, now_ns) ==
			    -ENOMEM)
				return -ENOMEM;
		}
	}
}

int mptcp_subflow_refresh(struct mptcp_priv *p, uint64_t netns)
{
	static const int families[] = {AF_INET, AF_INET6};
	static const int protos[] = {IPPROTO_MPTCP, IPPROTO_TCP};
	struct mptcp_subflow_ctx *x = p->sub;
	const size_t buflen = 1 << 16;
	int64_t arrived = clock_wall_ns(), now;
	char *buf;
	int err = 0;

	if (!x)
		return -ENODEV;
	buf = malloc(buflen);
	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&x->refresh_lock);
	/* Requests that waited for a dump begun after they arrived take its
	 * figures (as fresh as they asked): a burst costs one dump per
	 * dump's duration, not one each. */
	if (x->refresh_start_ns >= arrived)
		goto out_unlock;
	x->refresh_start_ns = clock_wall_ns();
	for (size_t i = 0; i < p->n_w && !err; i++) {
		struct mptcp_state *fresh;

		if (x->fd[i] < 0 || (netns && p->w[i].ino != netns))
			continue;
		fresh = mptcp_state_new();
		if (!fresh) {
			err = -ENOMEM;
			break;
		}
		now = clock_wall_ns();
		for (size_t k = 0; k < 4 && !err; k++)
			err = mptcp_subflow_dump_one(x->fd[i], ++x->seq, families[k % 2],
						     protos[k / 2], p->w[i].ino, fresh, now, buf,
						     buflen);
		if (!err)
			mptcp_subflow_info_take(p->state, p->w[i].ino, fresh, NULL, NULL);
		mptcp_state_free(fresh);
	}
out_unlock:
	pthread_mutex_unlock(&x->refresh_lock);
	free(buf);
	return err;
}
