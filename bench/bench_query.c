// SPDX-License-Identifier: MIT
/*
 * History read time of the store: store_history_page() (what every history
 * route runs) on a 5,000,000-row database spread over 4 collectors' tables
 * (ids interleaved from the global sequence, as the writer assigns them).
 * "All collectors" is one page of each table, as /api/v1/events reads them
 * before merging. End-to-end HTTP figures: bench/data_path.sh.
 *
 *   bench_query [rows]       (default 5,000,000)
 *
 * The tables are filled with one INSERT ... SELECT per table (a bulk path;
 * ingest speed is bench_ingest's business), then the store is opened as the
 * agent opens it and each query shape is timed 1,000 times: p50 / p99 / max.
 * Figures only, no assertions. The database goes to $TMPDIR (default /tmp).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_history.h"

#define N_TABLES 4
#define RUNS	 1000

/* The row of the 4 tables (filled in bulk by SQL, never submitted). */
struct bq_row {
	int64_t pid;
	char comm[16];
	char saddr[16];
	char daddr[16];
	int64_t bytes;
	char reason[16];
};

#define BQ_COL(f, t) COL(struct bq_row, f, t, COL_NULL_EMPTY)
static const struct event_column bq_cols[] = {
    COL(struct bq_row, pid, COL_INT, COL_NULL_NEG),
    BQ_COL(comm, COL_TEXT),
    BQ_COL(saddr, COL_TEXT),
    BQ_COL(daddr, COL_TEXT),
    COL(struct bq_row, bytes, COL_INT, COL_NULL_NEG),
    BQ_COL(reason, COL_TEXT),
    {0},
};

#define BQ_TABLE(n)                                                                                \
	{                                                                                          \
		.name = "bq_ev" #n, .collector = "coll" #n, .cols = bq_cols,                       \
		.row_size = sizeof(struct bq_row),                                                 \
	}

static const struct event_table bq_tables[N_TABLES] = {
    BQ_TABLE(0),
    BQ_TABLE(1),
    BQ_TABLE(2),
    BQ_TABLE(3),
};
static const struct event_table *const bq_list[] = {&bq_tables[0], &bq_tables[1], &bq_tables[2],
						    &bq_tables[3], NULL};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void remove_db(const char *path)
{
	char p[600];

	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

#define BASE_TS 1764720000000000000LL /* 2025-12-03T00:00:00Z */
#define STEP_TS 1000000LL	      /* 1 ms between events */

/* Row id i*4+k+1 of table k: ids interleave across tables as the writer's
 * one sequence makes them. */
static int fill(const char *path, uint64_t rows)
{
	sqlite3 *db;
	char sql[1024];
	int64_t t0 = mono_ns();
	uint64_t per = rows / N_TABLES;

	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_exec(db, "PRAGMA synchronous = OFF; PRAGMA cache_size = -65536", NULL, NULL, NULL);
	for (int k = 0; k < N_TABLES; k++) {
		char *msg = NULL;

		snprintf(sql, sizeof(sql),
			 "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c"
			 " WHERE i < %" PRIu64 ")"
			 " INSERT INTO bq_ev%d(id, ts, pid, comm, saddr, daddr, bytes, reason)"
			 " SELECT i * %d + %d + 1, %lld + (i * %d + %d) * %lld,"
			 " 1000 + i %% 3000, 'comm-' || (i %% 50), '10.0.' || (i %% 250) || '.1',"
			 " '192.168.1.' || (i %% 200), (i * 37) %% 1500,"
			 " 'REASON_' || (i %% 40) FROM c",
			 per - 1, k, N_TABLES, k, BASE_TS, N_TABLES, k, STEP_TS);
		if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
			fprintf(stderr, "fill: %s\n", msg);
			sqlite3_free(msg);
			sqlite3_close(db);
			return -1;
		}
	}
	sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_close(db);
	printf("filled %" PRIu64 " rows in %d tables in %.1f s\n", per * N_TABLES, N_TABLES,
	       (mono_ns() - t0) / 1e9);
	return 0;
}

struct shape {
	const char *what;
	bool all;	/* every collector */
	int cursor_pct; /* cursor at this % of the id range; 0 = newest */
	int window_pct; /* since/until window of 1 % at this % of time; 0 = none */
	unsigned limit;
	bool open_until; /* since only */
};

static int count_row(int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

static void run_shape(struct store *s, const struct shape *sh, uint64_t rows)
{
	int64_t lat[RUNS], max_id = (int64_t)rows;
	size_t got = 0;

	for (int r = 0; r < RUNS; r++) {
		int64_t cursor = sh->cursor_pct ? max_id * sh->cursor_pct / 100 : INT64_MAX;
		struct store_page_query q = {
		    .cursor = cursor, .end_ns = INT64_MAX, .limit = sh->limit + 1};
		int64_t t0;
		int ret = 0;

		if (sh->window_pct) {
			q.start_ns = BASE_TS + (int64_t)rows * STEP_TS * sh->window_pct / 100;
			q.end_ns =
			    sh->open_until ? INT64_MAX : q.start_ns + (int64_t)rows * STEP_TS / 100;
		}
		got = 0;
		t0 = mono_ns();
		for (int t = 0; t < N_TABLES && ret >= 0; t++) {
			if (!sh->all && t != r % N_TABLES)
				continue;
			ret = store_history_page(s, &bq_tables[t], &q, count_row, &got);
		}
		lat[r] = mono_ns() - t0;
		if (ret < 0) {
			fprintf(stderr, "%s: %s\n", sh->what, strerror(-ret));
			return;
		}
	}
	qsort(lat, RUNS, sizeof(lat[0]), cmp_i64);
	printf("%-44s rows/query=%-4zu p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", sh->what, got,
	       lat[RUNS / 2] / 1e6, lat[RUNS * 99 / 100] / 1e6, lat[RUNS - 1] / 1e6);
}

int main(int argc, char **argv)
{
	uint64_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	static const struct shape shapes[] = {
	    {"one collector, newest 100", false, 0, 0, 100},
	    {"all collectors (4 tables merged), newest 100", true, 0, 0, 100},
	    {"one collector, page at 50% (cursor), 100", false, 50, 0, 100},
	    {"one collector, newest 1000 (limit cap)", false, 0, 0, 1000},
	    {"one collector, 1% time window at 50%, 100", false, 0, 50, 100},
	    {"all collectors, 1% time window at 10%, 100", true, 0, 10, 100},
	    {"one collector, since = newest 1%, 100", false, 0, 99, 100, true},
	    {"one collector, since after newest (0 rows)", false, 0, 101, 100, true},
	};
	struct store_config cfg = {.readers = 2};
	char path[512], err[512];
	struct store *s;
	struct stat st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(path, sizeof(path), "%s/bench_query.%d.db", tmp, (int)getpid());
	cfg.path = path;
	remove_db(path);
	printf("bench_query: %" PRIu64 " rows, %d tables, %s, SQLite %s\n", rows, N_TABLES, path,
	       sqlite3_libversion());
	s = store_open(&cfg, bq_list, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	store_close(s);
	if (fill(path, rows))
		goto out_fail;
	if (stat(path, &st) == 0)
		printf("database %.1f MiB\n", st.st_size / 1048576.0);

	int64_t t0 = mono_ns();
	s = store_open(&cfg, bq_list, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err);
		goto out_fail;
	}
	printf("store_open (quick_check, migrations, id scan): %.1f ms\n", (mono_ns() - t0) / 1e6);
	store_start(s);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		run_shape(s, &shapes[i], rows);
	store_close(s);
	remove_db(path);
	return 0;

out_fail:
	remove_db(path);
	return 1;
}
