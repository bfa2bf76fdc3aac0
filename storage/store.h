/* SPDX-License-Identifier: MIT */
/*
 * SQLite storage. One writer thread drains a bounded queue of fixed-size rows
 * and commits them in batches (N rows or T ms) with prepared statements; the
 * HTTP side reads through a pool of read-only connections (WAL lets both run
 * at once).
 *
 * Each collector declares its event tables as struct store_table. Every table
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

#define STORE_ROW_MAX 512 /* largest row struct a table may declare */

struct metrics;

struct store_table {
	const char *name;	       /* SQL table; also the migrations component */
	const char *collector;	       /* owner, for /api/v1/events?collector= */
	const char *const *migrations; /* SQL scripts, NULL-terminated; [0] creates
					* the table with id, ts first + index on ts */
	/* INSERT with ?1 = id, ?2 = ts, the table's columns from ?3 on. */
	const char *insert_sql;
	/* Binds ?3... from row; returns SQLITE_OK or an sqlite error code. */
	int (*bind)(sqlite3_stmt *st, const void *row);
	size_t row_size; /* <= STORE_ROW_MAX */
	/* Optional: retention for this table overrides [storage] retention
	 * (0 = use [storage] retention_ms); see also store_set_table_retention. */
	uint64_t retention_ms;
};

/* Zero fields take defaults: queue_rows 65536, batch_rows 1000, batch_ms 200,
 * busy_timeout_ms 5000, readers 2. */
struct store_config {
	const char *path;      /* database file */
	unsigned queue_rows;   /* bounded queue capacity */
	unsigned batch_rows;   /* commit after this many rows ... */
	unsigned batch_ms;     /* ... or this many ms */
	unsigned snapshot_ms;  /* metric history snapshot period; 0 = off */
	uint64_t retention_ms; /* delete rows older than this; 0 = keep */
	uint64_t max_bytes;    /* delete oldest rows past this size; 0 = no cap */
	unsigned busy_timeout_ms;
	unsigned readers; /* read-only connections in the pool */
};

struct store;

/*
 * Opens (creating if absent) and migrates the database, registering tables
 * (NULL-terminated; may be NULL). Fails with a message in err on an unwritable
 * path, a corrupt file (quick_check) or a schema newer than this binary; it
 * never re-creates an existing file. Does not start the writer thread.
 */
struct store *store_open(const struct store_config *cfg, const struct store_table *const *tables,
			 char *err, size_t errlen);
/* Starts the writer thread; metrics (may be NULL) gets the store's own series
 * and is snapshotted into metric history every snapshot_ms. */
int store_start(struct store *s, struct metrics *m);
/* Flushes the queue, stops the writer, checkpoints and closes. Accepts NULL. */
void store_close(struct store *s);

/* Copies row (t->row_size bytes) into the queue. Never blocks: returns
 * -EAGAIN when the queue is full (counted as dropped, reason="queue_full"). */
int store_submit(struct store *s, const struct store_table *t, int64_t ts_ns, const void *row);
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

const struct store_table *const *store_tables(const struct store *s);
size_t store_queue_depth(const struct store *s);

/* Queue/writer statistics (also exported as metrics once started). */
struct store_stats {
	uint64_t rows_written;
	uint64_t rows_dropped_full; /* queue full */
	uint64_t batches;
	uint64_t write_errors; /* failed commits (disk full, I/O) */
	uint64_t rows_deleted_retention;
	size_t queue_depth;
};
void store_get_stats(struct store *s, struct store_stats *out);

/* Overrides retention for one table (registered, or left by an earlier run);
 * before store_start. -ENOENT for an unknown table, -EBUSY once started. */
int store_set_table_retention(struct store *s, const char *table, uint64_t retention_ms);
const char *store_path(const struct store *s);

#endif
