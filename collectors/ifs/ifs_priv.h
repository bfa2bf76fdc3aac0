/* SPDX-License-Identifier: MIT */
/*
 * The ifs collector's state, shared by the collector (ifs.c, main loop) and
 * its routes (ifs_routes.c, HTTP threads, under p->lock).
 */
#ifndef SYSOBS_IFS_PRIV_H
#define SYSOBS_IFS_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "collectors/collector.h"
#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_sched.h"
#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_worker.h"

#define MS_NS		1000000LL
#define IFS_MAX_PENDING 4096 /* queued API scans */

struct ifs_dev {
	bool present;
	bool gone; /* was present, went away */
	char dir[PATH_MAX];
	bool image_loaded;
	uint32_t image_version;
	bool batch_loaded;
	unsigned batch;
	char image_text[32];
	char seen_status[16], seen_details[32]; /* last values read */
	bool seen_valid;
	/* Our own load of reload_batch failed and left no image (rotation
	 * off: no later job would load one): retried at reload_at, the wait
	 * doubling from retry_backoff up to an hour. */
	bool reload_pending;
	unsigned reload_batch;
	int64_t reload_at, reload_wait; /* mono ns */
	struct sink_series *image_s, *failing_s;
	struct sink_series *skip_s[IFS_SKIP_MAX]; /* sysobs_ifs_skipped_runs_total */
	uint64_t skips_exported[IFS_SKIP_MAX];
};

struct ifs_last {
	bool has;
	enum ifs_result result;
	int64_t ts_ns;
	int cpu;
	uint64_t details;
	char error_name[40];
	uint64_t scan_id;
	int64_t tested_ns; /* start of the last run that tested it; 0 = none known */
	bool alert_firing;
	struct sink_series *status_s, *ts_s, *tested_s;
};

struct ifs_api_req {
	int package, core_id; /* by identity: the topology may change meanwhile */
	enum ifs_test test;
	uint64_t scan_id;
	int cpu; /* asked for by CPU number, else -1 */
};

struct ifs_priv {
	struct collector *c;
	char root[PATH_MAX];
	char host[256];
	bool schedule;
	uint64_t poll_ms;
	struct ifs_sched_config scfg;
	struct ifs_sched sched;
	int efd;
	struct ifs_worker *worker;
	/* Alerts are published through the sink (sink_alert()); the agent's
	 * exporter pushes them when configured (exporters/alertmanager.c). */
	char alert_labels[512];
	/* The identity of a pushed alert: job and instance as the Prometheus
	 * rule's alert has them (docs/ifs.md), and the runbook link it gives. */
	char alert_job[128], alert_instance[256], runbook_url[600];

	/* Shared with HTTP threads. */
	pthread_mutex_t lock;
	bool started;
	struct ifs_topology topo;
	/* Cores of CPUs from the x86 topology debugfs, read at start-up (root
	 * only): an offline thread's core; NULL without it. */
	struct ifs_cpu_hint *hints;
	char online_text[1024];
	struct ifs_dev dev[IFS_TEST_MAX];
	unsigned tests;			       /* runnable tests: device present (+ image) */
	struct ifs_last (*last)[IFS_TEST_MAX]; /* per core of topo */
	struct ifs_api_req *reqs;
	size_t n_reqs;
	uint64_t next_scan_id;
	bool running;
	struct ifs_job cur;
	int cur_package, cur_core_id; /* identity of cur.core at dispatch */
};

/* [collector.ifs]; durations in ms. The lists are parsed by ifs_read_config(). */
struct ifs_cfg {
	bool schedule;
	uint64_t interval;
	const char *allow_cpus, *deny_cpus;
	uint64_t max_scan_seconds_per_hour, retry_max, retry_backoff;
	const char *rotate_batches;
	const char *rotate_batches_sbaf;
	uint64_t poll;
	const char *alertmanager_url, *alert_labels;
	uint64_t alert_resend;
	const char *runbook_base;
};

/* The typed keys into p with the checks their types cannot say, each bad
 * value reported with collector_config_error() (ifs_config.c). 0 or
 * -EINVAL. */
int ifs_read_config(struct collector *c, struct ifs_priv *p);
/* runbook_url when [collector.ifs] runbook_base is empty: the agent's own
 * GET /runbooks at the alert's instance (its :port dropped) and port 9559,
 * the link the shipped rules' template gives. */
void ifs_runbook_url_default(struct ifs_priv *p);
/* ops->check_config: ifs_read_config() into a scratch state. */
int ifs_check_config(struct collector *c);

struct ifs_work_result;

/* Index of each family in ifs.c's ops->metrics (collector_family()). */
enum {
	IFS_M_SCANS,
	IFS_M_CORE_STATUS,
	IFS_M_CORE_LAST_TS,
	IFS_M_CORE_LAST_TESTED,
	IFS_M_FAILING,
	IFS_M_IMAGE,
	IFS_M_RELOADS,
	IFS_M_DURATION,
	IFS_M_INTERVAL,
	IFS_M_SKIPPED,
	IFS_M_CORE_ALLOWED,
	IFS_M_N,
};

/* Devices and topology (ifs_devices.c), p->lock held. Reads
 * image_version/current_batch of every device and updates p->tests (a
 * device gone or back is logged). */
void ifs_refresh_devices(struct ifs_priv *p);
/* Re-reads the topology if the online CPU list changed (always with
 * force); keeps per-core results by (package, core_id). */
int ifs_refresh_topology(struct ifs_priv *p, bool force);
/* Adds to the topology, as an offline thread, each cpu[i] of core
 * (package[i], core_id[i]) that sysfs does not place (offline since before
 * the start, no hint): a core known from its last result. 0 or -ENOMEM. */
int ifs_topology_adopt(struct ifs_priv *p, const int *cpu, const int *package, const int *core_id,
		       size_t n);
/* A finished job that wrote current_batch: a failed load of ours is
 * retried later (rotation off), a successful one ends the retries. */
void ifs_reload_track(struct ifs_priv *p, const struct ifs_work_result *r);
/* ifs.c, on the main thread: a finished job from the worker into its
 * IfsScan row, the sysobs_ifs_* series, the core's last result and the
 * scheduler's outcome. Also the seam unit tests feed recorded results. */
void ifs_result_handle(struct ifs_priv *p, const struct ifs_work_result *r);
/* ifs_result.c: a status/details change while the worker was idle
 * (someone else wrote run_test), recorded without a core. Unlocked. */
void ifs_passive_check(struct ifs_priv *p);
/* ifs_result.c, p->lock held: the cores' last results from the history. */
void ifs_last_restore(struct ifs_priv *p);
/* ifs_result.c: sysobs_ifs_image_reloads_total of test t from 0. */
void ifs_reloads_zero(struct ifs_priv *p, enum ifs_test t);

/* GET /api/v1/ifs/cores, POST /api/v1/ifs/scans (ifs_routes.c). */
extern const struct collector_route ifs_routes[];

#endif
