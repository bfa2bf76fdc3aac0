// SPDX-License-Identifier: MIT
/*
 * SQLite storage: open + migrations, the bounded submit queue, the writer
 * thread (batched commits with retry, metric history samples, retention,
 * checkpoints) and the pool of read-only connections. See store.h.
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
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_schema.h"

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
#define STORE_STOP_RETRIES	 3 /* commit attempts left at close when stuck */
#define STORE_READER_WAIT_MS	 2000
#define STORE_JOURNAL_LIMIT	 (64 * 1024 * 1024)
#define STORE_SLOT_HDR		 16

/* Slot layout: header, then the row at a 16-byte aligned offset. */
struct store_slot {
	int64_t ts;
	uint32_t table;
	uint32_t pad;
};

_Static_assert(sizeof(struct store_slot) == STORE_SLOT_HDR, "slot header size");

/* In-memory dictionary of metric_series ids ("name\x01labels" -> id); only
 * the writer thread touches it. Open addressing, power-of-two size. */
struct store_series_ent {
	char *key;
	uint64_t hash;
	int64_t id;
};

/* A metric history sample in a queue slot (table STORE_TABLE_SAMPLE):
 * the value, then "name\x01labels\0". */
#define STORE_TABLE_SAMPLE UINT32_MAX
#define STORE_SAMPLE_MIN   384 /* slot payload kept at least this big */
struct store_sample_row {
	double value;
	char key[];
};

enum store_err_op {
	STORE_OP_COMMIT,
	STORE_OP_INSERT,
	STORE_OP_RETENTION,
	STORE_OP_SNAPSHOT,
	STORE_OP_CHECKPOINT,
	STORE_OP_MAX,
};

_Static_assert(STORE_OP_MAX == STORE_ERROR_OPS, "store_stats.errors size");

static const char *const store_err_op_names[STORE_OP_MAX] = {
    "commit", "insert", "retention", "snapshot", "checkpoint",
};

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

	/* Writer state (writer thread only once started). */
	int64_t next_id;
	int64_t batch_deadline;
	int64_t retry_at;
	unsigned backoff_ms;
	int64_t next_retention, next_checkpoint, next_publish;
	struct store_series_ent *series;
	size_t series_cap, series_len;
	uint64_t samples_written, samples_dropped;

	/* Statistics (atomics). */
	uint64_t rows_written, batches, write_errors, rows_dropped_error;
	uint64_t rows_deleted_age, rows_deleted_size;
	uint64_t errors_op[STORE_OP_MAX];
	uint64_t db_bytes;

	/* Reader pool (rd_mu). */
	pthread_mutex_t rd_mu;
	pthread_cond_t rd_cv;
	sqlite3 **readers;
	size_t n_readers;
	sqlite3 **rd_free;
	size_t n_free;

	struct store_ratelimit rl_commit, rl_insert, rl_maint, rl_submit;
	pthread_t thread;

	/* Checkpointer thread: own connection, PASSIVE checkpoints when the
	 * WAL grows (woken by the writer's WAL hook) and every 10 s, so the
	 * copy into the database file and its fsync stay off the writer. */
	sqlite3 *ck_db;
	pthread_t ck_thread;
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	bool ck_pending, ck_stop, ck_started;
};

/* Core schema, versioned with PRAGMA user_version: entry i brings the
 * database from version i to i + 1. Append only; never edit a shipped entry. */
static const char *const store_core_migrations[] = {
    /* 1 */
    "CREATE TABLE schema_migrations(component TEXT PRIMARY KEY, version INTEGER NOT NULL);"
    "CREATE TABLE store_meta(key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE metric_series(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " labels TEXT NOT NULL, UNIQUE(name, labels));"
    "CREATE TABLE metric_samples(series_id INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL);"
    "CREATE INDEX metric_samples_series_ts ON metric_samples(series_id, ts);"
    "CREATE INDEX metric_samples_ts ON metric_samples(ts);",
    NULL,
};

static int64_t store_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Messages go to the agent's logger (store_config.log), never to stderr
 * directly: the store has no logger of its own. rl may be NULL. */
static void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
		      enum store_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
		      enum store_log_level lvl, const char *fmt, ...)
{
	char msg[512];
	size_t n = 0;
	va_list ap;

	if (!s->cfg.log)
		return;
	if (rl) {
		int64_t now = store_mono_ns();

		if (now < __atomic_load_n(&rl->next_ns, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
			return;
		}
		__atomic_store_n(&rl->next_ns, now + (int64_t)interval_ms * 1000000,
				 __ATOMIC_RELAXED);
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rl && rl->suppressed) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, " (%" PRIu64 " similar suppressed)",
			 __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED));
	}
	s->cfg.log(lvl, msg, s->cfg.log_arg);
}

static int64_t store_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void store_abs_mono(int64_t ns, struct timespec *out)
{
	out->tv_sec = ns / 1000000000;
	out->tv_nsec = ns % 1000000000;
}

static void store_stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static uint64_t store_stat_get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store_count_error(struct store *s, enum store_err_op op)
{
	store_stat_add(&s->errors_op[op], 1);
}

/* Table names end up in SQL text: accept plain identifiers only. */
/* Runs one SQL statement returning a single integer (PRAGMA, SELECT). */
static int store_query_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		*out = 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Runs a PRAGMA or statement to completion, ignoring result rows. */
static int store_exec_rows(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Runs script inside one transaction and then `tail` (a version bump),
 * rolling back everything on failure. */
static int store_migrate_step(sqlite3 *db, const char *script, sqlite3_stmt *bump, char *err,
			      size_t errlen, const char *what)
{
	char *msg = NULL;
	int rc;

	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_exec(db, script, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_rollback;
	rc = sqlite3_step(bump);
	sqlite3_reset(bump);
	if (rc != SQLITE_DONE) {
		msg = sqlite3_mprintf("%s", sqlite3_errmsg(db));
		goto out_rollback;
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_rollback;
	return 0;

out_rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out_err:
	snprintf(err, errlen, "%s: %s", what, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return -EIO;
}

static int store_migrate_core(struct store *s, char *err, size_t errlen)
{
	size_t known = 0;
	int64_t ver;
	char what[96];
	int rc;

	while (store_core_migrations[known])
		known++;
	rc = store_query_int(s->db, "PRAGMA user_version", &ver);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: reading user_version: %s", s->path,
			 sqlite3_errmsg(s->db));
		return -EIO;
	}
	if (ver < 0 || (uint64_t)ver > known) {
		snprintf(err, errlen,
			 "%s: schema version %" PRId64 " is newer than this sysobsd knows (%zu); "
			 "refusing to touch it",
			 s->path, ver, known);
		return -EPROTO;
	}
	for (size_t v = (size_t)ver; v < known; v++) {
		char bump_sql[64];
		sqlite3_stmt *bump;

		snprintf(bump_sql, sizeof(bump_sql), "PRAGMA user_version = %zu", v + 1);
		rc = sqlite3_prepare_v2(s->db, bump_sql, -1, &bump, NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
			return -EIO;
		}
		snprintf(what, sizeof(what), "%s: core migration %zu", s->path, v + 1);
		rc = store_migrate_step(s->db, store_core_migrations[v], bump, err, errlen, what);
		sqlite3_finalize(bump);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Brings one event table up to its descriptor. Versions in schema_migrations:
 * 1 = the table exists; each entry of t->migrations (data changes) adds one.
 * A new table is created from its columns at the latest version; an existing
 * one gets the columns it lacks, then the migrations past its version. Then
 * its indexes (IF NOT EXISTS). All in one transaction.
 */
static int store_migrate_table(struct store *s, const struct event_table *t, char *err,
			       size_t errlen)
{
	sqlite3_stmt *get = NULL, *bump = NULL;
	size_t known = 0;
	int64_t ver = 0;
	char what[160], sql[4096];
	int rc, ret = -EIO;

	while (t->migrations && t->migrations[known])
		known++;
	rc = sqlite3_prepare_v2(s->db, "SELECT version FROM schema_migrations WHERE component = ?1",
				-1, &get, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	sqlite3_bind_text(get, 1, t->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(get);
	if (rc == SQLITE_ROW)
		ver = sqlite3_column_int64(get, 0);
	else if (rc != SQLITE_DONE)
		goto out_sql;
	if (ver < 0 || (uint64_t)ver > known + 1) {
		snprintf(err, errlen,
			 "%s: table %s is at schema version %" PRId64
			 ", newer than this sysobsd knows (%zu); refusing to touch it",
			 s->path, t->name, ver, known + 1);
		ret = -EPROTO;
		goto out;
	}
	rc = sqlite3_prepare_v2(s->db,
				"INSERT INTO schema_migrations(component, version) VALUES(?1, ?2)"
				" ON CONFLICT(component) DO UPDATE SET version = excluded.version",
				-1, &bump, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	sqlite3_bind_text(bump, 1, t->name, -1, SQLITE_STATIC);
	if (ver == 0) {
		if (store_schema_create_sql(t, sql, sizeof(sql))) {
			snprintf(err, errlen, "table %s: CREATE too long", t->name);
			goto out;
		}
		sqlite3_bind_int64(bump, 2, (int64_t)known + 1);
		snprintf(what, sizeof(what), "%s: creating table %s", s->path, t->name);
		ret = store_migrate_step(s->db, sql, bump, err, errlen, what);
		if (ret)
			goto out;
		ver = (int64_t)known + 1;
	}
	ret = store_schema_add_columns(s->db, t, err, errlen);
	if (ret)
		goto out;
	for (size_t v = (size_t)ver; v < known + 1; v++) {
		sqlite3_reset(bump);
		sqlite3_bind_int64(bump, 2, (int64_t)v + 1);
		snprintf(what, sizeof(what), "%s: table %s migration %zu", s->path, t->name, v + 1);
		ret = store_migrate_step(s->db, t->migrations[v - 1], bump, err, errlen, what);
		if (ret)
			goto out;
	}
	for (const char *const *ix = t->indexes; ix && *ix; ix++) {
		if (sqlite3_exec(s->db, *ix, NULL, NULL, NULL) != SQLITE_OK)
			goto out_sql;
	}
	ret = 0;
	goto out;

out_sql:
	snprintf(err, errlen, "%s: table %s: %s", s->path, t->name, sqlite3_errmsg(s->db));
out:
	sqlite3_finalize(get);
	sqlite3_finalize(bump);
	return ret;
}

/* Checks the path before SQLite sees it: SQLite would happily open an
 * unwritable file read-only or create a file we cannot use. */
static int store_check_path(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *dir, *slash;
	int ret = 0;

	if (!path || !*path) {
		snprintf(err, errlen, "storage path is empty");
		return -EINVAL;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s: not a regular file", path);
			return -EINVAL;
		}
		if (access(path, R_OK | W_OK) != 0) {
			snprintf(err, errlen, "%s: not writable: %s", path, strerror(errno));
			return -EACCES;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	dir = strdup(path);
	if (!dir) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: directory %s does not exist", path, dir);
		ret = -ENOENT;
	} else if (access(dir, W_OK | X_OK) != 0) {
		snprintf(err, errlen, "%s: directory %s is not writable: %s", path, dir,
			 strerror(errno));
		ret = -EACCES;
	}
	free(dir);
	return ret;
}

/* PRAGMA quick_check must say "ok"; a file that is not a database fails
 * already at prepare/step with SQLITE_NOTADB. */
static int store_check_integrity(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		goto out_err;
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		snprintf(err, errlen,
			 "%s: database is corrupt (quick_check: %s); move it aside, it is not "
			 "re-created automatically",
			 s->path, sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		return -EUCLEAN;
	}
	sqlite3_finalize(st);
	return 0;

out_err:
	snprintf(err, errlen, "%s: %s%s", s->path, sqlite3_errmsg(s->db),
		 (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT
		     ? " (not a sysobs database, or corrupt; it is not re-created "
		       "automatically)"
		     : "");
	return -EUCLEAN;
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
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %d", STORE_JOURNAL_LIMIT);
	if (store_exec_rows(s->db, "PRAGMA synchronous = NORMAL") != SQLITE_OK ||
	    store_exec_rows(s->db, sql) != SQLITE_OK ||
	    store_exec_rows(s->db, "PRAGMA foreign_keys = OFF") != SQLITE_OK ||
	    store_exec_rows(s->db, "PRAGMA wal_autocheckpoint = 2000") != SQLITE_OK ||
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
		int64_t max;

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
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
		    s->db, "INSERT INTO metric_samples(series_id, ts, value) VALUES(?1, ?2, ?3)",
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

static int store_open_readers(struct store *s, char *err, size_t errlen)
{
	s->readers = calloc(s->cfg.readers, sizeof(*s->readers));
	s->rd_free = calloc(s->cfg.readers, sizeof(*s->rd_free));
	if (!s->readers || !s->rd_free) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->cfg.readers; i++) {
		sqlite3 *db = NULL;
		int rc;

		rc =
		    sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: read-only connection: %s", s->path,
				 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
			sqlite3_close(db);
			return -EIO;
		}
		sqlite3_busy_timeout(db, (int)s->cfg.busy_timeout_ms);
		s->readers[s->n_readers++] = db;
		s->rd_free[s->n_free++] = db;
	}
	return 0;
}

static void store_free(struct store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_readers; i++)
		sqlite3_close(s->readers[i]);
	free(s->readers);
	free(s->rd_free);
	for (size_t i = 0; s->ins && i < s->n_tables; i++)
		sqlite3_finalize(s->ins[i]);
	free(s->ins);
	sqlite3_finalize(s->st_begin);
	sqlite3_finalize(s->st_commit);
	sqlite3_finalize(s->st_sample);
	sqlite3_finalize(s->st_series_get);
	sqlite3_finalize(s->st_series_add);
	if (s->ck_db)
		sqlite3_close(s->ck_db);
	if (s->db)
		sqlite3_close(s->db);
	for (size_t i = 0; i < s->series_cap; i++)
		free(s->series[i].key);
	free(s->series);
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
	pthread_cond_destroy(&s->ck_cv);
	free(s);
}

static int store_init_sync(struct store *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rd_mu, NULL);
	pthread_mutex_init(&s->ck_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv_writer, &ca);
	pthread_cond_init(&s->cv_done, &ca);
	pthread_cond_init(&s->rd_cv, &ca);
	pthread_cond_init(&s->ck_cv, &ca);
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

struct store *store_open(const struct store_config *cfg, const struct event_table *const *tables,
			 char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct store *s;
	int64_t n_objects = 0, ver = 0;
	bool fresh;
	int rc;

	pthread_once(&once, store_sqlite_config);
	if (store_check_path(cfg->path, err, errlen))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	store_init_sync(s);
	s->cfg = *cfg;
	s->path = strdup(cfg->path);
	if (!s->cfg.queue_rows)
		s->cfg.queue_rows = STORE_DEF_QUEUE_ROWS;
	if (!s->cfg.batch_rows)
		s->cfg.batch_rows = STORE_DEF_BATCH_ROWS;
	if (s->cfg.batch_rows > s->cfg.queue_rows)
		s->cfg.batch_rows = s->cfg.queue_rows;
	if (!s->cfg.batch_ms)
		s->cfg.batch_ms = STORE_DEF_BATCH_MS;
	if (!s->cfg.busy_timeout_ms)
		s->cfg.busy_timeout_ms = STORE_DEF_BUSY_MS;
	if (!s->cfg.readers)
		s->cfg.readers = STORE_DEF_READERS;
	s->cfg.path = s->path;

	while (tables && tables[s->n_tables])
		s->n_tables++;
	s->tables = calloc(s->n_tables + 1, sizeof(*s->tables));
	if (!s->path || !s->tables) {
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < s->n_tables; i++)
		s->tables[i] = tables[i];
	if (store_check_tables(s, err, errlen))
		goto out_free;
	s->cap = s->cfg.queue_rows;
	s->ring = calloc(s->cap, s->slot_size);
	if (!s->ring) {
		snprintf(err, errlen, "out of memory for a queue of %" PRIu64 " rows", s->cap);
		goto out_free;
	}

	rc =
	    sqlite3_open_v2(s->path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path,
			 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		goto out_free;
	}
	if (sqlite3_db_readonly(s->db, "main")) {
		snprintf(err, errlen, "%s: opened read-only; the agent needs to write it", s->path);
		goto out_free;
	}
	sqlite3_busy_timeout(s->db, (int)s->cfg.busy_timeout_ms);
	sqlite3_extended_result_codes(s->db, 1);
	if (store_check_integrity(s, err, errlen))
		goto out_free;
	if (store_query_int(s->db, "SELECT count(*) FROM sqlite_master", &n_objects) != SQLITE_OK ||
	    store_query_int(s->db, "PRAGMA user_version", &ver) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
		goto out_free;
	}
	fresh = n_objects == 0 && ver == 0;
	if (store_pragmas(s, fresh, err, errlen))
		goto out_free;
	if (store_migrate_core(s, err, errlen))
		goto out_free;
	for (size_t i = 0; i < s->n_tables; i++) {
		if (store_migrate_table(s, s->tables[i], err, errlen))
			goto out_free;
	}
	if (store_load_known(s, err, errlen))
		goto out_free;
	if (store_prepare_writer(s, err, errlen))
		goto out_free;
	if (store_open_readers(s, err, errlen))
		goto out_free;
	return s;

out_free:
	store_free(s);
	return NULL;
}

/* ---- queue ---- */

static int store_table_index(const struct store *s, const struct event_table *t)
{
	for (size_t i = 0; i < s->n_tables; i++) {
		if (s->tables[i] == t)
			return (int)i;
	}
	return -1;
}

static inline struct store_slot *store_slot_at(const struct store *s, uint64_t seq)
{
	return (struct store_slot *)(s->ring + ((seq - s->base) % s->cap) * s->slot_size);
}

/* Copies a row (len bytes, then tail bytes of tail_len) into the next slot.
 * Never waits: -EAGAIN when the queue is full or closing. */
static int store_enqueue(struct store *s, uint32_t table, int64_t ts_ns, const void *row,
			 size_t len, const void *tail, size_t tail_len)
{
	struct store_slot *slot;
	uint64_t depth;

	pthread_mutex_lock(&s->mu);
	depth = s->head - s->tail;
	if (depth >= s->cap || s->stop) {
		s->dropped_full++;
		pthread_mutex_unlock(&s->mu);
		return -EAGAIN;
	}
	slot = store_slot_at(s, s->head);
	slot->ts = ts_ns;
	slot->table = table;
	memcpy((unsigned char *)slot + STORE_SLOT_HDR, row, len);
	if (tail_len)
		memcpy((unsigned char *)slot + STORE_SLOT_HDR + len, tail, tail_len);
	__atomic_store_n(&s->head, s->head + 1, __ATOMIC_RELAXED);
	/* Wake the writer once when it sleeps on an empty queue, and when a
	 * full batch is ready; otherwise its batch_ms timer wakes it. */
	if (s->writer_idle || depth + 1 == s->cfg.batch_rows) {
		s->writer_idle = false;
		pthread_cond_signal(&s->cv_writer);
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int store_submit(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row)
{
	int idx = store_table_index(s, t);

	if (idx < 0)
		return -ENOENT;
	return store_enqueue(s, (uint32_t)idx, ts_ns, row, t->row_size, NULL, 0);
}

int store_submit_sample(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			double value)
{
	size_t nlen = strlen(name), llen = strlen(labels);
	char key[STORE_SAMPLE_MIN];

	if (sizeof(struct store_sample_row) + nlen + llen + 2 > s->slot_size - STORE_SLOT_HDR ||
	    nlen + llen + 2 > sizeof(key)) {
		store_stat_add(&s->samples_dropped, 1);
		return -E2BIG;
	}
	memcpy(key, name, nlen);
	key[nlen] = '\x01';
	memcpy(key + nlen + 1, labels, llen + 1);
	return store_enqueue(s, STORE_TABLE_SAMPLE, ts_ns, &value, sizeof(value), key,
			     nlen + llen + 2);
}

size_t store_queue_depth(const struct store *s)
{
	uint64_t head = __atomic_load_n(&s->head, __ATOMIC_RELAXED);
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_RELAXED);

	return head > tail ? (size_t)(head - tail) : 0;
}

const struct event_table *const *store_tables(const struct store *s)
{
	return (const struct event_table *const *)s->tables;
}

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

static void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/*
 * Inserts rows [start, start + n) of the ring in one transaction. Returns 0
 * when committed, or a transient SQLite code after rolling back (the caller
 * keeps the rows and retries). A row that fails on its own (bind error,
 * constraint) is skipped and counted, it would fail forever otherwise.
 */
static int store_write_sample(struct store *s, struct store_slot *slot);
static void store_series_forget(struct store *s);

static int store_write_batch(struct store *s, uint64_t start, uint64_t n)
{
	int64_t id0 = s->next_id;
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
		sqlite3_bind_int64(st, 1, s->next_id);
		sqlite3_bind_int64(st, 2, slot->ts);
		rc = store_schema_bind(st, t, (unsigned char *)slot + STORE_SLOT_HDR);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE) {
			s->next_id++;
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
	store_stat_add(&s->samples_dropped, skipped_samples);
	store_stat_add(&s->batches, 1);
	return 0;

out_fail:
	store_rollback(s);
	/* Series added inside the rolled-back transaction are gone again. */
	store_series_forget(s);
	s->next_id = id0;
	return rc ? rc : SQLITE_ERROR;
}

/* ---- metric history ---- */

static uint64_t store_hash(const char *key)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

static struct store_series_ent *store_series_find(struct store *s, const char *key, uint64_t h)
{
	if (!s->series_cap)
		return NULL;
	for (size_t i = h & (s->series_cap - 1);; i = (i + 1) & (s->series_cap - 1)) {
		struct store_series_ent *e = &s->series[i];

		if (!e->key)
			return e;
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	}
}

static int store_series_insert(struct store *s, char *key, int64_t id)
{
	struct store_series_ent *e;
	uint64_t h = store_hash(key);

	if ((s->series_len + 1) * 2 > s->series_cap) {
		size_t ncap = s->series_cap ? s->series_cap * 2 : 256;
		struct store_series_ent *old = s->series;
		size_t ocap = s->series_cap;

		s->series = calloc(ncap, sizeof(*s->series));
		if (!s->series) {
			s->series = old;
			return -ENOMEM;
		}
		s->series_cap = ncap;
		for (size_t i = 0; i < ocap; i++) {
			if (!old[i].key)
				continue;
			*store_series_find(s, old[i].key, old[i].hash) = old[i];
		}
		free(old);
	}
	e = store_series_find(s, key, h);
	if (e->key) {
		free(key);
		e->id = id;
		return 0;
	}
	e->key = key;
	e->hash = h;
	e->id = id;
	s->series_len++;
	return 0;
}

static void store_series_forget(struct store *s)
{
	for (size_t i = 0; i < s->series_cap; i++)
		free(s->series[i].key);
	memset(s->series, 0, s->series_cap * sizeof(*s->series));
	s->series_len = 0;
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

	if (e && e->key) {
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
	if (rc == SQLITE_OK) {
		char *dup = strdup(key);

		/* Not cached: looked up again next time, nothing lost. */
		if (dup && store_series_insert(s, dup, id))
			free(dup);
	}
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
	rc = sqlite3_step(s->st_sample);
	sqlite3_reset(s->st_sample);
	return rc;
}

/* ---- retention ---- */

static int store_db_size(struct store *s, int64_t *used, int64_t *total)
{
	int64_t pages, free_pages, page_size;

	if (store_query_int(s->db, "PRAGMA page_count", &pages) != SQLITE_OK ||
	    store_query_int(s->db, "PRAGMA freelist_count", &free_pages) != SQLITE_OK ||
	    store_query_int(s->db, "PRAGMA page_size", &page_size) != SQLITE_OK)
		return -EIO;
	*total = pages * page_size;
	*used = (pages - free_pages) * page_size;
	__atomic_store_n(&s->db_bytes, (uint64_t)*total, __ATOMIC_RELAXED);
	return 0;
}

/* Runs sql (with ?1 bound to arg) in its own transaction, recording the id
 * high-water mark so deleting the newest rows cannot make ids restart.
 * Returns rows changed, or -1. */
static int64_t store_delete_txn(struct store *s, const char *sql, int64_t arg)
{
	sqlite3_stmt *st = NULL, *meta = NULL;
	int64_t changed = -1;
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
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		goto out_rollback;
	changed = sqlite3_changes(s->db);
	sqlite3_bind_int64(meta, 1, s->next_id - 1);
	rc = sqlite3_step(meta);
	if (rc != SQLITE_DONE)
		goto out_rollback;
	rc = sqlite3_step(s->st_commit);
	sqlite3_reset(s->st_commit);
	if (rc == SQLITE_DONE)
		goto out;
out_rollback:
	changed = -1;
	store_rollback(s);
out:
	if (changed < 0) {
		store_count_error(s, STORE_OP_RETENTION);
		store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "retention: %s",
			  sqlite3_errmsg(s->db));
	}
	sqlite3_finalize(st);
	sqlite3_finalize(meta);
	return changed;
}

/* Deletes rows older than their table's retention, STORE_DELETE_BATCH per
 * transaction. *budget counts transactions left for this turn. Returns true
 * when it ran out of budget with work left. */
static bool store_retain_age(struct store *s, int *budget)
{
	int64_t now = store_wall_ns();

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
			 " WHERE ts < ?1 LIMIT %d)",
			 name, name, STORE_DELETE_BATCH);
		do {
			if (*budget <= 0)
				return true;
			(*budget)--;
			n = store_delete_txn(s, sql, cutoff);
			if (n > 0)
				store_stat_add(&s->rows_deleted_age, (uint64_t)n);
		} while (n == STORE_DELETE_BATCH);
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

/* One step of size retention: the STORE_DELETE_BATCH oldest event rows
 * across all tables (by global id) plus metric samples up to the newest of
 * their timestamps. Returns rows deleted, 0 when nothing is left, -1. */
static int64_t store_retain_size_step(struct store *s)
{
	struct store_idts *v;
	size_t n = 0;
	int64_t cut_id, cut_ts = INT64_MIN, total = 0, k;
	char sql[256];
	int rc;

	v = malloc(sizeof(*v) * STORE_DELETE_BATCH * (s->n_known ? s->n_known : 1));
	if (!v)
		return -1;
	for (size_t i = 0; i < s->n_known; i++) {
		sqlite3_stmt *st;

		snprintf(sql, sizeof(sql), "SELECT id, ts FROM \"%s\" ORDER BY id LIMIT %d",
			 s->known[i].name, STORE_DELETE_BATCH);
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
			 "metric_samples ORDER BY rowid LIMIT %d) AND ?1 = ?1",
			 STORE_DELETE_BATCH);
		return store_delete_txn(s, sql, 0);
	}
	qsort(v, n, sizeof(*v), store_idts_cmp);
	k = n < STORE_DELETE_BATCH ? (int64_t)n : STORE_DELETE_BATCH;
	cut_id = v[k - 1].id;
	for (int64_t i = 0; i < k; i++)
		cut_ts = v[i].ts > cut_ts ? v[i].ts : cut_ts;
	free(v);
	for (size_t i = 0; i < s->n_known; i++) {
		int64_t d;

		snprintf(sql, sizeof(sql), "DELETE FROM \"%s\" WHERE id <= ?1", s->known[i].name);
		d = store_delete_txn(s, sql, cut_id);
		if (d < 0)
			return -1;
		total += d;
	}
	snprintf(sql, sizeof(sql),
		 "DELETE FROM metric_samples WHERE rowid IN (SELECT rowid FROM metric_samples"
		 " WHERE ts <= ?1 LIMIT %d)",
		 STORE_DELETE_BATCH);
	k = store_delete_txn(s, sql, cut_ts);
	if (k < 0)
		return -1;
	return total + k;
}

static bool store_retain_size(struct store *s, int *budget)
{
	int64_t used, total, n;

	if (!s->cfg.max_bytes)
		return false;
	for (;;) {
		if (store_db_size(s, &used, &total))
			return false;
		if ((uint64_t)used <= s->cfg.max_bytes)
			return false;
		if (*budget <= 0)
			return true;
		(*budget)--;
		n = store_retain_size_step(s);
		if (n <= 0)
			return false;
		store_stat_add(&s->rows_deleted_size, (uint64_t)n);
	}
}

/* Age, then size; then gives freed pages back to the file system. Returns
 * true when it stopped early with rows left to delete. */
static bool store_retention(struct store *s)
{
	int budget = STORE_DELETE_BUDGET;
	int64_t before =
	    (int64_t)(store_stat_get(&s->rows_deleted_age) + store_stat_get(&s->rows_deleted_size));
	bool more;
	int64_t used, total;

	more = store_retain_age(s, &budget);
	if (!more)
		more = store_retain_size(s, &budget);
	if ((int64_t)(store_stat_get(&s->rows_deleted_age) +
		      store_stat_get(&s->rows_deleted_size)) != before &&
	    store_exec_rows(s->db, "PRAGMA incremental_vacuum") != SQLITE_OK) {
		store_count_error(s, STORE_OP_RETENTION);
		store_log(s, &s->rl_maint, 60000, STORE_LOG_WARN, "incremental_vacuum: %s",
			  sqlite3_errmsg(s->db));
	}
	store_db_size(s, &used, &total);
	return more;
}

/* ---- own metrics ---- */

/* ---- writer thread ---- */

static int store_checkpoint(struct store *s, sqlite3 *db);

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

static void *store_writer_main(void *arg)
{
	struct store *s = arg;
	unsigned stop_retries = STORE_STOP_RETRIES;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		int64_t now = store_mono_ns(), wake;
		uint64_t depth, n, start;
		bool due;
		int rc;

		if (now >= store_next_timer(s) && !s->stop) {
			pthread_mutex_unlock(&s->mu);
			store_maintenance(s, now);
			pthread_mutex_lock(&s->mu);
			continue;
		}
		depth = s->head - s->tail;
		if (s->stop && (depth == 0 || stop_retries == 0))
			break;
		if (s->retry_at > now && !s->stop) {
			struct timespec ts;

			store_abs_mono(store_min(s->retry_at, store_next_timer(s)), &ts);
			pthread_cond_timedwait(&s->cv_writer, &s->mu, &ts);
			continue;
		}
		if (depth > 0 && !s->batch_deadline)
			s->batch_deadline = now + (int64_t)s->cfg.batch_ms * 1000000;
		due = depth > 0 && (depth >= s->cfg.batch_rows || s->flush_target > s->tail ||
				    s->stop || now >= s->batch_deadline);
		if (!due) {
			struct timespec ts;

			wake = store_next_timer(s);
			if (depth > 0)
				wake = store_min(wake, s->batch_deadline);
			s->writer_idle = depth == 0;
			store_abs_mono(wake, &ts);
			pthread_cond_timedwait(&s->cv_writer, &s->mu, &ts);
			s->writer_idle = false;
			continue;
		}
		n = depth < s->cfg.batch_rows ? depth : s->cfg.batch_rows;
		start = s->tail;
		pthread_mutex_unlock(&s->mu);
		rc = store_write_batch(s, start, n);
		pthread_mutex_lock(&s->mu);
		if (rc == 0) {
			__atomic_store_n(&s->tail, s->tail + n, __ATOMIC_RELAXED);
			if (s->tail == s->head)
				s->base = s->head; /* no slot in use: restart at 0 */
			s->batch_deadline = 0;
			s->backoff_ms = 0;
			s->retry_at = 0;
			pthread_cond_broadcast(&s->cv_done);
			continue;
		}
		store_stat_add(&s->write_errors, 1);
		store_count_error(s, STORE_OP_COMMIT);
		s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : STORE_BACKOFF_MIN_MS;
		if (s->backoff_ms > STORE_BACKOFF_MAX_MS)
			s->backoff_ms = STORE_BACKOFF_MAX_MS;
		s->retry_at = store_mono_ns() + (int64_t)s->backoff_ms * 1000000;
		if (s->stop && stop_retries)
			stop_retries--;
		pthread_cond_broadcast(&s->cv_done);
		depth = s->head - s->tail;
		pthread_mutex_unlock(&s->mu);
		/* A checkpointed WAL is rewritten from its start instead of
		 * growing: the cheapest space to get back on a full disk. */
		if ((rc & 0xff) == SQLITE_FULL)
			sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
						  NULL);
		store_log(s, &s->rl_commit, 10000, STORE_LOG_ERR,
			  "commit of %" PRIu64 " rows failed: %s; %" PRIu64
			  " rows kept in the queue, retrying in %u ms",
			  n, sqlite3_errstr(rc), depth, s->backoff_ms);
		pthread_mutex_lock(&s->mu);
	}
	if (s->head != s->tail)
		store_log(s, NULL, 0, STORE_LOG_ERR,
			  "closing with %" PRIu64 " rows not written (writes failing)",
			  s->head - s->tail);
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

/* Called by SQLite on the writer thread after each commit, with the WAL
 * size in frames. */
static int store_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store *s = arg;

	if (frames >= STORE_CKPT_HARD_FRAMES) {
		/* The checkpointer never caught up (sustained load, no pause
		 * between batches): checkpoint here, with no write running,
		 * so the WAL can restart from its beginning. */
		store_checkpoint(s, db);
	} else if (frames >= STORE_CKPT_FRAMES) {
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
		pthread_mutex_unlock(&s->ck_mu);
		store_checkpoint(s, s->ck_db);
		pthread_mutex_lock(&s->ck_mu);
	}
	pthread_mutex_unlock(&s->ck_mu);
	return NULL;
}

/* Without it the writer checkpoints by itself (wal_autocheckpoint), which
 * is correct, only slower. */
static void store_ckpt_start(struct store *s)
{
	if (sqlite3_open_v2(s->path, &s->ck_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK ||
	    store_exec_rows(s->ck_db, "PRAGMA synchronous = NORMAL") != SQLITE_OK)
		goto out_fail;
	if (pthread_create(&s->ck_thread, NULL, store_ckpt_main, s) != 0)
		goto out_fail;
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

static void store_ckpt_stop(struct store *s)
{
	if (!s->ck_started)
		return;
	pthread_mutex_lock(&s->ck_mu);
	s->ck_stop = true;
	pthread_cond_signal(&s->ck_cv);
	pthread_mutex_unlock(&s->ck_mu);
	pthread_join(s->ck_thread, NULL);
	s->ck_started = false;
	sqlite3_wal_autocheckpoint(s->db, 2000);
	sqlite3_close(s->ck_db);
	s->ck_db = NULL;
}

int store_start(struct store *s)
{
	int64_t now = store_mono_ns();
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
	s->started = true;
	return 0;
}

int store_flush_timeout(struct store *s, unsigned timeout_ms)
{
	uint64_t target, errors;
	int64_t deadline = timeout_ms ? store_mono_ns() + (int64_t)timeout_ms * 1000000 : 0;
	int ret = 0;

	pthread_mutex_lock(&s->mu);
	target = s->head;
	if (!s->started || s->writer_done) {
		ret = s->tail >= target ? 0 : -ENOTCONN;
		goto out;
	}
	if (s->flush_target < target)
		s->flush_target = target;
	errors = store_stat_get(&s->write_errors);
	pthread_cond_signal(&s->cv_writer);
	while (s->tail < target) {
		if (store_stat_get(&s->write_errors) != errors) {
			ret = -EIO;
			break;
		}
		if (s->writer_done) {
			ret = -ENOTCONN;
			break;
		}
		if (deadline) {
			struct timespec ts;

			if (store_mono_ns() >= deadline) {
				ret = -ETIMEDOUT;
				break;
			}
			store_abs_mono(deadline, &ts);
			pthread_cond_timedwait(&s->cv_done, &s->mu, &ts);
		} else {
			pthread_cond_wait(&s->cv_done, &s->mu);
		}
	}
out:
	pthread_mutex_unlock(&s->mu);
	return ret;
}

int store_flush(struct store *s)
{
	return store_flush_timeout(s, 0);
}

void store_close(struct store *s)
{
	if (!s)
		return;
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
	}
	/* Readers first: a TRUNCATE checkpoint needs no reader in the WAL. */
	for (size_t i = 0; i < s->n_readers; i++)
		sqlite3_close(s->readers[i]);
	s->n_readers = 0;
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	store_exec_rows(s->db, "PRAGMA optimize");
	store_free(s);
}

/* ---- readers ---- */

sqlite3 *store_reader_get(struct store *s)
{
	struct timespec ts;
	sqlite3 *db = NULL;

	store_abs_mono(store_mono_ns() + (int64_t)STORE_READER_WAIT_MS * 1000000, &ts);
	pthread_mutex_lock(&s->rd_mu);
	while (!s->n_free) {
		if (pthread_cond_timedwait(&s->rd_cv, &s->rd_mu, &ts) == ETIMEDOUT)
			break;
	}
	if (s->n_free)
		db = s->rd_free[--s->n_free];
	pthread_mutex_unlock(&s->rd_mu);
	if (!db)
		errno = EBUSY;
	return db;
}

void store_reader_put(struct store *s, sqlite3 *db)
{
	if (!db)
		return;
	pthread_mutex_lock(&s->rd_mu);
	s->rd_free[s->n_free++] = db;
	pthread_cond_signal(&s->rd_cv);
	pthread_mutex_unlock(&s->rd_mu);
}

void store_get_stats(struct store *s, struct store_stats *out)
{
	pthread_mutex_lock(&s->mu);
	out->rows_dropped_full = s->dropped_full;
	out->queue_depth = (size_t)(s->head - s->tail);
	pthread_mutex_unlock(&s->mu);
	out->rows_written = store_stat_get(&s->rows_written);
	out->batches = store_stat_get(&s->batches);
	out->write_errors = store_stat_get(&s->write_errors);
	out->rows_deleted_age = store_stat_get(&s->rows_deleted_age);
	out->rows_deleted_size = store_stat_get(&s->rows_deleted_size);
	out->rows_deleted_retention = out->rows_deleted_age + out->rows_deleted_size;
	out->rows_dropped_error = store_stat_get(&s->rows_dropped_error);
	out->samples_written = store_stat_get(&s->samples_written);
	out->samples_dropped = store_stat_get(&s->samples_dropped);
	out->db_bytes = store_stat_get(&s->db_bytes);
	for (int i = 0; i < STORE_OP_MAX; i++)
		out->errors[i] = store_stat_get(&s->errors_op[i]);
}

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
