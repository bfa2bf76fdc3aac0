/* SPDX-License-Identifier: MIT */
/*
 * The one hash table of the tree: chained, intrusive (the entry embeds a
 * struct hash_node, as the kernel's hlist does), power-of-two buckets, grown
 * when it holds more entries than buckets. The caller computes the hash and
 * compares keys itself while walking a chain:
 *
 *	for (n = hash_chain(&t, h); n; n = n->next) {
 *		struct foo *e = hash_entry(n, struct foo, node);
 *
 *		if (n->hash == h && foo_key_equal(e, key))
 *			return e;
 *	}
 *
 * Why not uthash (Debian's uthash-dev): its keys are one run of bytes, and
 * the metrics series key is a vector of label values, so every lookup (each
 * sink update) would first copy the values into one buffer; its handle is
 * 56 bytes an entry against 16 here; it exits the process on a failed
 * allocation unless told otherwise per file. Here a lookup is one mask, a
 * chain walk and the caller's own inline compare, with no callback; a grow
 * that fails leaves longer chains, still correct.
 *
 * No order: iteration is by bucket, so what must come out in an order sorts
 * (the /metrics render sorts each family's series, metrics/metrics_order.c).
 * Not locked: the owner's lock guards it. No hash_add() while iterating.
 */
#ifndef SYSOBS_BASE_HASH_H
#define SYSOBS_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

struct hash_node {
	struct hash_node *next;
	uint64_t hash;
};

struct hash_table {
	struct hash_node **buckets;
	size_t n_buckets; /* power of two */
	size_t n;	  /* entries */
};

#define hash_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* Every node of t; n may be deleted (not freed before the next step, which
 * tmp already holds) inside the loop. */
#define hash_for_each_safe(t, i, n, tmp)                                                           \
	for ((i) = 0; (i) < (t)->n_buckets; (i)++)                                                 \
		for ((n) = (t)->buckets[(i)]; (n) && ((tmp) = (n)->next, 1); (n) = (tmp))

/* At least n_buckets buckets (rounded up to a power of two, at least 1).
 * 0 or -ENOMEM. */
int hash_init(struct hash_table *t, size_t n_buckets);
/* Frees the buckets, not the entries. Accepts a table never initialised
 * (zeroed). */
void hash_fini(struct hash_table *t);
/* Forgets every entry (the caller owns them); keeps the buckets. */
void hash_reset(struct hash_table *t);
/* Puts node at the head of its chain (no duplicate check: look up first). */
void hash_add(struct hash_table *t, struct hash_node *node, uint64_t hash);
/* Unlinks node, which must be in t. */
void hash_del(struct hash_table *t, struct hash_node *node);

static inline struct hash_node *hash_chain(const struct hash_table *t, uint64_t hash)
{
	return t->buckets[hash & (t->n_buckets - 1)];
}

#define HASH_FNV1A_INIT 0xcbf29ce484222325ULL

/* FNV-1a of len bytes, going on from h (HASH_FNV1A_INIT to start). */
static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* FNV-1a of a string and its terminating NUL ("ab","c" and "a","bc"
 * differ), going on from h. */
static inline uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	} while (*s++);
	return h;
}

#endif
