// SPDX-License-Identifier: MIT
/*
 * Storage ingest: events/s through store_submit -> queue -> writer thread ->
 * SQLite, for a realistic 7-column event table with a ts index.
 *
 *   bench_ingest [rows [drain|max|paced]]
 *                  (default 2,000,000 rows and every mode; batch_rows=1 runs rows/10)
 *
 * Prints, per batch size (1, 1000, 10000):
 *   drain  rows queued first, then the writer alone drains them (events per
 *          wall second and per CPU second)
 *   max    the producer retries on -EAGAIN (producer_waits counts them): the
 *          sustained ceiling with producer and writer sharing the 2 CPUs
 *   paced  the producer offers 300,000 events/s (in 1 ms ticks) and drops on
 *          -EAGAIN, as a collector does: "dropped" says whether it keeps up
 * and the bare cost of one store_submit (writer not running).
 * Figures only, no assertions. The database goes to $TMPDIR (default /tmp).
 * BENCH_MAX_SIZE=BYTES runs every mode with that [storage] max_size: size
 * retention and the commit bounded by the WAL's share, as a flood meets
 * them.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"

struct bench_event {
	int32_t pid;
	int32_t tid;
	uint32_t cpu;
	uint32_t reason;
	uint64_t bytes;
	double latency_us;
	char comm[16];
};

#define BENCH_COL(f, t) COL(struct bench_event, f, t, COL_NOT_NULL)
static const struct event_column bench_cols[] = {
    BENCH_COL(pid, COL_INT),	 BENCH_COL(tid, COL_INT),
    BENCH_COL(cpu, COL_UINT),	 BENCH_COL(comm, COL_TEXT),
    BENCH_COL(bytes, COL_UINT),	 BENCH_COL(latency_us, COL_REAL),
    BENCH_COL(reason, COL_UINT), {0},
};

static const struct event_table bench_table = {
    .name = "bench_events",
    .collector = "bench",
    .cols = bench_cols,
    .row_size = sizeof(struct bench_event),
};

static const struct event_table *const bench_tables[] = {&bench_table, NULL};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fill_event(struct bench_event *e, uint64_t i)
{
	e->pid = (int32_t)(1000 + i % 500);
	e->tid = e->pid + (int32_t)(i % 7);
	e->cpu = (uint32_t)(i % 2);
	e->reason = (uint32_t)(i % 80);
	e->bytes = 64 + (i * 37) % 1400;
	e->latency_us = (double)(i % 1000) * 1.25;
	snprintf(e->comm, sizeof(e->comm), "worker-%u", (unsigned)(i % 32));
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

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t max_bytes; /* BENCH_MAX_SIZE */

enum bench_mode { MODE_MAX, MODE_PACED };

static int run(const char *path, unsigned batch_rows, uint64_t rows, enum bench_mode mode,
	       double offered)
{
	struct store_config cfg = {
	    .path = path,
	    .queue_rows = 65536,
	    .batch_rows = batch_rows,
	    .batch_ms = 200,
	    .max_bytes = max_bytes,
	};
	struct store_stats st;
	struct bench_event e;
	uint64_t accepted = 0, retries = 0;
	int64_t t0, t_submit, t1;
	char err[512];
	struct store *s;

	remove_db(path);
	s = store_open(&cfg, bench_tables, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	if (store_start(s)) {
		fprintf(stderr, "store_start failed\n");
		store_close(s);
		return 1;
	}
	t0 = mono_ns();
	for (uint64_t i = 0; i < rows; i++) {
		fill_event(&e, i);
		if (mode == MODE_PACED) {
			/* Offer `offered` events/s in 1 ms ticks, sleeping
			 * between them as an event-driven collector does (a
			 * busy-waiting producer would take a CPU from the
			 * writer on this 2-CPU machine). */
			int64_t due = t0 + (int64_t)((double)i * 1e9 / offered);

			if (mono_ns() < due) {
				struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};

				nanosleep(&ts, NULL);
			}
			if (store_submit(s, &bench_table, wall_ns(), &e) == 0)
				accepted++;
			continue;
		}
		while (store_submit(s, &bench_table, wall_ns(), &e) == -EAGAIN) {
			retries++;
			sched_yield();
		}
		accepted++;
	}
	t_submit = mono_ns();
	store_flush(s);
	t1 = mono_ns();
	store_get_stats(s, &st);
	printf("%-6s batch_rows=%-6u rows=%-8" PRIu64 " %7.2f s  %9.0f events/s  written=%" PRIu64
	       " %s=%" PRIu64 " batches=%" PRIu64 " (%.0f rows/batch) submit-phase %.2f s\n",
	       mode == MODE_MAX ? "max" : "paced", batch_rows, rows, (t1 - t0) / 1e9,
	       st.rows_written / ((t1 - t0) / 1e9), st.rows_written,
	       mode == MODE_MAX ? "producer_waits" : "dropped",
	       mode == MODE_MAX ? retries : st.rows_dropped_full, st.batches,
	       st.batches ? (double)st.rows_written / st.batches : 0.0, (t_submit - t0) / 1e9);
	(void)accepted;
	store_close(s);
	printf("       db file %.1f MiB\n", file_size(path) / 1048576.0);
	return 0;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * Writer alone: queue every row first (writer not running), then start it
 * and time the drain. The producer is idle meanwhile, so the CPU seconds
 * are the writer's and checkpointer's: events per CPU-second is the figure
 * that survives a busy machine.
 */
static int drain(const char *path, unsigned batch_rows, uint64_t rows)
{
	struct store_config cfg = {
	    .path = path,
	    .queue_rows = (unsigned)rows,
	    .batch_rows = batch_rows,
	    .batch_ms = 200,
	    .max_bytes = max_bytes,
	};
	struct store_stats st;
	struct bench_event e;
	double c0, c1;
	int64_t t0, t1;
	char err[512];
	struct store *s;

	remove_db(path);
	s = store_open(&cfg, bench_tables, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	for (uint64_t i = 0; i < rows; i++) {
		fill_event(&e, i);
		store_submit(s, &bench_table, wall_ns(), &e);
	}
	c0 = cpu_s();
	t0 = mono_ns();
	store_start(s);
	store_flush(s);
	t1 = mono_ns();
	c1 = cpu_s();
	store_get_stats(s, &st);
	printf("drain  batch_rows=%-6u rows=%-8" PRIu64 " %7.2f s  %9.0f events/s  %9.0f "
	       "events/CPU-s  batches=%" PRIu64 "\n",
	       batch_rows, rows, (t1 - t0) / 1e9, st.rows_written / ((t1 - t0) / 1e9),
	       st.rows_written / (c1 - c0), st.batches);
	store_close(s);
	return 0;
}

/*
 * Enqueue cost of store_submit (mutex + memcpy into the ring): cold (first
 * touch of the ring's pages, writer not running), then warm (ring pages
 * resident, writer running and draining concurrently, so the lock is shared).
 */
static int submit_cost(const char *path)
{
	struct store_config cfg = {.path = path, .queue_rows = 65536, .batch_rows = 1000};
	unsigned n = 60000, accepted = 0;
	struct bench_event e;
	int64_t t0, t1, t2;
	char err[512];
	struct store *s;

	remove_db(path);
	s = store_open(&cfg, bench_tables, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	fill_event(&e, 1);
	t0 = mono_ns();
	for (unsigned i = 0; i < n; i++)
		store_submit(s, &bench_table, i, &e);
	t1 = mono_ns();
	store_start(s);
	store_flush(s);
	t2 = mono_ns();
	for (unsigned i = 0; i < n; i++)
		accepted += store_submit(s, &bench_table, i, &e) == 0;
	printf("store_submit: %.1f ns/event cold (writer stopped), %.1f ns/event warm (writer "
	       "draining; %u of %u accepted)\n",
	       (double)(t1 - t0) / n, (double)(mono_ns() - t2) / n, accepted, n);
	store_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
	const char *only = argc > 2 ? argv[2] : NULL;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	static const unsigned batches[] = {1, 1000, 10000};
	char path[512];
	int ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("BENCH_MAX_SIZE"))
		max_bytes = strtoull(getenv("BENCH_MAX_SIZE"), NULL, 10);
	snprintf(path, sizeof(path), "%s/bench_ingest.%d.db", tmp, (int)getpid());
	printf("bench_ingest: 7-column table + ts index, %s, %ld CPUs, SQLite %s, max_size %llu\n",
	       path, sysconf(_SC_NPROCESSORS_ONLN), sqlite3_libversion(),
	       (unsigned long long)max_bytes);
	if (!only || !strcmp(only, "drain")) {
		ret |= submit_cost(path);
		ret |= drain(path, 1000, rows);
		ret |= drain(path, 10000, rows);
	}
	for (size_t i = 0; (!only || !strcmp(only, "max")) && i < ARRAY_LEN(batches); i++)
		ret |= run(path, batches[i], batches[i] == 1 ? rows / 10 : rows, MODE_MAX, 0);
	for (size_t i = 0; (!only || !strcmp(only, "paced")) && i < ARRAY_LEN(batches); i++)
		ret |=
		    run(path, batches[i], batches[i] == 1 ? rows / 10 : rows, MODE_PACED, 300000.0);
	remove_db(path);
	return ret;
}
