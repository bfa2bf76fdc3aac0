/* SPDX-License-Identifier: MIT */
/*
 * SQLite storage. One writer thread drains a bounded queue of fixed-size rows
 * and commits them in batches (N rows or T ms) with prepared statements; the
 * HTTP side reads through a pool of read-only connections (WAL lets both run
 * at once).
 *
 * Each collector declares its event tables as struct event_table. Every table
 * has "id INTEGER PRIMARY KEY" and "ts INTEGER NOT NULL" (unix ns) first; ids
 * come from one agent-wide sequence, so /api/v1/events can merge tables by id
 * and page with one cursor.
 *
 * Schema: the core schema is versioned with PRAGMA user_version; each table's
 * own migrations are versioned in schema_migrations(component, version).
 */
#ifndef SYSOBS_STORE_H
#define SYSOBS_STORE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

enum store_log_level { STORE_LOG_ERR, STORE_LOG_WARN, STORE_LOG_INFO };

/* Zero fields take defaults: queue_rows 65536, batch_rows 1000, batch_ms 200,
 * busy_timeout_ms 5000, readers 2. */
/* The clocks the writer's timers read (batch deadline, retention, checkpoint
 * and size publishing, commit backoff) and the wall clock that retention's
 * age cutoff reads. NULL in store_config: CLOCK_MONOTONIC and CLOCK_REALTIME.
 * A test sets its own, moves it and calls store_clock_moved(), so timers
 * fire without real sleeps. The stop deadline of store_close() always reads
 * the real clock: it bounds how long a close really takes. */
struct store_clock {
	int64_t (*mono_ns)(void *arg);
	int64_t (*wall_ns)(void *arg);
	void *arg;
};

struct store_config {
	const char *path;      /* database file */
	unsigned queue_rows;   /* bounded queue capacity */
	unsigned batch_rows;   /* commit after this many rows ... */
	unsigned batch_ms;     /* ... or this many ms */
	uint64_t retention_ms; /* delete rows older than this; 0 = keep */
	uint64_t max_bytes;    /* delete oldest rows past this size; 0 = no cap */
	unsigned busy_timeout_ms;
	unsigned readers; /* read-only connections in the pool */
	/* A read on a pooled connection is interrupted past this (0: 5000);
	 * the reader answers -ETIMEDOUT. Keeps one expensive query from
	 * holding an HTTP worker and a reader. */
	unsigned query_timeout_ms;
	/* How long store_reader_get() waits for a free pooled reader before
	 * -EBUSY (0: 2000). */
	unsigned reader_wait_ms;
	/* Where the store's messages go (rate-limited already); NULL = nowhere. */
	void (*log)(enum store_log_level lvl, const char *msg, void *arg);
	void *log_arg;
	const struct store_clock *clock; /* NULL: the real clocks */
};

struct store;

/*
 * Opens (creating if absent) and migrates the database, registering tables
 * (NULL-terminated; may be NULL). Fails with a message in err on an unwritable
 * path, a corrupt file (quick_check) or a schema newer than this binary; it
 * never re-creates an existing file. Does not start the writer thread.
 * The quick_check at open has a 100 ms budget, so start-up time does not grow
 * with the file: a file it does not get through is checked whole in the
 * background (store_start) only when the last stop was unclean (a WAL file
 * was left); a corrupt result is logged and counted (errors, "integrity").
 * On failure errno is EAGAIN when the cause may pass by itself (the
 * database's file system full, another process holding its lock, an I/O
 * error), EINVAL otherwise (a path, permission, corrupt file, schema).
 */
struct store *store_open(const struct store_config *cfg, const struct event_table *const *tables,
			 char *err, size_t errlen);
/* Starts the writer thread. */
int store_start(struct store *s);
/* Wakes the writer to read its clock again (after a test moved
 * store_config.clock), so that timers now due run at once. */
void store_clock_moved(struct store *s);
/* Flushes the queue, stops the writer, checkpoints and closes, within about
 * 1.5 s whatever holds the database lock: rows it could not write by then
 * are logged and counted (rows_lost_close). Accepts NULL. */
void store_close(struct store *s);

/* Copies row (t->row_size bytes) into the queue. Never blocks: returns
 * -EAGAIN when the queue is full (the caller counts it, by
 * store_full_reason()). */
int store_submit(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row);
/* Same, and *id is the id the row will have in its table (and in
 * /api/v1/events) once committed. A row the queue takes is written with that
 * id unless SQLite refuses it on its own (counted in rows_dropped_error) or
 * the agent dies before the commit. */
int store_submit_id(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row,
		    int64_t *id);
/* Queues one metric history sample (series name + rendered label set
 * `{a="b"}`, value) through the same queue as event rows. -EAGAIN when the
 * queue is full, -E2BIG for a name and labels longer than a slot (both
 * counted in samples_dropped, by reason). */
int store_submit_sample(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			double value);
/* store_submit_sample with an opaque blob kept beside the value (metric_samples.buckets:
 * a histogram's buckets on its _count sample). -E2BIG when the sample and
 * the blob do not fit a queue slot; then nothing is counted, so the caller
 * can submit the sample without its blob. */
int store_submit_sample_blob(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			     double value, const void *blob, size_t blob_len);

/* Why a row or sample did not reach the history: the queue was full because
 * the writer's last commit failed for a full disk (disk_full) or another
 * connection's lock (locked), or it was full for no failure (queue_full: a
 * burst the writer had not caught up with); a name and labels longer than a
 * queue slot (too_long); SQLite refused the row on its own (insert_error). */
enum store_drop_reason {
	STORE_DROP_QUEUE_FULL,
	STORE_DROP_DISK_FULL,
	STORE_DROP_LOCKED,
	STORE_DROP_TOO_LONG,
	STORE_DROP_INSERT_ERROR,
	STORE_DROP_REASONS
};
const char *store_drop_reason_name(int reason);
/* The reason a row the queue refuses now is lost (one of the first three). */
enum store_drop_reason store_full_reason(struct store *s);

/* Metric history snapshots are whole or missing: store_snapshot_begin()
 * reserves n queue slots for one snapshot's samples (event rows cannot take
 * them), or returns -EAGAIN with *reason when the queue has no room for all
 * of them; then the snapshot is not queued at all and counted dropped, with
 * its n samples. store_snapshot_end() gives back what the snapshot did not
 * use. Samples beyond n (series added meanwhile) take free slots. A
 * snapshot larger than the whole queue ([storage] queue_rows) reserves
 * nothing and is queued as far as it fits, each lost sample counted. */
int store_snapshot_begin(struct store *s, size_t n, enum store_drop_reason *reason);
void store_snapshot_end(struct store *s);

/* Waits until everything submitted so far is committed (tests, shutdown).
 * Returns 0; -EIO when a commit failed meanwhile (the rows stay queued and
 * the writer retries them); -ENOTCONN when the writer is not running. */
int store_flush(struct store *s);
/* Same, giving up with -ETIMEDOUT after timeout_ms (0 = no limit). */
int store_flush_timeout(struct store *s, unsigned timeout_ms);

/* Read-only connection from the pool; always return it with store_reader_put.
 * Waits up to 2 s when all are in use, then returns NULL (errno EBUSY). */
sqlite3 *store_reader_get(struct store *s);
void store_reader_put(struct store *s, sqlite3 *db);

size_t store_queue_depth(const struct store *s);

#define STORE_ERROR_OPS 6 /* commit, insert, retention, snapshot, checkpoint, integrity */

/* Queue/writer statistics; the agent publishes them as metrics. */
struct store_stats {
	uint64_t rows_written;
	uint64_t rows_dropped_full;  /* queue full (event rows and samples) */
	uint64_t rows_dropped_error; /* a row SQLite refused on its own */
	uint64_t samples_written, samples_dropped;
	uint64_t samples_dropped_by[STORE_DROP_REASONS]; /* samples_dropped by reason */
	uint64_t snapshots, snapshots_dropped_by[STORE_DROP_REASONS];
	uint64_t batches;
	uint64_t writer_turns;	  /* writer loop turns: an idle writer's stay flat */
	uint64_t write_errors;	  /* failed commits (disk full, I/O) */
	uint64_t rows_lost_close; /* queued rows store_close() could not write */
	uint64_t rows_deleted_retention, rows_deleted_age, rows_deleted_size;
	uint64_t db_bytes;
	uint64_t errors[STORE_ERROR_OPS]; /* by store_error_op_name(i) */
	size_t queue_depth;
};
const char *store_error_op_name(int op);
void store_get_stats(struct store *s, struct store_stats *out);

/* Overrides retention for one table (registered, or left by an earlier run);
 * before store_start. -ENOENT for an unknown table, -EBUSY once started. */
int store_set_table_retention(struct store *s, const char *table, uint64_t retention_ms);
const char *store_path(const struct store *s);

#endif
