// SPDX-License-Identifier: MIT
/*
 * SQLite storage (see store.h): this file opens the store (path and
 * integrity checks from store_check.c, pragmas, migrations from
 * store_migrate.c, the tables known, the writer's statements, the readers
 * of store_readers.c), starts the writer thread and closes it all. The
 * bounded submit queue is store_queue.c; the writer thread (batched commits
 * with retry, metric history samples, checkpoints) store_writer.c;
 * retention store_retention.c; what they all use store_util.c. Calls go
 * from this file to those, never back: store_writer.c calls
 * store_retention.c, both call store_util.c.
 *
 * Queue: a ring of fixed-size slots indexed by two monotonically increasing
 * sequence numbers (head = submitted, tail = committed) under one mutex.
 * store_submit() copies the row into slot head % cap and never waits. The
 * writer binds rows straight out of their slots and advances tail only after
 * COMMIT succeeded, so a failed commit (disk full, I/O error, busy) leaves the
 * batch where it is and the writer retries it with backoff: nothing accepted
 * is lost, nothing half-written is kept, and while the writer is stuck the
 * ring fills and new rows are dropped and counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_schema.h"

/* The writer connection's busy handler: busy_timeout_ms, as
 * sqlite3_busy_timeout() would wait, but never past the stop deadline, so
 * another process holding the lock cannot hold up a SIGTERM. */
static int store_busy(void *arg, int n)
{
	struct store *s = arg;
	int64_t now = store_mono_ns();
	int64_t stop = __atomic_load_n(&s->stop_deadline, __ATOMIC_RELAXED);

	if (n == 0)
		s->busy_since = now;
	if (now - s->busy_since >= (int64_t)s->cfg.busy_timeout_ms * 1000000 ||
	    (stop && now >= stop))
		return 0;
	usleep(n < 4 ? 1000u << n : 20000u);
	return 1;
}

static int store_pragmas(struct store *s, bool fresh, char *err, size_t errlen)
{
	char sql[96];
	sqlite3_stmt *st;
	int rc;

	/* Must precede the first CREATE TABLE, or it has no effect. */
	if (fresh && store_exec_rows(s->db, "PRAGMA auto_vacuum = INCREMENTAL") != SQLITE_OK)
		goto out_err;
	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
		snprintf(err, errlen, "%s: cannot switch to WAL journal mode: %s", s->path,
			 rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
					  : sqlite3_errmsg(s->db));
		sqlite3_finalize(st);
		return -EIO;
	}
	sqlite3_finalize(st);
	s->wal_cap = STORE_JOURNAL_LIMIT;
	if (s->cfg.max_bytes && s->cfg.max_bytes / 8 < STORE_JOURNAL_LIMIT)
		s->wal_cap = s->cfg.max_bytes / 8 > STORE_WAL_MIN ? (int64_t)s->cfg.max_bytes / 8
								  : STORE_WAL_MIN;
	s->commit_bytes = s->wal_cap / 4;
	s->row_bytes = STORE_ROW_BYTES;
	/* in frames of a 4 KiB page (the default; a larger page only
	 * checkpoints sooner): woken at a quarter of the cap, the writer's
	 * own at half, so half plus a commit's quarter stays within it */
	s->ckpt_frames = (int)(s->wal_cap / STORE_WAL_FRAME / 4);
	s->ckpt_hard_frames = (int)(s->wal_cap / STORE_WAL_FRAME / 2);
	if (s->ckpt_frames > STORE_CKPT_FRAMES)
		s->ckpt_frames = STORE_CKPT_FRAMES;
	if (s->ckpt_hard_frames > STORE_CKPT_HARD_FRAMES)
		s->ckpt_hard_frames = STORE_CKPT_HARD_FRAMES;
	s->delete_batch = STORE_DELETE_BATCH; /* then as store_bound_rows() says */
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %" PRId64, s->wal_cap);
	if (store_exec_rows(s->db, "PRAGMA synchronous = NORMAL") != SQLITE_OK ||
	    store_exec_rows(s->db, sql) != SQLITE_OK ||
	    store_exec_rows(s->db, "PRAGMA foreign_keys = OFF") != SQLITE_OK ||
	    sqlite3_wal_autocheckpoint(s->db, s->ckpt_hard_frames) != SQLITE_OK ||
	    store_exec_rows(s->db, "PRAGMA cache_size = -8192") != SQLITE_OK)
		goto out_err;
	return 0;

out_err:
	snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
	return -EIO;
}

static int store_known_add(struct store *s, const char *name, uint64_t retention_ms)
{
	struct store_known_table *k;

	for (size_t i = 0; i < s->n_known; i++) {
		if (strcmp(s->known[i].name, name) == 0) {
			if (retention_ms)
				s->known[i].retention_ms = retention_ms;
			return 0;
		}
	}
	k = realloc(s->known, (s->n_known + 1) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	s->known = k;
	k[s->n_known].name = strdup(name);
	if (!k[s->n_known].name)
		return -ENOMEM;
	k[s->n_known].retention_ms = retention_ms;
	s->n_known++;
	return 0;
}

/* Every event table in the database, and the id sequence start: one past
 * the largest id in any of them, or past the high-water mark retention
 * recorded before deleting the newest rows. */
static int store_load_known(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int64_t floor = 0;
	int rc;

	for (size_t i = 0; i < s->n_tables; i++) {
		if (store_known_add(s, s->tables[i]->name, s->tables[i]->retention_ms))
			goto out_oom;
	}
	rc = sqlite3_prepare_v2(s->db,
				"SELECT component FROM schema_migrations WHERE component IN"
				" (SELECT name FROM sqlite_master WHERE type = 'table')",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (store_ident_ok(name) && store_known_add(s, name, 0)) {
			sqlite3_finalize(st);
			goto out_oom;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto out_sql;

	rc = store_query_int(s->db, "SELECT value FROM store_meta WHERE key = 'id_floor'", &floor);
	if (rc != SQLITE_OK)
		goto out_sql;
	s->next_id = floor + 1;
	for (size_t i = 0; i < s->n_known; i++) {
		char sql[128];
		int64_t max = 0;

		snprintf(sql, sizeof(sql), "SELECT max(id) FROM \"%s\"", s->known[i].name);
		rc = store_query_int(s->db, sql, &max);
		if (rc != SQLITE_OK)
			goto out_sql;
		if (max >= s->next_id)
			s->next_id = max + 1;
	}
	return 0;

out_oom:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
out_sql:
	snprintf(err, errlen, "%s: reading tables: %s", s->path, sqlite3_errmsg(s->db));
	return -EIO;
}

static int store_prepare_writer(struct store *s, char *err, size_t errlen)
{
	int rc;

	s->ins = calloc(s->n_tables ? s->n_tables : 1, sizeof(*s->ins));
	if (!s->ins) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_tables; i++) {
		char sql[2048];

		rc = store_schema_insert_sql(s->tables[i], sql, sizeof(sql)) ? SQLITE_TOOBIG
									     : SQLITE_OK;
		if (rc == SQLITE_OK)
			rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
						&s->ins[i], NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: table %s: insert: %s", s->path,
				 s->tables[i]->name, sqlite3_errmsg(s->db));
			return -EINVAL;
		}
	}
	rc = sqlite3_prepare_v3(s->db, "BEGIN IMMEDIATE", -1, SQLITE_PREPARE_PERSISTENT,
				&s->st_begin, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(s->db, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT,
					&s->st_commit, NULL);
	if (rc == SQLITE_OK) /* store_db_size(), before and after every commit */
		rc = sqlite3_prepare_v3(s->db,
					"SELECT p.page_count, f.freelist_count, z.page_size FROM "
					"pragma_page_count p, pragma_freelist_count f, "
					"pragma_page_size z",
					-1, SQLITE_PREPARE_PERSISTENT, &s->st_size, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(s->db,
					"INSERT INTO metric_samples(series_id, ts, value, buckets) "
					"VALUES(?1, ?2, ?3, ?4)",
					-1, SQLITE_PREPARE_PERSISTENT, &s->st_sample, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
		    s->db, "SELECT id FROM metric_series WHERE name = ?1 AND labels = ?2", -1,
		    SQLITE_PREPARE_PERSISTENT, &s->st_series_get, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(s->db,
					"INSERT INTO metric_series(name, labels) VALUES(?1, ?2)",
					-1, SQLITE_PREPARE_PERSISTENT, &s->st_series_add, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	return 0;
}

static void store_free(struct store *s)
{
	if (!s)
		return;
	store_ic_stop(s);
	for (size_t i = 0; i < s->n_readers; i++)
		sqlite3_close(s->readers[i]);
	free(s->readers);
	free(s->rd_free);
	free(s->rd_deadline);
	for (size_t i = 0; s->ins && i < s->n_tables; i++)
		sqlite3_finalize(s->ins[i]);
	free(s->ins);
	sqlite3_finalize(s->st_begin);
	sqlite3_finalize(s->st_commit);
	sqlite3_finalize(s->st_size);
	sqlite3_finalize(s->st_sample);
	sqlite3_finalize(s->st_series_get);
	sqlite3_finalize(s->st_series_add);
	if (s->ck_db)
		sqlite3_close(s->ck_db);
	if (s->db)
		sqlite3_close(s->db);
	store_series_forget(s);
	hash_fini(&s->series);
	for (size_t i = 0; i < s->n_known; i++)
		free(s->known[i].name);
	free(s->known);
	free(s->ring);
	free(s->tables);
	free(s->path);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv_writer);
	pthread_cond_destroy(&s->cv_done);
	pthread_mutex_destroy(&s->rd_mu);
	pthread_cond_destroy(&s->rd_cv);
	pthread_mutex_destroy(&s->ck_mu);
	pthread_mutex_destroy(&s->watch_mu);
	pthread_cond_destroy(&s->ck_cv);
	pthread_cond_destroy(&s->ck_done_cv);
	free(s);
}

static int store_init_sync(struct store *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rd_mu, NULL);
	pthread_mutex_init(&s->ck_mu, NULL);
	pthread_mutex_init(&s->watch_mu, NULL);
	pthread_mutex_init(&s->ic_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv_writer, &ca);
	pthread_cond_init(&s->cv_done, &ca);
	pthread_cond_init(&s->rd_cv, &ca);
	pthread_cond_init(&s->ck_cv, &ca);
	pthread_cond_init(&s->ck_done_cv, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

static int store_check_tables(struct store *s, char *err, size_t errlen)
{
	size_t max_row = 0;

	for (size_t i = 0; i < s->n_tables; i++) {
		const struct event_table *t = s->tables[i];

		if (store_schema_check(t, err, errlen))
			return -EINVAL;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s->tables[j]->name, t->name) == 0) {
				snprintf(err, errlen, "table %s registered twice", t->name);
				return -EINVAL;
			}
		}
		if (t->row_size > max_row)
			max_row = t->row_size;
	}
	if (max_row < STORE_SAMPLE_MIN)
		max_row = STORE_SAMPLE_MIN;
	s->slot_size = STORE_SLOT_HDR + ((max_row + 15) & ~(size_t)15);
	return 0;
}

/* SQLite keeps global allocation statistics behind a mutex taken on every
 * malloc; the store never reads them, and turning them off makes the writer
 * ~10% cheaper per row (bench_ingest drain, events per CPU-second). Only
 * possible before SQLite initialises, so it is a no-op when something in the
 * process used SQLite first. */
static void store_sqlite_config(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* The configuration as the store uses it: each key left at 0 takes its
 * default, and a batch never exceeds the queue. */
static void store_config_defaults(struct store_config *cfg)
{
	if (!cfg->queue_rows)
		cfg->queue_rows = STORE_DEF_QUEUE_ROWS;
	if (!cfg->batch_rows)
		cfg->batch_rows = STORE_DEF_BATCH_ROWS;
	if (cfg->batch_rows > cfg->queue_rows)
		cfg->batch_rows = cfg->queue_rows;
	if (!cfg->batch_ms)
		cfg->batch_ms = STORE_DEF_BATCH_MS;
	if (!cfg->busy_timeout_ms)
		cfg->busy_timeout_ms = STORE_DEF_BUSY_MS;
	if (!cfg->query_timeout_ms)
		cfg->query_timeout_ms = 5000;
	if (!cfg->readers)
		cfg->readers = STORE_DEF_READERS;
}

/* Takes the NULL-terminated list of tables, checks each, and sizes the
 * queue's slots for the largest row. */
static int store_set_tables(struct store *s, const struct event_table *const *tables, char *err,
			    size_t errlen)
{
	while (tables && tables[s->n_tables])
		s->n_tables++;
	s->tables = calloc(s->n_tables + 1, sizeof(*s->tables));
	if (!s->path || !s->tables) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_tables; i++)
		s->tables[i] = tables[i];
	if (store_check_tables(s, err, errlen))
		return -EINVAL;
	s->cap = s->cfg.queue_rows;
	s->ring = calloc(s->cap, s->slot_size);
	if (!s->ring) {
		snprintf(err, errlen, "out of memory for a queue of %" PRIu64 " rows", s->cap);
		return -ENOMEM;
	}
	return 0;
}

/* Opens the writer's connection to a file it may write, checks the file
 * (after an unclean stop, more thoroughly) and sets the pragmas, those of a
 * new file when it holds nothing yet. */
static int store_open_db(struct store *s, char *err, size_t errlen)
{
	int64_t n_objects = 0, ver = 0;
	bool unclean = store_unclean_stop(s->path);
	int rc;

	rc =
	    sqlite3_open_v2(s->path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path,
			 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		return -EIO;
	}
	if (sqlite3_db_readonly(s->db, "main")) {
		snprintf(err, errlen, "%s: opened read-only; the agent needs to write it", s->path);
		return -EACCES;
	}
	sqlite3_busy_handler(s->db, store_busy, s);
	sqlite3_extended_result_codes(s->db, 1);
	if (store_open_check(s, unclean, err, errlen))
		return -EIO;
	if (store_query_int(s->db, "SELECT count(*) FROM sqlite_master", &n_objects) != SQLITE_OK ||
	    store_query_int(s->db, "PRAGMA user_version", &ver) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	return store_pragmas(s, n_objects == 0 && ver == 0, err, errlen);
}

/* Brings the schema up to date (the store's own tables, then each
 * collector's), then prepares what the writer and the readers use. */
static int store_open_schema(struct store *s, char *err, size_t errlen)
{
	if (store_migrate_core(s, err, errlen))
		return -EIO;
	for (size_t i = 0; i < s->n_tables; i++) {
		if (store_migrate_table(s, s->tables[i], err, errlen))
			return -EIO;
	}
	if (store_load_known(s, err, errlen) || store_prepare_writer(s, err, errlen) ||
	    store_open_readers(s, err, errlen))
		return -EIO;
	return 0;
}

/* The errno of a failed open: EAGAIN for the environment of the moment (a
 * full disk, another process's lock, I/O, memory), which a later start may
 * not meet; EINVAL for a permission, a corrupt file or a newer schema. */
static int store_open_errno(const struct store *s)
{
	int rc = s->db ? sqlite3_extended_errcode(s->db) & 0xff : SQLITE_OK;
	bool transient = rc == SQLITE_FULL || rc == SQLITE_IOERR || rc == SQLITE_BUSY ||
			 rc == SQLITE_LOCKED || rc == SQLITE_NOMEM || rc == SQLITE_PROTOCOL ||
			 store_dir_full(s->path);

	return transient ? EAGAIN : EINVAL;
}

struct store *store_open(const struct store_config *cfg, const struct event_table *const *tables,
			 char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct store *s;
	int e;

	pthread_once(&once, store_sqlite_config);
	if (store_check_path(cfg->path, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	store_init_sync(s);
	s->cfg = *cfg;
	s->path = strdup(cfg->path);
	store_config_defaults(&s->cfg);
	s->cfg.path = s->path;
	if (store_set_tables(s, tables, err, errlen) || store_open_db(s, err, errlen) ||
	    store_open_schema(s, err, errlen))
		goto out_free;
	return s;

out_free:
	e = store_open_errno(s);
	store_free(s);
	errno = e;
	return NULL;
}

int store_start(struct store *s)
{
	int64_t now = store_now(s);
	int rc;

	if (s->started)
		return -EALREADY;
	s->next_retention = now; /* once at start */
	s->next_checkpoint = now + (int64_t)STORE_CHECKPOINT_MS * 1000000;
	s->next_publish = now;
	store_ckpt_start(s);
	rc = pthread_create(&s->thread, NULL, store_writer_main, s);
	if (rc) {
		store_ckpt_stop(s);
		return -rc;
	}
	pthread_setname_np(s->thread, "sysobs-writer");
	s->started = true;
	return 0;
}

void store_clock_moved(struct store *s)
{
	pthread_mutex_lock(&s->mu);
	pthread_cond_signal(&s->cv_writer);
	pthread_mutex_unlock(&s->mu);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stop_deadline, store_mono_ns() + (int64_t)STORE_STOP_MS * 1000000,
			 __ATOMIC_RELAXED);
	store_ic_stop(s);
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_signal(&s->cv_writer);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		store_ckpt_stop(s);
	} else {
		/* Never started: write what was queued from this thread. */
		while (s->tail < s->head) {
			uint64_t n = s->head - s->tail;

			n = n < s->cfg.batch_rows ? n : s->cfg.batch_rows;
			if (store_write_batch(s, s->tail, n))
				break;
			s->tail += n;
		}
		if (s->head != s->tail)
			store_log(s, NULL, 0, STORE_LOG_ERR,
				  "closing with %" PRIu64 " rows not written (writes failing)",
				  s->head - s->tail);
	}
	s->rows_lost_close = s->head - s->tail;
	/* Readers first: a TRUNCATE checkpoint needs no reader in the WAL. */
	for (size_t i = 0; i < s->n_readers; i++)
		sqlite3_close(s->readers[i]);
	s->n_readers = 0;
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	store_exec_rows(s->db, "PRAGMA optimize");
	store_free(s);
}

void store_get_stats(struct store *s, struct store_stats *out)
{
	pthread_mutex_lock(&s->mu);
	out->rows_dropped_full = s->dropped_full;
	out->rows_lost_close = s->rows_lost_close;
	out->queue_depth = (size_t)(s->head - s->tail);
	pthread_mutex_unlock(&s->mu);
	out->rows_written = store_stat_get(&s->rows_written);
	out->batches = store_stat_get(&s->batches);
	out->writer_turns = store_stat_get(&s->writer_turns);
	out->write_errors = store_stat_get(&s->write_errors);
	out->rows_deleted_age = store_stat_get(&s->rows_deleted_age);
	out->rows_deleted_size = store_stat_get(&s->rows_deleted_size);
	out->rows_deleted_retention = out->rows_deleted_age + out->rows_deleted_size;
	out->rows_dropped_error = store_stat_get(&s->rows_dropped_error);
	out->samples_written = store_stat_get(&s->samples_written);
	out->samples_dropped = store_stat_get(&s->samples_dropped);
	out->snapshots = store_stat_get(&s->snapshots);
	for (int i = 0; i < STORE_DROP_REASONS; i++) {
		out->samples_dropped_by[i] = store_stat_get(&s->samples_dropped_by[i]);
		out->snapshots_dropped_by[i] = store_stat_get(&s->snapshots_dropped_by[i]);
	}
	out->db_bytes = store_stat_get(&s->db_bytes);
	for (int i = 0; i < STORE_OP_MAX; i++)
		out->errors[i] = store_stat_get(&s->errors_op[i]);
}

static const char *const store_err_op_names[STORE_OP_MAX] = {
    "commit", "insert", "retention", "snapshot", "checkpoint", "integrity",
};

const char *store_error_op_name(int op)
{
	return op >= 0 && op < STORE_OP_MAX ? store_err_op_names[op] : NULL;
}

int store_set_table_retention(struct store *s, const char *table, uint64_t retention_ms)
{
	if (s->started)
		return -EBUSY;
	for (size_t i = 0; i < s->n_known; i++) {
		if (strcmp(s->known[i].name, table) == 0) {
			s->known[i].retention_ms = retention_ms;
			return 0;
		}
	}
	return -ENOENT;
}

const char *store_path(const struct store *s)
{
	return s->path;
}
