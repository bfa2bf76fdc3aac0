// SPDX-License-Identifier: MIT
/*
 * Storage layer: tables from event_table descriptors and their migrations
 * (a column and a data migration added in v2), refusal of bad files,
 * batching, the bounded queue, the global id sequence, retention, the read
 * side (events paging, metric history series and samples), metric history
 * samples through the queue, and recovery from a full disk (a small tmpfs in
 * a private mount namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "storage/store.h"
#include "storage/store_history.h"
#include "storage/store_query.h"

struct ev_row {
	int32_t pid;
	uint32_t cpu;
	double value;
	int64_t bytes;
	char comm[16];
	char note[200];
};

/* v2 of test_a: the same columns and one more. */
struct ev_row2 {
	struct ev_row base;
	char extra[24];
};

#define EV_BASE_COLS                                                                               \
	COL(struct ev_row, pid, COL_INT, COL_NOT_NULL),                                            \
	    COL(struct ev_row, cpu, COL_UINT, COL_NOT_NULL),                                       \
	    COL(struct ev_row, comm, COL_TEXT, COL_NOT_NULL),                                      \
	    COL(struct ev_row, value, COL_REAL, COL_NOT_NULL),                                     \
	    COL(struct ev_row, bytes, COL_INT, COL_NOT_NULL),                                      \
	    COL(struct ev_row, note, COL_TEXT, COL_NULL_EMPTY)

static const struct event_column ev_cols[] = {EV_BASE_COLS, {0}};
static const struct event_column ev2_cols[] = {
    EV_BASE_COLS,
    COL(struct ev_row2, extra, COL_TEXT, COL_NULL_EMPTY),
    {0},
};

/* v2's data migration fills extra with "m" for pids 0, 2 and 10 of rows
 * already there. A second run would show on a row written since with pid 10
 * and another extra. */
static const char *const a_extra_by_pid[] = {[0] = "m", [2] = "m", [10] = "m"};
static const struct table_migration a_migrations_v2[] = {
    {.column = "extra", .from = "pid", .names = a_extra_by_pid, .n_names = 11},
    {0},
};

static const struct event_table table_a = {
    .name = "test_a",
    .collector = "alpha",
    .cols = ev_cols,
    .row_size = sizeof(struct ev_row),
};
static const struct event_table table_a_v2 = {
    .name = "test_a",
    .collector = "alpha",
    .cols = ev2_cols,
    .row_size = sizeof(struct ev_row2),
    .migrations = a_migrations_v2,
};
static const struct event_table table_b = {
    .name = "test_b",
    .collector = "beta",
    .cols = ev_cols,
    .row_size = sizeof(struct ev_row),
};

static const struct event_table *const tables_ab[] = {&table_a, &table_b, NULL};
static const struct event_table *const tables_a2b[] = {&table_a_v2, &table_b, NULL};

static char tmpdir[256];
static char dbpath[512];
static char err[512];

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_store.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/sysobs.db", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct store_config default_cfg(void)
{
	struct store_config cfg = {
	    .path = dbpath,
	    .queue_rows = 4096,
	    .batch_rows = 100,
	    .batch_ms = 20,
	    .busy_timeout_ms = 2000,
	    .readers = 2,
	};
	return cfg;
}

static struct ev_row make_row(int i)
{
	struct ev_row r = {.pid = i, .cpu = (uint32_t)(i % 4), .value = i * 0.5, .bytes = i * 100};

	snprintf(r.comm, sizeof(r.comm), "proc%d", i);
	return r;
}

/* Direct connection for checks, store closed or not (WAL allows both). */
static int64_t db_int(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void db_exec(const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static char *db_text(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char *v = NULL;

	assert_int_equal(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static struct store *open_started(const struct store_config *cfg,
				  const struct event_table *const *tables)
{
	struct store *s = store_open(cfg, tables, err, sizeof(err));

	if (!s)
		print_error("store_open: %s\n", err);
	assert_non_null(s);
	assert_int_equal(store_start(s), 0);
	return s;
}

static void submit_n(struct store *s, const struct event_table *t, int from, int n, int64_t ts)
{
	for (int i = from; i < from + n; i++) {
		struct ev_row r = make_row(i);

		assert_int_equal(store_submit(s, t, ts ? ts : now_ns(), &r), 0);
	}
}

/* Count of test_a rows matching a WHERE clause. */
static int64_t count_a(const char *where)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM test_a WHERE %s", where);
	return db_int(sql);
}

/*
 * v1 -> v2 of test_a: the column v2 declares is added, the rows already
 * there stay (NULL in it unless v2's data migration fills them), version 2
 * is recorded, and neither the column nor the migration is applied again on
 * the next open.
 */
static void test_migrations_applied_once_and_on_reopen(void **state)
{
	struct store_config cfg = default_cfg();
	struct ev_row2 r2 = {.base = make_row(10)};
	struct store *s;

	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 0, 4, 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("PRAGMA user_version"), 2);
	assert_int_equal(db_int("SELECT version FROM schema_migrations WHERE component='test_a'"),
			 1);
	assert_int_equal(db_int("PRAGMA auto_vacuum"), 2); /* incremental */
	/* series_id, ts, value and (core migration 2) buckets */
	assert_int_equal(db_int("SELECT count(*) FROM pragma_table_info('metric_samples')"), 4);
	/* id, ts and the six columns of v1; no extra yet. */
	assert_int_equal(db_int("SELECT count(*) FROM pragma_table_info('test_a')"), 8);
	assert_int_equal(
	    db_int("SELECT count(*) FROM pragma_table_info('test_a') WHERE name='extra'"), 0);

	snprintf(r2.extra, sizeof(r2.extra), "new");
	for (int round = 0; round < 2; round++) {
		s = store_open(&cfg, tables_a2b, err, sizeof(err));
		if (!s)
			print_error("round %d: %s\n", round, err);
		assert_non_null(s);
		if (round == 0) {
			/* A row written by v2, extra set. Its pid is 10:
			 * were the migration run again on the next open, its
			 * extra would read "m". */
			assert_int_equal(store_start(s), 0);
			assert_int_equal(store_submit(s, &table_a_v2, now_ns(), &r2), 0);
			assert_int_equal(store_flush(s), 0);
		}
		store_close(s);
		assert_int_equal(
		    db_int("SELECT version FROM schema_migrations WHERE component='test_a'"), 2);
		assert_int_equal(
		    db_int("SELECT version FROM schema_migrations WHERE component='test_b'"), 1);
		assert_int_equal(
		    db_int("SELECT count(*) FROM pragma_table_info('test_a') WHERE name='extra'"),
		    1);
		assert_int_equal(db_int("PRAGMA user_version"), 2);

		/* The four v1 rows are all there, with their values. */
		assert_int_equal(count_a("pid < 4"), 4);
		assert_int_equal(count_a("pid < 4 AND comm = 'proc' || pid AND bytes = pid * 100"
					 " AND value = pid * 0.5 AND cpu = pid % 4"),
				 4);
		/* Odd pids: nothing filled them, extra is NULL. */
		assert_int_equal(count_a("pid < 4 AND pid % 2 = 1 AND extra IS NULL"), 2);
		/* Even pids: filled by the data migration, exactly once. */
		assert_int_equal(count_a("pid < 4 AND pid % 2 = 0 AND extra = 'm'"), 2);
		char *extra = db_text("SELECT extra FROM test_a WHERE pid = 10");
		assert_non_null(extra);
		assert_string_equal(extra, "new");
		free(extra);
		assert_int_equal(count_a("1"), 5);
	}
	char *mode = db_text("PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
}

/* A table created fresh from v2's descriptor has every column at once and
 * is recorded at v2's version (1 + its one migration): nothing to migrate
 * when the same build opens it again. */
static void test_fresh_table_created_at_latest_version(void **state)
{
	struct store_config cfg = default_cfg();
	struct ev_row2 r2 = {.base = make_row(2)};
	struct store *s;

	s = open_started(&cfg, tables_a2b);
	assert_int_equal(store_submit(s, &table_a_v2, now_ns(), &r2), 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT version FROM schema_migrations WHERE component='test_a'"),
			 2);
	assert_int_equal(db_int("SELECT count(*) FROM pragma_table_info('test_a')"), 9);
	/* The migration did not run on the new table: pid 2 was written with
	 * extra "" (NULL), and an even pid is what the migration would fill. */
	assert_int_equal(count_a("pid = 2 AND extra IS NULL"), 1);

	s = store_open(&cfg, tables_a2b, err, sizeof(err));
	assert_non_null(s);
	store_close(s);
	assert_int_equal(count_a("pid = 2 AND extra IS NULL"), 1);
	assert_int_equal(db_int("SELECT version FROM schema_migrations WHERE component='test_a'"),
			 2);
}

static void test_newer_schema_refused(void **state)
{
	struct store_config cfg = default_cfg();
	struct store *s;

	s = store_open(&cfg, tables_a2b, err, sizeof(err));
	assert_non_null(s);
	store_close(s);

	/* Table newer than its descriptor: tables_ab knows version 1 of
	 * test_a, the database has 2. */
	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, "newer"));
	assert_non_null(strstr(err, "test_a"));

	/* A version past v2's own (1 + one migration) is refused as well,
	 * and left as it was. */
	db_exec("UPDATE schema_migrations SET version = 3 WHERE component = 'test_a'");
	s = store_open(&cfg, tables_a2b, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, "newer"));
	assert_non_null(strstr(err, "test_a"));
	assert_int_equal(db_int("SELECT version FROM schema_migrations WHERE component='test_a'"),
			 3);
	db_exec("UPDATE schema_migrations SET version = 2 WHERE component = 'test_a'");

	db_exec("PRAGMA user_version = 99");
	s = store_open(&cfg, tables_a2b, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, "newer"));
	assert_int_equal(db_int("PRAGMA user_version"), 99); /* untouched */
}

static void test_garbage_file_refused_not_recreated(void **state)
{
	struct store_config cfg = default_cfg();
	char buf[8192];
	struct stat st;
	struct store *s;
	FILE *f;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 3);
	f = fopen(dbpath, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);

	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, dbpath));
	assert_non_null(strstr(err, "not re-created"));
	assert_int_equal(stat(dbpath, &st), 0);
	assert_int_equal(st.st_size, sizeof(buf));
}

static void test_corrupt_database_refused(void **state)
{
	struct store_config cfg = default_cfg();
	struct store *s;
	char junk[4096];
	int64_t page_size;
	int fd;

	cfg.batch_rows = 1000;
	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 0, 3000, 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	page_size = db_int("PRAGMA page_size");
	assert_true(db_int("PRAGMA page_count") > 10);

	/* Overwrite pages 3..4 (b-tree pages of the tables) with junk. */
	memset(junk, 0xa5, sizeof(junk));
	fd = open(dbpath, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 3 * page_size), (ssize_t)sizeof(junk));
	close(fd);

	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, dbpath));
}

static void test_unwritable_path_refused(void **state)
{
	struct store_config cfg = default_cfg();
	char path[400];
	struct store *s;

	snprintf(path, sizeof(path), "%s/no/such/dir/sysobs.db", tmpdir);
	cfg.path = path;
	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, "does not exist"));

	if (geteuid() == 0) {
		/* root writes through file modes; /proc refuses everyone. */
		cfg.path = "/proc/sysobs-test.db";
	} else {
		snprintf(path, sizeof(path), "%s/ro", tmpdir);
		assert_int_equal(mkdir(path, 0555), 0);
		snprintf(path, sizeof(path), "%s/ro/sysobs.db", tmpdir);
		cfg.path = path;
	}
	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_null(s);
	assert_true(strlen(err) > 0);
	assert_int_equal(access(cfg.path, F_OK), -1);
}

/* A read on a pooled connection is stopped at [storage] query_timeout (an
 * endless recursive query here), and the connection serves the next one. */
static void test_query_timeout_stops_a_read(void **state)
{
	struct store_config cfg = default_cfg();
	struct store *s;
	sqlite3_stmt *st;
	sqlite3 *db;
	int64_t t0;
	int rc;

	cfg.query_timeout_ms = 100;
	cfg.readers = 1;
	s = open_started(&cfg, tables_ab);
	db = store_reader_get(s);
	assert_non_null(db);
	assert_int_equal(
	    sqlite3_prepare_v2(db,
			       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
			       "FROM c) SELECT count(*) FROM c",
			       -1, &st, NULL),
	    SQLITE_OK);
	t0 = now_ns();
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	assert_int_equal(rc, SQLITE_INTERRUPT);
	/* Stopped near the deadline, not after minutes. */
	assert_true(now_ns() - t0 < 2000000000LL);
	db = store_reader_get(s);
	assert_non_null(db);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT 1", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	store_close(s);
}

static void test_batching_visible_after_flush(void **state)
{
	struct store_config cfg = default_cfg();
	struct store_stats st;
	struct store *s;

	cfg.batch_rows = 100;
	cfg.batch_ms = 60000; /* only size or flush commits */
	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 0, 1000, 0);
	assert_int_equal(store_flush(s), 0);
	store_get_stats(s, &st);
	assert_int_equal(st.rows_written, 1000);
	assert_int_equal(st.queue_depth, 0);
	assert_true(st.batches >= 10);
	assert_true(st.batches <= 20);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 1000);
	assert_int_equal(db_int("SELECT count(DISTINCT id) FROM test_a"), 1000);
	assert_int_equal(db_int("SELECT sum(pid) FROM test_a"), 999 * 1000 / 2);
	store_close(s);

	/* Time-based commit: 5 rows, no flush, batch_ms = 50. */
	cfg.batch_ms = 50;
	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_b, 0, 5, 0);
	for (int i = 0; i < 100 && db_int("SELECT count(*) FROM test_b") != 5; i++)
		sleep_ms(20);
	assert_int_equal(db_int("SELECT count(*) FROM test_b"), 5);
	store_close(s);
}

/* A clock the test moves by hand (store_config.clock). */
struct test_clock {
	int64_t mono, wall;
};

static int64_t test_clock_mono(void *arg)
{
	return __atomic_load_n(&((struct test_clock *)arg)->mono, __ATOMIC_RELAXED);
}

static int64_t test_clock_wall(void *arg)
{
	return __atomic_load_n(&((struct test_clock *)arg)->wall, __ATOMIC_RELAXED);
}

static void test_clock_advance(struct store *s, struct test_clock *c, int64_t ms)
{
	__atomic_add_fetch(&c->mono, ms * 1000000, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->wall, ms * 1000000, __ATOMIC_RELAXED);
	store_clock_moved(s);
}

/* Waits (real time, bounded) until retention deleted at least n rows. */
static uint64_t wait_deleted(struct store *s, uint64_t n)
{
	struct store_stats st;

	for (int i = 0; i < 500; i++) {
		store_get_stats(s, &st);
		if (st.rows_deleted_retention >= n)
			break;
		sleep_ms(10);
	}
	return st.rows_deleted_retention;
}

/* Past every periodic timer (publish 1 s, checkpoint 10 s, retention 60 s)
 * the writer sleeps rather than spins, and still commits; retention's timer
 * and its age cutoff follow the injected clock, so no real time passes. */
static void test_idle_writer_sleeps_and_still_commits(void **state)
{
	struct test_clock clk = {.mono = 1000000000, .wall = now_ns()};
	struct store_clock ops = {test_clock_mono, test_clock_wall, &clk};
	struct store_config cfg = default_cfg();
	struct store_stats st0, st1;
	struct store *s;

	cfg.clock = &ops;
	cfg.retention_ms = 3600 * 1000;
	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 0, 10, clk.wall);
	assert_int_equal(store_flush(s), 0);

	/* 10.5 s later: nothing old enough to delete, the rows stay. */
	test_clock_advance(s, &clk, 10500);
	submit_n(s, &table_a, 10, 10, clk.wall);
	assert_int_equal(store_flush_timeout(s, 5000), 0);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 20);

	/* Two hours on: the next retention pass (60 s timer) deletes all 20. */
	test_clock_advance(s, &clk, 2 * 3600 * 1000);
	assert_int_equal(wait_deleted(s, 20), 20);

	/* Every timer is in the future again: the writer waits, it does not
	 * turn (a writer that spun would turn thousands of times here). */
	store_get_stats(s, &st0);
	sleep_ms(200);
	store_get_stats(s, &st1);
	assert_true(st1.writer_turns - st0.writer_turns < 20);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 0);
}

/* Bursts of every size around the ring (which restarts at slot 0 whenever
 * it drains) and across its end: every row arrives once, in order. */
static void test_ring_bursts_wrap(void **state)
{
	struct store_config cfg = default_cfg();
	struct store *s;
	int next = 0;

	cfg.queue_rows = 64;
	cfg.batch_rows = 16;
	s = open_started(&cfg, tables_ab);
	for (int burst = 1; next < 5000; burst = burst % 64 + 7) {
		for (int i = 0; i < burst; i++, next++) {
			struct ev_row r = make_row(next);
			int rc;

			/* Unflushed bursts may meet a full queue: wait for room. */
			while ((rc = store_submit(s, next % 3 ? &table_a : &table_b, now_ns(),
						  &r)) == -EAGAIN)
				sleep_ms(1);
			assert_int_equal(rc, 0);
		}
		if (burst % 2)
			assert_int_equal(store_flush(s), 0);
	}
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM (SELECT pid FROM test_a UNION ALL"
				" SELECT pid FROM test_b)"),
			 next);
	assert_int_equal(db_int("SELECT count(*) FROM (SELECT id, pid FROM test_a UNION ALL"
				" SELECT id, pid FROM test_b) WHERE id != pid + 1"),
			 0);
}

static void test_queue_full_counted(void **state)
{
	struct store_config cfg = default_cfg();
	struct store_stats st;
	struct ev_row r = make_row(1);
	struct store *s;

	cfg.queue_rows = 8;
	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_non_null(s);
	/* Writer not started yet: nothing drains. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(store_submit(s, &table_a, now_ns(), &r), 0);
	assert_int_equal(store_submit(s, &table_a, now_ns(), &r), -EAGAIN);
	assert_int_equal(store_submit(s, &table_b, now_ns(), &r), -EAGAIN);
	store_get_stats(s, &st);
	assert_int_equal(st.rows_dropped_full, 2);
	assert_int_equal(st.queue_depth, 8);
	assert_int_equal(store_queue_depth(s), 8);

	/* An unregistered table is refused, not queued. */
	assert_int_equal(store_submit(s, &table_a_v2, now_ns(), &r), -ENOENT);

	assert_int_equal(store_start(s), 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 8);
}

/*
 * Metric history snapshots are whole or missing: a snapshot whose samples do
 * not all fit is not queued at all, counted (snapshot and samples) by the
 * reason the queue is full; event rows cannot take a snapshot's reserved
 * slots. A database locked by another connection makes the reason "locked".
 */
/* storage/store_internal.h: whether the last stop left a WAL behind. */
bool store_unclean_stop(const char *path);

static pid_t holder_pid; /* the process holding the database open */

/* The holder is killed even when an assertion left the test early. */
static int teardown_holder(void **state)
{
	if (holder_pid > 0) {
		kill(holder_pid, SIGKILL);
		waitpid(holder_pid, NULL, 0);
		holder_pid = 0;
	}
	return teardown(state);
}

/*
 * A WAL beside the database is an unclean stop only when no process has the
 * database open (issue 32: a second agent that created the database first
 * made the first one log "the last stop was unclean" on a brand-new file).
 * Another process holds it open: not unclean; that process killed (its WAL
 * left, its locks gone with it): unclean.
 */
static void test_unclean_stop_not_another_process(void **state)
{
	struct store_config cfg = default_cfg();
	char wal[300], c = 0;
	struct stat st;
	int fds[2];
	pid_t pid;

	(void)state;
	assert_false(store_unclean_stop(dbpath)); /* nothing there yet */
	assert_int_equal(pipe(fds), 0);
	pid = holder_pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *s = store_open(&cfg, tables_ab, err, sizeof(err));

		c = s ? 1 : 0;
		if (write(fds[1], &c, 1) != 1 || !s)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	assert_int_equal(c, 1);
	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	assert_int_equal(stat(wal, &st), 0); /* the other process's WAL */
	assert_false(store_unclean_stop(dbpath));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	holder_pid = 0;
	assert_int_equal(stat(wal, &st), 0); /* left by the crash */
	assert_true(store_unclean_stop(dbpath));
}

static void test_snapshot_whole_or_counted(void **state)
{
	struct store_config cfg = default_cfg();
	enum store_drop_reason why = STORE_DROP_REASONS;
	struct ev_row r = make_row(1);
	struct store_stats st;
	struct store *s;
	sqlite3 *holder;

	cfg.queue_rows = 8;
	cfg.busy_timeout_ms = 50;
	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_non_null(s);
	/* Writer not started: nothing drains. 5 slots for a snapshot of 5. */
	assert_int_equal(store_snapshot_begin(s, 5, &why), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_submit(s, &table_a, now_ns(), &r), 0);
	/* The 3 free slots are taken; the snapshot's 5 are not for rows. */
	assert_int_equal(store_submit(s, &table_a, now_ns(), &r), -EAGAIN);
	for (int i = 0; i < 5; i++)
		assert_int_equal(store_submit_sample(s, 1000, "m", "{}", i), 0);
	store_snapshot_end(s);
	/* The next snapshot finds no room for its 2: dropped whole. */
	assert_int_equal(store_snapshot_begin(s, 2, &why), -EAGAIN);
	assert_int_equal(why, STORE_DROP_QUEUE_FULL);
	store_snapshot_end(s);
	/* Larger than the whole queue: not reserved, queued as far as it
	 * fits (here: nothing), each sample counted where it is lost. */
	assert_int_equal(store_snapshot_begin(s, 9, &why), 0);
	store_snapshot_end(s);
	/* A sample outside a snapshot on a full queue: counted too. */
	assert_int_equal(store_submit_sample(s, 2000, "m", "{}", 9), -EAGAIN);
	store_get_stats(s, &st);
	assert_int_equal(st.snapshots, 3);
	assert_int_equal(st.snapshots_dropped_by[STORE_DROP_QUEUE_FULL], 1);
	assert_int_equal(st.samples_dropped_by[STORE_DROP_QUEUE_FULL], 3);
	assert_int_equal(st.samples_dropped, 3);

	/* Another connection holds the write lock: the writer's commit fails
	 * busy, and what the full queue refuses is lost to "locked". */
	assert_int_equal(sqlite3_open_v2(dbpath, &holder, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(store_start(s), 0);
	assert_int_equal(store_flush_timeout(s, 5000), -EIO);
	assert_int_equal(store_full_reason(s), STORE_DROP_LOCKED);
	assert_int_equal(store_snapshot_begin(s, 1, &why), -EAGAIN);
	assert_int_equal(why, STORE_DROP_LOCKED);
	store_snapshot_end(s);
	assert_int_equal(store_submit_sample(s, 3000, "m", "{}", 9), -EAGAIN);
	store_get_stats(s, &st);
	assert_int_equal(st.snapshots_dropped_by[STORE_DROP_LOCKED], 1);
	assert_int_equal(st.samples_dropped_by[STORE_DROP_LOCKED], 2);
	assert_int_equal(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(holder);
	assert_int_equal(store_flush(s), 0);
	assert_int_equal(store_full_reason(s), STORE_DROP_QUEUE_FULL);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM metric_samples"), 5);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 3);
	assert_string_equal(store_drop_reason_name(STORE_DROP_DISK_FULL), "disk_full");
}

static void test_global_ids_across_tables_and_reopen(void **state)
{
	struct store_config cfg = default_cfg();
	struct store *s;

	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 50; i++)
		submit_n(s, i % 3 ? &table_a : &table_b, i, 1, 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM (SELECT id FROM test_a UNION ALL"
				" SELECT id FROM test_b)"),
			 50);
	assert_int_equal(db_int("SELECT count(DISTINCT id) FROM (SELECT id FROM test_a UNION ALL"
				" SELECT id FROM test_b)"),
			 50);
	assert_int_equal(db_int("SELECT max(id) FROM (SELECT id FROM test_a UNION ALL"
				" SELECT id FROM test_b)"),
			 50);
	/* Submission order is id order: row i got id i + 1. */
	assert_int_equal(db_int("SELECT count(*) FROM test_a WHERE id != pid + 1"), 0);
	assert_int_equal(db_int("SELECT count(*) FROM test_b WHERE id != pid + 1"), 0);

	/* Reopen with only test_b registered: test_a (left by the earlier run)
	 * still counts for the sequence. */
	const struct event_table *const only_b[] = {&table_b, NULL};
	s = open_started(&cfg, only_b);
	submit_n(s, &table_b, 100, 1, 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT id FROM test_b WHERE pid = 100"), 51);

	/* Even when every row is gone, ids never restart. */
	cfg.retention_ms = 1;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 200; i++) {
		if (db_int(
			"SELECT (SELECT count(*) FROM test_a) + (SELECT count(*) FROM test_b)") ==
		    0)
			break;
		sleep_ms(20);
	}
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 0);
	cfg.retention_ms = 0;
	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 7, 1, 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT id FROM test_a WHERE pid = 7"), 52);
}

static void test_retention_by_age(void **state)
{
	struct store_config cfg = default_cfg();
	struct store_stats st;
	int64_t now = now_ns(), hour = 3600LL * 1000000000;
	struct store *s;

	s = open_started(&cfg, tables_ab);
	submit_n(s, &table_a, 0, 300, now - 3 * hour);
	submit_n(s, &table_b, 1000, 200, now - 3 * hour);
	submit_n(s, &table_a, 2000, 100, now - hour / 2);
	submit_n(s, &table_b, 3000, 50, now);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	db_exec("INSERT INTO metric_series(id, name, labels) VALUES(1, 'm', '');");
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO metric_samples(series_id, ts, value)"
		 " VALUES(1, %lld, 1.0), (1, %lld, 2.0);",
		 (long long)(now - 3 * hour), (long long)now);
	db_exec(sql);

	cfg.retention_ms = 2 * 3600 * 1000;
	s = open_started(&cfg, tables_ab); /* retention runs once at start */
	for (int i = 0; i < 250; i++) {
		store_get_stats(s, &st);
		if (st.rows_deleted_retention >= 501)
			break;
		sleep_ms(20);
	}
	store_get_stats(s, &st);
	store_close(s);
	assert_int_equal(st.rows_deleted_retention, 501);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 100);
	assert_int_equal(db_int("SELECT min(pid) FROM test_a"), 2000);
	assert_int_equal(db_int("SELECT count(*) FROM test_b"), 50);
	assert_int_equal(db_int("SELECT min(pid) FROM test_b"), 3000);
	assert_int_equal(db_int("SELECT count(*) FROM metric_samples"), 1);
	assert_int_equal(db_int("SELECT value FROM metric_samples"), 2);
}

static void test_retention_by_size(void **state)
{
	struct store_config cfg = default_cfg();
	int64_t used, total_before, total_after, max_id, n_left;
	struct stat stb, sta;
	struct store *s;

	cfg.batch_rows = 1000;
	cfg.queue_rows = 70000;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 60000; i++) {
		struct ev_row r = make_row(i);

		memset(r.note, 'x', 150);
		assert_int_equal(store_submit(s, i % 2 ? &table_a : &table_b, now_ns(), &r), 0);
	}
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	total_before = db_int("PRAGMA page_count") * db_int("PRAGMA page_size");
	assert_true(total_before > 8 * 1024 * 1024);
	assert_int_equal(stat(dbpath, &stb), 0);

	cfg.max_bytes = 2 * 1024 * 1024;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 500; i++) {
		struct store_stats st;

		store_get_stats(s, &st);
		used = db_int("SELECT (SELECT page_count FROM pragma_page_count) -"
			      " (SELECT freelist_count FROM pragma_freelist_count)") *
		       db_int("PRAGMA page_size");
		/* the file given back a commit's worth of pages a transaction */
		total_after = db_int("PRAGMA page_count") * db_int("PRAGMA page_size");
		if (st.rows_deleted_retention > 0 && used <= (int64_t)cfg.max_bytes &&
		    total_after <= (int64_t)cfg.max_bytes)
			break;
		sleep_ms(20);
	}
	store_close(s);
	used = (db_int("PRAGMA page_count") - db_int("PRAGMA freelist_count")) *
	       db_int("PRAGMA page_size");
	total_after = db_int("PRAGMA page_count") * db_int("PRAGMA page_size");
	assert_true(used <= (int64_t)cfg.max_bytes);
	assert_true(total_after < total_before / 2); /* incremental_vacuum gave it back */
	assert_int_equal(stat(dbpath, &sta), 0);
	assert_true(sta.st_size < stb.st_size / 2);

	/* The oldest rows went, across both tables: what is left is exactly
	 * the newest ids. */
	max_id = db_int("SELECT max(id) FROM (SELECT id FROM test_a UNION ALL"
			" SELECT id FROM test_b)");
	n_left = db_int("SELECT count(*) FROM (SELECT id FROM test_a UNION ALL"
			" SELECT id FROM test_b)");
	assert_int_equal(max_id, 60000);
	assert_true(n_left > 1000);
	assert_true(n_left < 30000);
	assert_int_equal(db_int("SELECT min(id) FROM (SELECT id FROM test_a UNION ALL"
				" SELECT id FROM test_b)"),
			 max_id - n_left + 1);
}

/* file + WAL now, in bytes. */
static int64_t file_and_wal(void)
{
	char wal[600];
	struct stat st;
	int64_t n = 0;

	if (!stat(dbpath, &st))
		n += st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	if (!stat(wal, &st))
		n += st.st_size;
	return n;
}

/* max_size with single-row commits (a trickle of large rows): the size is
 * read only every few commits far under the bound (store_bound_room()),
 * and the file and its WAL still stay within it. */
static void test_size_bound_single_row_commits(void **state)
{
	struct store_config cfg = default_cfg();
	int64_t peak = 0, n;
	struct store_stats st;
	struct store *s;

	cfg.batch_rows = 1;
	cfg.max_bytes = 1024 * 1024;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 12000; i++) {
		struct ev_row r = make_row(i);

		memset(r.note, 'x', 200);
		while (store_submit(s, i % 2 ? &table_a : &table_b, now_ns(), &r) == -EAGAIN)
			sleep_ms(1);
		if (i % 200 == 0 && (n = file_and_wal()) > peak)
			peak = n;
	}
	assert_int_equal(store_flush(s), 0);
	if ((n = file_and_wal()) > peak)
		peak = n;
	store_get_stats(s, &st);
	store_close(s);
	print_message("single-row commits, max_size 1M: file + WAL peak %" PRId64 " bytes, %" PRIu64
		      " rows deleted by retention\n",
		      peak, st.rows_deleted_retention);
	assert_true(st.rows_deleted_retention > 0);
	assert_true(peak <= (int64_t)cfg.max_bytes * 105 / 100);
}

/* What a page of store_history_page() handed over, in call order. */
struct page {
	int64_t ids[128], ts[128];
	struct ev_row rows[128];
	size_t n;
};

static int page_row(int64_t id, int64_t ts, const void *row, void *arg)
{
	struct page *p = arg;

	if (p->n == 128)
		return -ENOSPC;
	p->ids[p->n] = id;
	p->ts[p->n] = ts;
	memcpy(&p->rows[p->n++], row, sizeof(struct ev_row));
	return 0;
}

static int history_page(struct store *s, const struct event_table *t, int64_t cursor, int64_t start,
			int64_t end, unsigned limit, const struct store_filter *f, size_t nf,
			struct page *p)
{
	struct store_page_query q = {
	    .cursor = cursor ? cursor : INT64_MAX,
	    .start_ns = start,
	    .end_ns = end,
	    .limit = limit,
	    .filters = f,
	    .n_filters = nf,
	};

	p->n = 0;
	return store_history_page(s, t, &q, page_row, p);
}

/* Pages of one table: newest first, rows read back into the row struct
 * with NULL columns as their sentinel, a cursor continues below the last
 * id, a window and filters (OR over columns sharing one) select rows. */
static void test_history_page(void **state)
{
	struct store_config cfg = default_cfg();
	int64_t base = 1700000000LL * 1000000000, cursor = 0, prev = INT64_MAX;
	struct store_filter f = {0};
	size_t seen = 0;
	struct page p;
	struct store *s;

	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 25; i++) {
		struct ev_row r = make_row(i);

		assert_int_equal(store_submit(s, i % 2 ? &table_a : &table_b,
					      base + (int64_t)i * 1000000000, &r),
				 0);
	}
	assert_int_equal(store_flush(s), 0);

	/* test_a holds the 12 odd pids: pages of 5 are 5 + 5 + 2. */
	for (int page = 0; page < 3; page++) {
		assert_int_equal(history_page(s, &table_a, cursor, 0, INT64_MAX, 5, NULL, 0, &p),
				 page < 2 ? 5 : 2);
		for (size_t i = 0; i < p.n; i++) {
			assert_true(p.ids[i] < prev);
			prev = p.ids[i];
			assert_int_equal(p.ids[i], p.rows[i].pid + 1);
			assert_int_equal(p.rows[i].pid % 2, 1);
			assert_int_equal(p.ts[i], base + (int64_t)p.rows[i].pid * 1000000000);
			assert_string_equal(p.rows[i].note, ""); /* NULL reads back as "" */
			seen++;
		}
		cursor = p.ids[p.n - 1];
	}
	assert_int_equal(seen, 12);

	/* Window [base + 10 s, base + 15 s) of test_b: pids 14, 12, 10. */
	assert_int_equal(history_page(s, &table_b, 0, base + 10000000000LL, base + 15000000000LL,
				      100, NULL, 0, &p),
			 3);
	assert_int_equal(p.rows[0].pid, 14);
	assert_int_equal(p.rows[2].pid, 10);

	/* A filter: pid = 7 in test_a only. */
	f.cols[0] = &ev_cols[0];
	f.n_cols = 1;
	f.value = 7;
	assert_int_equal(history_page(s, &table_a, 0, 0, INT64_MAX, 100, &f, 1, &p), 1);
	assert_int_equal(p.rows[0].pid, 7);
	assert_int_equal(history_page(s, &table_b, 0, 0, INT64_MAX, 100, &f, 1, &p), 0);
	/* Two columns OR'ed under one filter: pid = 4 or cpu = 4 (never). */
	f.cols[1] = &ev_cols[1];
	f.n_cols = 2;
	f.value = 4;
	assert_int_equal(history_page(s, &table_b, 0, 0, INT64_MAX, 100, &f, 1, &p), 1);
	assert_int_equal(p.rows[0].pid, 4);
	/* Text filter. */
	f = (struct store_filter){.cols = {&ev_cols[2]}, .n_cols = 1, .text = "proc3"};
	assert_int_equal(history_page(s, &table_a, 0, 0, INT64_MAX, 100, &f, 1, &p), 1);
	assert_int_equal(p.rows[0].pid, 3);
	/* Prefix filter: proc1, proc11, ..., proc19 of the odd pids; no
	 * pattern characters (a '%' is a '%'). */
	{
		struct event_column pc = ev_cols[2];

		pc.filter = COL_FILTER_PREFIX;
		f = (struct store_filter){.cols = {&pc}, .n_cols = 1, .text = "proc1"};
		assert_int_equal(history_page(s, &table_a, 0, 0, INT64_MAX, 100, &f, 1, &p), 6);
		for (size_t i = 0; i < p.n; i++)
			assert_memory_equal(p.rows[i].comm, "proc1", 5);
		f.text = "proc%";
		assert_int_equal(history_page(s, &table_a, 0, 0, INT64_MAX, 100, &f, 1, &p), 0);
		f.text = "proc23";
		assert_int_equal(history_page(s, &table_a, 0, 0, INT64_MAX, 100, &f, 1, &p), 1);
		assert_int_equal(p.rows[0].pid, 23);
	}
	store_close(s);
}

/* Every page of a windowed query of table t, checked against the same
 * window computed by brute force in SQL. */
static void check_window(struct store *s, const struct event_table *t, int64_t since, int64_t until)
{
	int64_t cursor = 0;
	char sql[512];
	int pages = 0;
	struct page p;

	do {
		int n = history_page(s, t, cursor, since, until, 100, NULL, 0, &p);
		int64_t expect;

		assert_true(n >= 0);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM %s WHERE ts >= %lld AND ts < %lld AND id < %lld",
			 t->name, (long long)since, (long long)until,
			 (long long)(cursor ? cursor : INT64_MAX));
		expect = db_int(sql);
		assert_int_equal(n, expect < 100 ? expect : 100);
		for (int i = 0; i < n; i++) {
			/* The i-th newest id of the window below the cursor. */
			snprintf(sql, sizeof(sql),
				 "SELECT id FROM %s WHERE ts >= %lld AND ts < %lld AND id < %lld "
				 "ORDER BY id DESC LIMIT 1 OFFSET %d",
				 t->name, (long long)since, (long long)until,
				 (long long)(cursor ? cursor : INT64_MAX), i);
			if (i == 0 || i == n - 1)
				assert_int_equal(p.ids[i], db_int(sql));
		}
		cursor = n ? p.ids[n - 1] : 0;
	} while (p.n == 100 && ++pages < 3);
}

/* The three plans of a windowed page (rowid walk, ts index for a small
 * window, ts index when many rows are newer) give the same answer as brute
 * force, with ts not in id order. */
static void test_history_window_plans(void **state)
{
	struct store_config cfg = default_cfg();
	int64_t base = 1700000000LL * 1000000000, us = 1000;
	struct store *s;

	s = store_open(&cfg, tables_ab, err, sizeof(err));
	assert_non_null(s);
	store_close(s);
	/* 60,000 rows, odd ids in test_a, even in test_b; ts jitters. */
	db_exec("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60000)"
		" INSERT INTO test_a(id, ts, pid, cpu, comm, value, bytes) SELECT i,"
		" 1700000000000000000 + i * 1000 + (i % 7) * 5000, i, i % 4, 'proc' || i,"
		" i * 0.5, i * 100 FROM c WHERE i % 2 = 1;"
		"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60000)"
		" INSERT INTO test_b(id, ts, pid, cpu, comm, value, bytes) SELECT i,"
		" 1700000000000000000 + i * 1000 + (i % 7) * 5000, i, i % 4, 'proc' || i,"
		" i * 0.5, i * 100 FROM c WHERE i % 2 = 0;");
	s = open_started(&cfg, tables_ab);
	/* start only, large window at the newest end: rowid walk. */
	check_window(s, &table_a, base + 15000 * us, INT64_MAX);
	check_window(s, &table_b, base + 15000 * us, INT64_MAX);
	/* small window deep in the past: ts index. */
	check_window(s, &table_a, base + 1000 * us, base + 1500 * us);
	/* large window, many rows newer: ts index. */
	check_window(s, &table_b, base + 100 * us, base + 25000 * us);
	/* large window reaching the newest rows, bounded end: rowid walk. */
	check_window(s, &table_a, base + 5000 * us, base + 55000 * us);
	/* empty window after everything. */
	check_window(s, &table_a, base + 100000 * us, INT64_MAX);
	store_close(s);
}

/* What a metric history walk saw: series or samples, in call order. */
struct walk {
	int64_t ids[8];
	char names[8][32], labels[8][64];
	int64_t ts[16];
	double v[16];
	size_t n;
	size_t stop_after; /* return -E2BIG on this call (1-based); 0: never */
};

static int walk_series(int64_t id, const char *name, const char *labels, void *arg)
{
	struct walk *w = arg;

	if (w->n == 8)
		return -ENOSPC;
	w->ids[w->n] = id;
	snprintf(w->names[w->n], sizeof(w->names[0]), "%s", name);
	snprintf(w->labels[w->n], sizeof(w->labels[0]), "%s", labels);
	return ++w->n == w->stop_after ? -E2BIG : 0;
}

static int walk_sample(int64_t ts_ns, double value, void *arg)
{
	struct walk *w = arg;

	if (w->n == 16)
		return -ENOSPC;
	w->ts[w->n] = ts_ns;
	w->v[w->n] = value;
	return ++w->n == w->stop_after ? -E2BIG : 0;
}

static void history_fixture(void)
{
	struct store_config cfg = default_cfg();
	struct store *s = store_open(&cfg, tables_ab, err, sizeof(err));

	assert_non_null(s);
	store_close(s);
	db_exec("INSERT INTO metric_series(id, name, labels) VALUES"
		" (3, 'drops_total', '{reason=\"NO_SOCKET\",proto=\"udp\"}'),"
		" (1, 'drops_total', '{reason=\"NO_SOCKET\",proto=\"tcp\"}'),"
		" (2, 'other', ''),"
		" (7, 'drops_total', '{reason=\"TCP_CSUM\",proto=\"tcp\"}');"
		"INSERT INTO metric_samples(series_id, ts, value)"
		" VALUES (1, 30, 3.0), (1, 10, 1.0), (1, 20, NULL),"
		" (1, 40, 4.0), (1, 50, 5.0), (3, 20, 33.0);");
}

/* store_series_each: the series of one name (or all) by id, with their label
 * text as stored; the callback's non-zero answer stops the walk. */
static void test_series_each(void **state)
{
	struct store_config cfg = default_cfg();
	struct walk w = {0};
	struct store *s;

	history_fixture();
	s = open_started(&cfg, tables_ab);

	assert_int_equal(store_series_each(s, "drops_total", walk_series, &w), 0);
	assert_int_equal(w.n, 3);
	assert_int_equal(w.ids[0], 1);
	assert_int_equal(w.ids[1], 3);
	assert_int_equal(w.ids[2], 7);
	assert_string_equal(w.names[0], "drops_total");
	assert_string_equal(w.labels[0], "{reason=\"NO_SOCKET\",proto=\"tcp\"}");

	w = (struct walk){0};
	assert_int_equal(store_series_each(s, NULL, walk_series, &w), 0);
	assert_int_equal(w.n, 4);
	assert_string_equal(w.names[1], "other");
	assert_string_equal(w.labels[1], "");

	w = (struct walk){0};
	assert_int_equal(store_series_each(s, "no_such_metric", walk_series, &w), 0);
	assert_int_equal(w.n, 0);

	/* A caller's cap: the walk stops at once and returns the callback's error. */
	w = (struct walk){.stop_after = 2};
	assert_int_equal(store_series_each(s, "drops_total", walk_series, &w), -E2BIG);
	assert_int_equal(w.n, 2);
	store_close(s);
}

/* store_series_samples: from <= ts <= to, oldest first, NULL as NaN. */
static void test_series_samples(void **state)
{
	struct store_config cfg = default_cfg();
	struct walk w = {0};
	struct store *s;

	history_fixture();
	s = open_started(&cfg, tables_ab);

	assert_int_equal(store_series_samples(s, 1, 20, 40, walk_sample, &w), 0);
	assert_int_equal(w.n, 3); /* both ends included */
	assert_int_equal(w.ts[0], 20);
	assert_int_equal(w.ts[1], 30);
	assert_int_equal(w.ts[2], 40);
	assert_true(isnan(w.v[0]));
	assert_true(w.v[1] == 3.0);

	w = (struct walk){0};
	assert_int_equal(store_series_samples(s, 1, INT64_MIN, INT64_MAX, walk_sample, &w), 0);
	assert_int_equal(w.n, 5);
	assert_int_equal(w.ts[0], 10);
	assert_int_equal(w.ts[4], 50);

	/* Other series' samples, an empty range, an unknown series: nothing. */
	w = (struct walk){0};
	assert_int_equal(store_series_samples(s, 3, 0, 100, walk_sample, &w), 0);
	assert_int_equal(w.n, 1);
	assert_true(w.v[0] == 33.0);
	w = (struct walk){0};
	assert_int_equal(store_series_samples(s, 1, 41, 49, walk_sample, &w), 0);
	assert_int_equal(store_series_samples(s, 1, 40, 20, walk_sample, &w), 0);
	assert_int_equal(store_series_samples(s, 99, 0, 100, walk_sample, &w), 0);
	assert_int_equal(w.n, 0);

	w = (struct walk){.stop_after = 2};
	assert_int_equal(store_series_samples(s, 1, 0, 100, walk_sample, &w), -E2BIG);
	assert_int_equal(w.n, 2);
	store_close(s);
}

/* With every reader taken, a walk gives up with -EBUSY (after 2 s). */
static void test_series_no_reader(void **state)
{
	struct store_config cfg = default_cfg();
	struct walk w = {0};
	struct store *s;
	sqlite3 *held;

	cfg.readers = 1;
	cfg.reader_wait_ms = 50; /* the -EBUSY answers below wait this, not 2 s */
	history_fixture();
	s = open_started(&cfg, tables_ab);
	held = store_reader_get(s);
	assert_non_null(held);
	assert_int_equal(store_series_each(s, "drops_total", walk_series, &w), -EBUSY);
	assert_int_equal(store_series_samples(s, 1, 0, 100, walk_sample, &w), -EBUSY);
	assert_int_equal(w.n, 0);
	store_reader_put(s, held);
	assert_int_equal(store_series_each(s, "drops_total", walk_series, &w), 0);
	assert_int_equal(w.n, 3);
	store_close(s);
}

/* Metric history samples share the queue with event rows: one metric_series
 * row per name and label set (found again after a reopen), one
 * metric_samples row per sample, readable through store_series_each and
 * store_series_samples. */
static void test_metric_history_samples(void **state)
{
	struct store_config cfg = default_cfg();
	int64_t base = 1700000000LL * 1000000000, sec = 1000000000;
	char labels[1024];
	struct store_stats st;
	struct store *s;

	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(store_submit_sample(s, base + i * sec, "test_drops_total",
						     "{reason=\"a\"}", 5 + i),
				 0);
		assert_int_equal(store_submit_sample(s, base + i * sec, "test_drops_total",
						     "{reason=\"b\"}", 7 + i),
				 0);
	}
	submit_n(s, &table_a, 0, 10, 0);
	/* A label set longer than a queue slot is refused and counted. */
	memset(labels, 'x', sizeof(labels) - 1);
	labels[sizeof(labels) - 1] = '\0';
	assert_int_equal(store_submit_sample(s, base, "test_drops_total", labels, 1), -E2BIG);
	assert_int_equal(store_flush(s), 0);

	struct walk w = {0};

	assert_int_equal(store_series_each(s, "test_drops_total", walk_series, &w), 0);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.labels[1], "{reason=\"b\"}");
	int64_t id_b = w.ids[1];

	w = (struct walk){0};
	assert_int_equal(store_series_samples(s, id_b, 0, INT64_MAX, walk_sample, &w), 0);
	assert_int_equal(w.n, 3);
	assert_int_equal(w.ts[0], base);
	assert_true(w.v[0] == 7.0);
	assert_true(w.v[2] == 9.0);

	store_get_stats(s, &st);
	assert_int_equal(st.samples_written, 6);
	assert_int_equal(st.samples_dropped, 1);
	assert_int_equal(st.rows_written, 10); /* event rows only */
	assert_int_equal(st.rows_dropped_full, 0);
	assert_int_equal(st.queue_depth, 0);
	assert_true(st.batches >= 1);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM metric_series WHERE name ="
				" 'test_drops_total'"),
			 2);
	assert_int_equal(db_int("SELECT count(*) FROM metric_samples"), 6);
	assert_int_equal(db_int("SELECT count(*) FROM test_a"), 10);

	/* After a reopen the same series is found again, not duplicated. */
	s = open_started(&cfg, tables_ab);
	assert_int_equal(
	    store_submit_sample(s, base + 3 * sec, "test_drops_total", "{reason=\"b\"}", 10), 0);
	assert_int_equal(store_flush(s), 0);
	store_close(s);
	assert_int_equal(db_int("SELECT count(*) FROM metric_series"),
			 db_int("SELECT count(DISTINCT name || labels) FROM metric_series"));
	assert_int_equal(db_int("SELECT count(*) FROM metric_series WHERE name ="
				" 'test_drops_total'"),
			 2);
	assert_int_equal(db_int("SELECT count(*) FROM metric_samples WHERE series_id = (SELECT id"
				" FROM metric_series WHERE labels = '{reason=\"b\"}')"),
			 4);
}

/*
 * Disk full: the database lives on a 24 MiB tmpfs (private mount namespace);
 * a filler file takes the rest. Commits fail with SQLITE_FULL, rows stay
 * queued, write_errors counts; removing the filler lets the writer resume
 * by itself, and every accepted row is there, integrity intact.
 */
static void test_disk_full_recovers(void **state)
{
	struct store_config cfg = default_cfg();
	char mnt[300], filler[400], buf[65536];
	struct store_stats st;
	int accepted = 0, fd;
	struct store *s;

	if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		skip();
	snprintf(mnt, sizeof(mnt), "%s/tmpfs", tmpdir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	/* Room for the WAL (up to ~8 MiB before auto-checkpoint) once the
	 * filler is gone. */
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=24m") != 0)
		skip();
	snprintf(dbpath, sizeof(dbpath), "%s/sysobs.db", mnt);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);

	cfg.queue_rows = 8192;
	cfg.batch_rows = 200;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 1000; i++, accepted++)
		submit_n(s, i % 2 ? &table_a : &table_b, i, 1, 0);
	assert_int_equal(store_flush(s), 0);

	memset(buf, 'f', sizeof(buf));
	fd = open(filler, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	while (write(fd, buf, 512) > 0)
		;
	close(fd);

	for (int i = 1000; i < 5000; i++) {
		struct ev_row r = make_row(i);

		memset(r.note, 'n', 190);
		if (store_submit(s, i % 2 ? &table_a : &table_b, now_ns(), &r) == 0)
			accepted++;
	}
	for (int i = 0; i < 250; i++) {
		store_get_stats(s, &st);
		if (st.write_errors > 0)
			break;
		sleep_ms(20);
	}
	store_get_stats(s, &st);
	assert_true(st.write_errors > 0);
	assert_true(st.queue_depth > 0);
	assert_int_equal(accepted, 5000);
	assert_true(store_flush_timeout(s, 200) != 0);

	assert_int_equal(unlink(filler), 0);
	int rc = -1;
	for (int i = 0; i < 6 && rc != 0; i++)
		rc = store_flush_timeout(s, 5000);
	assert_int_equal(rc, 0);
	store_get_stats(s, &st);
	assert_int_equal(st.rows_written, (uint64_t)accepted);
	store_close(s);

	assert_int_equal(db_int("SELECT (SELECT count(*) FROM test_a) + (SELECT count(*) FROM"
				" test_b)"),
			 accepted);
	assert_int_equal(db_int("SELECT count(DISTINCT pid) FROM (SELECT pid FROM test_a UNION ALL"
				" SELECT pid FROM test_b)"),
			 accepted);
	char *ic = db_text("PRAGMA integrity_check");
	assert_string_equal(ic, "ok");
	free(ic);
	umount2(mnt, MNT_DETACH);
}

static char latest_log[256];

static void latest_log_fn(enum store_log_level lvl, const char *msg, void *arg)
{
	(void)arg;
	if (lvl == STORE_LOG_ERR)
		snprintf(latest_log, sizeof(latest_log), "%s", msg);
}

static void latest_collect(int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	const struct ev_row *r = row;
	char *out = arg;

	(void)id, (void)ts_ns;
	snprintf(out + strlen(out), 256 - strlen(out), "%d/%s,", (int)r->pid, r->note);
}

/*
 * store_latest() through the store's own reader pool: the typed filter's
 * rows, the newest of each group, oldest group first; a filter the table
 * cannot take is -EINVAL, logged with its reason, and reads nothing.
 */
static void test_latest_typed_filter(void **state)
{
	static const char *const by_cpu[] = {"cpu", NULL};
	static const struct row_value notes[] = {ROW_TEXT("x"), ROW_TEXT("y")};
	static const struct row_cond x_or_y[] = {ROW_COND_IN("note", notes), {0}};
	static const struct row_value text[] = {ROW_TEXT("1")};
	static const struct row_cond bad[] = {ROW_COND_EQ("pid", text), {0}};
	struct store_config cfg = default_cfg();
	char got[256] = "";
	struct store *s;

	(void)state;
	cfg.log = latest_log_fn;
	s = open_started(&cfg, tables_ab);
	for (int i = 0; i < 12; i++) {
		struct ev_row r = make_row(i); /* cpu = i % 4 */

		snprintf(r.note, sizeof(r.note), "%s", i % 3 == 0 ? "x" : i % 3 == 1 ? "y" : "");
		assert_int_equal(store_submit(s, &table_a, now_ns(), &r), 0);
	}
	assert_int_equal(store_flush(s), 0);
	/* x or y: pids 0,1,3,4,6,7,9,10; the newest of each cpu: 4 (cpu 0),
	 * 9 (cpu 1), 10 (cpu 2), 7 (cpu 3); in id order */
	assert_int_equal(store_latest(s, &table_a, by_cpu, x_or_y, latest_collect, got), 0);
	assert_string_equal(got, "4/y,7/y,9/x,10/y,");
	got[0] = '\0';
	assert_int_equal(store_latest(s, &table_a, by_cpu, bad, latest_collect, got), -EINVAL);
	assert_string_equal(got, "");
	assert_non_null(
	    strstr(latest_log, "filter on pid (eq): a number column compares with numbers"));
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_migrations_applied_once_and_on_reopen, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_latest_typed_filter, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fresh_table_created_at_latest_version, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_garbage_file_refused_not_recreated, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_database_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unwritable_path_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_query_timeout_stops_a_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batching_visible_after_flush, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_full_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ring_bursts_wrap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_writer_sleeps_and_still_commits, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_global_ids_across_tables_and_reopen, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_retention_by_age, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retention_by_size, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_size_bound_single_row_commits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_history_page, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_history_window_plans, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_series_each, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_series_samples, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_series_no_reader, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_metric_history_samples, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disk_full_recovers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_whole_or_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unclean_stop_not_another_process, setup,
					    teardown_holder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
