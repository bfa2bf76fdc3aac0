// SPDX-License-Identifier: MIT
/* Unit tests of the IFS scheduler on a fake clock: order, spreading over the
 * interval, one job at a time, allow/deny lists, the hourly cap, retries
 * with backoff, offline CPUs, API requests and batch rotation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/ifs/ifs_sched.h"

#define MS   1000000LL
#define SEC  (1000 * MS)
#define HOUR (3600 * SEC)

#define SCAN (1u << IFS_TEST_SCAN)

/* n cores of 2 threads numbered as Linux does: core i = cpus i and i + n. */
static void make_topology(struct ifs_core_info *c, unsigned n)
{
	memset(c, 0, n * sizeof(*c));
	for (unsigned i = 0; i < n; i++) {
		c[i].package = 0;
		c[i].core_id = i;
		c[i].n_cpus = 2;
		c[i].cpus[0] = i;
		c[i].cpus[1] = i + n;
		c[i].online[0] = c[i].online[1] = true;
	}
}

static void setup(struct ifs_sched *s, struct ifs_sched_config *cfg, unsigned n, unsigned tests)
{
	struct ifs_core_info c[16];

	make_topology(c, n);
	assert_int_equal(ifs_sched_init(s, cfg), 0);
	assert_int_equal(ifs_sched_set_topology(s, c, n, 0), 0);
	ifs_sched_set_tests(s, tests, 0);
}

/* Runs the next job at now for dur with the outcome; returns its core or -1. */
static int run_one(struct ifs_sched *s, int64_t now, int64_t dur, enum ifs_outcome out,
		   struct ifs_job *job)
{
	struct ifs_job j = {0};
	int64_t wake;

	if (ifs_sched_next(s, now, &j, &wake))
		return -1;
	ifs_sched_done(s, &j, now, now + dur, out);
	if (job)
		*job = j;
	return (int)j.core;
}

static void test_order_and_spreading(void **state)
{
	struct ifs_sched_config cfg = {.periodic = true, .interval_ns = 4 * HOUR};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	setup(&s, &cfg, 4, SCAN);
	/* Four cores over four hours: one per hour, in core order. */
	assert_int_equal(ifs_sched_next(&s, 0, &j, &wake), 0);
	assert_int_equal(j.core, 0);
	assert_int_equal(j.cpu, 0);
	assert_int_equal(j.test, IFS_TEST_SCAN);
	assert_int_equal(j.by, IFS_BY_SCHEDULER);
	assert_int_equal(j.batch, -1);
	/* One at a time. */
	assert_int_equal(ifs_sched_next(&s, 0, &j, &wake), -EBUSY);
	ifs_sched_done(&s, &j, 0, 200 * MS, IFS_OUT_DONE);

	assert_int_equal(ifs_sched_next(&s, SEC, &j, &wake), -EAGAIN);
	assert_true(wake == HOUR);
	assert_int_equal(run_one(&s, HOUR, 200 * MS, IFS_OUT_DONE, NULL), 1);
	assert_int_equal(run_one(&s, 2 * HOUR - 1, 200 * MS, IFS_OUT_DONE, NULL), -1);
	assert_int_equal(run_one(&s, 2 * HOUR, 200 * MS, IFS_OUT_DONE, NULL), 2);
	assert_int_equal(run_one(&s, 3 * HOUR, 200 * MS, IFS_OUT_DONE, NULL), 3);
	/* Core 0 comes round again one interval after its start. */
	assert_int_equal(ifs_sched_next(&s, 3 * HOUR + SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 4 * HOUR);
	assert_int_equal(run_one(&s, 4 * HOUR, 200 * MS, IFS_OUT_DONE, NULL), 0);
	ifs_sched_free(&s);
}

static void test_tests_interleaved(void **state)
{
	struct ifs_sched_config cfg = {.periodic = true, .interval_ns = 4 * HOUR};
	struct ifs_sched s;
	struct ifs_job j = {0};

	/* 2 cores x 2 tests = 4 pairs, one per hour. */
	setup(&s, &cfg, 2, SCAN | 1u << IFS_TEST_ARRAY);
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.test, IFS_TEST_SCAN);
	assert_int_equal(run_one(&s, HOUR, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.test, IFS_TEST_ARRAY);
	assert_int_equal(run_one(&s, 2 * HOUR, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(j.test, IFS_TEST_SCAN);
	assert_int_equal(run_one(&s, 3 * HOUR, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(j.test, IFS_TEST_ARRAY);
	ifs_sched_free(&s);
}

static void test_deny_and_allow(void **state)
{
	struct ifs_sched_config cfg = {.periodic = true, .interval_ns = 4 * SEC};
	struct ifs_sched s;
	int seen[4] = {0};

	/* cpu 5 is the second thread of core 1: the whole core is skipped. */
	cfg.deny[0] = 1ULL << 5;
	setup(&s, &cfg, 4, SCAN);
	assert_false(ifs_sched_core_allowed(&s, 1));
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 7, -1), -EPERM);
	for (int64_t t = 0; t < 40 * SEC; t += 100 * MS) {
		int c = run_one(&s, t, MS, IFS_OUT_DONE, NULL);

		if (c >= 0)
			seen[c]++;
	}
	assert_int_equal(seen[1], 0);
	assert_true(seen[0] >= 9 && seen[2] >= 9 && seen[3] >= 9);
	ifs_sched_free(&s);

	/* Allow list: every thread of a core must be in it. cpus 0,4 = core 0
	 * whole; cpu 1 without 5 = core 1 only half. */
	memset(&cfg.deny, 0, sizeof(cfg.deny));
	cfg.have_allow = true;
	cfg.allow[0] = 1ULL << 0 | 1ULL << 4 | 1ULL << 1;
	setup(&s, &cfg, 4, SCAN);
	assert_true(ifs_sched_core_allowed(&s, 0));
	assert_false(ifs_sched_core_allowed(&s, 1));
	assert_false(ifs_sched_core_allowed(&s, 2));
	memset(seen, 0, sizeof(seen));
	for (int64_t t = 0; t < 40 * SEC; t += 100 * MS) {
		int c = run_one(&s, t, MS, IFS_OUT_DONE, NULL);

		if (c >= 0)
			seen[c]++;
	}
	assert_true(seen[0] >= 9);
	assert_int_equal(seen[1] + seen[2] + seen[3], 0);
	ifs_sched_free(&s);
}

static void test_hourly_cap(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 10 * SEC,
	    .max_scan_ns_per_hour = 1 * SEC,
	};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake, first_end = 0;
	int runs = 0;

	setup(&s, &cfg, 10, SCAN);
	/* 200 ms runs against a 1 s cap: five in the first hour, however
	 * often the scheduler is asked. */
	for (int64_t t = 0; t < HOUR - SEC; t += SEC) {
		if (run_one(&s, t, 200 * MS, IFS_OUT_DONE, NULL) >= 0) {
			if (!runs)
				first_end = t + 200 * MS;
			runs++;
		}
	}
	assert_int_equal(runs, 5);
	assert_true(ifs_sched_hour_used(&s, HOUR - SEC) == 1 * SEC);
	assert_int_equal(ifs_sched_next(&s, HOUR - SEC, &j, &wake), -EAGAIN);
	/* The window frees when the first run leaves it. */
	assert_true(wake == first_end + HOUR);
	assert_int_equal(ifs_sched_next(&s, wake, &j, &wake), 0);
	ifs_sched_free(&s);
}

/* Issue 13: one run longer than the whole cap (SBAF may take 2 s plus a
 * bundle, a writer may wait on ifs_sem) must not stop scanning for good.
 * Cap 2 s, a 2.2 s run, then ten simulated hours asked every second. */
static void test_hourly_cap_long_run(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 10 * SEC,
	    .max_scan_ns_per_hour = 2 * SEC,
	};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t t, wake, api_start = -1;
	int later = 0;

	setup(&s, &cfg, 2, SCAN);
	assert_int_equal(run_one(&s, 0, 2200 * MS, IFS_OUT_DONE, NULL), 0);
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 7, -1), 0);
	for (t = 3 * SEC; t < 10 * HOUR; t += SEC) {
		if (ifs_sched_next(&s, t, &j, &wake))
			continue;
		if (j.by == IFS_BY_API && api_start < 0)
			api_start = t;
		ifs_sched_done(&s, &j, t, t + 200 * MS, IFS_OUT_DONE);
		later++;
	}
	print_message("cap 2 s, one 2.2 s run: %d later runs in 10 h, API request after %lld s\n",
		      later, (long long)(api_start < 0 ? -1 : api_start / SEC));
	/* The API request runs once the long run leaves the window (an hour
	 * after it ended), and the periodic scans go on, ten 200 ms runs per
	 * hour. */
	assert_true(api_start > 0 && api_start <= HOUR + 3 * SEC);
	assert_true(later >= 9 * 10);
	ifs_sched_free(&s);
}

/* Issue 13: a result asking for an image reload is run once more right
 * away with job.reload, for the scheduler and for API requests; a second
 * such result is final. Before, the collector reported it as a final
 * result: no reload, the core's next attempt one interval later. */
static void test_reload_once_then_retry(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 24 * HOUR,
	    .retry_max = 3,
	    .retry_backoff_ns = 60 * SEC,
	};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;
	unsigned reloads = 0;

	setup(&s, &cfg, 2, SCAN);
	assert_int_equal(run_one(&s, 0, 200 * MS, IFS_OUT_RELOAD, &j), 0);
	assert_false(j.reload);
	/* Right away, the same core, reloading first; not a retry. */
	assert_int_equal(ifs_sched_next(&s, 200 * MS, &j, &wake), 0);
	assert_int_equal(j.core, 0);
	assert_true(j.reload);
	assert_int_equal(j.attempt, 0);
	reloads += j.reload;
	/* Still corrupted after the reload: final for this interval. */
	ifs_sched_done(&s, &j, 200 * MS, 400 * MS, IFS_OUT_RELOAD);
	assert_int_equal(ifs_sched_next(&s, SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 12 * HOUR); /* core 1's first run */
	assert_int_equal(run_one(&s, 12 * HOUR, 200 * MS, IFS_OUT_DONE, &j), 1);
	assert_false(j.reload);

	/* An API request: the reload retry keeps its scan id and goes first. */
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 77, 3), 0);
	assert_int_equal(ifs_sched_request(&s, 0, IFS_TEST_SCAN, 78, -1), 0);
	assert_int_equal(run_one(&s, 13 * HOUR, 200 * MS, IFS_OUT_RELOAD, &j), 1);
	assert_true(j.scan_id == 77);
	assert_int_equal(ifs_sched_next(&s, 13 * HOUR + SEC, &j, &wake), 0);
	assert_true(j.scan_id == 77);
	assert_true(j.reload);
	assert_int_equal(j.cpu, 3);
	reloads += j.reload;
	ifs_sched_done(&s, &j, 13 * HOUR + SEC, 13 * HOUR + 2 * SEC, IFS_OUT_DONE);
	assert_int_equal(run_one(&s, 13 * HOUR + 3 * SEC, 200 * MS, IFS_OUT_DONE, &j), 0);
	assert_true(j.scan_id == 78);
	assert_false(j.reload);
	print_message("2 results asking for a reload: %u reload retries, each 0 s later\n",
		      reloads);
	assert_int_equal(reloads, 2);
	ifs_sched_free(&s);
}

static void test_retries_with_backoff(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 24 * HOUR,
	    .retry_max = 2,
	    .retry_backoff_ns = 10 * SEC,
	};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	setup(&s, &cfg, 1, SCAN);
	assert_int_equal(run_one(&s, 0, SEC, IFS_OUT_RETRY, &j), 0);
	assert_int_equal(j.attempt, 0);
	/* First retry after the backoff from the end of the run. */
	assert_int_equal(ifs_sched_next(&s, 5 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == SEC + 10 * SEC);
	assert_int_equal(run_one(&s, 11 * SEC, SEC, IFS_OUT_RETRY, &j), 0);
	assert_int_equal(j.attempt, 1);
	/* Second retry after twice the backoff. */
	assert_int_equal(ifs_sched_next(&s, 12 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 12 * SEC + 20 * SEC);
	assert_int_equal(run_one(&s, 32 * SEC, SEC, IFS_OUT_RETRY, &j), 0);
	assert_int_equal(j.attempt, 2);
	/* retry_max reached: back to the interval. */
	assert_int_equal(ifs_sched_next(&s, 40 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 32 * SEC + 24 * HOUR);
	/* A later run starts from attempt 0 again. */
	assert_int_equal(run_one(&s, wake, SEC, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.attempt, 0);
	ifs_sched_free(&s);
}

/* Issue 33 item 11: two scans of one core start min_scan_gap_ns apart (the
 * microcode's interval, 180 s on Sapphire Rapids): a code 6 retry after
 * 1 min waits for it, so does an API request and a reload rerun; a start
 * from the history counts; array BIST has no such window. */
static void test_min_scan_gap(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 24 * HOUR,
	    .retry_max = 3,
	    .retry_backoff_ns = 60 * SEC,
	    .min_scan_gap_ns = 180 * SEC,
	};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	setup(&s, &cfg, 1, SCAN);
	assert_int_equal(run_one(&s, 0, SEC, IFS_OUT_RETRY, &j), 0);
	assert_int_equal(j.test, IFS_TEST_SCAN);
	/* The retry is due at 61 s, the window ends at 180 s. */
	assert_int_equal(ifs_sched_next(&s, 61 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 180 * SEC);
	assert_int_equal(ifs_sched_gap_until(&s, 0, IFS_TEST_SCAN), 180 * SEC);
	assert_true(ifs_sched_gap_until(&s, 0, IFS_TEST_ARRAY) == INT64_MIN);
	/* An API request waits for the window as well. */
	assert_int_equal(ifs_sched_request(&s, 0, IFS_TEST_SCAN, 7, -1), 0);
	assert_int_equal(ifs_sched_next(&s, 100 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 180 * SEC);
	assert_int_equal(ifs_sched_next(&s, 180 * SEC, &j, &wake), 0);
	assert_int_equal(j.scan_id, 7);
	ifs_sched_done(&s, &j, 180 * SEC, 181 * SEC, IFS_OUT_RELOAD);
	/* The rerun after an image reload, too. */
	assert_int_equal(ifs_sched_next(&s, 181 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 360 * SEC);
	ifs_sched_free(&s);

	/* After a restart: the last start from the history (before the
	 * scheduler's clock began) holds the first run back. */
	setup(&s, &cfg, 1, SCAN);
	ifs_sched_note_begun(&s, 0, IFS_TEST_SCAN, -170 * SEC);
	assert_int_equal(ifs_sched_next(&s, 0, &j, &wake), -EAGAIN);
	assert_true(wake == 10 * SEC);
	assert_int_equal(run_one(&s, 10 * SEC, SEC, IFS_OUT_DONE, &j), 0);
	ifs_sched_free(&s);

	/* Without a window (model unknown) nothing waits. */
	cfg.min_scan_gap_ns = 0;
	setup(&s, &cfg, 1, SCAN);
	ifs_sched_note_begun(&s, 0, IFS_TEST_SCAN, -SEC);
	assert_int_equal(run_one(&s, 0, SEC, IFS_OUT_DONE, &j), 0);
	ifs_sched_free(&s);
}

/* Issue 21, item 2: a core with an offline SMT sibling is not tested (ifs.h:
 * "All siblings must be online to run a core test"; the driver runs it
 * anyway and the scan ends untested, "other thread could not join"). This
 * test used to expect core 0 to run on cpu 2 with cpu 0 offline. */
static void test_offline_cpus(void **state)
{
	struct ifs_sched_config cfg = {.periodic = true, .interval_ns = 2 * HOUR};
	struct ifs_core_info c[2];
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	make_topology(c, 2);
	c[0].online[0] = false; /* cpu 0 offline: its sibling cpu 2 is not enough */
	c[1].online[0] = c[1].online[1] = false; /* core 1 fully offline */
	assert_int_equal(ifs_sched_init(&s, &cfg), 0);
	assert_int_equal(ifs_sched_set_topology(&s, c, 2, 0), 0);
	ifs_sched_set_tests(&s, SCAN, 0);

	assert_int_equal(ifs_sched_core_skip(&s, 0), IFS_SKIP_SIBLING_OFFLINE);
	assert_int_equal(ifs_sched_core_skip(&s, 1), IFS_SKIP_OFFLINE);
	assert_string_equal(ifs_skip_name(IFS_SKIP_SIBLING_OFFLINE), "sibling_offline");
	assert_int_equal(ifs_sched_core_cpu(&s, 0), -1);
	/* Core 0 is due at 0: skipped, counted once; not again within the
	 * interval however often the scheduler looks. */
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_DONE, &j), -1);
	assert_int_equal(run_one(&s, SEC, MS, IFS_OUT_DONE, &j), -1);
	print_message("core 0 with cpu 0 offline: %d runs, %llu skipped (sibling_offline)\n", 0,
		      (unsigned long long)s.skipped[IFS_TEST_SCAN][IFS_SKIP_SIBLING_OFFLINE]);
	assert_true(s.skipped[IFS_TEST_SCAN][IFS_SKIP_SIBLING_OFFLINE] == 1);
	/* Core 1 is due at 1 h but offline: nothing to run, one skip. */
	assert_int_equal(ifs_sched_next(&s, HOUR + SEC, &j, &wake), -EAGAIN);
	assert_true(s.skipped[IFS_TEST_SCAN][IFS_SKIP_OFFLINE] == 1);
	/* Another interval with cpu 0 still offline: core 0 counted again. */
	assert_int_equal(ifs_sched_next(&s, 2 * HOUR + SEC, &j, &wake), -EAGAIN);
	assert_true(s.skipped[IFS_TEST_SCAN][IFS_SKIP_SIBLING_OFFLINE] == 2);
	/* An API request for core 1 waits in the queue. */
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 42, -1), 0);
	assert_int_equal(ifs_sched_next(&s, 2 * HOUR + SEC, &j, &wake), -EAGAIN);
	assert_int_equal(ifs_sched_pending(&s), 1);

	/* Only one of core 1's threads back: still not tested. */
	c[1].online[1] = true;
	assert_int_equal(ifs_sched_set_topology(&s, c, 2, 2 * HOUR + 2 * SEC), 0);
	assert_int_equal(ifs_sched_next(&s, 2 * HOUR + 2 * SEC, &j, &wake), -EAGAIN);
	assert_int_equal(ifs_sched_core_skip(&s, 1), IFS_SKIP_SIBLING_OFFLINE);
	/* Every thread back (new topology, same core ids): state is kept; the
	 * queued request runs first, on the first thread, then core 0, due
	 * since 0, on cpu 0. */
	c[0].online[0] = c[1].online[0] = true;
	assert_int_equal(ifs_sched_set_topology(&s, c, 2, 2 * HOUR + 3 * SEC), 0);
	assert_int_equal(run_one(&s, 2 * HOUR + 3 * SEC, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(j.by, IFS_BY_API);
	assert_true(j.scan_id == 42);
	assert_int_equal(j.cpu, 1);
	assert_int_equal(run_one(&s, 2 * HOUR + 4 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.by, IFS_BY_SCHEDULER);
	assert_int_equal(j.cpu, 0);
	/* The requested run counted as core 1's periodic run. */
	assert_int_equal(ifs_sched_next(&s, 2 * HOUR + 5 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 2 * HOUR + 3 * SEC + 2 * HOUR);
	ifs_sched_free(&s);
}

static void test_api_only_when_off(void **state)
{
	struct ifs_sched_config cfg = {.periodic = false};
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	setup(&s, &cfg, 4, SCAN);
	assert_int_equal(ifs_sched_next(&s, 0, &j, &wake), -EAGAIN);
	assert_true(wake == INT64_MAX);
	assert_int_equal(ifs_sched_request(&s, 9, IFS_TEST_SCAN, 1, -1), -ENOENT);
	assert_int_equal(ifs_sched_request(&s, 2, IFS_TEST_ARRAY, 1, -1), -ENOENT);
	assert_int_equal(ifs_sched_request(&s, 3, IFS_TEST_SCAN, 100, 7), 0);
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 101, -1), 0);
	/* FIFO, one at a time, no periodic runs after. */
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_RETRY, &j), 3);
	assert_true(j.scan_id == 100);
	assert_int_equal(j.cpu, 7); /* the sibling asked for */
	assert_int_equal(run_one(&s, SEC, MS, IFS_OUT_DONE, &j), 1);
	assert_true(j.scan_id == 101);
	assert_int_equal(ifs_sched_next(&s, 10 * HOUR, &j, &wake), -EAGAIN);
	ifs_sched_free(&s);
}

static void test_batch_rotation(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 2 * SEC,
	    .batches = {[IFS_TEST_SCAN] = {1, 2}},
	    .n_batches = {[IFS_TEST_SCAN] = 2},
	};
	struct ifs_sched s;
	struct ifs_job j = {0};

	setup(&s, &cfg, 2, SCAN | 1u << IFS_TEST_ARRAY);
	/* Pairs: c0 scan @0, c0 array @0.5s, c1 scan @1s, c1 array @1.5s. */
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, 500 * MS, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.test, IFS_TEST_ARRAY);
	assert_int_equal(j.batch, -1); /* array BIST has no image */
	assert_int_equal(run_one(&s, SEC, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, 1500 * MS, MS, IFS_OUT_DONE, &j), 1);
	/* Every core ran batch 1: the next round uses batch 2. */
	assert_int_equal(run_one(&s, 2 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.test, IFS_TEST_SCAN);
	assert_int_equal(j.batch, 2);
	ifs_sched_free(&s);
}

/* Issue 21, item 4: scan and SBAF images are separate files with their own
 * numbering (ifs_0/ff-mm-ss-NN.scan, ifs_2/ff-mm-ss-NN.sbft), so each test
 * rotates through its own list: one list for both made SBAF load scan's
 * batch 3, which it does not have, every lap. */
static void test_batches_per_test(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 2 * SEC,
	    .batches = {[IFS_TEST_SCAN] = {1, 2, 3}, [IFS_TEST_SBAF] = {7}},
	    .n_batches = {[IFS_TEST_SCAN] = 3, [IFS_TEST_SBAF] = 1},
	};
	unsigned scan[4] = {0}, sbaf[4] = {0}, ns = 0, nb = 0;
	struct ifs_sched s;
	struct ifs_job j = {0};

	setup(&s, &cfg, 1, SCAN | 1u << IFS_TEST_SBAF);
	/* One core, two pairs: scan @0, SBAF @1 s, every 2 s. */
	for (int64_t t = 0; ns < 4 || nb < 4; t += SEC) {
		assert_int_equal(run_one(&s, t, MS, IFS_OUT_DONE, &j), 0);
		if (j.test == IFS_TEST_SCAN)
			scan[ns++ % 4] = (unsigned)j.batch;
		else
			sbaf[nb++ % 4] = (unsigned)j.batch;
	}
	print_message("scan batches %u %u %u %u, sbaf %u %u %u %u\n", scan[0], scan[1], scan[2],
		      scan[3], sbaf[0], sbaf[1], sbaf[2], sbaf[3]);
	assert_int_equal(scan[0], 1);
	assert_int_equal(scan[1], 2);
	assert_int_equal(scan[2], 3);
	assert_int_equal(scan[3], 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sbaf[i], 7);
	ifs_sched_free(&s);

	/* No SBAF list: SBAF keeps the image loaded (batch -1), scan rotates. */
	cfg.n_batches[IFS_TEST_SBAF] = 0;
	setup(&s, &cfg, 1, SCAN | 1u << IFS_TEST_SBAF);
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.test, IFS_TEST_SBAF);
	assert_int_equal(j.batch, -1);
	ifs_sched_free(&s);
}

/* Issue 13: only a real test (pass or fail) counts as a core's run of a
 * batch: an untested result (retries exhausted, or final) or a failed write
 * leaves the core out of the round, so the rotation waits for it. Issue 21:
 * but not for ever: a core whose scheduled runs of the batch tested nothing
 * IFS_ROUND_MISSES times in a row stops holding the round (one core stuck
 * at untested kept a host on batch 1 for ever). */
static void test_rotation_counts_only_tested(void **state)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 2 * SEC,
	    .retry_max = 0,
	    .batches = {[IFS_TEST_SCAN] = {1, 2}},
	    .n_batches = {[IFS_TEST_SCAN] = 2},
	};
	struct ifs_sched s;
	struct ifs_job j = {0};

	setup(&s, &cfg, 2, SCAN);
	assert_int_equal(run_one(&s, 0, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 1);
	/* Core 1: busy (retryable, no retry left): one miss. */
	assert_int_equal(run_one(&s, SEC, MS, IFS_OUT_RETRY, &j), 1);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, 2 * SEC, MS, IFS_OUT_DONE, &j), 0);
	print_message("after core 1 untested once: core 0 runs batch %d (1 = waits for core 1)\n",
		      j.batch);
	assert_int_equal(j.batch, 1);
	/* Core 1 tests batch 1: the round is complete (core 0 passed it). */
	assert_int_equal(run_one(&s, 3 * SEC + MS, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, 4 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 2);

	/* Core 1 tests nothing with batch 2, twice (a final untested, then a
	 * failed write): it no longer holds the round. */
	assert_int_equal(run_one(&s, 5 * SEC + 2 * MS, MS, IFS_OUT_UNTESTED, &j), 1);
	assert_int_equal(j.batch, 2);
	assert_int_equal(run_one(&s, 6 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 2);
	assert_int_equal(run_one(&s, 7 * SEC + 3 * MS, MS, IFS_OUT_ERROR, &j), 1);
	assert_int_equal(j.batch, 2);
	assert_int_equal(run_one(&s, 8 * SEC, MS, IFS_OUT_DONE, &j), 0);
	print_message("after core 1 tested nothing twice: core 0 runs batch %d (2 = stuck)\n",
		      j.batch);
	assert_int_equal(j.batch, 1);

	/* A batch that cannot load is skipped at once, for every core. */
	assert_int_equal(run_one(&s, 9 * SEC + 4 * MS, MS, IFS_OUT_BATCH_ERROR, &j), 1);
	assert_int_equal(j.batch, 1);
	assert_int_equal(run_one(&s, 10 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(j.batch, 2);
	ifs_sched_free(&s);
}

static void test_topology_change_during_a_run(void **state)
{
	struct ifs_sched_config cfg = {.periodic = true, .interval_ns = 3 * HOUR};
	struct ifs_core_info c[3];
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	make_topology(c, 3); /* core ids 0, 1, 2 due at 0, 1 h, 2 h */
	assert_int_equal(ifs_sched_init(&s, &cfg), 0);
	assert_int_equal(ifs_sched_set_topology(&s, c, 3, 0), 0);
	ifs_sched_set_tests(&s, SCAN, 0);
	assert_int_equal(run_one(&s, 0, SEC, IFS_OUT_DONE, NULL), 0);
	assert_int_equal(run_one(&s, HOUR, SEC, IFS_OUT_DONE, NULL), 1);
	assert_int_equal(ifs_sched_next(&s, 2 * HOUR, &j, &wake), 0);
	assert_int_equal(s.cores[j.core].core_id, 2);

	/* While core id 2 runs, core id 0 disappears: indices shift by one. */
	assert_int_equal(ifs_sched_set_topology(&s, c + 1, 2, 2 * HOUR + 1), 0);
	ifs_sched_done(&s, &j, 2 * HOUR, 2 * HOUR + SEC, IFS_OUT_DONE);

	/* The outcome landed on core id 2 (due 5 h), not on whatever now has
	 * its old index; core id 1 is next at 4 h. */
	assert_int_equal(ifs_sched_next(&s, 3 * HOUR, &j, &wake), -EAGAIN);
	assert_true(wake == 4 * HOUR);
	assert_int_equal(ifs_sched_next(&s, 4 * HOUR, &j, &wake), 0);
	assert_int_equal(s.cores[j.core].core_id, 1);
	ifs_sched_done(&s, &j, 4 * HOUR, 4 * HOUR + SEC, IFS_OUT_DONE);
	assert_int_equal(ifs_sched_next(&s, 4 * HOUR + 2 * SEC, &j, &wake), -EAGAIN);
	assert_true(wake == 5 * HOUR);
	ifs_sched_free(&s);
}

/* Queued requests name cores by index: a topology change keeps each on its
 * (package, core_id) and drops those whose core is gone. */
static void test_topology_change_remaps_requests(void **state)
{
	struct ifs_sched_config cfg = {.periodic = false};
	struct ifs_core_info c[3];
	struct ifs_sched s;
	struct ifs_job j = {0};
	int64_t wake;

	make_topology(c, 3); /* core id i: cpus i and i + 3 */
	assert_int_equal(ifs_sched_init(&s, &cfg), 0);
	assert_int_equal(ifs_sched_set_topology(&s, c, 3, 0), 0);
	ifs_sched_set_tests(&s, SCAN, 0);
	assert_int_equal(ifs_sched_request(&s, 0, IFS_TEST_SCAN, 10, -1), 0);
	assert_int_equal(ifs_sched_request(&s, 2, IFS_TEST_SCAN, 12, 5), 0);
	assert_int_equal(ifs_sched_request(&s, 1, IFS_TEST_SCAN, 11, -1), 0);

	/* Core id 0 goes: its request with it; core ids 1 and 2 move down. */
	assert_int_equal(ifs_sched_set_topology(&s, c + 1, 2, SEC), 0);
	assert_int_equal(ifs_sched_pending(&s), 2);
	assert_int_equal(run_one(&s, 2 * SEC, MS, IFS_OUT_DONE, &j), 1);
	assert_int_equal(s.cores[j.core].core_id, 2);
	assert_true(j.scan_id == 12);
	assert_int_equal(j.cpu, 5); /* the thread asked for, still online */
	assert_int_equal(run_one(&s, 3 * SEC, MS, IFS_OUT_DONE, &j), 0);
	assert_int_equal(s.cores[j.core].core_id, 1);
	assert_true(j.scan_id == 11);
	assert_int_equal(ifs_sched_next(&s, 4 * SEC, &j, &wake), -EAGAIN);

	/* To no cores at all: every request is dropped. */
	assert_int_equal(ifs_sched_request(&s, 0, IFS_TEST_SCAN, 13, -1), 0);
	assert_int_equal(ifs_sched_set_topology(&s, NULL, 0, 5 * SEC), 0);
	assert_int_equal(ifs_sched_pending(&s), 0);
	assert_int_equal(ifs_sched_next(&s, 6 * SEC, &j, &wake), -EAGAIN);
	ifs_sched_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_and_spreading),
	    cmocka_unit_test(test_tests_interleaved),
	    cmocka_unit_test(test_deny_and_allow),
	    cmocka_unit_test(test_hourly_cap),
	    cmocka_unit_test(test_hourly_cap_long_run),
	    cmocka_unit_test(test_reload_once_then_retry),
	    cmocka_unit_test(test_retries_with_backoff),
	    cmocka_unit_test(test_min_scan_gap),
	    cmocka_unit_test(test_offline_cpus),
	    cmocka_unit_test(test_api_only_when_off),
	    cmocka_unit_test(test_batch_rotation),
	    cmocka_unit_test(test_rotation_counts_only_tested),
	    cmocka_unit_test(test_batches_per_test),
	    cmocka_unit_test(test_topology_change_during_a_run),
	    cmocka_unit_test(test_topology_change_remaps_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
