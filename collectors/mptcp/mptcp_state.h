/* SPDX-License-Identifier: MIT */
/*
 * Live MPTCP state of the mptcp collector: connections by (netns, token) with
 * their subflows, addresses announced/removed by the peer, and listeners.
 *
 * Updated on the main thread from decoded events (mptcp_state_apply) or
 * replaced per netns from a sock_diag dump after an overrun
 * (mptcp_state_resync); read by HTTP threads (mptcp_state_msg). One mutex
 * inside guards it all. No I/O here, so it is unit-tested with recorded
 * events.
 */
#ifndef SYSOBS_MPTCP_STATE_H
#define SYSOBS_MPTCP_STATE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/hash.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_subflow_info.h"

#define MPTCP_STATE_MAX_ADDRS 16 /* announced addresses kept per connection */

/* Addresses and ports of a connection or subflow; ports in host order. */
struct mptcp_tuple {
	uint8_t family;	       /* AF_INET, AF_INET6, 0 = unknown */
	struct in6_addr saddr; /* IPv4 in the first 4 bytes */
	struct in6_addr daddr;
	uint16_t sport;
	uint16_t dport;
};

/*
 * The one form of a tuple in the live state: a v4-mapped IPv6 tuple (the
 * subflows of a dual-stack AF_INET6 socket, which the kernel reports as
 * FAMILY=AF_INET6 with ::ffff:a.b.c.d in events and as AF_INET6 in
 * sock_diag) becomes IPv4, so a tuple learnt from either source matches the
 * other. Events are stored as the kernel sent them; only the live state is
 * canonical. An address that is all zero (absent) does not prevent it.
 */
void mptcp_tuple_canon(struct mptcp_tuple *t);

struct mptcp_subflow {
	struct mptcp_tuple t;
	uint8_t loc_id;
	uint8_t rem_id;
	uint8_t backup; /* the peer's backup bit, as events carry it */
	int32_t if_idx;
	int64_t since_ns; /* wall clock it was seen established */
	/* since_ns is when it was established (an event said it), not when a
	 * socket dump first showed it: only then is its lifetime measured. */
	uint8_t since_known;
	struct mptcp_tcp_stats tcp; /* its tcp_info at the last dump (tcp.have 0: none) */
};

struct mptcp_addr {
	uint8_t id; /* remote address id */
	uint8_t family;
	struct in6_addr addr;
	uint16_t port;
	int64_t announced_ns; /* 0: only seen removed */
	int64_t removed_ns;   /* 0: still announced */
};

struct mptcp_conn {
	struct hash_node node; /* in mptcp_state.conns */
	uint64_t netns;	       /* netns inode */
	uint32_t token;
	struct mptcp_tuple t; /* the initial subflow's */
	int8_t server_side;   /* 1, 0, -1: the kernel did not say (e.g. resynced) */
	uint8_t established;
	uint8_t resynced; /* learnt from sock_diag, not from events */
	uint8_t fallback; /* sock_diag: fell back to plain TCP (MPTCP_INFO_FLAG_FALLBACK) */
	uint16_t flags;
	int64_t created_ns;
	int64_t established_ns;
	/* created_ns is the CREATED event's time (events, or the agent's
	 * history after a restart), not when a socket dump first showed it */
	uint8_t created_known;
	struct mptcp_subflow *sf;
	uint32_t n_sf, cap_sf;
	struct mptcp_addr addrs[MPTCP_STATE_MAX_ADDRS];
	uint32_t n_addrs;
	struct mptcp_conn_stats info; /* its mptcp_info at the last dump (info.have 0: none) */
};

struct mptcp_listener {
	uint64_t netns;
	struct mptcp_tuple t; /* saddr + sport */
	int64_t since_ns;
};

struct mptcp_state {
	pthread_mutex_t lock;
	struct hash_table conns; /* by (netns, token) */
	size_t n_conns;
	size_t n_subflows;
	struct mptcp_listener *listeners;
	size_t n_listeners, cap_listeners;
};

/* Called for every subflow that ends (SUB_CLOSED, or still open at CLOSED),
 * with how long it lived: from its SUB_ESTABLISHED (the connection's
 * ESTABLISHED for the initial subflow). Not called for a subflow whose start
 * only a socket dump saw, nor for one the reconciliation removes. */
typedef void (*mptcp_subflow_end_fn)(double seconds, void *arg);

struct mptcp_state *mptcp_state_new(void);
void mptcp_state_free(struct mptcp_state *st); /* accepts NULL */
/* Takes c, which is in st, out and frees it. */
void mptcp_state_conn_drop(struct mptcp_state *st, struct mptcp_conn *c);

/* What mptcp_state_apply() made of an event it could not match. */
enum mptcp_apply_result {
	MPTCP_APPLY_OK = 0,
	/* CLOSED of a connection never announced by CREATED: a client that
	 * fell back to TCP at the handshake (the kernel sends it CLOSED only). */
	MPTCP_APPLY_FALLBACK_CLOSED = 1,
	/* SUB_CLOSED of a known connection without SUB_ESTABLISHED: a join
	 * that failed (its ERROR attribute says why). */
	MPTCP_APPLY_JOIN_FAILED = 2,
};

/*
 * Applies one decoded event seen in netns at now_ns. Returns an
 * enum mptcp_apply_result, -ENOMEM, or -ENOENT when the event refers to a
 * connection, subflow or listener the state does not know and that is
 * nothing of the above (the state is still consistent; the caller may
 * count it).
 */
int mptcp_state_apply(struct mptcp_state *st, uint64_t netns, const struct mptcp_event *ev,
		      int64_t now_ns, mptcp_subflow_end_fn end_fn, void *arg);

/* Builders used by the sock_diag resync into a private, unlocked state. */
struct mptcp_conn *mptcp_state_conn_get(struct mptcp_state *st, uint64_t netns, uint32_t token,
					int create);
int mptcp_state_subflow_put(struct mptcp_state *st, struct mptcp_conn *c,
			    const struct mptcp_subflow *sf);
int mptcp_state_listener_put(struct mptcp_state *st, uint64_t netns, const struct mptcp_tuple *t,
			     int64_t since_ns);

/*
 * Replaces everything st knows about netns with what fresh (built from a
 * sock_diag dump of that netns) holds, keeping creation times, announced
 * addresses and subflow "since" times of what survived. A connection that
 * fell back to TCP is taken only if the state knew it (events announced it
 * as MPTCP); a client that fell back at the handshake never sends CREATED.
 * fresh is emptied.
 */
void mptcp_state_resync(struct mptcp_state *st, uint64_t netns, struct mptcp_state *fresh);

/* What one reconciliation changed in the live state. */
struct mptcp_reconcile_stats {
	uint32_t conns_removed, conns_added;
	uint32_t subflows_removed, subflows_added;
};

/*
 * Periodic reconciliation of netns with the kernel's socket dump, for what
 * sends no event (MP_FASTCLOSE: neither SUB_CLOSED nor CLOSED) or events
 * lost without an overrun. An event still queued when a dump is taken must
 * not cause a false correction, so only a difference seen in two consecutive
 * dumps counts: fresh is the dump just taken, prev the one before (taken at
 * prev_ns; NULL: nothing is corrected yet). A connection or subflow known
 * since before prev_ns and absent from both dumps is removed; one present in
 * both dumps and unknown to the state is added (as resynced). Connections
 * that fell back to TCP are never added. fresh is left as it is (it becomes
 * the next call's prev). Adds what it changed to *out.
 */
void mptcp_state_reconcile(struct mptcp_state *st, uint64_t netns, const struct mptcp_state *fresh,
			   const struct mptcp_state *prev, int64_t prev_ns,
			   struct mptcp_reconcile_stats *out);

void mptcp_state_counts(struct mptcp_state *st, size_t *conns, size_t *subflows);

/* Tokens of the connections of netns whose creation the state does not
 * know (learnt from a socket dump), malloc'd, *n of them; NULL with *n 0
 * when there are none, NULL with *n > 0 when out of memory. */
uint32_t *mptcp_state_unknown_starts(struct mptcp_state *st, uint64_t netns, size_t *n);

/* What the agent's history says of one connection of netns before a
 * restart (its CREATED row): taken only when the
 * connection's initial subflow is t (the token may have named an older
 * connection) and the state does not know better. 1 taken, 0 not. */
struct mptcp_history {
	struct mptcp_tuple t;
	int8_t server_side; /* -1: the row did not say */
	int64_t created_ns; /* the CREATED row's time */
};
int mptcp_state_recover(struct mptcp_state *st, uint64_t netns, uint32_t token,
			const struct mptcp_history *h);

/*
 * The MptcpConnectionList of GET /api/v1/mptcp/connections (all but its
 * namespaces) for one netns (0: all), in ar: at most max_conns connections,
 * the counts of all of them, truncated when some were left out. The state is
 * copied under the lock and the message built after it. NULL when out of
 * memory.
 */
Sysobs__V1__MptcpConnectionList *mptcp_state_msg(struct mptcp_state *st, uint64_t netns,
						 size_t max_conns, struct arena *ar);
/* netns_name beside every netns of list (base/netns_name.h): read at
 * each answer, since the host's names change; none for unnamed ones. */
void mptcp_state_msg_names(Sysobs__V1__MptcpConnectionList *list, struct arena *ar);

#endif
