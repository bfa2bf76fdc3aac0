/* SPDX-License-Identifier: MIT */
/*
 * base/hash: an entry added is found by its key and no other, a deleted one
 * is gone while the rest stay, the table grows under many keys (every key
 * still found, chains short), entries with equal hashes stay apart, and a
 * walk sees every entry once, in no order the test relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/hash.h"

#define N_KEYS 50000

struct item {
	struct hash_node node;
	uint32_t key;
	bool seen;
};

static uint64_t key_hash(uint32_t key)
{
	return hash_fnv1a(HASH_FNV1A_INIT, &key, sizeof(key));
}

static struct item *item_find(const struct hash_table *t, uint32_t key, uint64_t h)
{
	for (struct hash_node *n = hash_chain(t, h); n; n = n->next) {
		struct item *it = hash_entry(n, struct item, node);

		if (n->hash == h && it->key == key)
			return it;
	}
	return NULL;
}

static void insert_find_delete(void **state)
{
	struct hash_table t;
	struct item a = {.key = 1}, b = {.key = 2};

	(void)state;
	assert_int_equal(hash_init(&t, 3), 0);
	assert_int_equal(t.n_buckets, 4);
	assert_null(item_find(&t, 1, key_hash(1)));
	hash_add(&t, &a.node, key_hash(1));
	hash_add(&t, &b.node, key_hash(2));
	assert_int_equal(t.n, 2);
	assert_ptr_equal(item_find(&t, 1, key_hash(1)), &a);
	assert_ptr_equal(item_find(&t, 2, key_hash(2)), &b);
	assert_null(item_find(&t, 3, key_hash(3)));
	hash_del(&t, &a.node);
	assert_int_equal(t.n, 1);
	assert_null(item_find(&t, 1, key_hash(1)));
	assert_ptr_equal(item_find(&t, 2, key_hash(2)), &b);
	hash_reset(&t);
	assert_int_equal(t.n, 0);
	assert_null(item_find(&t, 2, key_hash(2)));
	hash_fini(&t);
	hash_fini(&t); /* twice, or never initialised: nothing to free */
}

static void equal_hashes_stay_apart(void **state)
{
	struct hash_table t;
	struct item it[8];

	(void)state;
	assert_int_equal(hash_init(&t, 1), 0);
	for (uint32_t i = 0; i < 8; i++) {
		it[i] = (struct item){.key = i};
		hash_add(&t, &it[i].node, 42); /* one chain, whatever the size */
	}
	for (uint32_t i = 0; i < 8; i++)
		assert_ptr_equal(item_find(&t, i, 42), &it[i]);
	hash_del(&t, &it[3].node);
	assert_null(item_find(&t, 3, 42));
	for (uint32_t i = 0; i < 8; i++)
		if (i != 3)
			assert_ptr_equal(item_find(&t, i, 42), &it[i]);
	hash_fini(&t);
}

static void grows_under_many_keys_and_walks_each_once(void **state)
{
	struct item *items = calloc(N_KEYS, sizeof(*items));
	struct hash_node *n, *tmp;
	struct hash_table t;
	size_t i, seen = 0, longest = 0;

	(void)state;
	assert_non_null(items);
	assert_int_equal(hash_init(&t, 16), 0);
	for (i = 0; i < N_KEYS; i++) {
		items[i].key = (uint32_t)i * 7919;
		hash_add(&t, &items[i].node, key_hash(items[i].key));
	}
	assert_int_equal(t.n, N_KEYS);
	assert_true(t.n_buckets >= N_KEYS); /* grown: no more entries than buckets */
	for (i = 0; i < N_KEYS; i++)
		assert_ptr_equal(item_find(&t, items[i].key, key_hash(items[i].key)), &items[i]);
	for (i = 0; i < t.n_buckets; i++) {
		size_t len = 0;

		for (n = t.buckets[i]; n; n = n->next)
			len++;
		longest = len > longest ? len : longest;
	}
	assert_true(longest < 16);
	/* delete every other key while walking */
	hash_for_each_safe(&t, i, n, tmp) {
		struct item *it = hash_entry(n, struct item, node);

		assert_false(it->seen);
		it->seen = true;
		seen++;
		if (it->key % 2)
			hash_del(&t, n);
	}
	assert_int_equal(seen, N_KEYS);
	for (i = 0; i < N_KEYS; i++) {
		struct item *it = item_find(&t, items[i].key, key_hash(items[i].key));

		assert_ptr_equal(it, items[i].key % 2 ? NULL : &items[i]);
	}
	assert_int_equal(t.n, N_KEYS / 2);
	hash_fini(&t);
	free(items);
}

static void fnv1a_known_values(void **state)
{
	(void)state;
	/* FNV-1a 64 of "a" (without the NUL) */
	assert_true(hash_fnv1a(HASH_FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
	/* the string form hashes the NUL too: "ab","c" and "a","bc" differ */
	assert_true(hash_fnv1a_str(HASH_FNV1A_INIT, "a") == hash_fnv1a(HASH_FNV1A_INIT, "a", 2));
	assert_true(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV1A_INIT, "ab"), "c") !=
		    hash_fnv1a_str(hash_fnv1a_str(HASH_FNV1A_INIT, "a"), "bc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(insert_find_delete),
	    cmocka_unit_test(equal_hashes_stay_apart),
	    cmocka_unit_test(grows_under_many_keys_and_walks_each_once),
	    cmocka_unit_test(fnv1a_known_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
