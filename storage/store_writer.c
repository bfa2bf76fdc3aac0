// SPDX-License-Identifier: MIT
/*
 * The writer thread: batched commits of queued rows with retry and backoff
 * (a failed commit leaves its rows in the queue), metric history samples
 * (series ids cached in memory), periodic maintenance, and the checkpointer
 * thread that keeps WAL copies and fsyncs off the writer. See store.c for
 * the queue.
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

#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_schema.h"

/* ---- writer ---- */

static bool store_rc_transient(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
	case SQLITE_IOERR:
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_NOMEM:
	case SQLITE_CANTOPEN:
	case SQLITE_PROTOCOL:
	case SQLITE_READONLY:
		return true;
	default:
		return false;
	}
}

/*
 * Inserts rows [start, start + n) of the ring in one transaction. Returns 0
 * when committed, or a transient SQLite code after rolling back (the caller
 * keeps the rows and retries). A row that fails on its own (bind error,
 * constraint) is skipped and counted, it would fail forever otherwise.
 */
void store_series_forget(struct store *s);

static int store_write_sample(struct store *s, struct store_slot *slot);
static int store_checkpoint(struct store *s, sqlite3 *db);

int store_write_batch(struct store *s, uint64_t start, uint64_t n)
{
	uint64_t written = 0, skipped = 0, samples = 0, skipped_samples = 0;
	int rc;

	rc = sqlite3_step(s->st_begin);
	sqlite3_reset(s->st_begin);
	if (rc != SQLITE_DONE)
		goto out_fail;
	for (uint64_t i = 0; i < n; i++) {
		struct store_slot *slot = store_slot_at(s, start + i);
		const struct event_table *t;
		sqlite3_stmt *st;

		if (slot->table == STORE_TABLE_SAMPLE) {
			rc = store_write_sample(s, slot);
			if (rc == SQLITE_DONE) {
				samples++;
				continue;
			}
			if (store_rc_transient(rc))
				goto out_fail;
			skipped_samples++;
			store_count_error(s, STORE_OP_SNAPSHOT);
			continue;
		}
		t = s->tables[slot->table];
		st = s->ins[slot->table];
		sqlite3_bind_int64(st, 1, slot->id);
		sqlite3_bind_int64(st, 2, slot->ts);
		rc = store_schema_bind(st, t, (unsigned char *)slot + STORE_SLOT_HDR);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE) {
			written++;
			continue;
		}
		if (store_rc_transient(rc))
			goto out_fail;
		skipped++;
		store_count_error(s, STORE_OP_INSERT);
		store_log(s, &s->rl_insert, 10000, STORE_LOG_WARN, "table %s: row dropped: %s",
			  t->name, sqlite3_errstr(rc));
	}
	rc = sqlite3_step(s->st_commit);
	sqlite3_reset(s->st_commit);
	if (rc != SQLITE_DONE)
		goto out_fail;
	store_stat_add(&s->rows_written, written);
	store_stat_add(&s->rows_dropped_error, skipped);
	store_stat_add(&s->samples_written, samples);
	store_samples_lost(s, STORE_DROP_INSERT_ERROR, skipped_samples);
	store_stat_add(&s->batches, 1);
	return 0;

out_fail:
	store_rollback(s);
	/* Series added inside the rolled-back transaction are gone again. */
	store_series_forget(s);
	return rc ? rc : SQLITE_ERROR;
}

/* ---- metric history ---- */

#define STORE_SERIES_BUCKETS 256 /* to start with */

static uint64_t store_hash(const char *key)
{
	return hash_fnv1a(HASH_FNV1A_INIT, key, strlen(key));
}

static struct store_series_ent *store_series_find(struct store *s, const char *key, uint64_t h)
{
	if (!s->series.buckets)
		return NULL;
	for (struct hash_node *n = hash_chain(&s->series, h); n; n = n->next) {
		struct store_series_ent *e = hash_entry(n, struct store_series_ent, node);

		if (n->hash == h && strcmp(e->key, key) == 0)
			return e;
	}
	return NULL;
}

/* Caches key -> id. Not cached (no memory): looked up again next time. */
static void store_series_insert(struct store *s, const char *key, int64_t id)
{
	uint64_t h = store_hash(key);
	struct store_series_ent *e = store_series_find(s, key, h);
	size_t len = strlen(key) + 1;

	if (e) {
		e->id = id;
		return;
	}
	if (!s->series.buckets && hash_init(&s->series, STORE_SERIES_BUCKETS))
		return;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return;
	memcpy(e->key, key, len);
	e->id = id;
	hash_add(&s->series, &e->node, h);
}

void store_series_forget(struct store *s)
{
	struct hash_node *n, *tmp;
	size_t b;

	hash_for_each_safe(&s->series, b, n, tmp)
		free(hash_entry(n, struct store_series_ent, node));
	hash_reset(&s->series);
}

/* The metric_series id of key ("name\x01labels"), from the cache or the
 * database (adding the series when new). */
static int store_series_resolve(struct store *s, char *key, int64_t *out)
{
	uint64_t h = store_hash(key);
	struct store_series_ent *e = store_series_find(s, key, h);
	char *sep = strchr(key, '\x01');
	int64_t id = -1;
	int rc;

	if (e) {
		*out = e->id;
		return SQLITE_OK;
	}
	if (!sep)
		return SQLITE_MISMATCH;
	*sep = '\0';
	sqlite3_bind_text(s->st_series_get, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s->st_series_get, 2, sep + 1, -1, SQLITE_STATIC);
	rc = sqlite3_step(s->st_series_get);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(s->st_series_get, 0);
	sqlite3_reset(s->st_series_get);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto out;
	if (id < 0) {
		sqlite3_bind_text(s->st_series_add, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(s->st_series_add, 2, sep + 1, -1, SQLITE_STATIC);
		rc = sqlite3_step(s->st_series_add);
		sqlite3_reset(s->st_series_add);
		if (rc != SQLITE_DONE)
			goto out;
		id = sqlite3_last_insert_rowid(s->db);
	}
	rc = SQLITE_OK;
	*out = id;
out:
	*sep = '\x01';
	if (rc == SQLITE_OK)
		store_series_insert(s, key, id);
	return rc;
}

/* One metric history sample of the batch. */
static int store_write_sample(struct store *s, struct store_slot *slot)
{
	struct store_sample_row *r = (void *)((unsigned char *)slot + STORE_SLOT_HDR);
	int64_t id = -1;
	int rc;

	rc = store_series_resolve(s, r->key, &id);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(s->st_sample, 1, id);
	sqlite3_bind_int64(s->st_sample, 2, slot->ts);
	sqlite3_bind_double(s->st_sample, 3, r->value);
	if (r->blob_len)
		sqlite3_bind_blob(s->st_sample, 4, r->key + strlen(r->key) + 1, r->blob_len,
				  SQLITE_STATIC);
	else
		sqlite3_bind_null(s->st_sample, 4);
	rc = sqlite3_step(s->st_sample);
	sqlite3_reset(s->st_sample);
	return rc;
}

/* ---- writer thread ---- */

/* The stop deadline is real time whatever the store's clock. */
static bool now_past(int64_t deadline)
{
	return deadline && store_mono_ns() >= deadline;
}

static int64_t store_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Periodic work, run without the queue lock. */
static void store_maintenance(struct store *s, int64_t now)
{
	if (now >= s->next_retention) {
		bool more = store_retention(s);

		s->next_retention =
		    now + (int64_t)(more ? STORE_RETENTION_AGAIN_MS : STORE_RETENTION_MS) * 1000000;
	}
	if (now >= s->next_checkpoint) {
		/* With the checkpointer thread running this is its job; the
		 * timer must move on all the same. */
		if (!s->ck_started)
			store_checkpoint(s, s->db);
		s->next_checkpoint = now + (int64_t)STORE_CHECKPOINT_MS * 1000000;
	}
	if (now >= s->next_publish) {
		int64_t used, total;

		store_db_size(s, &used, &total);
		s->next_publish = now + (int64_t)STORE_PUBLISH_MS * 1000000;
	}
}

static int64_t store_next_timer(const struct store *s)
{
	int64_t t = store_min(s->next_retention, s->next_checkpoint);

	return store_min(t, s->next_publish);
}

/*
 * One batch into the database, the queue's lock not held; *ck the
 * checkpoint after it while space is low.
 *
 * Disk full: a commit appends to the WAL, which only restarts from its
 * beginning after a checkpoint copied all of it into the database. Before
 * each retry, checkpoint and truncate it: that needs room only for the
 * pages the WAL changed (the database grows by them), and gives the rest
 * of the WAL's space back. Then for a while commit small batches and
 * checkpoint after every commit, so the WAL is rewritten in place instead
 * of growing into the space just freed. Without this, freeing a few MB let
 * writing resume for seconds only; and one big batch (the queue that built
 * up while the disk was full) could take all of the space freed for its WAL
 * frames, leaving none for the database to grow by them at checkpoint:
 * stuck until more is freed. So while the checkpoint itself finds no room,
 * the batch waits: its frames would only take the room the checkpoint
 * needs.
 */
static int writer_commit(struct store *s, uint64_t start, uint64_t n, int last_rc, int64_t now,
			 int *ck)
{
	int rc = SQLITE_OK;

	if ((last_rc & 0xff) == SQLITE_FULL)
		rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if ((rc & 0xff) != SQLITE_FULL)
		rc = store_write_batch(s, start, n);
	*ck = SQLITE_OK;
	if (rc == 0 && now < s->low_space_until)
		*ck = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return rc;
}

/* n rows committed (lock held): out of the queue. A checkpoint with no room
 * still makes the next batch wait for one that has room. */
static void writer_committed(struct store *s, uint64_t n, int64_t used, int ck, int *last_rc)
{
	if ((ck & 0xff) == SQLITE_FULL) {
		*last_rc = ck;
	} else {
		if ((*last_rc & 0xff) == SQLITE_FULL)
			store_log(s, NULL, 0, STORE_LOG_INFO, "writing again after a full disk");
		*last_rc = SQLITE_OK;
	}
	__atomic_store_n(&s->writer_rc, *last_rc, __ATOMIC_RELAXED);
	if (s->cfg.max_bytes) {
		pthread_mutex_unlock(&s->mu);
		store_bound_learn(s, n, used);
		pthread_mutex_lock(&s->mu);
	}
	__atomic_store_n(&s->tail, s->tail + n, __ATOMIC_RELAXED);
	if (s->tail == s->head)
		s->base = s->head; /* no slot in use: restart at 0 */
	s->batch_deadline = 0;
	s->backoff_ms = 0;
	s->retry_at = 0;
	pthread_cond_broadcast(&s->cv_done);
}

/* A failed commit (lock held): the rows stay queued, retried after a
 * backoff (short on a full disk: writing resumes as soon as there is room). */
static void writer_failed(struct store *s, uint64_t n, int rc, unsigned *stop_retries)
{
	uint64_t depth;

	__atomic_store_n(&s->writer_rc, rc, __ATOMIC_RELAXED);
	store_stat_add(&s->write_errors, 1);
	store_count_error(s, STORE_OP_COMMIT);
	s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : STORE_BACKOFF_MIN_MS;
	if (s->backoff_ms > STORE_BACKOFF_MAX_MS)
		s->backoff_ms = STORE_BACKOFF_MAX_MS;
	if ((rc & 0xff) == SQLITE_FULL) {
		if (s->backoff_ms > STORE_BACKOFF_FULL_MS)
			s->backoff_ms = STORE_BACKOFF_FULL_MS;
		s->low_space_until = store_now(s) + (int64_t)STORE_LOW_SPACE_MS * 1000000;
	}
	s->retry_at = store_now(s) + (int64_t)s->backoff_ms * 1000000;
	if (s->stop && *stop_retries)
		(*stop_retries)--;
	pthread_cond_broadcast(&s->cv_done);
	depth = s->head - s->tail;
	pthread_mutex_unlock(&s->mu);
	store_log(s, &s->rl_commit, 10000, STORE_LOG_ERR,
		  "commit of %" PRIu64 " rows failed: %s; %" PRIu64
		  " rows kept in the queue, retrying in %u ms",
		  n, sqlite3_errstr(rc), depth, s->backoff_ms);
	pthread_mutex_lock(&s->mu);
}

/* The rows the next commit takes: a batch, fewer while space is low or the
 * size bound says so. */
static uint64_t writer_batch_rows(struct store *s, uint64_t depth, int64_t now)
{
	uint64_t n = depth < s->cfg.batch_rows ? depth : s->cfg.batch_rows;

	if (now < s->low_space_until && n > STORE_LOW_SPACE_ROWS)
		n = STORE_LOW_SPACE_ROWS;
	return store_bound_rows(s, n);
}

void *store_writer_main(void *arg)
{
	struct store *s = arg;
	unsigned stop_retries = STORE_STOP_RETRIES;
	int last_rc = SQLITE_OK;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		int64_t now = store_now(s), wake, used = 0;
		uint64_t depth, n, start;
		bool due;
		int rc, ck;

		store_stat_add(&s->writer_turns, 1);
		if (now >= store_next_timer(s) && !s->stop) {
			pthread_mutex_unlock(&s->mu);
			store_maintenance(s, now);
			pthread_mutex_lock(&s->mu);
			continue;
		}
		depth = s->head - s->tail;
		if (s->stop && (depth == 0 || stop_retries == 0 || now_past(s->stop_deadline)))
			break;
		if (s->retry_at > now && !s->stop) {
			store_wait_until(s, &s->cv_writer, &s->mu,
					 store_min(s->retry_at, store_next_timer(s)));
			continue;
		}
		if (depth > 0 && !s->batch_deadline)
			s->batch_deadline = now + (int64_t)s->cfg.batch_ms * 1000000;
		due = depth > 0 && (depth >= s->cfg.batch_rows || s->flush_target > s->tail ||
				    s->stop || now >= s->batch_deadline);
		if (!due) {
			wake = store_next_timer(s);
			if (depth > 0)
				wake = store_min(wake, s->batch_deadline);
			s->writer_idle = depth == 0;
			store_wait_until(s, &s->cv_writer, &s->mu, wake);
			s->writer_idle = false;
			continue;
		}
		n = writer_batch_rows(s, depth, now);
		start = s->tail;
		pthread_mutex_unlock(&s->mu);
		store_bound_room(s, n, &used);
		rc = writer_commit(s, start, n, last_rc, now, &ck);
		pthread_mutex_lock(&s->mu);
		if (rc == 0) {
			writer_committed(s, n, used, ck, &last_rc);
			continue;
		}
		last_rc = rc;
		writer_failed(s, n, rc, &stop_retries);
	}
	if (s->head != s->tail)
		store_log(s, NULL, 0, STORE_LOG_ERR,
			  "closing with %" PRIu64 " rows not written (%s%s)", s->head - s->tail,
			  sqlite3_errstr(last_rc),
			  now_past(s->stop_deadline) ? ", at the stop deadline" : "");
	s->writer_done = true;
	pthread_cond_broadcast(&s->cv_done);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int store_checkpoint(struct store *s, sqlite3 *db)
{
	int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);

	if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
		store_count_error(s, STORE_OP_CHECKPOINT);
		store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "checkpoint: %s",
			  sqlite3_errstr(rc));
	}
	return rc;
}

/*
 * The writer's own checkpoint, when the WAL reached half its share of
 * max_size: PASSIVE, which gives up at once (BUSY, without the busy
 * handler) while the checkpointer thread copies. Past three quarters of
 * the share it waits for the checkpointer's checkpoint to end and then
 * checkpoints RESTART, waiting (the busy handler) for readers of the WAL's
 * frames, so that the next commit (at most a quarter of the share) writes
 * the WAL from its beginning: the PASSIVE one alone let the commits grow
 * the WAL to 3.5 and 7 MB at an 8M max_size (its share: 1 MB). Waiting
 * at half already cost 1-row commits two thirds of their rate.
 */
static void store_ckpt_restart(struct store *s, sqlite3 *db, int frames)
{
	int rc;

	if (frames < s->ckpt_hard_frames * 3 / 2) {
		store_checkpoint(s, db);
		return;
	}
	rc = SQLITE_BUSY;
	for (int tries = 0; tries < 3 && rc == SQLITE_BUSY; tries++) {
		pthread_mutex_lock(&s->ck_mu);
		while (s->ck_running)
			pthread_cond_wait(&s->ck_done_cv, &s->ck_mu);
		pthread_mutex_unlock(&s->ck_mu);
		rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
	}
	if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
		store_count_error(s, STORE_OP_CHECKPOINT);
		store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "checkpoint: %s",
			  sqlite3_errstr(rc));
	}
}

/* Called by SQLite on the writer thread after each commit, with the WAL
 * size in frames. */
static int store_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store *s = arg;

	if (frames >= s->ckpt_hard_frames) {
		/* The checkpointer never caught up (sustained load, no pause
		 * between batches): checkpoint here, with no write running,
		 * so the WAL restarts from its beginning. */
		store_ckpt_restart(s, db, frames);
	} else if (frames >= s->ckpt_frames) {
		pthread_mutex_lock(&s->ck_mu);
		if (!s->ck_pending) {
			s->ck_pending = true;
			pthread_cond_signal(&s->ck_cv);
		}
		pthread_mutex_unlock(&s->ck_mu);
	}
	return SQLITE_OK;
}

static void *store_ckpt_main(void *arg)
{
	struct store *s = arg;

	pthread_mutex_lock(&s->ck_mu);
	while (!s->ck_stop) {
		if (!s->ck_pending) {
			struct timespec ts;

			store_abs_mono(store_mono_ns() + (int64_t)STORE_CHECKPOINT_MS * 1000000,
				       &ts);
			pthread_cond_timedwait(&s->ck_cv, &s->ck_mu, &ts);
			if (s->ck_stop)
				break;
		}
		s->ck_pending = false;
		s->ck_running = true;
		pthread_mutex_unlock(&s->ck_mu);
		store_checkpoint(s, s->ck_db);
		pthread_mutex_lock(&s->ck_mu);
		s->ck_running = false;
		pthread_cond_broadcast(&s->ck_done_cv);
	}
	pthread_mutex_unlock(&s->ck_mu);
	return NULL;
}

/* Without it the writer checkpoints by itself (wal_autocheckpoint), which
 * is correct, only slower. */
void store_ckpt_start(struct store *s)
{
	if (sqlite3_open_v2(s->path, &s->ck_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK ||
	    store_exec_rows(s->ck_db, "PRAGMA synchronous = NORMAL") != SQLITE_OK)
		goto out_fail;
	if (pthread_create(&s->ck_thread, NULL, store_ckpt_main, s) != 0)
		goto out_fail;
	pthread_setname_np(s->ck_thread, "sysobs-ckpt");
	s->ck_started = true;
	sqlite3_wal_hook(s->db, store_wal_hook, s); /* replaces the autocheckpoint */
	return;

out_fail:
	store_log(s, NULL, 0, STORE_LOG_WARN,
		  "no checkpoint thread (%s); the writer checkpoints itself",
		  s->ck_db ? sqlite3_errmsg(s->ck_db) : "out of memory");
	sqlite3_close(s->ck_db);
	s->ck_db = NULL;
}

void store_ckpt_stop(struct store *s)
{
	if (!s->ck_started)
		return;
	pthread_mutex_lock(&s->ck_mu);
	s->ck_stop = true;
	pthread_cond_signal(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
	pthread_join(s->ck_thread, NULL);
	s->ck_started = false;
	sqlite3_wal_autocheckpoint(s->db, s->ckpt_hard_frames);
	sqlite3_close(s->ck_db);
	s->ck_db = NULL;
}
