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
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_schema.h"

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
    /* 2: a histogram's classic buckets on its _count sample, an opaque
     * blob for the store (the agent's api/hist_blob.h format). */
    "ALTER TABLE metric_samples ADD COLUMN buckets BLOB;",
    NULL,
};

int64_t store_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Messages go to the agent's logger (store_config.log), never to stderr
 * directly: the store has no logger of its own. rl may be NULL. */
void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
	       enum store_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
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

int64_t store_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void store_abs_mono(int64_t ns, struct timespec *out)
{
	out->tv_sec = ns / 1000000000;
	out->tv_nsec = ns % 1000000000;
}

void store_stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

uint64_t store_stat_get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void store_count_error(struct store *s, enum store_err_op op)
{
	store_stat_add(&s->errors_op[op], 1);
}

/* Table names end up in SQL text: accept plain identifiers only. */
/* Runs one SQL statement returning a single integer (PRAGMA, SELECT). */
int store_query_int(sqlite3 *db, const char *sql, int64_t *out)
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
int store_exec_rows(sqlite3 *db, const char *sql)
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
	int64_t ver = 0;
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
	char *copy;
	const char *dir;
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
	copy = strdup(path);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	dir = dirname(copy); /* ".", "/" or the part before the last slash */
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: directory %s does not exist", path, dir);
		ret = -ENOENT;
	} else if (access(dir, W_OK | X_OK) != 0) {
		snprintf(err, errlen, "%s: directory %s is not writable: %s", path, dir,
			 strerror(errno));
		ret = -EACCES;
	}
	free(copy);
	return ret;
}

/* PRAGMA quick_check must say "ok"; a file that is not a database fails
 * already at prepare/step with SQLITE_NOTADB. -EINTR when interrupted
 * (sqlite3_interrupt() from another thread), -EUCLEAN with err set when
 * the file is not a sound database. */
static int store_check_integrity(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_step(st);
	if ((rc & 0xff) == SQLITE_INTERRUPT) {
		sqlite3_finalize(st);
		return -EINTR;
	}
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		goto out_err;
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		snprintf(err, errlen,
			 "%s: database is corrupt (quick_check: %s); move it aside, it is not "
			 "re-created automatically",
			 path, sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		return -EUCLEAN;
	}
	sqlite3_finalize(st);
	return 0;

out_err:
	snprintf(err, errlen, "%s: %s%s", path, sqlite3_errmsg(db),
		 (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT
		     ? " (not a sysobs database, or corrupt; it is not re-created "
		       "automatically)"
		     : "");
	return -EUCLEAN;
}

/* The quick_check thread, on its own read-only connection (a WAL reader:
 * the writer goes on meanwhile). store_open() waits STORE_OPEN_CHECK_MS for
 * it; past that, it either goes on in the background (ic_bg: it logs and
 * counts what it finds) or is interrupted. */
static void *store_ic_main(void *arg)
{
	struct store *s = arg;
	int64_t t0 = store_mono_ns();
	char err[512];
	bool bg;
	int rc;

	rc = store_check_integrity(s->ic_db, s->path, err, sizeof(err));
	pthread_mutex_lock(&s->ic_mu);
	s->ic_rc = rc;
	snprintf(s->ic_err, sizeof(s->ic_err), "%s", rc ? err : "");
	s->ic_done = true;
	bg = s->ic_bg;
	pthread_mutex_unlock(&s->ic_mu);
	if (!bg)
		return NULL;
	if (rc == 0) {
		store_log(s, NULL, 0, STORE_LOG_INFO, "background quick_check: ok (%.1f s)",
			  (store_mono_ns() - t0) / 1e9);
	} else if (rc == -EINTR) {
		store_log(s, NULL, 0, STORE_LOG_INFO,
			  "background quick_check interrupted by the stop (%.1f s)",
			  (store_mono_ns() - t0) / 1e9);
	} else {
		store_count_error(s, STORE_OP_INTEGRITY);
		store_log(s, NULL, 0, STORE_LOG_ERR, "%s (found in the background)", err);
	}
	return NULL;
}

static void store_ic_stop(struct store *s)
{
	if (!s->ic_started)
		return;
	sqlite3_interrupt(s->ic_db);
	pthread_join(s->ic_thread, NULL);
	sqlite3_close(s->ic_db);
	s->ic_db = NULL;
	s->ic_started = false;
}

/*
 * The integrity check at open, bounded in time so start-up does not grow
 * with the file (quick_check reads all of it: 2.4 s for 762 MB). A check
 * that finishes within STORE_OPEN_CHECK_MS decides here (a corrupt file is
 * refused, as before); a longer one goes on in the background when the last
 * stop was unclean, and is stopped when it was clean.
 */
static int store_open_check(struct store *s, bool unclean, char *err, size_t errlen)
{
	struct timespec ts;
	bool done;

	if (sqlite3_open_v2(s->path, &s->ic_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path,
			 s->ic_db ? sqlite3_errmsg(s->ic_db) : "out of memory");
		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		return -EIO;
	}
	if (pthread_create(&s->ic_thread, NULL, store_ic_main, s) != 0) {
		int rc = store_check_integrity(s->ic_db, s->path, err, errlen);

		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		return rc;
	}
	s->ic_started = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += STORE_OPEN_CHECK_MS * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(s->ic_thread, NULL, &ts) != 0) {
		pthread_mutex_lock(&s->ic_mu);
		done = s->ic_done;
		if (!done && unclean)
			s->ic_bg = true;
		pthread_mutex_unlock(&s->ic_mu);
		if (!done && unclean) {
			store_log(s, NULL, 0, STORE_LOG_INFO,
				  "the last stop was unclean: quick_check of the whole file goes "
				  "on in the background");
			return 0;
		}
		if (!done)
			store_log(s, NULL, 0, STORE_LOG_INFO,
				  "quick_check stopped after %u ms (the last stop was clean)",
				  STORE_OPEN_CHECK_MS);
		store_ic_stop(s);
	} else {
		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		s->ic_started = false;
	}
	if (s->ic_rc == -EUCLEAN) {
		snprintf(err, errlen, "%s", s->ic_err);
		return -EUCLEAN;
	}
	return 0;
}

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

/* A WAL file left beside the database: the last stop was not clean (SQLite
 * removes it when the last connection closes). */
static bool store_unclean_stop(const char *path)
{
	char wal[4096];
	struct stat st;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &st) == 0;
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

static int store_open_readers(struct store *s, char *err, size_t errlen)
{
	s->readers = calloc(s->cfg.readers, sizeof(*s->readers));
	s->rd_free = calloc(s->cfg.readers, sizeof(*s->rd_free));
	s->rd_deadline = calloc(s->cfg.readers, sizeof(*s->rd_deadline));
	if (!s->readers || !s->rd_free || !s->rd_deadline) {
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
		/* Checked every 1000 VM steps (~10 us): past the deadline the
		 * statement ends with SQLITE_INTERRUPT. */
		sqlite3_progress_handler(db, 1000, store_reader_over,
					 &s->rd_deadline[s->n_readers]);
		s->readers[s->n_readers++] = db;
		s->rd_free[s->n_free++] = db;
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
	pthread_mutex_destroy(&s->watch_mu);
	pthread_cond_destroy(&s->ck_cv);
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
	bool fresh, unclean;
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
	if (!s->cfg.query_timeout_ms)
		s->cfg.query_timeout_ms = 5000;
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

	unclean = store_unclean_stop(s->path);
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
	sqlite3_busy_handler(s->db, store_busy, s);
	sqlite3_extended_result_codes(s->db, 1);
	if (store_open_check(s, unclean, err, errlen))
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

/* Copies a row (len bytes, then tail bytes of tail_len) into the next slot.
 * Never waits: -EAGAIN when the queue is full or closing. */
static int store_enqueue(struct store *s, uint32_t table, int64_t ts_ns, const void *row,
			 size_t len, const void *tail, size_t tail_len, int64_t *id)
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
	slot->id = 0;
	if (id) {
		slot->id = s->next_id;
		__atomic_store_n(&s->next_id, s->next_id + 1, __ATOMIC_RELAXED);
		*id = slot->id;
	}
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

int store_submit_id(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row,
		    int64_t *id)
{
	int idx = store_table_index(s, t);
	int64_t dummy;

	if (idx < 0)
		return -ENOENT;
	return store_enqueue(s, (uint32_t)idx, ts_ns, row, t->row_size, NULL, 0, id ? id : &dummy);
}

int store_submit(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row)
{
	return store_submit_id(s, t, ts_ns, row, NULL);
}

int store_submit_sample_blob(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			     double value, const void *blob, size_t blob_len)
{
	size_t nlen = strlen(name), llen = strlen(labels);
	size_t head = offsetof(struct store_sample_row, key); /* the tail goes at key[] */
	struct store_sample_row row = {.value = value, .blob_len = (uint16_t)blob_len};
	/* A slot's payload is the largest event row or STORE_SAMPLE_MIN. */
	char tail[EVENT_ROW_MAX > STORE_SAMPLE_MIN ? EVENT_ROW_MAX : STORE_SAMPLE_MIN];

	if (head + nlen + llen + 2 + blob_len > s->slot_size - STORE_SLOT_HDR ||
	    nlen + llen + 2 + blob_len > sizeof(tail)) {
		if (!blob_len)
			store_stat_add(&s->samples_dropped, 1);
		return -E2BIG;
	}
	memcpy(tail, name, nlen);
	tail[nlen] = '\x01';
	memcpy(tail + nlen + 1, labels, llen + 1);
	if (blob_len)
		memcpy(tail + nlen + llen + 2, blob, blob_len);
	return store_enqueue(s, STORE_TABLE_SAMPLE, ts_ns, &row, head, tail,
			     nlen + llen + 2 + blob_len, NULL);
}

int store_submit_sample(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			double value)
{
	return store_submit_sample_blob(s, ts_ns, name, labels, value, NULL, 0);
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

/* ---- readers ---- */

/* Progress handler of a pooled reader: non-zero ends the statement. */
int store_reader_over(void *arg)
{
	int64_t deadline = __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED);

	return deadline && store_mono_ns() > deadline;
}

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
	for (size_t i = 0; db && i < s->n_readers; i++)
		if (s->readers[i] == db)
			__atomic_store_n(&s->rd_deadline[i],
					 store_mono_ns() +
					     (int64_t)s->cfg.query_timeout_ms * 1000000,
					 __ATOMIC_RELAXED);
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
	out->rows_lost_close = s->rows_lost_close;
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
