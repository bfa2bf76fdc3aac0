// SPDX-License-Identifier: MIT
/*
 * The ifs collector: Intel In-Field Scan results per core, an optional scan
 * scheduler (off by default), history in SQLite (served by the API's
 * generic route of ifs_scans), Prometheus metrics, two routes of its own
 * (the cores' live state, requested scans: ifs_routes.c) and an optional
 * Alertmanager push.
 *
 * Threads: the main loop owns the scheduler and all sysfs reads; the worker
 * thread owns the blocking run_test write (ifs_worker.c); alerts leave
 * through the sink (sink_alert(), pushed by exporters/alertmanager.c); HTTP threads read a snapshot
 * under p->lock and queue scan requests there. Worker results and HTTP requests both wake the main
 * loop through one eventfd, exposed as c->fd.
 *
 * Kernel trap (KERNEL.md): status/details describe the LAST run on the
 * device, not a core. Results of our own runs are attributed to the CPU we
 * wrote; a change seen while we did not run (someone else wrote run_test)
 * is recorded as unattributed, and two identical results in a row from
 * outside cannot be told apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/ifs/ifs_priv.h"
#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_sched.h"
#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_table.h"
#include "collectors/ifs/ifs_worker.h"

static const struct event_table *const ifs_tables[] = {&ifs_scans_table, NULL};

#define IFS_KEY(f, t, def, mn, mx, help) CFG_KEY(struct ifs_cfg, f, t, def, mn, mx, help)
static const struct cfg_key ifs_keys[] = {
    IFS_KEY(schedule, CFG_BOOL, "false", 0, 0,
	    "run scans on a schedule; a scan takes every thread of a core offline for up to "
	    "~200 ms"),
    IFS_KEY(interval, CFG_DURATION, "24h", 1000, 365ULL * 86400000,
	    "how often each core is scanned by each test when schedule = true"),
    IFS_KEY(allow_cpus, CFG_STRING, "", 0, 0,
	    "CPU list (e.g. 0-15,32-47); if set, only cores whose threads are all in it"),
    IFS_KEY(deny_cpus, CFG_STRING, "", 0, 0,
	    "CPU list never scanned: a core with any thread listed is skipped"),
    IFS_KEY(max_scan_seconds_per_hour, CFG_U64, "60", 0, 3600,
	    "cap on the scan time of the last hour (0 = no cap)"),
    IFS_KEY(retry_max, CFG_U64, "3", 0, 100,
	    "retries of a retryable outcome (busy core, interrupted) per run"),
    IFS_KEY(retry_backoff, CFG_DURATION, "1m", 10, 86400000,
	    "first retry delay; doubles at each retry"),
    IFS_KEY(rotate_batches, CFG_STRING, "", 0, 0,
	    "scan (intel_ifs_0) image batches to rotate through, the NN of "
	    "/lib/firmware/intel/ifs_0/ff-mm-ss-NN.scan (e.g. 1-3); empty = keep the loaded"),
    IFS_KEY(rotate_batches_sbaf, CFG_STRING, "", 0, 0,
	    "SBAF (intel_ifs_2) image batches to rotate through, the NN of "
	    "/lib/firmware/intel/ifs_2/ff-mm-ss-NN.sbft (e.g. 1-2); empty = keep the loaded"),
    IFS_KEY(poll, CFG_DURATION, "1s", 50, 3600000,
	    "how often device state is read and the scheduler runs"),
    IFS_KEY(alertmanager_url, CFG_STRING, "", 0, 0,
	    "Alertmanager base URL to push failed-core alerts to: the older spelling of "
	    "[alertmanager] url, read when that is empty; both empty = off"),
    IFS_KEY(alert_labels, CFG_STRING, "", 0, 0,
	    "extra labels for pushed alerts, k=v,k2=v2 (Prometheus's external_labels); job and "
	    "instance replace the defaults sysobs and the host name"),
    IFS_KEY(alert_resend, CFG_DURATION, "1m", 1000, 86400000,
	    "re-send period of a firing alert (below Alertmanager resolve_timeout)"),
    IFS_KEY(runbook_base, CFG_STRING, "", 0, 0,
	    "URL of the runbooks; a pushed alert's runbook_url is it + #sysobsifscorefailed; "
	    "empty = the agent's own GET /runbooks as the shipped rules link it: "
	    "http://<instance without :port>:9559/runbooks"),
    {0},
};

/* A run_test write lasts from ~0.5 s (scan, array) to 2 s plus a bundle
 * (SBAF), plus any wait on the driver's lock. */
static const double ifs_duration_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2, 2.5, 5, 10, 30, 60};

static const char *const ifs_scan_labels[] = {"test", "result", NULL};
static const char *const ifs_core_labels[] = {"test", "package", "core", NULL};
static const char *const ifs_test_labels[] = {"test", NULL};
static const char *const ifs_skip_labels[] = {"test", "reason", NULL};
static const char *const ifs_pkg_core_labels[] = {"package", "core", NULL};

static const struct metric_desc ifs_metrics[] = {
    [IFS_M_SCANS] = {"sysobs_ifs_scans_total",
		     "In-Field Scan runs by test (scan, array, sbaf) and result "
		     "(pass, fail, untested, error = run_test write refused).",
		     METRIC_KIND_COUNTER, ifs_scan_labels},
    [IFS_M_CORE_STATUS] = {"sysobs_ifs_core_status",
			   "Last result per core and test: 0 pass, 1 fail, 2 untested.",
			   METRIC_KIND_GAUGE, ifs_core_labels},
    [IFS_M_CORE_LAST_TS] = {"sysobs_ifs_core_last_scan_timestamp_seconds",
			    "Start of the last completed run on the core (pass, fail or "
			    "untested), unix seconds.",
			    METRIC_KIND_GAUGE, ifs_core_labels},
    [IFS_M_CORE_LAST_TESTED] = {"sysobs_ifs_core_last_tested_timestamp_seconds",
				"Start of the last run that tested the core (pass or fail; an "
				"untested result does not count), unix seconds.",
				METRIC_KIND_GAUGE, ifs_core_labels},
    [IFS_M_FAILING] = {"sysobs_ifs_failing_cores", "Cores whose last result for this test is fail.",
		       METRIC_KIND_GAUGE, ifs_test_labels},
    [IFS_M_IMAGE] = {"sysobs_ifs_image_loaded",
		     "1 if the device has a test image loaded (scan and SBAF only).",
		     METRIC_KIND_GAUGE, ifs_test_labels},
    [IFS_M_RELOADS] = {"sysobs_ifs_image_reloads_total",
		       "Image reloads (current_batch written again) after a result asking for one "
		       "(scan control_error or error 0xB, SBAF error 0x4 or 0xB), by result: ok, "
		       "error.",
		       METRIC_KIND_COUNTER, ifs_scan_labels},
    [IFS_M_DURATION] = {"sysobs_ifs_scan_duration_seconds",
			"Time a run_test write took (the test, and any wait on the driver's "
			"lock), by test; runs whose write failed are not observed.",
			METRIC_KIND_HISTOGRAM, ifs_test_labels, ifs_duration_bounds,
			sizeof(ifs_duration_bounds) / sizeof(ifs_duration_bounds[0])},
    [IFS_M_INTERVAL] = {"sysobs_ifs_schedule_interval_seconds",
			"How often the scheduler tests each core by each test ([collector.ifs] "
			"interval); 0 when schedule = false.",
			METRIC_KIND_GAUGE},
    [IFS_M_SKIPPED] = {"sysobs_ifs_skipped_runs_total",
		       "Scheduled runs not made because the core could not be tested when due, "
		       "by test and reason: offline (every thread), sibling_offline (a thread "
		       "offline: the driver needs all siblings online); one per interval.",
		       METRIC_KIND_COUNTER, ifs_skip_labels},
    [IFS_M_CORE_ALLOWED] = {"sysobs_ifs_core_allowed",
			    "1 if allow_cpus/deny_cpus let the scheduler test the core (every "
			    "thread allowed, none denied), 0 if it is excluded on purpose.",
			    METRIC_KIND_GAUGE, ifs_pkg_core_labels},
    [IFS_M_N] = {0},
};

/* Moves HTTP requests into the scheduler. */
static void drain_requests(struct ifs_priv *p)
{
	struct ifs_api_req *reqs;
	size_t n;

	pthread_mutex_lock(&p->lock);
	reqs = p->reqs;
	n = p->n_reqs;
	p->reqs = NULL;
	p->n_reqs = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		int err = -ENOENT;

		for (k = 0; k < p->topo.n_cores; k++)
			if (p->topo.cores[k].package == reqs[i].package &&
			    p->topo.cores[k].core_id == reqs[i].core_id)
				break;
		if (k < p->topo.n_cores)
			err = ifs_sched_request(&p->sched, k, reqs[i].test, reqs[i].scan_id,
						reqs[i].cpu);
		if (err)
			clog_warn(p->c, "scan %" PRIu64 " dropped: %s", reqs[i].scan_id,
				  strerror(-err));
	}
	pthread_mutex_unlock(&p->lock);
	free(reqs);
}

/* The scheduler's skip counts into sysobs_ifs_skipped_runs_total (p->lock). */
static void skips_export(struct ifs_priv *p)
{
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		struct ifs_dev *d = &p->dev[t];

		for (int why = IFS_SKIP_OFFLINE; why < IFS_SKIP_MAX; why++) {
			uint64_t n = p->sched.skipped[t][why];

			if (n == d->skips_exported[why])
				continue;
			if (!d->skip_s[why]) {
				const char *sv[] = {ifs_test_name(t), ifs_skip_name(why)};

				d->skip_s[why] = collector_series(p->c, IFS_M_SKIPPED, sv);
			}
			sink_add(p->c->sink, d->skip_s[why], (double)(n - d->skips_exported[why]));
			d->skips_exported[why] = n;
		}
	}
}

/* Starts the next job if the worker is free and the scheduler has one. The
 * scheduler is read by HTTP threads too, hence p->lock around it. */
static void dispatch(struct ifs_priv *p)
{
	struct ifs_work w = {0};
	int64_t wake, now;
	int err;

	if (ifs_worker_busy(p->worker))
		return;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		now = clock_mono_ns();
		err = ifs_sched_next(&p->sched, now, &w.job, &wake);
		skips_export(p);
		if (err)
			break;
		if (!p->dev[w.job.test].present) {
			ifs_sched_done(&p->sched, &w.job, now, now, IFS_OUT_ERROR);
			continue;
		}
		if (p->dev[w.job.test].reload_pending && !p->dev[w.job.test].image_loaded) {
			w.job.reload = true; /* load first: the retry of a failed load */
			if (w.job.batch < 0)
				w.job.batch = (int)p->dev[w.job.test].reload_batch;
		}
		snprintf(w.dev_dir, sizeof(w.dev_dir), "%s", p->dev[w.job.test].dir);
		if (ifs_worker_submit(p->worker, &w)) {
			ifs_sched_done(&p->sched, &w.job, now, now, IFS_OUT_ERROR);
			break;
		}
		p->running = true;
		p->cur = w.job;
		p->cur_package = p->topo.cores[w.job.core].package;
		p->cur_core_id = p->topo.cores[w.job.core].core_id;
		break;
	}
	pthread_mutex_unlock(&p->lock);
}

/* ---- collector ops ---- */

/* The host's name in paths and alerts: the agent resolved it ([agent]
 * hostname, else gethostname()), once for every path that names the host;
 * the alert's instance and runbook default to what it gives. */
static void ifs_names_default(struct collector *c, struct ifs_priv *p)
{
	snprintf(p->host, sizeof(p->host), "%s",
		 c->hostname && c->hostname[0] ? c->hostname : "unknown");
	if (!p->alert_instance[0])
		snprintf(p->alert_instance, sizeof(p->alert_instance), "%s", p->host);
	if (!p->runbook_url[0])
		ifs_runbook_url_default(p);
}

/* The microcode's shortest time between two scans of a core, by CPU model
 * (the kernel selftest's table); none for a model it does not name. */
static void ifs_min_scan_gap_read(struct collector *c, struct ifs_priv *p)
{
	char path[PATH_MAX + 32], text[4096];
	unsigned fam, model;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/modalias", p->root);
	if (ifs_read_text(path, text, sizeof(text)) >= 0 &&
	    !ifs_min_scan_gap_parse(text, &fam, &model, &p->scfg.min_scan_gap_ns))
		clog_info(c, "CPU family %u model %#x: scans of one core at least %lld s apart",
			  fam, model, (long long)(p->scfg.min_scan_gap_ns / 1000000000LL));
	else
		clog_info(c, "CPU model unknown (no %s): no minimum time between scans", path);
}

/* The cores of offline threads, while still root (debugfs is root's); none
 * without debugfs, which only costs the core of a CPU offline since before
 * the start. */
static int ifs_hints_read(struct collector *c, struct ifs_priv *p)
{
	int err;

	p->hints = calloc(IFS_MAX_CPUS, sizeof(*p->hints));
	if (!p->hints)
		return -ENOMEM;
	err = ifs_topology_hints_read(p->root, p->hints);
	if (err < 0) {
		clog_info(c,
			  "no %s/kernel/debug/x86/topo (%s): the core of a CPU offline since "
			  "before the start is known only from its last result",
			  p->root, strerror(-err));
		free(p->hints);
		p->hints = NULL;
	}
	return 0;
}

static int ifs_init(struct collector *c)
{
	struct ifs_priv *p;
	unsigned mask = 0;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->priv = p;
	p->c = c;
	p->efd = -1;
	pthread_mutex_init(&p->lock, NULL);
	err = ifs_read_config(c, p);
	if (err)
		goto err_free;
	snprintf(p->root, sizeof(p->root), "%s", c->sysfs_root ?: "/sys");
	ifs_names_default(c, p);

	err = ifs_devices_discover(p->root, &mask);
	if (err || !mask) {
		err = collector_unavailable(
		    c, -ENODEV,
		    "no intel_ifs_<N> device under %s/devices/virtual/misc "
		    "at start-up (CPU without In-Field Scan, or the intel_ifs "
		    "module not loaded; loaded later: restart sysobsd)",
		    p->root);
		goto err_free;
	}
	ifs_min_scan_gap_read(c, p);
	err = ifs_hints_read(c, p);
	if (err)
		goto err_free;
	err = ifs_topology_read(p->root, p->hints, &p->topo);
	if (err) {
		err = collector_unavailable(c, err, "cannot read the CPU topology under %s: %s",
					    p->root, strerror(-err));
		goto err_free;
	}
	ifs_topology_free(&p->topo);
	return 0;

err_free:
	/* Nothing else was made yet; the agent may exit without stop(). */
	pthread_mutex_destroy(&p->lock);
	free(p->hints);
	free(p);
	c->priv = NULL;
	return err;
}

static int ifs_start(struct collector *c)
{
	struct ifs_priv *p = c->priv;
	struct sink *k = c->sink;
	int err;

	sink_set(k, collector_series1(c, IFS_M_INTERVAL),
		 p->scfg.periodic ? (double)p->scfg.interval_ns / 1e9 : 0);
	if (p->scfg.periodic && p->scfg.interval_ns < p->scfg.min_scan_gap_ns)
		clog_warn(c,
			  "interval %lld s is shorter than this CPU's minimum time between two "
			  "scans of a core (%lld s): each core is scanned every %lld s",
			  (long long)(p->scfg.interval_ns / 1000000000LL),
			  (long long)(p->scfg.min_scan_gap_ns / 1000000000LL),
			  (long long)(p->scfg.min_scan_gap_ns / 1000000000LL));
	ifs_sched_init(&p->sched, &p->scfg);
	pthread_mutex_lock(&p->lock);
	ifs_refresh_devices(p);
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		const char *v[] = {ifs_test_name(t)};

		if (!p->dev[t].present)
			continue;
		p->dev[t].failing_s = collector_series(p->c, IFS_M_FAILING, v);
		sink_set(k, p->dev[t].failing_s, 0);
		/* From 0, so increase() sees the first skip. */
		for (int why = IFS_SKIP_OFFLINE; why < IFS_SKIP_MAX; why++) {
			const char *sv[] = {ifs_test_name(t), ifs_skip_name(why)};

			p->dev[t].skip_s[why] = collector_series(p->c, IFS_M_SKIPPED, sv);
			sink_add(k, p->dev[t].skip_s[why], 0);
		}
		if (t != IFS_TEST_ARRAY) {
			p->dev[t].image_s = collector_series(p->c, IFS_M_IMAGE, v);
			sink_set(k, p->dev[t].image_s, p->dev[t].image_loaded);
			ifs_reloads_zero(p, t);
		}
	}
	err = ifs_refresh_topology(p, true);
	ifs_sched_set_tests(&p->sched, p->tests, clock_mono_ns());
	p->next_scan_id = (uint64_t)(clock_wall_ns() / 1000);
	pthread_mutex_unlock(&p->lock);
	if (err)
		return err;

	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0)
		return -errno;
	p->worker = ifs_worker_start(p->efd);
	if (!p->worker)
		return -errno;
	pthread_mutex_lock(&p->lock);
	ifs_last_restore(p);
	pthread_mutex_unlock(&p->lock);
	ifs_passive_check(p); /* baseline: what is there now is not new */
	c->fd = p->efd;
	c->interval_ms = p->poll_ms;
	pthread_mutex_lock(&p->lock);
	p->started = true;
	pthread_mutex_unlock(&p->lock);
	clog_info(c, "%zu cores, tests:%s%s%s, scheduler %s", p->topo.n_cores,
		  p->dev[0].present ? " scan" : "", p->dev[1].present ? " array" : "",
		  p->dev[2].present ? " sbaf" : "", p->schedule ? "on" : "off");
	return 0;
}

static int ifs_on_ready(struct collector *c)
{
	struct ifs_priv *p = c->priv;
	struct ifs_work_result r;
	uint64_t n;

	if (read(p->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	if (ifs_worker_take(p->worker, &r) == 0)
		ifs_result_handle(p, &r);
	drain_requests(p);
	dispatch(p);
	return 0;
}

static int ifs_collect(struct collector *c)
{
	struct ifs_priv *p = c->priv;
	int err;

	bool gone;

	pthread_mutex_lock(&p->lock);
	ifs_refresh_devices(p);
	err = ifs_refresh_topology(p, false);
	ifs_sched_set_tests(&p->sched, p->tests, clock_mono_ns());
	gone = true;
	for (int t = 0; t < IFS_TEST_MAX; t++)
		gone &= !p->dev[t].present;
	pthread_mutex_unlock(&p->lock);
	if (err)
		clog_debug(c, "topology: %s", strerror(-err));
	ifs_passive_check(p);
	dispatch(p);
	if (gone) {
		/* Still polled: sysobs resumes when the module is back. */
		snprintf(c->why, sizeof(c->why),
			 "every intel_ifs device went away (module unloaded?); waiting for them "
			 "to come back");
		return -ENODEV;
	}
	return 0;
}

static void ifs_stop(struct collector *c)
{
	struct ifs_priv *p = c->priv;

	if (!p)
		return;
	/* The worker may be inside run_test: joining waits for that one test. */
	ifs_worker_stop(p->worker);
	if (p->efd >= 0)
		close(p->efd);
	ifs_sched_free(&p->sched);
	ifs_topology_free(&p->topo);
	free(p->hints);
	free(p->last);
	free(p->reqs);
	pthread_mutex_destroy(&p->lock);
	free(p);
	c->priv = NULL;
	c->fd = -1;
}

/*
 * Unavailable at start-up, a device may appear later (modprobe intel_ifs).
 * Scanning it needs what only start-up does: the privileged helper that
 * writes run_test is forked before the agent drops root, and only when
 * this collector runs then (agent/agent.c). So the collector stays
 * unavailable and its reason says a restart is needed.
 */
static int ifs_recheck(struct collector *c)
{
	unsigned mask = 0;
	int n = 0;

	if (ifs_devices_discover(c->sysfs_root ?: "/sys", &mask) || !mask)
		return 0;
	while (!(mask & (1u << n)))
		n++;
	snprintf(c->why, sizeof(c->why),
		 "intel_ifs_%d appeared after start-up: restart sysobsd (systemctl restart "
		 "sysobsd) to scan it; the collector and the privileged helper that writes "
		 "run_test start only at start-up",
		 n);
	return 1;
}

const struct collector_ops ifs_collector = {
    .name = "ifs",
    .help = "Intel In-Field Scan: per-core hardware self-test results, an optional scan "
	    "scheduler, alerts on failed cores",
    .keys = ifs_keys,
    .cfg_size = sizeof(struct ifs_cfg),
    .metrics = ifs_metrics,
    .tables = ifs_tables,
    .routes = ifs_routes,
    .check_config = ifs_check_config,
    .init = ifs_init,
    .start = ifs_start,
    .on_ready = ifs_on_ready,
    .collect = ifs_collect,
    .stop = ifs_stop,
    .recheck = ifs_recheck,
    .priv_writes = true,
};
