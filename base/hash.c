/* SPDX-License-Identifier: MIT */
/* The one hash table; see hash.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

int hash_init(struct hash_table *t, size_t n_buckets)
{
	size_t n = 1;

	while (n < n_buckets)
		n *= 2;
	t->buckets = calloc(n, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->n_buckets = n;
	t->n = 0;
	return 0;
}

void hash_fini(struct hash_table *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->n_buckets = 0;
	t->n = 0;
}

void hash_reset(struct hash_table *t)
{
	if (t->buckets)
		memset(t->buckets, 0, t->n_buckets * sizeof(*t->buckets));
	t->n = 0;
}

/* Twice the buckets; on no memory the chains just get longer. */
static void hash_grow(struct hash_table *t)
{
	size_t n = t->n_buckets * 2;
	struct hash_node **b = calloc(n, sizeof(*b)), *node, *next;

	if (!b)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		for (node = t->buckets[i]; node; node = next) {
			next = node->next;
			node->next = b[node->hash & (n - 1)];
			b[node->hash & (n - 1)] = node;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

void hash_add(struct hash_table *t, struct hash_node *node, uint64_t hash)
{
	struct hash_node **head = &t->buckets[hash & (t->n_buckets - 1)];

	node->hash = hash;
	node->next = *head;
	*head = node;
	if (++t->n > t->n_buckets)
		hash_grow(t);
}

void hash_del(struct hash_table *t, struct hash_node *node)
{
	struct hash_node **pp = &t->buckets[node->hash & (t->n_buckets - 1)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			t->n--;
			return;
		}
	}
}
