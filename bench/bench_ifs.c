// SPDX-License-Identifier: MIT
/*
 * bench_ifs: CPU cost of the IFS scheduler and decoders, the parts of the
 * ifs collector that run on the main loop. Prints figures; asserts nothing.
 *
 *  - ifs_sched_next + ifs_sched_done per job, for 64 to 1024 cores x 3 tests
 *    (the loop asks on every poll and after every result);
 *  - ifs_sched_next when nothing is due (the common case on a poll tick);
 *  - sysfs text parse + status-word decode per result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_sched.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bench_sched(unsigned n_cores)
{
	struct ifs_sched_config cfg = {
	    .periodic = true,
	    .interval_ns = 86400LL * 1000000000LL,
	    .max_scan_ns_per_hour = 60LL * 1000000000LL,
	    .retry_max = 3,
	    .retry_backoff_ns = 60LL * 1000000000LL,
	};
	struct ifs_core_info *c = calloc(n_cores, sizeof(*c));
	const int64_t step = cfg.interval_ns / (n_cores * 3);
	struct ifs_sched s;
	struct ifs_job j;
	int64_t now = 0, wake;
	unsigned jobs = 0, idle = 0;
	double t0, t_jobs, t_idle;

	for (unsigned i = 0; i < n_cores; i++) {
		c[i].package = i / 64;
		c[i].core_id = i % 64;
		c[i].n_cpus = 2;
		c[i].cpus[0] = i;
		c[i].cpus[1] = i + n_cores < IFS_MAX_CPUS ? i + n_cores : i;
		c[i].online[0] = c[i].online[1] = true;
	}
	ifs_sched_init(&s, &cfg);
	ifs_sched_set_topology(&s, c, n_cores, 0);
	ifs_sched_set_tests(&s, 7, 0);

	/* One simulated day: a job every `step`, 200 ms each. */
	t0 = now_s();
	for (unsigned k = 0; k < n_cores * 3; k++, now += step) {
		if (ifs_sched_next(&s, now, &j, &wake) == 0) {
			ifs_sched_done(&s, &j, now, now + 200000000, IFS_OUT_DONE);
			jobs++;
		}
	}
	t_jobs = now_s() - t0;

	/* Polls with nothing due. */
	t0 = now_s();
	now -= step / 2; /* between two due times */
	for (unsigned k = 0; k < 20000; k++) {
		if (ifs_sched_next(&s, now + k, &j, &wake) == 0)
			ifs_sched_done(&s, &j, now + k, now + k, IFS_OUT_DONE);
		else
			idle++;
	}
	t_idle = now_s() - t0;

	printf("sched %4u cores x 3 tests: %u jobs in a simulated day, %.2f us per next+done; "
	       "%.2f us per idle poll (%u polls)\n",
	       n_cores, jobs, t_jobs * 1e6 / (jobs ? jobs : 1), t_idle * 1e6 / 20000, idle);
	ifs_sched_free(&s);
	free(c);
}

static void bench_decode(void)
{
	static const char *const words[] = {"0xf10\n", "0x8000000000000f05\n", "0x100000f03\n",
					    "0\n", "0x4000000000000f00\n"};
	const unsigned n = 2000000;
	volatile unsigned sink = 0;
	double t0 = now_s(), dt;

	for (unsigned i = 0; i < n; i++) {
		struct ifs_details d;
		enum ifs_result r;
		uint64_t raw;

		ifs_status_parse(i & 1 ? "fail\n" : "pass\n", &r);
		ifs_details_parse(words[i % 5], &raw);
		ifs_details_decode(i % 3, raw, &d);
		sink += d.result + r;
	}
	dt = now_s() - t0;
	printf("decode: %.0f ns per status+details parse and decode (%u results)\n", dt * 1e9 / n,
	       n);
	(void)sink;
}

int main(void)
{
	bench_sched(64);
	bench_sched(256);
	bench_sched(1024);
	bench_decode();
	return 0;
}
