// SPDX-License-Identifier: MIT
/*
 * Retention: delete rows older than their table's retention, and the oldest
 * rows past [storage] max_size, in bounded transactions so the writer keeps
 * committing between them. Runs on the writer thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_schema.h"

/* ---- retention ---- */

static int64_t store_min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int store_db_size(struct store *s, int64_t *used, int64_t *total)
{
	int64_t pages, free_pages, page_size;
	int rc = sqlite3_step(s->st_size);

	pages = sqlite3_column_int64(s->st_size, 0);
	free_pages = sqlite3_column_int64(s->st_size, 1);
	page_size = sqlite3_column_int64(s->st_size, 2);
	sqlite3_reset(s->st_size);
	if (rc != SQLITE_ROW)
		return -EIO;
	*total = pages * page_size;
	*used = (pages - free_pages) * page_size;
	__atomic_store_n(&s->db_bytes, (uint64_t)*total, __ATOMIC_RELAXED);
	return 0;
}

/* Runs sql (with ?1 bound to arg) in its own transaction, recording the id
 * high-water mark so deleting the newest rows cannot make ids restart.
 * table: the index in known of an event table, whose sql ends in
 * "RETURNING id" so the deleted ids reach the store's watches
 * (store_export.h); -1 for metric_samples. Returns rows changed, or -1. */
static int64_t store_delete_txn(struct store *s, const char *sql, int64_t arg, int table)
{
	sqlite3_stmt *st = NULL, *meta = NULL;
	int64_t changed = -1, *ids = NULL;
	size_t n_ids = 0, cap = 0;
	int rc;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out;
	rc = sqlite3_prepare_v2(
	    s->db, "INSERT OR REPLACE INTO store_meta(key, value) VALUES('id_floor', ?1)", -1,
	    &meta, NULL);
	if (rc != SQLITE_OK)
		goto out;
	rc = sqlite3_step(s->st_begin);
	sqlite3_reset(s->st_begin);
	if (rc != SQLITE_DONE)
		goto out;
	sqlite3_bind_int64(st, 1, arg);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t *p = array_grow(ids, &cap, n_ids, sizeof(*ids), 256);

		if (!p) {
			rc = SQLITE_NOMEM;
			break;
		}
		ids = p;
		ids[n_ids++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE)
		goto out_rollback;
	changed = sqlite3_changes(s->db);
	sqlite3_bind_int64(meta, 1, __atomic_load_n(&s->next_id, __ATOMIC_RELAXED) - 1);
	rc = sqlite3_step(meta);
	if (rc != SQLITE_DONE)
		goto out_rollback;
	rc = sqlite3_step(s->st_commit);
	sqlite3_reset(s->st_commit);
	if (rc == SQLITE_DONE) {
		if (table >= 0 && n_ids)
			store_watch_deleted(s, (size_t)table, ids, n_ids);
		goto out;
	}
out_rollback:
	changed = -1;
	store_rollback(s);
out:
	if (changed < 0) {
		store_count_error(s, STORE_OP_RETENTION);
		store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "retention: %s",
			  sqlite3_errmsg(s->db));
	}
	free(ids);
	sqlite3_finalize(st);
	sqlite3_finalize(meta);
	return changed;
}

/*
 * Retention never deletes the newest metric sample: metric_samples numbers
 * its rows by rowid (no AUTOINCREMENT), which restarts at 1 in an emptied
 * table. remote_write's cursor is a rowid: with the numbering restarting,
 * samples deleted unsent could not be told from samples never written
 * (exporters/remote_write.c counts deleted = the oldest rowid left - its
 * cursor - 1).
 */
#define STORE_KEEP_NEWEST " AND rowid < (SELECT max(rowid) FROM metric_samples)"

/* Deletes rows older than their table's retention, s->delete_batch per
 * transaction. *budget counts transactions left for this turn. Returns true
 * when it ran out of budget with work left. */
static bool store_retain_age(struct store *s, int *budget)
{
	int64_t now = store_now_wall(s);

	for (size_t i = 0; i <= s->n_known; i++) {
		const char *name = i < s->n_known ? s->known[i].name : "metric_samples";
		uint64_t ms = i < s->n_known && s->known[i].retention_ms ? s->known[i].retention_ms
									 : s->cfg.retention_ms;
		char sql[256];
		int64_t cutoff, n;

		if (!ms)
			continue;
		cutoff = ms >= (uint64_t)now / 1000000 ? INT64_MIN : now - (int64_t)ms * 1000000;
		snprintf(sql, sizeof(sql),
			 "DELETE FROM \"%s\" WHERE rowid IN (SELECT rowid FROM \"%s\""
			 " WHERE ts < ?1 LIMIT %d)%s",
			 name, name, s->delete_batch,
			 i < s->n_known ? " RETURNING id" : STORE_KEEP_NEWEST);
		do {
			if (*budget <= 0)
				return true;
			(*budget)--;
			n = store_delete_txn(s, sql, cutoff, i < s->n_known ? (int)i : -1);
			if (n > 0)
				store_stat_add(&s->rows_deleted_age, (uint64_t)n);
		} while (n == s->delete_batch);
	}
	return false;
}

struct store_idts {
	int64_t id, ts;
};

static int store_idts_cmp(const void *a, const void *b)
{
	const struct store_idts *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Counts rows a transaction of size retention deleted, at once: a step is
 * several transactions, and one failing after others committed (a lock)
 * left theirs uncounted (1,106 of 130,000 rows under a flood). */
static int64_t store_size_deleted(struct store *s, int64_t n, int64_t *total)
{
	if (n > 0) {
		store_stat_add(&s->rows_deleted_size, (uint64_t)n);
		*total += n;
	}
	return n;
}

/* One step of size retention: the s->delete_batch oldest event rows
 * across all tables (by global id) plus metric samples up to the newest of
 * their timestamps, each deletion counted as it commits. Returns rows
 * deleted, 0 when nothing is left, -1 when it failed deleting none. */
static int64_t store_retain_size_step(struct store *s)
{
	struct store_idts *v;
	size_t n = 0;
	int64_t cut_id, cut_ts = INT64_MIN, total = 0, k;
	char sql[256];
	int rc;

	v = malloc(sizeof(*v) * s->delete_batch * (s->n_known ? s->n_known : 1));
	if (!v)
		return -1;
	for (size_t i = 0; i < s->n_known; i++) {
		sqlite3_stmt *st;

		snprintf(sql, sizeof(sql), "SELECT id, ts FROM \"%s\" ORDER BY id LIMIT %d",
			 s->known[i].name, s->delete_batch);
		rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			continue;
		while (sqlite3_step(st) == SQLITE_ROW) {
			v[n].id = sqlite3_column_int64(st, 0);
			v[n].ts = sqlite3_column_int64(st, 1);
			n++;
		}
		sqlite3_finalize(st);
	}
	if (n == 0) {
		free(v);
		snprintf(sql, sizeof(sql),
			 "DELETE FROM metric_samples WHERE rowid IN (SELECT rowid FROM "
			 "metric_samples ORDER BY rowid LIMIT %d) AND ?1 = ?1" STORE_KEEP_NEWEST,
			 s->delete_batch);
		return store_size_deleted(s, store_delete_txn(s, sql, 0, -1), &total);
	}
	qsort(v, n, sizeof(*v), store_idts_cmp);
	k = n < (size_t)s->delete_batch ? (int64_t)n : s->delete_batch;
	cut_id = v[k - 1].id;
	for (int64_t i = 0; i < k; i++)
		cut_ts = v[i].ts > cut_ts ? v[i].ts : cut_ts;
	free(v);
	for (size_t i = 0; i < s->n_known; i++) {
		int64_t d;

		snprintf(sql, sizeof(sql), "DELETE FROM \"%s\" WHERE id <= ?1 RETURNING id",
			 s->known[i].name);
		d = store_size_deleted(s, store_delete_txn(s, sql, cut_id, (int)i), &total);
		if (d < 0)
			return total ? total : -1;
	}
	snprintf(sql, sizeof(sql),
		 "DELETE FROM metric_samples WHERE rowid IN (SELECT rowid FROM metric_samples"
		 " WHERE ts <= ?1 LIMIT %d)" STORE_KEEP_NEWEST,
		 s->delete_batch);
	k = store_size_deleted(s, store_delete_txn(s, sql, cut_ts, -1), &total);
	return k < 0 && !total ? -1 : total;
}

/* Past max_size less the WAL's share (counting incoming bytes about to be
 * committed), deletes down to a WAL's share below that: the rows arriving
 * meanwhile fit under the bound. */
static bool store_retain_size(struct store *s, int *budget, int64_t incoming, int64_t *used)
{
	int64_t total, n, target = (int64_t)s->cfg.max_bytes - s->wal_cap - incoming;
	bool over = false;

	*used = -1;
	if (!s->cfg.max_bytes)
		return false;
	for (;;) {
		if (store_db_size(s, used, &total)) {
			*used = -1;
			return false;
		}
		if (*used > target)
			over = true;
		if (!over || *used <= target - s->wal_cap)
			return false;
		if (*budget <= 0)
			return true;
		(*budget)--;
		n = store_retain_size_step(s);
		if (n <= 0) {
			*used = -1; /* changed, maybe */
			return false;
		}
	}
}

uint64_t store_bound_rows(const struct store *s, uint64_t n)
{
	uint64_t most;

	if (!s->cfg.max_bytes)
		return n;
	most = (uint64_t)(s->commit_bytes / s->row_bytes);
	most = most < 8 ? 8 : most;
	return n < most ? n : most;
}

/*
 * The bound is kept before a commit, not after it: a flood's commit adds
 * up to commit_bytes, and deleting only once the database is past its
 * share left it there until the next commit (2,000 drop rows, about 1 MB:
 * 121 % of an 8M max_size with the WAL). page_count and freelist_count
 * are read from the header SQLite holds: no I/O.
 */
void store_bound_room(struct store *s, uint64_t n, int64_t *used)
{
	int budget = STORE_DELETE_BUDGET;
	int64_t incoming = (int64_t)n * s->row_bytes, target;

	*used = -1;
	if (!s->cfg.max_bytes)
		return;
	/* Far under the bound: the room the last read found, less what the
	 * commits since took by row_bytes, and at most STORE_BOUND_SKIPS of
	 * them (a row larger than row_bytes is caught at the next read). */
	if (s->bound_skips < STORE_BOUND_SKIPS && incoming < s->bound_room) {
		s->bound_room -= incoming;
		s->bound_skips++;
		return;
	}
	s->delete_batch = (int)store_bound_rows(s, STORE_DELETE_BATCH);
	if (store_retain_size(s, &budget, incoming, used))
		s->next_retention = 0; /* more to delete: again before the next batch */
	target = (int64_t)s->cfg.max_bytes - s->wal_cap - incoming;
	s->bound_room = *used >= 0 && *used < target ? (target - *used) / 4 : 0;
	s->bound_skips = 0;
}

/* A quarter of the last commit's bytes a row, three quarters of before:
 * rows differ in size (a drop sample with its stack, a metric sample). */
void store_bound_learn(struct store *s, uint64_t n, int64_t used)
{
	int64_t after, total, per;

	if (!s->cfg.max_bytes || used < 0 || !n || store_db_size(s, &after, &total) ||
	    after <= used)
		return;
	per = (after - used) / (int64_t)n;
	s->row_bytes = (s->row_bytes * 3 + (per > 16 ? per : 16)) / 4;
}

static bool store_vacuum(struct store *s, const char *sql)
{
	if (store_exec_rows(s->db, sql) == SQLITE_OK)
		return true;
	store_count_error(s, STORE_OP_RETENTION);
	store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "incremental_vacuum: %s",
		  sqlite3_errmsg(s->db));
	return false;
}

/* Under max_size, gives back only what the file is over its share by
 * (max_size - wal_cap): the freed pages are taken again by the next rows,
 * and every page the vacuum moves is a WAL frame (a flood's size retention
 * that gave back all of them doubled the WAL at each turn); so commit_bytes
 * of pages a transaction, *budget transactions. Returns true when the
 * budget ran out first. */
static bool store_retain_vacuum(struct store *s, int *budget)
{
	int64_t used, total, over;
	char sql[64];

	for (;;) {
		if (store_db_size(s, &used, &total))
			return false;
		over = total + s->wal_cap - (int64_t)s->cfg.max_bytes;
		if (over <= 0 || used >= total)
			return false;
		if (*budget <= 0)
			return true;
		(*budget)--;
		snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%" PRId64 ")",
			 store_min64(over, s->commit_bytes) / 4096 + 1);
		if (!store_vacuum(s, sql))
			return false;
	}
}

/* Age, then size; then gives freed pages back to the file system (with
 * max_size, down to the file's share of it). Returns true when it stopped
 * early with rows left to delete or pages to give back. */
bool store_retention(struct store *s)
{
	int budget = STORE_DELETE_BUDGET;
	uint64_t before = store_stat_get(&s->rows_deleted_age);
	bool more;
	int64_t used, total;

	s->delete_batch = (int)store_bound_rows(s, STORE_DELETE_BATCH);
	more = store_retain_age(s, &budget);
	if (!more)
		more = store_retain_size(s, &budget, 0, &used);
	if (s->cfg.max_bytes)
		more = store_retain_vacuum(s, &budget) || more;
	else if (store_stat_get(&s->rows_deleted_age) != before)
		store_vacuum(s, "PRAGMA incremental_vacuum");
	store_db_size(s, &used, &total);
	return more;
}
