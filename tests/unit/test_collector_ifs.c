// SPDX-License-Identifier: MIT
/*
 * The ifs collector through its ops and its result handler, without root:
 * init and start on a sysfs-shaped tree of plain files in a temporary
 * directory (one package, two cores, intel_ifs_0), then each run's result
 * as the worker reads it from that tree (ifs_result_read()) fed to
 * ifs_result_handle(). The recording sink (recording_sink.h) stands where
 * the agent's would: the IfsScan rows and the sysobs_ifs_* series are
 * asserted exactly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/config.h"
#include "collectors/collector.h"
#include "collectors/ifs/ifs_priv.h"
#include "collectors/ifs/ifs_table.h"
#include "collectors/ifs/ifs_worker.h"
#include "recording_sink.h"

#define SEC 1000000000ll

extern const struct collector_ops ifs_collector;

struct fixture {
	char root[64], dev[128];
	struct config cfg;
	struct recording_sink rs;
	struct collector c;
};

/* Writes content to root/rel, making the directories on the way. */
static void tree_write(const char *root, const char *rel, const char *content)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

/* The fixture, started after history() (if any) filled what sink_latest()
 * finds: the rows of an earlier run. */
static int fixture_build(void **state, void (*history)(struct recording_sink *rs))
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	static const char *const tree[][2] = {
	    {"devices/system/cpu/online", "0-1\n"},
	    {"devices/system/cpu/cpu0/topology/physical_package_id", "0\n"},
	    {"devices/system/cpu/cpu0/topology/core_id", "0\n"},
	    {"devices/system/cpu/cpu1/online", "1\n"},
	    {"devices/system/cpu/cpu1/topology/physical_package_id", "0\n"},
	    {"devices/system/cpu/cpu1/topology/core_id", "1\n"},
	    {"devices/virtual/misc/intel_ifs_0/image_version", "0x8001\n"},
	    {"devices/virtual/misc/intel_ifs_0/current_batch", "0x02\n"},
	    {"devices/virtual/misc/intel_ifs_0/run_test", ""},
	    {"devices/virtual/misc/intel_ifs_0/status", "untested\n"},
	    {"devices/virtual/misc/intel_ifs_0/details", "0\n"},
	};

	if (!fx)
		return -1;
	snprintf(fx->root, sizeof(fx->root), "/tmp/sysobs-collector-ifs.XXXXXX");
	if (!mkdtemp(fx->root))
		return -1;
	snprintf(fx->dev, sizeof(fx->dev), "%s/devices/virtual/misc/intel_ifs_0", fx->root);
	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
		tree_write(fx->root, tree[i][0], tree[i][1]);

	rs_init(&fx->rs, "ifs");
	fx->c = (struct collector){
	    .ops = &ifs_collector, .sysfs_root = fx->root, .hostname = "testhost", .fd = -1};
	rs_collector_attach(&fx->rs, &fx->c);
	if (history)
		history(&fx->rs);
	/* [collector.ifs] with its defaults: schedule = false */
	if (rs_collector_defaults(&fx->c, &fx->cfg) || ifs_collector.init(&fx->c) ||
	    ifs_collector.start(&fx->c))
		return -1;
	*state = fx;
	return 0;
}

static int fixture_setup(void **state)
{
	return fixture_build(state, NULL);
}

/* One row of an earlier run: test, core (package 0 unless package says
 * otherwise; -1: no core), its status and start (unix s). */
static void history_row(struct recording_sink *rs, const char *test, int package, int core,
			const char *status, int64_t start_s)
{
	struct ifs_row row;

	ifs_row_init(&row);
	snprintf(row.test, sizeof(row.test), "%s", test);
	snprintf(row.status, sizeof(row.status), "%s", status);
	snprintf(row.details, sizeof(row.details), "0x0");
	row.package = package;
	row.core = core;
	row.cpu = core;
	row.scan_id = start_s;
	rs_latest_add(rs, &ifs_scans_table, start_s * SEC, &row);
}

/*
 * Core 1 passed, failed, then could not be tested (untested), then the run
 * broke (error); core 0 failed, then broke. Rows of another package, of no
 * core and of the array test do not touch the scan series of package 0.
 */
static void earlier_run(struct recording_sink *rs)
{
	history_row(rs, "scan", 0, 1, "pass", 1000);
	history_row(rs, "scan", 0, 0, "fail", 1050);
	history_row(rs, "scan", 0, 1, "fail", 1100);
	history_row(rs, "scan", 1, 0, "pass", 1150); /* package 1: not on this host */
	history_row(rs, "scan", 0, 1, "untested", 1200);
	history_row(rs, "scan", 0, -1, "pass", 1250); /* no core: says nothing */
	history_row(rs, "array", 0, 0, "pass", 1275);
	history_row(rs, "scan", 0, 1, "error", 1300);
	history_row(rs, "scan", 0, 0, "error", 1350);
}

static int restart_setup(void **state)
{
	return fixture_build(state, earlier_run);
}

static int fixture_teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	ifs_collector.stop(&fx->c);
	cfg_free(&fx->cfg);
	free((void *)fx->c.cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	free(fx);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * One scan of core core_id (package 0) through cpu, asked for by the API,
 * that left status and details in the device: what the worker would hand
 * back after its write returned rc, started at start_s (wall) and lasting
 * half a second.
 */
static const struct ifs_row *scan(struct fixture *fx, int core_id, int cpu, const char *status,
				  const char *details, int rc, int64_t start_s)
{
	struct ifs_priv *p = fx->c.priv;
	struct ifs_work_result r = {
	    .job = {.core = (unsigned)core_id,
		    .test = IFS_TEST_SCAN,
		    .cpu = cpu,
		    .batch = -1,
		    .by = IFS_BY_API,
		    .scan_id = 40 + (uint64_t)start_s},
	    .rc = rc,
	    .err_file = IFS_FILE_RUN_TEST,
	    .loaded_batch = -1,
	    .start_mono = 10 * SEC,
	    .end_mono = 10 * SEC + SEC / 2,
	    .start_wall = start_s * SEC,
	};
	size_t rows = fx->rs.n_rows;

	tree_write(fx->root, "devices/virtual/misc/intel_ifs_0/status", status);
	tree_write(fx->root, "devices/virtual/misc/intel_ifs_0/details", details);
	ifs_result_read(fx->dev, &r);
	/* What dispatch() notes of the job it hands the worker. */
	p->running = true;
	p->cur = r.job;
	p->cur_package = 0;
	p->cur_core_id = core_id;
	ifs_result_handle(p, &r);

	assert_int_equal(fx->rs.n_rows, rows + 1);
	assert_ptr_equal(fx->rs.rows[rows].t, &ifs_scans_table);
	assert_int_equal(fx->rs.rows[rows].ts_ns, start_s * SEC);
	assert_false(p->running);
	return (const struct ifs_row *)fx->rs.rows[rows].row;
}

static double series(struct fixture *fx, const char *name, const char *labels)
{
	struct rs_series *s = rs_find(&fx->rs, name, labels);

	assert_non_null(s);
	return s->value;
}

/* The scan series of core (package 0): last status (0 pass, 1 fail, 2
 * untested), its start and the last tested one (unix s); the failing cores. */
static void assert_core(struct fixture *fx, const char *core, double status, double last_s,
			double tested_s, double failing)
{
	char labels[32];

	snprintf(labels, sizeof(labels), "scan,0,%s", core);
	assert_true(series(fx, "sysobs_ifs_core_status", labels) == status);
	assert_true(series(fx, "sysobs_ifs_core_last_scan_timestamp_seconds", labels) == last_s);
	assert_true(series(fx, "sysobs_ifs_core_last_tested_timestamp_seconds", labels) ==
		    tested_s);
	assert_true(series(fx, "sysobs_ifs_failing_cores", "scan") == failing);
}

/* What start published before any result. */
static void start_publishes_zeros(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(fx->rs.n_rows, 0);
	assert_true(series(fx, "sysobs_ifs_failing_cores", "scan") == 0);
	assert_true(series(fx, "sysobs_ifs_image_loaded", "scan") == 1);
	assert_true(series(fx, "sysobs_ifs_schedule_interval_seconds", "") == 0);
	assert_true(series(fx, "sysobs_ifs_image_reloads_total", "scan,ok") == 0);
	assert_true(series(fx, "sysobs_ifs_skipped_runs_total", "scan,offline") == 0);
	assert_null(rs_find(&fx->rs, "sysobs_ifs_scans_total", "scan,pass"));
}

static void pass_then_fail_then_untested(void **state)
{
	struct fixture *fx = *state;
	const struct ifs_row *row;
	struct rs_series *dur;

	row = scan(fx, 1, 1, "pass\n", "0xf10\n", 0, 1000);
	assert_string_equal(row->device, "intel_ifs_0");
	assert_string_equal(row->test, "scan");
	assert_string_equal(row->status, "pass");
	assert_string_equal(row->details, "0xf10");
	assert_string_equal(row->error_name, "none");
	assert_string_equal(row->reason, "passed");
	assert_string_equal(row->requested_by, "api");
	assert_string_equal(row->image_version, "0x8001");
	assert_int_equal(row->batch, 2);
	assert_int_equal(row->cpu, 1);
	assert_int_equal(row->package, 0);
	assert_int_equal(row->core, 1);
	assert_int_equal(row->scan_id, 1040);
	assert_int_equal(row->duration_ns, SEC / 2);
	assert_int_equal(row->chunk_num, 0x10);
	assert_int_equal(row->chunk_stop_index, 0x0f);
	assert_int_equal(row->retryable, 0);
	assert_int_equal(row->write_errno, -1);
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,pass") == 1);
	assert_core(fx, "1", 0, 1000, 1000, 0);
	dur = rs_find(&fx->rs, "sysobs_ifs_scan_duration_seconds", "scan");
	assert_non_null(dur);
	assert_int_equal(dur->observations, 1);
	assert_true(dur->value == 0.5);
	assert_null(rs_find(&fx->rs, "sysobs_ifs_core_status", "scan,0,0"));

	/* bit 63: a signature error, the core failed */
	row = scan(fx, 1, 1, "fail\n", "0x8000000000000f05\n", 0, 1100);
	assert_string_equal(row->status, "fail");
	assert_string_equal(row->error_name, "signature_error");
	assert_int_equal(row->signature_error, 1);
	assert_int_equal(row->control_error, 0);
	assert_int_equal(row->chunk_num, 5);
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,fail") == 1);
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,pass") == 1);
	assert_core(fx, "1", 1, 1100, 1100, 1);

	/* a sibling could not join: untested, retryable; the core was not
	 * tested, so its last tested time stays */
	row = scan(fx, 1, 1, "untested\n", "0x100000f03\n", 0, 1200);
	assert_string_equal(row->status, "untested");
	assert_string_equal(row->error_name, "other_thread_could_not_join");
	assert_int_equal(row->error_code, 1);
	assert_int_equal(row->retryable, 1);
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,untested") == 1);
	assert_core(fx, "1", 2, 1200, 1100, 0);
	assert_int_equal(dur->observations, 3);
}

/* Status or details that do not parse, and a write the driver refused:
 * "error" rows, counted, the core's last result untouched. */
static void garbage_and_write_error(void **state)
{
	struct fixture *fx = *state;
	const struct ifs_row *row;
	struct rs_series *dur;

	row = scan(fx, 0, 0, "pass\n", "0xf10\n", 0, 2000);
	assert_int_equal(row->core, 0);
	assert_core(fx, "0", 0, 2000, 2000, 0);

	row = scan(fx, 0, 0, "garbage\n", "0xf10\n", 0, 2100);
	assert_string_equal(row->status, "error");
	assert_string_equal(row->error_name, "unreadable_status");
	assert_string_equal(row->reason, "status/details unreadable after the run");
	assert_string_equal(row->details, "");
	row = scan(fx, 0, 0, "fail\n", "0xzz\n", 0, 2200);
	assert_string_equal(row->error_name, "unreadable_status");
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,error") == 2);
	assert_core(fx, "0", 0, 2000, 2000, 0);

	/* run_test refused the CPU: no test ran, its duration not observed */
	row = scan(fx, 0, 0, "pass\n", "0xf10\n", -EINVAL, 2300);
	assert_string_equal(row->status, "error");
	assert_string_equal(row->error_file, "run_test");
	assert_int_equal(row->write_errno, EINVAL);
	assert_int_equal(row->error_code, -1);
	assert_true(series(fx, "sysobs_ifs_scans_total", "scan,error") == 3);
	assert_core(fx, "0", 0, 2000, 2000, 0);
	dur = rs_find(&fx->rs, "sysobs_ifs_scan_duration_seconds", "scan");
	assert_int_equal(dur->observations, 3);
	assert_int_equal(fx->rs.n_rows, 4);
}

/*
 * After a restart each core's last result comes back from the history
 * (ifs_last_restore(), through sink_latest() with the recording sink
 * evaluating its filter): the newest pass/fail/untested row of each core
 * sets its status and last scan, the newest pass/fail row its last tested
 * time; "error" rows (no result of the core) are passed over, so core 0
 * stays failed and core 1's last tested time is its fail, not its untested
 * run.
 */
static void restart_restores_last_results(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(fx->rs.n_latest_queries, 3);
	assert_int_equal(fx->rs.n_rows, 0); /* nothing written back */
	assert_core(fx, "1", 2, 1200, 1100, 1);
	assert_core(fx, "0", 1, 1050, 1050, 1);
	/* a scan now: the restored state goes on from there */
	scan(fx, 0, 0, "pass\n", "0xf10\n", 0, 2000);
	assert_core(fx, "0", 0, 2000, 2000, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(start_publishes_zeros, fixture_setup, fixture_teardown),
	    cmocka_unit_test_setup_teardown(pass_then_fail_then_untested, fixture_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(garbage_and_write_error, fixture_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(restart_restores_last_results, restart_setup,
					    fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
