// SPDX-License-Identifier: MIT
/*
 * The ifs collector's results (see ifs.c for the threads and the kernel
 * trap): a finished job of ours into its IfsScan row and the sysobs_ifs_*
 * series (ifs_result_handle()), a change seen while we did not run
 * (ifs_passive_check()), each core's last result and its alert, restored
 * from the history at start.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_priv.h"
#include "collectors/ifs/ifs_sched.h"
#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_table.h"
#include "collectors/ifs/ifs_worker.h"

/* ---- helpers ---- */

static void core_labels(const struct ifs_core_info *core, char pkg[16], char cid[16])
{
	snprintf(pkg, 16, "%d", core->package);
	snprintf(cid, 16, "%d", core->core_id);
}

/* ---- results ---- */

static void update_failing(struct ifs_priv *p)
{
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		unsigned n = 0;

		if (!p->dev[t].failing_s)
			continue;
		for (size_t i = 0; i < p->topo.n_cores; i++)
			n += p->last[i][t].has && p->last[i][t].result == IFS_RESULT_FAIL;
		sink_set(p->c->sink, p->dev[t].failing_s, n);
	}
}

/* A counter an alert takes increase() of exists from 0 for every label
 * value the rule selects: first appearing at 1, its first failure is no
 * increase (SysobsIFSImageReloadFailed). */
void ifs_reloads_zero(struct ifs_priv *p, enum ifs_test t)
{
	static const char *const results[] = {"ok", "error"};
	struct sink *k = p->c->sink;

	for (size_t i = 0; i < 2; i++) {
		const char *v[] = {ifs_test_name(t), results[i]};

		sink_add(k, collector_series(p->c, IFS_M_RELOADS, v), 0);
	}
}

static void count_scan(struct ifs_priv *p, enum ifs_test t, const char *result)
{
	const char *v[] = {ifs_test_name(t), result};
	struct sink *k = p->c->sink;

	sink_add(k, collector_series(p->c, IFS_M_SCANS, v), 1);
}

static const char *requester_name(enum ifs_requester by)
{
	return by == IFS_BY_API ? "api" : "scheduler";
}

static void alert_update(struct ifs_priv *p, const struct ifs_core_info *core, struct ifs_last *l,
			 enum ifs_test t, const struct ifs_row *row, int64_t ts)
{
	char key[64], pkg[16], cid[16], cpu[16], summary[256], decoded[192];
	/* Exactly the labels of the rule's alert (alertname, job, instance,
	 * the series' test/package/core, severity): Alertmanager identifies an
	 * alert by its label set, and one failed core must page once. The CPU
	 * written, which the series has not, is an annotation. */
	const struct sink_alert_pair labels[] = {
	    {"alertname", "SysobsIFSCoreFailed"},
	    {"job", p->alert_job},
	    {"instance", p->alert_instance},
	    {"test", ifs_test_name(t)},
	    {"package", pkg},
	    {"core", cid},
	    {"severity", "critical"},
	};
	const struct sink_alert_pair ann[] = {
	    {"summary", summary},
	    {"description", row->reason},
	    {"cpu", cpu},
	    {"details", row->details},
	    {"error_name", row->error_name},
	    {"decoded", decoded},
	    {"image_version", row->image_version},
	    {"runbook_url", p->runbook_url},
	};
	struct sink_alert a = {
	    .key = key,
	    .labels = labels,
	    .n_labels = sizeof(labels) / sizeof(labels[0]),
	    .annotations = ann,
	    .n_annotations = sizeof(ann) / sizeof(ann[0]),
	    .starts_ns = ts,
	};

	core_labels(core, pkg, cid);
	snprintf(key, sizeof(key), "%s/%s/%s", ifs_test_name(t), pkg, cid);
	if (l->result != IFS_RESULT_FAIL) {
		/* Unconditionally: the alert may predate a topology change or a
		 * restart (a no-op for a key the alerter does not know). */
		if (l->result == IFS_RESULT_PASS) {
			a.ends_ns = ts;
			sink_alert(p->c->sink, &a);
		}
		l->alert_firing = false;
		return;
	}
	snprintf(cpu, sizeof(cpu), "%d", row->cpu);
	/* The rule's summary, word for word: the two sources update one alert. */
	snprintf(summary, sizeof(summary), "In-Field Scan %s failed on %s package %s core %s",
		 ifs_test_name(t), p->alert_instance, pkg, cid);
	ifs_row_decoded_text(row, decoded, sizeof(decoded));
	if (!sink_alert(p->c->sink, &a))
		l->alert_firing = true;
}

/* The core was tested (pass or fail) by a run that started at ts_ns. An
 * untested result must not look like one: the core's last-tested time is
 * what the SysobsIFSCoreNotTested alert watches. p->lock held. */
static void tested_update(struct ifs_priv *p, size_t core_idx, enum ifs_test t, int64_t ts_ns)
{
	struct ifs_last *l = &p->last[core_idx][t];
	struct sink *k = p->c->sink;
	char pkg[16], cid[16];
	const char *v[] = {ifs_test_name(t), pkg, cid};

	if (ts_ns <= l->tested_ns)
		return;
	core_labels(&p->topo.cores[core_idx], pkg, cid);
	l->tested_ns = ts_ns;
	if (!l->tested_s)
		l->tested_s = collector_series(p->c, IFS_M_CORE_LAST_TESTED, v);
	sink_set(k, l->tested_s, (double)ts_ns / 1e9);
}

/* Records a core's latest result: in-memory state for /api/v1/ifs/cores,
 * the per-core series, the failing-core count and the alert. p->lock held. */
static void last_update(struct ifs_priv *p, size_t core_idx, enum ifs_test t,
			enum ifs_result result, int64_t ts_ns, int cpu, uint64_t raw,
			uint64_t scan_id, const struct ifs_row *row)
{
	const struct ifs_core_info *core = &p->topo.cores[core_idx];
	struct ifs_last *l = &p->last[core_idx][t];
	const char *v[] = {ifs_test_name(t), NULL, NULL};
	struct sink *k = p->c->sink;
	char pkg[16], cid[16];

	core_labels(core, pkg, cid);
	v[1] = pkg;
	v[2] = cid;
	l->has = true;
	l->result = result;
	l->ts_ns = ts_ns;
	l->cpu = cpu;
	l->details = raw;
	l->scan_id = scan_id;
	snprintf(l->error_name, sizeof(l->error_name), "%s", row->error_name);
	if (!l->status_s)
		l->status_s = collector_series(p->c, IFS_M_CORE_STATUS, v);
	if (!l->ts_s)
		l->ts_s = collector_series(p->c, IFS_M_CORE_LAST_TS, v);
	sink_set(k, l->status_s, result);
	sink_set(k, l->ts_s, (double)ts_ns / 1e9);
	if (result != IFS_RESULT_UNTESTED)
		tested_update(p, core_idx, t, ts_ns);
	update_failing(p);
	alert_update(p, core, l, t, row, ts_ns);
}

struct ifs_restore {
	struct ifs_priv *p;
	unsigned n;
};

/* One (test, package, core)'s newest result from the history. */
static void last_restore_row(int64_t id, int64_t ts_ns, const void *r, void *arg)
{
	const struct ifs_row *row = r;
	struct ifs_restore *rs = arg;
	struct ifs_priv *p = rs->p;
	enum ifs_result result;
	uint64_t raw = 0;
	int t;

	(void)id;
	for (t = 0; t < IFS_TEST_MAX; t++)
		if (!strcmp(row->test, ifs_test_name(t)))
			break;
	if (t == IFS_TEST_MAX || ifs_status_parse(row->status, &result))
		return;
	ifs_details_parse(row->details, &raw);
	for (size_t k = 0; k < p->topo.n_cores; k++) {
		if (p->topo.cores[k].package != row->package ||
		    p->topo.cores[k].core_id != row->core)
			continue;
		last_update(p, k, t, result, ts_ns, row->cpu, raw, (uint64_t)row->scan_id, row);
		/* Its start on the scheduler's clock: the minimum gap between
		 * two scans of the core holds across the restart. */
		ifs_sched_note_begun(&p->sched, (unsigned)k, t,
				     clock_mono_ns() - (clock_wall_ns() - ts_ns));
		rs->n++;
	}
}

/* One (test, package, core)'s newest run that tested it (pass or fail). */
static void tested_restore_row(int64_t id, int64_t ts_ns, const void *r, void *arg)
{
	const struct ifs_row *row = r;
	struct ifs_restore *rs = arg;
	struct ifs_priv *p = rs->p;
	int t;

	(void)id;
	for (t = 0; t < IFS_TEST_MAX; t++)
		if (!strcmp(row->test, ifs_test_name(t)))
			break;
	if (t == IFS_TEST_MAX)
		return;
	for (size_t k = 0; k < p->topo.n_cores; k++)
		if (p->topo.cores[k].package == row->package &&
		    p->topo.cores[k].core_id == row->core)
			tested_update(p, k, t, ts_ns);
}

/* Cores of the history that the topology does not know, with the CPU their
 * last run wrote: offline since before the start (sysfs removed their
 * topology/), no hint from debugfs. */
struct ifs_unknown_cores {
	struct ifs_priv *p;
	int cpu[64], package[64], core_id[64];
	size_t n;
};

static void unknown_core_row(int64_t id, int64_t ts_ns, const void *r, void *arg)
{
	const struct ifs_row *row = r;
	struct ifs_unknown_cores *u = arg;
	const struct ifs_topology *t = &u->p->topo;

	(void)id;
	(void)ts_ns;
	if (u->n == sizeof(u->cpu) / sizeof(u->cpu[0]) || row->cpu < 0 ||
	    row->cpu >= IFS_MAX_CPUS || t->cpu_core[row->cpu] >= 0 ||
	    !ifs_cpu_isset(t->offline, (unsigned)row->cpu))
		return;
	for (size_t k = 0; k < t->n_cores; k++)
		if (t->cores[k].package == row->package && t->cores[k].core_id == row->core)
			return;
	for (size_t i = 0; i < u->n; i++)
		if (u->cpu[i] == row->cpu)
			return; /* another test's row on the same CPU */
	u->cpu[u->n] = row->cpu;
	u->package[u->n] = row->package;
	u->core_id[u->n] = row->core;
	u->n++;
}

/* The queries of ifs_last_restore(): the newest row of each (test, core),
 * among results that say something of a core. */
static const char *const ifs_restore_group[] = {"test", "package", "core", NULL};
static const struct row_value ifs_results_any[] = {ROW_TEXT("pass"), ROW_TEXT("fail"),
						   ROW_TEXT("untested")};
static const struct row_value ifs_results_tested[] = {ROW_TEXT("pass"), ROW_TEXT("fail")};
static const struct row_cond ifs_placed_rows[] = {
    ROW_COND_NOT_NULL("core"),
    ROW_COND_NOT_NULL("cpu"),
    ROW_COND_IN("status", ifs_results_any),
    {0},
};
static const struct row_cond ifs_last_rows[] = {
    ROW_COND_NOT_NULL("core"),
    ROW_COND_IN("status", ifs_results_any),
    {0},
};
static const struct row_cond ifs_tested_rows[] = {
    ROW_COND_NOT_NULL("core"),
    ROW_COND_IN("status", ifs_results_tested),
    {0},
};

/*
 * After a restart, each core's last result comes back from the history, so
 * a failed core stays failed (metric and alert) until a scan passes, instead
 * of vanishing until the next scheduled run; and so does the time it was
 * last tested, which an untested last result does not carry. p->lock held.
 */
void ifs_last_restore(struct ifs_priv *p)
{
	struct ifs_restore rs = {.p = p};
	struct ifs_unknown_cores u = {.p = p};
	int err;

	/* A core whose threads are all offline since before the start is not
	 * in sysfs: without debugfs, its last result is what places it (a
	 * failed core taken offline must stay failed). */
	err = sink_latest(p->c->sink, &ifs_scans_table, ifs_restore_group, ifs_placed_rows,
			  unknown_core_row, &u);
	if (!err && u.n)
		err = ifs_topology_adopt(p, u.cpu, u.package, u.core_id, u.n);
	if (!err)
		err = sink_latest(p->c->sink, &ifs_scans_table, ifs_restore_group, ifs_last_rows,
				  last_restore_row, &rs);
	if (!err)
		err = sink_latest(p->c->sink, &ifs_scans_table, ifs_restore_group, ifs_tested_rows,
				  tested_restore_row, &rs);
	if (err && err != -EBUSY) /* -EBUSY: no reader free, start without */
		clog_warn(p->c, "cannot read the last results: %s", strerror(-err));
	if (rs.n)
		clog_info(p->c, "restored the last result of %u core/test pairs from history",
			  rs.n);
}

/* What every result's row says of the run: job, device, image, batch; its
 * duration observed (a write that failed ran no test), a reload counted. */
static void result_row_start(struct ifs_priv *p, const struct ifs_work_result *r,
			     struct ifs_row *row)
{
	const struct ifs_job *job = &r->job;
	bool loaded;
	unsigned b;

	ifs_row_init(row);
	row->duration_ns = r->end_mono - r->start_mono;
	row->scan_id = (int64_t)job->scan_id;
	row->cpu = job->cpu;
	row->reloaded = r->reloaded;
	if (!r->rc) {
		const char *tv[] = {ifs_test_name(job->test)};

		sink_observe(p->c->sink, collector_series(p->c, IFS_M_DURATION, tv),
			     (double)row->duration_ns / 1e9);
	}
	snprintf(row->device, sizeof(row->device), "intel_ifs_%d", job->test);
	snprintf(row->test, sizeof(row->test), "%s", ifs_test_name(job->test));
	snprintf(row->requested_by, sizeof(row->requested_by), "%s", requester_name(job->by));
	snprintf(row->image_version, sizeof(row->image_version), "%s", r->image_version);
	ifs_trim_nl(row->image_version);
	if (!ifs_batch_parse(r->batch, &loaded, &b) && loaded)
		row->batch = (int32_t)b;
	if (r->reloaded) {
		const char *v[] = {ifs_test_name(job->test), r->batch_rc ? "error" : "ok"};

		sink_add(p->c->sink, collector_series(p->c, IFS_M_RELOADS, v), 1);
		clog_info(p->c, "%s: image reloaded before retrying cpu %d: %s",
			  ifs_test_name(job->test), job->cpu,
			  r->batch_rc ? strerror(-r->batch_rc) : "ok");
	}
}

/* The core the job ran on, by identity (the topology may have been re-read
 * during the run): its index in p->topo, or NULL if it is gone. */
static const struct ifs_core_info *result_core(struct ifs_priv *p, size_t *idx)
{
	const struct ifs_core_info *core = NULL;

	for (size_t i = 0; i < p->topo.n_cores; i++) {
		if (p->topo.cores[i].package == p->cur_package &&
		    p->topo.cores[i].core_id == p->cur_core_id) {
			core = &p->topo.cores[i];
			*idx = i;
		}
	}
	return core;
}

/* The write failed: no test ran, status/details are stale. */
static enum ifs_outcome result_write_error(const struct ifs_work_result *r, struct ifs_row *row)
{
	struct ifs_write_error we;

	ifs_write_error_describe(r->err_file, r->err_at_open, r->rc, &we);
	snprintf(row->status, sizeof(row->status), "error");
	snprintf(row->error_name, sizeof(row->error_name), "%s", we.name);
	snprintf(row->error_file, sizeof(row->error_file), "%s", we.file);
	row->write_errno = -r->rc;
	snprintf(row->reason, sizeof(row->reason), "%s: %s (%s)", we.file, we.reason,
		 strerror(-r->rc));
	return we.retryable ? IFS_OUT_RETRY : we.batch_bad ? IFS_OUT_BATCH_ERROR : IFS_OUT_ERROR;
}

/* The test ran and its status and details words parsed: the decoded row,
 * and what the scheduler does next. */
static enum ifs_outcome result_decoded(const struct ifs_work_result *r, enum ifs_result result,
				       uint64_t raw, struct ifs_row *row)
{
	enum ifs_outcome out = IFS_OUT_DONE;
	struct ifs_details d = {0};

	ifs_details_decode(r->job.test, raw, &d);
	ifs_details_reconcile(&d, result);
	ifs_row_fill_decoded(row, &d);
	snprintf(row->status, sizeof(row->status), "%s", ifs_result_name(result));
	snprintf(row->details, sizeof(row->details), "%s", r->details);
	ifs_trim_nl(row->details);
	/* The status file is authoritative (SBAF's "bundles left" is
	 * invisible in the word); the decoded fields explain it. */
	if (result == IFS_RESULT_UNTESTED)
		out = d.retryable ? IFS_OUT_RETRY : IFS_OUT_UNTESTED;
	/* The driver says the image is corrupted: reload once, retry. */
	if (d.reload && result != IFS_RESULT_PASS)
		out = IFS_OUT_RELOAD;
	if (result != IFS_RESULT_UNTESTED)
		row->retryable = 0;
	if (result == IFS_RESULT_PASS) {
		snprintf(row->error_name, sizeof(row->error_name), "none");
		snprintf(row->reason, sizeof(row->reason), "passed");
	}
	return out;
}

/* A finished job (ifs_priv.h): the row told, the scan counted, the core's
 * last result and the scheduler told under the lock, the row stored. */
void ifs_result_handle(struct ifs_priv *p, const struct ifs_work_result *r)
{
	const struct ifs_job *job = &r->job;
	enum ifs_result result = IFS_RESULT_UNTESTED;
	const struct ifs_core_info *core;
	enum ifs_outcome out;
	struct ifs_row row;
	size_t core_idx = 0;
	uint64_t raw = 0;
	bool ok = false;

	result_row_start(p, r, &row);
	pthread_mutex_lock(&p->lock);
	ifs_reload_track(p, r);
	core = result_core(p, &core_idx);
	row.core = p->cur_core_id;
	row.package = p->cur_package;
	if (r->rc) {
		out = result_write_error(r, &row);
	} else if (ifs_status_parse(r->status, &result) || ifs_details_parse(r->details, &raw)) {
		snprintf(row.status, sizeof(row.status), "error");
		snprintf(row.error_name, sizeof(row.error_name), "unreadable_status");
		snprintf(row.reason, sizeof(row.reason), "status/details unreadable after the run");
		out = IFS_OUT_ERROR;
	} else {
		ok = true;
		out = result_decoded(r, result, raw, &row);
	}
	count_scan(p, job->test, row.status); /* "error", or the result's name */
	/* Our own run: the passive check must not record it again. */
	if ((unsigned)job->test < IFS_TEST_MAX) {
		struct ifs_dev *dv = &p->dev[job->test];

		snprintf(dv->seen_status, sizeof(dv->seen_status), "%s", r->status);
		snprintf(dv->seen_details, sizeof(dv->seen_details), "%s", r->details);
		dv->seen_valid = true;
	}
	if (ok && core)
		last_update(p, core_idx, job->test, result, r->start_wall, job->cpu, raw,
			    job->scan_id, &row);
	p->running = false;
	ifs_sched_done(&p->sched, job, r->start_mono, r->end_mono, out);
	pthread_mutex_unlock(&p->lock);

	if (result == IFS_RESULT_FAIL && ok)
		clog_warn(p->c, "%s FAILED on package %d core %d (cpu %d): %s, details %s",
			  row.test, row.package, row.core, row.cpu, row.reason, row.details);
	else
		clog_debug(p->c, "%s on cpu %d: %s %s (%s)", row.test, row.cpu, row.status,
			   row.details, row.error_name);
	sink_event(p->c->sink, &ifs_scans_table, r->start_wall, &row);
}

/* Whether status/details differ from the values last seen: by value when
 * both parse (the baseline set at a module load is written, not read). */
static bool seen_differs(const struct ifs_dev *dv, const char *st, const char *de)
{
	enum ifs_result r0, r1;
	uint64_t d0, d1;

	if (ifs_status_parse(st, &r1) || ifs_details_parse(de, &d1) ||
	    ifs_status_parse(dv->seen_status, &r0) || ifs_details_parse(dv->seen_details, &d0))
		return strcmp(st, dv->seen_status) || strcmp(de, dv->seen_details);
	return r0 != r1 || d0 != d1;
}

/* Someone else wrote run_test: status/details changed while we were idle.
 * Recorded without a CPU (see the header comment). Called unlocked. */
void ifs_passive_check(struct ifs_priv *p)
{
	if (ifs_worker_busy(p->worker))
		return;
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		struct ifs_dev *dv = &p->dev[t];
		char path[PATH_MAX + 16], st[16], de[32];
		struct ifs_row row;
		enum ifs_result result;
		struct ifs_details d;
		uint64_t raw;

		if (!dv->present)
			continue;
		snprintf(path, sizeof(path), "%s/status", dv->dir);
		if (ifs_read_text(path, st, sizeof(st)) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/details", dv->dir);
		if (ifs_read_text(path, de, sizeof(de)) < 0)
			continue;
		pthread_mutex_lock(&p->lock);
		if (dv->seen_valid && seen_differs(dv, st, de) && !ifs_status_parse(st, &result) &&
		    !ifs_details_parse(de, &raw)) {
			ifs_row_init(&row);
			row.batch = dv->batch_loaded ? (int32_t)dv->batch : -1;
			snprintf(row.device, sizeof(row.device), "intel_ifs_%d", t);
			snprintf(row.test, sizeof(row.test), "%s", ifs_test_name(t));
			snprintf(row.requested_by, sizeof(row.requested_by), "external");
			snprintf(row.image_version, sizeof(row.image_version), "%s",
				 dv->image_text);
			ifs_details_decode(t, raw, &d);
			ifs_details_reconcile(&d, result);
			ifs_row_fill_decoded(&row, &d);
			snprintf(row.status, sizeof(row.status), "%s", ifs_result_name(result));
			snprintf(row.details, sizeof(row.details), "%s", de);
			ifs_trim_nl(row.details);
			count_scan(p, t, ifs_result_name(result));
			clog_info(p->c, "%s result changed outside sysobs: %s %s (core unknown)",
				  row.test, row.status, row.details);
			sink_event(p->c->sink, &ifs_scans_table, clock_wall_ns(), &row);
		}
		snprintf(dv->seen_status, sizeof(dv->seen_status), "%s", st);
		snprintf(dv->seen_details, sizeof(dv->seen_details), "%s", de);
		dv->seen_valid = true;
		pthread_mutex_unlock(&p->lock);
	}
}
