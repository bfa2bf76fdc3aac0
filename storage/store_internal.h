/* SPDX-License-Identifier: MIT */
/*
 * What the store's files share (storage/store.c: open, start, close;
 * store_migrate.c: migrations; store_check.c: the checks at open;
 * store_queue.c: the submit queue; store_readers.c: the read-only pool;
 * store_writer.c: the writer and checkpointer threads and metric history
 * samples; store_retention.c: deletion by age and size; store_util.c:
 * clocks, logging, statistics, one-shot SQL). Not for use outside storage/.
 */
#ifndef SYSOBS_STORE_INTERNAL_H
#define SYSOBS_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/hash.h"
#include "storage/store.h"

#define STORE_DEF_QUEUE_ROWS	 65536
#define STORE_DEF_BATCH_ROWS	 1000
#define STORE_DEF_BATCH_MS	 200
#define STORE_DEF_BUSY_MS	 5000
#define STORE_DEF_READERS	 2
#define STORE_DELETE_BATCH	 5000 /* rows per retention transaction */
#define STORE_DELETE_BUDGET	 20   /* retention transactions per writer turn */
#define STORE_RETENTION_MS	 60000
#define STORE_RETENTION_AGAIN_MS 50 /* retention had more to do */
#define STORE_CHECKPOINT_MS	 10000
#define STORE_CKPT_FRAMES	 1000 /* WAL frames that wake the checkpointer */
#define STORE_CKPT_HARD_FRAMES	 8192 /* the writer checkpoints itself past this */
#define STORE_PUBLISH_MS	 1000
#define STORE_BACKOFF_MIN_MS	 50
#define STORE_BACKOFF_MAX_MS	 2000
#define STORE_BACKOFF_FULL_MS	 250   /* retry period on a full disk */
#define STORE_LOW_SPACE_MS	 60000 /* checkpoint every commit this long after */
#define STORE_LOW_SPACE_ROWS	 64    /* and commit at most this many rows */
#define STORE_STOP_RETRIES	 3     /* commit attempts left at close when stuck */
#define STORE_STOP_MS		 1000  /* store_close() gives up on locks (agent: 1.7 s) */
#define STORE_OPEN_CHECK_MS	 100   /* quick_check budget at open */
#define STORE_READER_WAIT_MS	 2000
#define STORE_JOURNAL_LIMIT	 (64 * 1024 * 1024)
#define STORE_WAL_MIN		 (256 * 1024) /* the WAL's share of a small max_size, at least */
#define STORE_WAL_FRAME		 (4096 + 24)  /* a WAL frame of a default page, its header */
#define STORE_ROW_BYTES		 512	      /* row_bytes until a commit taught it */
#define STORE_BOUND_SKIPS	 64	      /* commits between two size reads, at most */
#define STORE_SLOT_HDR		 24

/* Slot layout: header, then the row at a 16-byte aligned offset. */
struct store_slot {
	int64_t ts;
	int64_t id; /* event rows: given at submit (store_submit_id) */
	uint32_t table;
	uint32_t pad;
};

_Static_assert(sizeof(struct store_slot) == STORE_SLOT_HDR, "slot header size");

/* In-memory dictionary of metric_series ids ("name\x01labels" -> id); only
 * the writer thread touches it. One allocation an entry, key included. */
struct store_series_ent {
	struct hash_node node; /* in store.series */
	int64_t id;
	char key[];
};

/* A metric history sample in a queue slot (table STORE_TABLE_SAMPLE):
 * the value, the blob's length, then "name\x01labels\0" and the blob. */
#define STORE_TABLE_SAMPLE UINT32_MAX
#define STORE_SAMPLE_MIN   384 /* slot payload kept at least this big */
struct store_sample_row {
	double value;
	uint16_t blob_len; /* metric_samples.buckets; 0: NULL */
	char key[];
};

enum store_err_op {
	STORE_OP_COMMIT,
	STORE_OP_INSERT,
	STORE_OP_RETENTION,
	STORE_OP_SNAPSHOT,
	STORE_OP_CHECKPOINT,
	STORE_OP_INTEGRITY,
	STORE_OP_MAX,
};

_Static_assert(STORE_OP_MAX == STORE_ERROR_OPS, "store_stats.errors size");

/* At most one line per interval per call site, saying how many were
 * swallowed meanwhile (a lost count under a race is harmless). */
struct store_ratelimit {
	int64_t next_ns;
	uint64_t suppressed;
};

/* An event table known to the database: registered now, or created by an
 * earlier run (listed in schema_migrations) whose collector is off today.
 * Both take part in retention and in the id sequence. */
struct store_known_table {
	char *name;
	uint64_t retention_ms; /* 0: [storage] retention_ms */
};

/* A consumer's position in the event tables (storage/store_export.h):
 * retention counts what it deletes past it. Under watch_mu. */
#define STORE_WATCH_MAX 8
struct store_watch {
	struct store *s;
	bool used;
	uint64_t tables;     /* bit i: known[i] */
	int64_t acked, read; /* rows up to acked are delivered; up to read in flight */
	uint64_t deleted;    /* rows past read deleted */
	uint64_t inflight;   /* rows in (acked, read] deleted */
};

struct store {
	struct store_config cfg;
	char *path;
	const struct event_table **tables; /* NULL-terminated copy */
	size_t n_tables;
	struct store_known_table *known;
	size_t n_known;

	sqlite3 *db;	    /* writer connection */
	sqlite3_stmt **ins; /* per registered table */
	sqlite3_stmt *st_begin, *st_commit;
	sqlite3_stmt *st_size; /* page_count, freelist_count, page_size */
	sqlite3_stmt *st_sample, *st_series_get, *st_series_add;

	/* Queue (mu). */
	pthread_mutex_t mu;
	pthread_cond_t cv_writer; /* CLOCK_MONOTONIC */
	pthread_cond_t cv_done;	  /* CLOCK_MONOTONIC */
	unsigned char *ring;
	size_t slot_size;
	uint64_t cap;
	uint64_t head, tail;
	/* Sequence number stored in slot 0. Moved to head whenever the queue
	 * drains, so a lightly loaded agent keeps reusing the first slots and
	 * only touches (makes resident) the few pages they live on. */
	uint64_t base;
	uint64_t flush_target;
	bool writer_idle; /* writer sleeps with an empty queue */
	bool started, stop, writer_done;
	uint64_t dropped_full;
	/* max_size is the database plus its WAL: the WAL gets wal_cap bytes
	 * of it (an eighth, STORE_WAL_MIN to STORE_JOURNAL_LIMIT). A commit
	 * takes at most commit_bytes (a quarter of wal_cap, in rows of
	 * row_bytes, learnt from the commits before), the checkpointer is
	 * woken at ckpt_frames (a quarter) and the writer checkpoints itself
	 * at ckpt_hard_frames (a half): the WAL stays within wal_cap. Before
	 * each commit, size retention makes room for it within
	 * max_size - wal_cap (store_bound_room()). */
	int64_t wal_cap;
	int64_t commit_bytes;
	int64_t row_bytes; /* database bytes a committed row takes, on average */
	/* The size read before a commit costs a read transaction of its own
	 * (two with the learning after it): small commits far under the
	 * bound skip it, within a quarter of the room the last read found
	 * and STORE_BOUND_SKIPS commits (store_bound_room()). */
	int64_t bound_room;
	unsigned bound_skips;
	int ckpt_frames, ckpt_hard_frames;
	/* rows per retention transaction: a deleted row's page is written to
	 * the WAL like an inserted one, so it is a commit's worth of rows */
	int delete_batch;
	uint64_t reserved; /* slots a snapshot in progress holds (store_snapshot_begin) */
	/* The writer's last commit: SQLITE_OK, or why it failed (the reason
	 * the queue is full: store_full_reason()). Atomic. */
	int writer_rc;

	/* Next event row id: given under mu when a row is queued, so the
	 * submitter knows it at once (exemplars point at rows by id); the
	 * writer inserts with the slot's id. A row SQLite refuses leaves a
	 * gap; rows of a rolled-back batch keep their ids for the retry. */
	int64_t next_id;

	/* Set by store_close(): from then on the writer connection's busy
	 * handler gives up at this time (mono ns), whoever holds the lock. */
	int64_t stop_deadline;
	int64_t busy_since; /* writer connection: first busy call of this wait */

	/* Writer state (writer thread only once started). */
	int64_t batch_deadline;
	int64_t retry_at;
	int64_t low_space_until; /* after SQLITE_FULL: checkpoint every commit */
	unsigned backoff_ms;
	int64_t next_retention, next_checkpoint, next_publish;
	struct hash_table series; /* of struct store_series_ent */
	uint64_t samples_written, samples_dropped;
	uint64_t samples_dropped_by[STORE_DROP_REASONS];
	uint64_t snapshots, snapshots_dropped_by[STORE_DROP_REASONS];

	/* Statistics (atomics). */
	uint64_t rows_written, batches, write_errors, rows_dropped_error;
	uint64_t writer_turns; /* writer loop iterations */
	uint64_t rows_lost_close;
	uint64_t rows_deleted_age, rows_deleted_size;
	uint64_t errors_op[STORE_OP_MAX];
	uint64_t db_bytes;

	/* Reader pool (rd_mu). */
	pthread_mutex_t rd_mu;
	pthread_cond_t rd_cv;
	sqlite3 **readers;
	size_t n_readers;
	sqlite3 **rd_free;
	int64_t *rd_deadline; /* per readers[i]: monotonic ns, 0 when idle */
	size_t n_free;

	struct store_ratelimit rl_commit, rl_insert, rl_maint, rl_submit;
	pthread_t thread;

	pthread_mutex_t watch_mu;
	struct store_watch watches[STORE_WATCH_MAX];

	/* Checkpointer thread: own connection, PASSIVE checkpoints when the
	 * WAL grows (woken by the writer's WAL hook) and every 10 s, so the
	 * copy into the database file and its fsync stay off the writer. */
	sqlite3 *ck_db;
	pthread_t ck_thread;
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	pthread_cond_t ck_done_cv; /* signalled when ck_running goes false */
	bool ck_pending, ck_stop, ck_started;
	bool ck_running; /* a checkpoint of ck_db is under way */

	/* quick_check thread (store_open_check()): own read-only connection;
	 * after an unclean stop it goes on in the background (ic_bg) when the
	 * file takes longer than STORE_OPEN_CHECK_MS; store_close()
	 * interrupts it. ic_rc, ic_err, ic_done, ic_bg under ic_mu. */
	bool ic_started;
	sqlite3 *ic_db;
	pthread_t ic_thread;
	pthread_mutex_t ic_mu;
	bool ic_done, ic_bg;
	int ic_rc;
	char ic_err[512];
};

/* store_util.c */
int64_t store_mono_ns(void);
void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
	       enum store_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void store_abs_mono(int64_t ns, struct timespec *out);
/* The store's clocks: store_config.clock, else the real ones. */
int64_t store_now(const struct store *s);
int64_t store_now_wall(const struct store *s);
/* Waits on cv (CLOCK_MONOTONIC, mu held) until deadline on store_now()'s
 * clock, a signal, or a spurious wake-up. */
void store_wait_until(const struct store *s, pthread_cond_t *cv, pthread_mutex_t *mu,
		      int64_t deadline);
void store_stat_add(uint64_t *p, uint64_t v);
/* Counts n samples lost (samples_dropped and its reason). */
void store_samples_lost(struct store *s, enum store_drop_reason reason, uint64_t n);
uint64_t store_stat_get(const uint64_t *p);
void store_count_error(struct store *s, enum store_err_op op);
int store_query_int(sqlite3 *db, const char *sql, int64_t *out);
int store_exec_rows(sqlite3 *db, const char *sql);
void store_rollback(struct store *s); /* ROLLBACK unless in autocommit */

/* store_migrate.c: the core schema, then one event table brought up to its
 * descriptor. 0, or -errno with err set. */
int store_migrate_core(struct store *s, char *err, size_t errlen);
int store_migrate_table(struct store *s, const struct event_table *t, char *err, size_t errlen);

/* store_check.c */
int store_check_path(const char *path, char *err, size_t errlen);
/* The file system of path's directory has no block (or inode) left for an
 * unprivileged writer. */
bool store_dir_full(const char *path);
bool store_unclean_stop(const char *path); /* a WAL file was left beside it */
/* quick_check at open, bounded in time (may go on in the background). */
int store_open_check(struct store *s, bool unclean, char *err, size_t errlen);
void store_ic_stop(struct store *s); /* interrupts and joins the check */

/* store_readers.c: the cfg.readers read-only connections. */
int store_open_readers(struct store *s, char *err, size_t errlen);

/* store_writer.c */
int store_write_batch(struct store *s, uint64_t start, uint64_t n);
void store_series_forget(struct store *s);
void *store_writer_main(void *arg);
void store_ckpt_start(struct store *s);
void store_ckpt_stop(struct store *s);

/* store_retention.c */
int store_db_size(struct store *s, int64_t *used, int64_t *total);
bool store_retention(struct store *s);
/* With max_size: the rows of n the next commit may take, so that its WAL
 * frames fit commit_bytes. */
uint64_t store_bound_rows(const struct store *s, uint64_t n);
/* With max_size, before a commit of n rows: size retention now if they
 * would carry the database past max_size - wal_cap; *used gets the pages
 * in use after it (for store_bound_learn). */
void store_bound_room(struct store *s, uint64_t n, int64_t *used);
/* After a commit of n rows that began at used bytes: learns row_bytes. */
void store_bound_learn(struct store *s, uint64_t n, int64_t used);

/* store_export.c */
/* Retention deleted row id of known[table]: counted for every watch of
 * that table past which it lay (store_export.c). Call after the commit. */
void store_watch_deleted(struct store *s, size_t table, const int64_t *ids, size_t n);

/* The slot of queue sequence number seq. */
static inline struct store_slot *store_slot_at(const struct store *s, uint64_t seq)
{
	return (struct store_slot *)(s->ring + ((seq - s->base) % s->cap) * s->slot_size);
}

#endif
