/* SPDX-License-Identifier: MIT */
/*
 * The IFS scan scheduler as a pure state machine: no I/O, no clock of its
 * own (every call takes `now` in nanoseconds), so it is unit-tested on a fake
 * clock. The collector feeds it the topology and the available tests, asks
 * for the next job, runs it on its worker thread and reports the outcome.
 *
 * Rules (a scan takes every thread of a core offline for up to ~200 ms):
 * - one job at a time, across all devices (the driver serialises them anyway);
 * - each (core, test) runs once per interval; first runs are spread evenly
 *   over one interval so the load is flat;
 * - a core runs only if none of its threads is in deny_cpus and, with an
 *   allow list, all of its threads are in it; and only if every one of its
 *   known threads is online (the driver's ifs.h: "All siblings must be
 *   online to run a core test"; runtest.c does not check it, the scan's
 *   WRMSR waits for a sibling that never comes and ends untested, error 1
 *   "other thread could not join"); the first thread is written to
 *   run_test. A due run of a core skipped as offline or with an offline
 *   sibling is counted once per interval (ifs_sched.skipped);
 * - the scan time of the last hour stays below max_scan_ns_per_hour, except
 *   that a run always starts once the hour before it is empty, however
 *   long the last run took (a cap must slow scanning, never stop it);
 * - a retryable outcome is retried after backoff * 2^n, up to retry_max;
 * - two scans of one core start at least min_scan_gap_ns apart (the
 *   microcode refuses a scan inside the window, untested error 6), the
 *   last start restored from the history at a restart;
 * - optional batch rotation, per test with its own list (scan and SBAF
 *   images are separate files): once every eligible core was tested (pass or
 *   fail) with the current batch, the next batch of the list is used; a
 *   core whose scheduled runs of the batch tested nothing (untested after
 *   retries, a failed write) IFS_ROUND_MISSES times in a row stops holding
 *   the round (it stays untested, which its last-tested time shows); a
 *   batch that does not load is skipped.
 * Requests from the API go first (FIFO), still subject to deny lists,
 * offline CPUs and the hourly cap, and do not retry.
 * An outcome that asks for an image reload (scan control_error or error
 * 0xB, SBAF error 0x4 or 0xB) is run once more right away with job.reload
 * set, API requests included; it is not a retry and costs no backoff.
 */
#ifndef SYSOBS_IFS_SCHED_H
#define SYSOBS_IFS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/ifs/ifs_decode.h"

#define IFS_MAX_CPUS	 1024
#define IFS_CPU_WORDS	 (IFS_MAX_CPUS / 64)
#define IFS_MAX_SIBLINGS 8
#define IFS_MAX_BATCHES	 16
#define IFS_ROUND_MISSES 2 /* untested runs after which a core no longer holds a round */

struct ifs_core_info {
	int package, core_id;
	unsigned n_cpus;
	int cpus[IFS_MAX_SIBLINGS]; /* ascending */
	bool online[IFS_MAX_SIBLINGS];
};

struct ifs_sched_config {
	bool periodic;		      /* scheduler on; off = API requests only */
	int64_t interval_ns;	      /* per (core, test) */
	int64_t max_scan_ns_per_hour; /* 0 = no cap */
	unsigned retry_max;
	int64_t retry_backoff_ns;
	bool have_allow;
	uint64_t allow[IFS_CPU_WORDS], deny[IFS_CPU_WORDS];
	/* Rotation list per test (scan: ifs_0/NN.scan, SBAF: ifs_2/NN.sbft, each
	 * with its own numbering); n_batches[t] 0 = off for test t. */
	unsigned batches[IFS_TEST_MAX][IFS_MAX_BATCHES];
	unsigned n_batches[IFS_TEST_MAX];
	/* Shortest time between the starts of two scans of one core (the
	 * microcode's, per CPU model: ifs_min_scan_gap_parse()); 0 = none.
	 * Scheduled runs, retries, reload reruns and API requests all wait
	 * it out. */
	int64_t min_scan_gap_ns;
};

enum ifs_requester { IFS_BY_SCHEDULER, IFS_BY_API };

/* Why the scheduler does not run a core now. */
enum ifs_skip {
	IFS_SKIP_NONE,
	IFS_SKIP_DENIED,	  /* allow_cpus / deny_cpus */
	IFS_SKIP_OFFLINE,	  /* every thread offline */
	IFS_SKIP_SIBLING_OFFLINE, /* some threads online, one offline */
	IFS_SKIP_MAX,
};

/* "denied", "offline", "sibling_offline"; NULL for IFS_SKIP_NONE. */
const char *ifs_skip_name(enum ifs_skip why);

struct ifs_job {
	unsigned core; /* index into the topology given */
	enum ifs_test test;
	int cpu;   /* the thread to write to run_test */
	int batch; /* batch to load first; -1 = leave as is */
	enum ifs_requester by;
	uint64_t scan_id; /* API: id returned to the client; else 0 */
	unsigned attempt; /* 0 first try, n = n-th retry */
	bool reload;	  /* write current_batch first, even the batch loaded */
};

enum ifs_outcome {
	IFS_OUT_DONE,	     /* the core was tested: pass or fail */
	IFS_OUT_RETRY,	     /* retryable untested or -EINTR */
	IFS_OUT_ERROR,	     /* the write failed (-EINVAL, -EPERM, ...) */
	IFS_OUT_UNTESTED,    /* a final untested: not the core's run of the batch */
	IFS_OUT_BATCH_ERROR, /* the batch did not load (missing, refused, auth) */
	IFS_OUT_RELOAD,	     /* the driver asks for an image reload: once, right away */
};

struct ifs_sched_pair {
	int64_t next_due;   /* INT64_MAX = not scheduled */
	int64_t last_start; /* 0 = never */
	unsigned retries;
	unsigned misses;    /* scheduled runs of the current batch that tested nothing */
	bool spread;	    /* first due time assigned */
	bool reload;	    /* the next run reloads the image first */
	int64_t skip_noted; /* when its due run was last counted as skipped; 0 = not */
	bool begun_known;
	int64_t begun; /* start of the last run that reached the core (any result) */
};

struct ifs_sched_req {
	unsigned core;
	enum ifs_test test;
	uint64_t scan_id;
	int cpu; /* thread asked for, -1 any */
	bool reload;
};

struct ifs_sched_run {
	int64_t end, dur;
};

struct ifs_sched {
	struct ifs_sched_config cfg;
	struct ifs_core_info *cores;
	struct ifs_sched_pair (*pairs)[IFS_TEST_MAX];
	bool *in_round[IFS_TEST_MAX]; /* ran with the current batch */
	size_t n_cores;
	unsigned tests; /* bit per available test */
	unsigned batch_idx[IFS_TEST_MAX];
	bool running;
	struct ifs_job cur;
	struct ifs_sched_req *reqs; /* API queue */
	size_t n_reqs, cap_reqs;
	struct ifs_sched_run *runs; /* last hour, for the cap */
	size_t n_runs, cap_runs;
	int64_t last_dur; /* estimate of the next run's duration */
	/* Due scheduled runs skipped, by test and reason (one per interval). */
	uint64_t skipped[IFS_TEST_MAX][IFS_SKIP_MAX];
};

int ifs_sched_init(struct ifs_sched *s, const struct ifs_sched_config *cfg);
void ifs_sched_free(struct ifs_sched *s);

/* Replaces the topology; state is kept for cores with the same (package,
 * core_id). 0 or -ENOMEM. */
int ifs_sched_set_topology(struct ifs_sched *s, const struct ifs_core_info *cores, size_t n,
			   int64_t now);
/* Tests that can run now (bit 1 << enum ifs_test): device present and, for
 * scan and SBAF, an image loaded. */
void ifs_sched_set_tests(struct ifs_sched *s, unsigned mask, int64_t now);

/* Whether the lists allow scanning this core at all. */
bool ifs_sched_core_allowed(const struct ifs_sched *s, unsigned core);
/* Why the core cannot run now (IFS_SKIP_NONE: it can). */
enum ifs_skip ifs_sched_core_skip(const struct ifs_sched *s, unsigned core);
/* The first thread of a core that can run now (allowed, every thread
 * online), or -1. */
int ifs_sched_core_cpu(const struct ifs_sched *s, unsigned core);

/* Queues an API request. cpu: the thread to write if it is online when the
 * job starts (-1: the first online one). -ENOENT no such core or test
 * unavailable, -EPERM core excluded by allow/deny lists, -ENOMEM. */
int ifs_sched_request(struct ifs_sched *s, unsigned core, enum ifs_test test, uint64_t scan_id,
		      int cpu);
size_t ifs_sched_pending(const struct ifs_sched *s);

/*
 * The next job to run now. 0: *job filled, the scheduler is busy until
 * ifs_sched_done(). -EBUSY: a job is running. -EAGAIN: nothing may run now;
 * *wake is when something might (INT64_MAX: nothing scheduled).
 */
int ifs_sched_next(struct ifs_sched *s, int64_t now, struct ifs_job *job, int64_t *wake);
/* Reports the end of the running job, started at start and ended at end. */
void ifs_sched_done(struct ifs_sched *s, const struct ifs_job *job, int64_t start, int64_t end,
		    enum ifs_outcome out);

/* A run of (core, test) started at start (mono ns, may be before the
 * scheduler's clock began): from the history at a restart, so the minimum
 * gap between two scans holds across it. Keeps the later of two. */
void ifs_sched_note_begun(struct ifs_sched *s, unsigned core, enum ifs_test test, int64_t start);
/* When (core, test) may start next under the minimum gap (INT64_MIN: any
 * time). */
int64_t ifs_sched_gap_until(const struct ifs_sched *s, unsigned core, enum ifs_test test);

/* Scan time of the hour before now (ns). */
int64_t ifs_sched_hour_used(struct ifs_sched *s, int64_t now);

#endif
