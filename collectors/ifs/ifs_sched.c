// SPDX-License-Identifier: MIT
/*
 * IFS scan scheduler: a pure state machine on an injected clock (see
 * ifs_sched.h for the rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/ifs/ifs_sched.h"

#define HOUR_NS (3600LL * 1000000000LL)

static bool cpu_in(const uint64_t *bits, int cpu)
{
	return cpu >= 0 && cpu < IFS_MAX_CPUS && ifs_cpu_isset(bits, (unsigned)cpu);
}

static bool test_ok(const struct ifs_sched *s, enum ifs_test t)
{
	return (unsigned)t < IFS_TEST_MAX && (s->tests & (1u << t));
}

int ifs_sched_init(struct ifs_sched *s, const struct ifs_sched_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (s->cfg.interval_ns <= 0)
		s->cfg.interval_ns = 24 * HOUR_NS;
	for (int t = 0; t < IFS_TEST_MAX; t++)
		if (s->cfg.n_batches[t] > IFS_MAX_BATCHES)
			s->cfg.n_batches[t] = IFS_MAX_BATCHES;
	s->last_dur = 200000000; /* the driver's ~200 ms per pass until measured */
	return 0;
}

void ifs_sched_free(struct ifs_sched *s)
{
	if (!s)
		return;
	free(s->cores);
	free(s->pairs);
	for (int t = 0; t < IFS_TEST_MAX; t++)
		free(s->in_round[t]);
	free(s->reqs);
	free(s->runs);
	memset(s, 0, sizeof(*s));
}

bool ifs_sched_core_allowed(const struct ifs_sched *s, unsigned core)
{
	const struct ifs_core_info *c;

	if (core >= s->n_cores)
		return false;
	c = &s->cores[core];
	/* Scanning one thread takes all of them offline: every thread counts. */
	for (unsigned i = 0; i < c->n_cpus; i++) {
		if (cpu_in(s->cfg.deny, c->cpus[i]))
			return false;
		if (s->cfg.have_allow && !cpu_in(s->cfg.allow, c->cpus[i]))
			return false;
	}
	return c->n_cpus > 0;
}

const char *ifs_skip_name(enum ifs_skip why)
{
	static const char *const names[IFS_SKIP_MAX] = {
	    [IFS_SKIP_DENIED] = "denied",
	    [IFS_SKIP_OFFLINE] = "offline",
	    [IFS_SKIP_SIBLING_OFFLINE] = "sibling_offline",
	};

	return (unsigned)why < IFS_SKIP_MAX ? names[why] : NULL;
}

/*
 * A core with an offline thread is not tested: ifs.h says all siblings must
 * be online for a core test. The driver checks only the CPU written
 * (do_core_test: cpu_online); stop_core_cpuslocked() then runs on the
 * online threads alone, and the scan's WRMSR waits for the missing one:
 * untested with error 1 (other thread could not join), retried by the
 * driver without progress, every time. The offline thread is known from
 * the topology the collector remembers (the kernel removes an offline
 * CPU's topology/ and drops it from its siblings' lists).
 */
enum ifs_skip ifs_sched_core_skip(const struct ifs_sched *s, unsigned core)
{
	const struct ifs_core_info *c;
	unsigned online = 0;

	if (!ifs_sched_core_allowed(s, core))
		return IFS_SKIP_DENIED;
	c = &s->cores[core];
	for (unsigned i = 0; i < c->n_cpus; i++)
		online += c->online[i];
	if (!online)
		return IFS_SKIP_OFFLINE;
	return online < c->n_cpus ? IFS_SKIP_SIBLING_OFFLINE : IFS_SKIP_NONE;
}

int ifs_sched_core_cpu(const struct ifs_sched *s, unsigned core)
{
	if (ifs_sched_core_skip(s, core) != IFS_SKIP_NONE)
		return -1;
	return s->cores[core].cpus[0];
}

/* The due runs of a core that cannot run now count as skipped, each once
 * per interval while the core stays so; the pair stays due and runs as soon
 * as the core can. */
static void skips_note(struct ifs_sched *s, size_t c, enum ifs_skip why, int64_t now)
{
	if (why != IFS_SKIP_OFFLINE && why != IFS_SKIP_SIBLING_OFFLINE)
		return;
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		struct ifs_sched_pair *p = &s->pairs[c][t];

		if (!test_ok(s, t) || p->next_due > now ||
		    (p->skip_noted && now - p->skip_noted < s->cfg.interval_ns))
			continue;
		p->skip_noted = now ? now : 1;
		s->skipped[t][why]++;
	}
}

/* Gives every eligible (core, test) without a due time one, spread evenly
 * over one interval from now, in core order. */
static void spread_new_pairs(struct ifs_sched *s, int64_t now)
{
	size_t m = 0, k = 0;

	if (!s->cfg.periodic)
		return;
	for (size_t c = 0; c < s->n_cores; c++)
		for (int t = 0; t < IFS_TEST_MAX; t++)
			if (test_ok(s, t) && ifs_sched_core_allowed(s, c) && !s->pairs[c][t].spread)
				m++;
	if (!m)
		return;
	for (size_t c = 0; c < s->n_cores; c++) {
		for (int t = 0; t < IFS_TEST_MAX; t++) {
			struct ifs_sched_pair *p = &s->pairs[c][t];

			if (!test_ok(s, t) || !ifs_sched_core_allowed(s, c) || p->spread)
				continue;
			p->spread = true;
			p->next_due = now + (int64_t)((__int128)s->cfg.interval_ns * k / m);
			k++;
		}
	}
}

/* The index in cores[0..n) of the core old names (same package and
 * core_id), or n when it is gone. */
static size_t core_find(const struct ifs_core_info *cores, size_t n,
			const struct ifs_core_info *old)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (cores[i].package == old->package && cores[i].core_id == old->core_id)
			break;
	return i;
}

/* The per-core arrays of a topology of n cores: nr[t] per test. */
struct sched_topo {
	struct ifs_core_info *cores;
	struct ifs_sched_pair (*pairs)[IFS_TEST_MAX];
	bool *in_round[IFS_TEST_MAX];
};

static void sched_topo_free(struct sched_topo *nt)
{
	free(nt->cores);
	free(nt->pairs);
	for (int t = 0; t < IFS_TEST_MAX; t++)
		free(nt->in_round[t]);
}

/* The arrays for cores[0..n), each pair not due, and the state of every
 * core the current topology has too carried over. */
static int sched_topo_build(const struct ifs_sched *s, const struct ifs_core_info *cores, size_t n,
			    struct sched_topo *nt)
{
	memset(nt, 0, sizeof(*nt));
	if (!n)
		return 0;
	nt->cores = calloc(n, sizeof(*nt->cores));
	nt->pairs = calloc(n, sizeof(*nt->pairs));
	for (int t = 0; t < IFS_TEST_MAX; t++)
		nt->in_round[t] = calloc(n, sizeof(bool));
	for (int t = 0; t < IFS_TEST_MAX; t++)
		if (!nt->in_round[t])
			goto err_free;
	if (!nt->cores || !nt->pairs)
		goto err_free;
	for (size_t i = 0; i < n; i++) {
		size_t j = core_find(s->cores, s->n_cores, &cores[i]);

		nt->cores[i] = cores[i];
		for (int t = 0; t < IFS_TEST_MAX; t++)
			nt->pairs[i][t] = (struct ifs_sched_pair){.next_due = INT64_MAX};
		if (j == s->n_cores)
			continue;
		memcpy(nt->pairs[i], s->pairs[j], sizeof(nt->pairs[i]));
		for (int t = 0; t < IFS_TEST_MAX; t++)
			nt->in_round[t][i] = s->in_round[t][j];
	}
	return 0;

err_free:
	sched_topo_free(nt);
	return -ENOMEM;
}

/* Queued requests and the running job name cores by index: remapped onto
 * the new topology; a request for a core that is gone is dropped, the
 * running job's core becomes n (its outcome is dropped). */
static void sched_remap_cores(struct ifs_sched *s, const struct ifs_core_info *cores, size_t n)
{
	for (size_t r = 0; r < s->n_reqs;) {
		size_t i = core_find(cores, n, &s->cores[s->reqs[r].core]);

		if (i == n) {
			memmove(&s->reqs[r], &s->reqs[r + 1],
				(s->n_reqs - r - 1) * sizeof(*s->reqs));
			s->n_reqs--;
			continue;
		}
		s->reqs[r++].core = i;
	}
	if (s->running)
		s->cur.core = (unsigned)core_find(cores, n, &s->cores[s->cur.core]);
}

int ifs_sched_set_topology(struct ifs_sched *s, const struct ifs_core_info *cores, size_t n,
			   int64_t now)
{
	struct sched_topo nt, old;

	if (sched_topo_build(s, cores, n, &nt))
		return -ENOMEM;
	sched_remap_cores(s, nt.cores, n);
	old.cores = s->cores;
	old.pairs = s->pairs;
	memcpy(old.in_round, s->in_round, sizeof(old.in_round));
	sched_topo_free(&old);
	s->cores = nt.cores;
	s->pairs = nt.pairs;
	memcpy(s->in_round, nt.in_round, sizeof(s->in_round));
	s->n_cores = n;
	spread_new_pairs(s, now);
	return 0;
}

void ifs_sched_set_tests(struct ifs_sched *s, unsigned mask, int64_t now)
{
	s->tests = mask & ((1u << IFS_TEST_MAX) - 1);
	spread_new_pairs(s, now);
}

/* Queues q at the back, or at the front (a reload retry goes first). */
static int req_push(struct ifs_sched *s, const struct ifs_sched_req *q, bool front)
{
	if (s->n_reqs == s->cap_reqs) {
		size_t cap = s->cap_reqs ? s->cap_reqs * 2 : 16;
		struct ifs_sched_req *r = realloc(s->reqs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		s->reqs = r;
		s->cap_reqs = cap;
	}
	if (front) {
		memmove(&s->reqs[1], &s->reqs[0], s->n_reqs * sizeof(*s->reqs));
		s->reqs[0] = *q;
	} else {
		s->reqs[s->n_reqs] = *q;
	}
	s->n_reqs++;
	return 0;
}

int ifs_sched_request(struct ifs_sched *s, unsigned core, enum ifs_test test, uint64_t scan_id,
		      int cpu)
{
	if (core >= s->n_cores || !test_ok(s, test))
		return -ENOENT;
	if (!ifs_sched_core_allowed(s, core))
		return -EPERM;
	return req_push(s, &(struct ifs_sched_req){core, test, scan_id, cpu, false}, false);
}

size_t ifs_sched_pending(const struct ifs_sched *s)
{
	return s->n_reqs;
}

void ifs_sched_note_begun(struct ifs_sched *s, unsigned core, enum ifs_test test, int64_t start)
{
	struct ifs_sched_pair *p;

	if (core >= s->n_cores || (unsigned)test >= IFS_TEST_MAX)
		return;
	p = &s->pairs[core][test];
	if (!p->begun_known || start > p->begun)
		p->begun = start;
	p->begun_known = true;
}

int64_t ifs_sched_gap_until(const struct ifs_sched *s, unsigned core, enum ifs_test test)
{
	const struct ifs_sched_pair *p;

	if (core >= s->n_cores || test != IFS_TEST_SCAN || s->cfg.min_scan_gap_ns <= 0)
		return INT64_MIN;
	p = &s->pairs[core][test];
	return p->begun_known ? p->begun + s->cfg.min_scan_gap_ns : INT64_MIN;
}

int64_t ifs_sched_hour_used(struct ifs_sched *s, int64_t now)
{
	size_t drop = 0;
	int64_t used = 0;

	while (drop < s->n_runs && s->runs[drop].end <= now - HOUR_NS)
		drop++;
	if (drop) {
		memmove(s->runs, s->runs + drop, (s->n_runs - drop) * sizeof(*s->runs));
		s->n_runs -= drop;
	}
	for (size_t i = 0; i < s->n_runs; i++)
		used += s->runs[i].dur;
	return used;
}

/*
 * Under the hourly cap, may a run of the usual length start now? If not,
 * *wake is when enough of the window will have expired.
 *
 * The estimate is the last run's duration, which can exceed the whole cap:
 * SBAF may run 2 s plus its last bundle, and a writer waits on the driver's
 * ifs_sem while someone else tests. Capped at the cap itself, so an empty
 * window always admits a run: the budget slows scanning down, it never stops
 * it (a 2.2 s run under a 2 s cap used to block every later scan).
 */
static bool cap_allows(struct ifs_sched *s, int64_t now, int64_t *wake)
{
	int64_t used, cap = s->cfg.max_scan_ns_per_hour;
	int64_t need = s->last_dur < cap ? s->last_dur : cap;

	if (cap <= 0)
		return true;
	used = ifs_sched_hour_used(s, now);
	if (used + need <= cap)
		return true;
	for (size_t i = 0; i < s->n_runs; i++) {
		used -= s->runs[i].dur;
		if (used + need <= cap) {
			*wake = s->runs[i].end + HOUR_NS;
			return false;
		}
	}
	*wake = now + HOUR_NS; /* not reached: without runs, used is 0 */
	return false;
}

static int job_batch(const struct ifs_sched *s, enum ifs_test t)
{
	if ((unsigned)t >= IFS_TEST_MAX || !s->cfg.n_batches[t] || t == IFS_TEST_ARRAY)
		return -1;
	return (int)s->cfg.batches[t][s->batch_idx[t] % s->cfg.n_batches[t]];
}

/* The first queued request that can run now, taken off the queue into
 * *job (0), or -EAGAIN with *wake lowered to when a request held back by
 * the minimum gap may run. A request for a core offline for now stays
 * queued. */
static int next_request(struct ifs_sched *s, int64_t now, struct ifs_job *job, int64_t *wake)
{
	for (size_t r = 0; r < s->n_reqs; r++) {
		struct ifs_sched_req q = s->reqs[r];
		const struct ifs_core_info *c = &s->cores[q.core];
		int cpu = ifs_sched_core_cpu(s, q.core);
		int64_t gap = ifs_sched_gap_until(s, q.core, q.test);

		if (cpu < 0 || !test_ok(s, q.test))
			continue;
		if (gap > now) { /* the core's last scan is too recent */
			if (gap < *wake)
				*wake = gap;
			continue;
		}
		/* The thread asked for, if it is one of the core's and online. */
		for (unsigned i = 0; q.cpu >= 0 && i < c->n_cpus; i++)
			if (c->cpus[i] == q.cpu && c->online[i])
				cpu = q.cpu;
		memmove(&s->reqs[r], &s->reqs[r + 1], (s->n_reqs - r - 1) * sizeof(*s->reqs));
		s->n_reqs--;
		*job = (struct ifs_job){
		    .core = q.core,
		    .test = q.test,
		    .cpu = cpu,
		    .batch = job_batch(s, q.test),
		    .by = IFS_BY_API,
		    .scan_id = q.scan_id,
		    .reload = q.reload,
		};
		return 0;
	}
	return -EAGAIN;
}

/* The (core, test) of the runnable cores due first, counting the minimum
 * gap since the core's last scan (INT64_MAX and *best_t -1: none); a core
 * that cannot run has its due runs noted as skipped. */
static int64_t pair_due_first(struct ifs_sched *s, int64_t now, size_t *best_c, int *best_t)
{
	int64_t best_due = INT64_MAX;

	*best_t = -1;
	for (size_t c = 0; c < s->n_cores; c++) {
		enum ifs_skip why = ifs_sched_core_skip(s, c);

		if (why != IFS_SKIP_NONE) {
			skips_note(s, c, why, now);
			continue;
		}
		for (int t = 0; t < IFS_TEST_MAX; t++) {
			int64_t due = s->pairs[c][t].next_due;
			int64_t gap = ifs_sched_gap_until(s, c, t);

			if (due != INT64_MAX && gap > due)
				due = gap; /* due, but the last scan is too recent */
			if (!test_ok(s, t) || due >= best_due)
				continue;
			best_due = due;
			*best_c = c;
			*best_t = t;
		}
	}
	return best_due;
}

/* The periodic run due first, into *job (0), or -EAGAIN with *wake lowered
 * to when it is due. */
static int next_periodic(struct ifs_sched *s, int64_t now, struct ifs_job *job, int64_t *wake)
{
	size_t c = 0;
	int t = -1;
	int64_t due;

	if (!s->cfg.periodic)
		return -EAGAIN;
	due = pair_due_first(s, now, &c, &t);
	if (t < 0)
		return -EAGAIN;
	if (due > now) {
		if (due < *wake)
			*wake = due;
		return -EAGAIN;
	}
	*job = (struct ifs_job){
	    .core = c,
	    .test = t,
	    .cpu = ifs_sched_core_cpu(s, c),
	    .batch = job_batch(s, t),
	    .by = IFS_BY_SCHEDULER,
	    .attempt = s->pairs[c][t].retries,
	    .reload = s->pairs[c][t].reload,
	};
	return 0;
}

int ifs_sched_next(struct ifs_sched *s, int64_t now, struct ifs_job *job, int64_t *wake)
{
	*wake = INT64_MAX;
	if (s->running)
		return -EBUSY;
	if (!cap_allows(s, now, wake))
		return -EAGAIN;
	if (next_request(s, now, job, wake) && next_periodic(s, now, job, wake))
		return -EAGAIN;
	s->running = true;
	s->cur = *job;
	return 0;
}

/* The rotation moves to the next batch: every core starts the round anew. */
static void round_next(struct ifs_sched *s, enum ifs_test t)
{
	s->batch_idx[t] = (s->batch_idx[t] + 1) % s->cfg.n_batches[t];
	memset(s->in_round[t], 0, s->n_cores * sizeof(bool));
	for (size_t c = 0; c < s->n_cores; c++)
		s->pairs[c][t].misses = 0;
}

static void round_note(struct ifs_sched *s, unsigned core, enum ifs_test t)
{
	if (!s->cfg.n_batches[t] || t == IFS_TEST_ARRAY || core >= s->n_cores)
		return;
	s->in_round[t][core] = true;
	for (size_t c = 0; c < s->n_cores; c++)
		if (ifs_sched_core_cpu(s, c) >= 0 && !s->in_round[t][c])
			return;
	/* Every core that can run has run this batch: move to the next. */
	round_next(s, t);
}

/* The batch of job did not load on this host: the rotation moves on to
 * the next one for every core (unless it moved already). */
static void batch_skip(struct ifs_sched *s, enum ifs_test t, int batch)
{
	if (!s->cfg.n_batches[t] || t == IFS_TEST_ARRAY || batch < 0 || batch != job_batch(s, t))
		return;
	round_next(s, t);
}

static void runs_add(struct ifs_sched *s, int64_t end, int64_t dur)
{
	if (s->n_runs == s->cap_runs) {
		size_t cap = s->cap_runs ? s->cap_runs * 2 : 64;
		struct ifs_sched_run *r = realloc(s->runs, cap * sizeof(*r));

		if (!r) {
			/* Forget the oldest rather than fail: the cap errs towards
			 * allowing, bounded by the remaining entries. */
			memmove(s->runs, s->runs + 1, (s->n_runs - 1) * sizeof(*s->runs));
			s->n_runs--;
		} else {
			s->runs = r;
			s->cap_runs = cap;
		}
	}
	s->runs[s->n_runs++] = (struct ifs_sched_run){end, dur};
}

/* A run that asked for a reload runs again once, right away, on the same
 * thread: the result of the run after the reload is the one that counts.
 * True when the retry is arranged (a request queued first, or the pair
 * due at end). */
static bool reload_retry(struct ifs_sched *s, const struct ifs_job *job, unsigned core, int64_t end)
{
	struct ifs_sched_pair *p = &s->pairs[core][job->test];

	if (job->by == IFS_BY_API) {
		struct ifs_sched_req q = {core, job->test, job->scan_id, job->cpu, true};

		return req_push(s, &q, true) == 0;
	}
	p->reload = true;
	p->next_due = end;
	return true;
}

/* A completed requested run counts as this interval's run. */
static void requested_done(struct ifs_sched *s, unsigned core, enum ifs_test t, int64_t start,
			   enum ifs_outcome out)
{
	struct ifs_sched_pair *p = &s->pairs[core][t];

	if (out != IFS_OUT_DONE)
		return;
	p->last_start = start;
	p->retries = 0;
	if (s->cfg.periodic && p->spread)
		p->next_due = start + s->cfg.interval_ns;
	round_note(s, core, t);
}

/* A scheduled run: a failure is retried after a backoff doubling from
 * retry_backoff_ns (up to an hour) until retry_max; otherwise the pair is
 * due an interval after this start, and no sooner than its end. */
static void scheduled_done(struct ifs_sched *s, unsigned core, enum ifs_test t, int64_t start,
			   int64_t end, enum ifs_outcome out)
{
	struct ifs_sched_pair *p = &s->pairs[core][t];

	if (out != IFS_OUT_DONE && out != IFS_OUT_UNTESTED && p->retries < s->cfg.retry_max) {
		int64_t backoff = s->cfg.retry_backoff_ns;

		for (unsigned i = 0; i < p->retries && backoff < HOUR_NS; i++)
			backoff *= 2;
		p->retries++;
		p->next_due = end + backoff;
		return;
	}
	p->retries = 0;
	p->last_start = start;
	p->next_due = start + s->cfg.interval_ns;
	if (p->next_due < end)
		p->next_due = end;
	/* Only a test that ran (pass or fail) is the core's run of the batch:
	 * an untested result or a failed write leaves the round waiting for
	 * the core's next attempt, but not for ever: a core that keeps
	 * testing nothing (a persistent untested code, an offline sibling)
	 * would hold every other core on this batch. A batch that cannot load
	 * was skipped before, so it does not stop the rotation. */
	if (out == IFS_OUT_DONE || ++p->misses >= IFS_ROUND_MISSES)
		round_note(s, core, t);
}

void ifs_sched_done(struct ifs_sched *s, const struct ifs_job *job, int64_t start, int64_t end,
		    enum ifs_outcome out)
{
	struct ifs_sched_pair *p;
	int64_t dur = end > start ? end - start : 0;
	/* The topology may have changed while the job ran: s->cur.core was
	 * remapped, job->core is the index at dispatch. */
	unsigned core = s->running ? s->cur.core : job->core;

	s->running = false;
	runs_add(s, end, dur);
	if (dur > 0)
		s->last_dur = dur;
	if (core >= s->n_cores || (unsigned)job->test >= IFS_TEST_MAX)
		return; /* the core is gone */
	p = &s->pairs[core][job->test];
	p->skip_noted = 0;
	/* A write refused (EINVAL, EPERM) or a batch that did not load ran
	 * nothing on the core; anything else may have started a scan. */
	if (out != IFS_OUT_ERROR && out != IFS_OUT_BATCH_ERROR)
		ifs_sched_note_begun(s, core, job->test, start);
	if (job->by == IFS_BY_SCHEDULER)
		p->reload = false;
	if (out == IFS_OUT_RELOAD && !job->reload && reload_retry(s, job, core, end))
		return;
	if (out == IFS_OUT_RELOAD)
		out = IFS_OUT_UNTESTED; /* reloaded and still asking: final */
	if (out == IFS_OUT_BATCH_ERROR)
		batch_skip(s, job->test, job->batch);
	if (job->by == IFS_BY_API)
		requested_done(s, core, job->test, start, out);
	else
		scheduled_done(s, core, job->test, start, end, out);
}
