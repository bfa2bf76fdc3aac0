// SPDX-License-Identifier: MIT
/* mptcp_recover: see mptcp_recover.h. */
#include "collectors/mptcp/mptcp_recover.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/sink.h"

/* Tokens per query: a bounded statement and parameter count. */
#define RECOVER_BATCH 128

/* An address as mptcp_row_fill() stored it: IPv4 dotted, IPv6 otherwise. */
static int addr_parse(const char *s, uint8_t *family, struct in6_addr *a)
{
	uint8_t f = strchr(s, ':') ? AF_INET6 : AF_INET;

	if (!s[0])
		return 0; /* not sent: stays zero */
	if (inet_pton(f, s, a) != 1)
		return -EINVAL;
	if (*family && *family != f && *family != AF_INET6)
		return -EINVAL;
	*family = *family ? *family : f;
	return 0;
}

struct recover_ctx {
	struct mptcp_state *st;
	uint64_t netns;
	int recovered;
};

static void on_created(int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	const struct mptcp_row *r = row;
	struct recover_ctx *x = arg;
	struct mptcp_history h = {.server_side = -1, .created_ns = ts_ns};

	(void)id;
	if (r->token < 0 || r->sport < 0 || r->dport < 0)
		return;
	h.t.family = r->family == AF_INET || r->family == AF_INET6 ? (uint8_t)r->family : 0;
	if (addr_parse(r->saddr, &h.t.family, &h.t.saddr) ||
	    addr_parse(r->daddr, &h.t.family, &h.t.daddr))
		return;
	h.t.sport = (uint16_t)r->sport;
	h.t.dport = (uint16_t)r->dport;
	mptcp_tuple_canon(&h.t);
	if (r->server_side == 0 || r->server_side == 1)
		h.server_side = (int8_t)r->server_side;
	x->recovered += mptcp_state_recover(x->st, x->netns, (uint32_t)r->token, &h);
}

/* One query for tokens[0, n): the newest CREATED row of each token in the
 * namespace (a token can name an older connection too, which the tuple check
 * in mptcp_state_recover() turns away). The store serves it from the partial
 * token index (mptcp_indexes), which the type condition implies. */
static int recover_batch(struct sink *k, struct recover_ctx *x, const uint32_t *tokens, size_t n)
{
	static const char *const by_token[] = {"token", NULL};
	static const struct row_value created[] = {ROW_TEXT("CREATED")};
	struct row_value netns = ROW_NUM((int64_t)x->netns), in[RECOVER_BATCH];
	const struct row_cond where[] = {
	    ROW_COND_EQ("type", created),
	    ROW_COND_EQ("netns", &netns),
	    {.column = "token", .op = ROW_IN, .values = in, .n_values = n},
	    {0},
	};

	for (size_t i = 0; i < n; i++)
		in[i] = (struct row_value)ROW_NUM(tokens[i]);
	return sink_latest(k, &mptcp_events_table, by_token, where, on_created, x);
}

int mptcp_recover_starts(struct sink *k, struct mptcp_state *st, uint64_t netns)
{
	struct recover_ctx x = {.st = st, .netns = netns};
	size_t n = 0;
	uint32_t *tokens = mptcp_state_unknown_starts(st, netns, &n);
	int err = 0;

	if (!tokens)
		return n ? -ENOMEM : 0;
	for (size_t i = 0; i < n && !err; i += RECOVER_BATCH)
		err =
		    recover_batch(k, &x, tokens + i, n - i < RECOVER_BATCH ? n - i : RECOVER_BATCH);
	free(tokens);
	return err ? err : x.recovered;
}
