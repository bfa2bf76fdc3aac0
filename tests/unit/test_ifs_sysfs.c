// SPDX-License-Identifier: MIT
/* Unit tests of IFS device discovery, the topology reader and the run_test
 * write, on a sysfs-shaped tree of plain files in a temporary directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_worker.h"

static char root[256];

static void put(const char *rel, const char *content)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	/* mkdir -p of the parent */
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void cpu(int n, const char *online, int pkg, int core)
{
	char rel[128], v[16];

	if (online) {
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/online", n);
		put(rel, online);
	}
	if (pkg < 0) {
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/.keep", n);
		put(rel, "");
		return;
	}
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id", n);
	snprintf(v, sizeof(v), "%d\n", pkg);
	put(rel, v);
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/core_id", n);
	snprintf(v, sizeof(v), "%d\n", core);
	put(rel, v);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/sysobs-ifs-sysfs.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_topology(void **state)
{
	struct ifs_topology t;

	/* Two packages; core ids restart per package and are not contiguous. */
	cpu(0, NULL, 0, 0); /* no online file: cpu0 on x86 */
	cpu(1, "1\n", 0, 4);
	cpu(2, "1\n", 1, 0);
	cpu(3, "1\n", 1, 4);
	cpu(4, "0\n", 0, 0);  /* offline sibling of cpu0, topology still there */
	cpu(5, "0\n", -1, 0); /* offline, topology removed by the kernel */
	cpu(6, "1\n", 1, 0);
	cpu(7, "1\n", 1, 4);
	put("devices/system/cpu/cpufreq/boost", "1\n"); /* not a cpu */

	assert_int_equal(ifs_topology_read(root, NULL, &t), 0);
	assert_int_equal(t.n_cores, 4);
	assert_int_equal(t.n_cpus, 8);
	/* Sorted by (package, core_id). */
	assert_int_equal(t.cores[0].package, 0);
	assert_int_equal(t.cores[0].core_id, 0);
	assert_int_equal(t.cores[1].package, 0);
	assert_int_equal(t.cores[1].core_id, 4);
	assert_int_equal(t.cores[2].package, 1);
	assert_int_equal(t.cores[2].core_id, 0);
	assert_int_equal(t.cores[3].core_id, 4);
	/* Threads ascending with their online state. */
	assert_int_equal(t.cores[0].n_cpus, 2);
	assert_int_equal(t.cores[0].cpus[0], 0);
	assert_true(t.cores[0].online[0]);
	assert_int_equal(t.cores[0].cpus[1], 4);
	assert_false(t.cores[0].online[1]);
	assert_int_equal(t.cores[1].n_cpus, 1); /* cpu5 unplaceable */
	assert_int_equal(t.cores[2].cpus[0], 2);
	assert_int_equal(t.cores[2].cpus[1], 6);
	assert_int_equal(t.cpu_core[6], 2);
	assert_int_equal(t.cpu_core[5], -1);
	assert_int_equal(t.cpu_core[100], -1);
	ifs_topology_free(&t);
	ifs_topology_free(NULL);
}

/* Issue 33 item 7: the x86 topology debugfs names the core of a CPU whose
 * topology/ is gone (cpu_debug_show prints cpu_data(N), kept offline); a
 * CPU never brought up prints only "online:". */
static void test_topology_hints(void **state)
{
	struct ifs_cpu_hint *h = calloc(IFS_MAX_CPUS, sizeof(*h));
	struct ifs_topology t;

	assert_non_null(h);
	assert_int_equal(ifs_topology_hints_read(root, h), -ENOENT);
	cpu(0, NULL, 0, 0);
	cpu(1, "1\n", 0, 1);
	cpu(2, "0\n", -1, 0); /* sibling of cpu0, offline since boot */
	cpu(3, "0\n", -1, 0); /* never brought up */
	put("kernel/debug/x86/topo/cpus/0", "online:              1\ninitial_apicid:      0\n"
					    "apicid:              0\npkg_id:              0\n"
					    "die_id:              0\ncore_id:             0\n");
	put("kernel/debug/x86/topo/cpus/2", "online:              0\ninitial_apicid:      1\n"
					    "apicid:              1\npkg_id:              0\n"
					    "die_id:              0\ncore_id:             0\n");
	put("kernel/debug/x86/topo/cpus/3", "online:              0\n");
	assert_int_equal(ifs_topology_hints_read(root, h), 2);
	assert_true(h[2].known);
	assert_false(h[3].known);

	/* Without hints cpu0's core looks single-threaded. */
	assert_int_equal(ifs_topology_read(root, NULL, &t), 0);
	assert_int_equal(t.cores[0].n_cpus, 1);
	ifs_topology_free(&t);
	/* With them cpu2 is its offline sibling; cpu3 stays unknown. */
	assert_int_equal(ifs_topology_read(root, h, &t), 0);
	assert_int_equal(t.n_cores, 2);
	assert_int_equal(t.cores[0].n_cpus, 2);
	assert_int_equal(t.cores[0].cpus[1], 2);
	assert_false(t.cores[0].online[1]);
	assert_int_equal(t.cpu_core[3], -1);
	assert_true(ifs_cpu_isset(t.offline, 3));
	/* A core known only from the history: cpu3 offline, added to it. */
	assert_int_equal(ifs_topology_add_offline(&t, 3, 0, 7), 0);
	assert_int_equal(t.n_cores, 3);
	assert_int_equal(t.cpu_core[3], 2);
	assert_int_equal(t.cores[2].core_id, 7);
	assert_int_equal(ifs_topology_add_offline(&t, 3, 0, 7), 0); /* known: no-op */
	assert_int_equal(t.cores[2].n_cpus, 1);
	ifs_topology_free(&t);
	free(h);
}

/* Issue 13: the kernel removes cpuN/topology at hot-unplug. The collector
 * remembers the core of a thread it saw online; one it never saw is only
 * known to be offline. */
static void test_topology_remember(void **state)
{
	struct ifs_topology before, after;
	char rel[128];

	cpu(0, NULL, 0, 0);
	cpu(1, "1\n", 0, 1);
	cpu(2, "1\n", 0, 0);
	cpu(3, "1\n", 0, 1);
	assert_int_equal(ifs_topology_read(root, NULL, &before), 0);
	assert_int_equal(before.n_cores, 2);

	/* cpu 2 (sibling of cpu 0) and both threads of core 1 go offline. */
	for (int c = 1; c <= 3; c++) {
		snprintf(rel, sizeof(rel), "rm -rf '%s/devices/system/cpu/cpu%d/topology'", root,
			 c);
		assert_int_equal(system(rel), 0);
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/online", c);
		put(rel, "0\n");
	}
	assert_int_equal(ifs_topology_read(root, NULL, &after), 0);
	assert_int_equal(after.n_cores, 1); /* what sysfs alone says */
	assert_int_equal(after.cores[0].n_cpus, 1);
	assert_true(ifs_cpu_isset(after.offline, 2) && ifs_cpu_isset(after.offline, 3));
	assert_false(ifs_cpu_isset(after.offline, 0));

	assert_int_equal(ifs_topology_remember(&after, &before), 0);
	assert_int_equal(after.n_cores, 2);
	assert_int_equal(after.cores[0].n_cpus, 2);
	assert_int_equal(after.cores[0].cpus[1], 2);
	assert_false(after.cores[0].online[1]);
	assert_int_equal(after.cores[1].core_id, 1);
	assert_int_equal(after.cores[1].n_cpus, 2);
	assert_false(after.cores[1].online[0] || after.cores[1].online[1]);
	assert_int_equal(after.cpu_core[3], 1);
	/* Remembering twice adds nothing. */
	assert_int_equal(ifs_topology_remember(&after, &before), 0);
	assert_int_equal(after.cores[0].n_cpus, 2);
	ifs_topology_free(&before);
	ifs_topology_free(&after);
}

static void test_devices(void **state)
{
	char dir[512], path[600], buf[64];
	unsigned mask;
	bool at_open;
	int fd;

	assert_int_equal(ifs_devices_discover(root, &mask), -ENOENT);
	put("devices/virtual/misc/intel_ifs_0/status", "untested\n");
	put("devices/virtual/misc/intel_ifs_2/status", "untested\n");
	put("devices/virtual/misc/intel_ifs_x/status", "\n");
	put("devices/virtual/misc/hpet/dev", "10:228\n");
	assert_int_equal(ifs_devices_discover(root, &mask), 0);
	assert_int_equal(mask, 1u << 0 | 1u << 2);

	/* The narrow write: the CPU number and a newline, in one write(). */
	ifs_device_dir(root, 0, dir, sizeof(dir));
	put("devices/virtual/misc/intel_ifs_0/run_test", "");
	assert_int_equal(ifs_run_test(dir, 13, &at_open), 0);
	snprintf(path, sizeof(path), "%s/run_test", dir);
	assert_int_equal(ifs_read_text(path, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "13\n");
	assert_int_equal(ifs_run_test(dir, -1, &at_open), -EINVAL);
	assert_false(at_open);
	/* Never creates a file: a missing attribute is an error, at open. */
	assert_int_equal(ifs_load_batch(dir, 2, &at_open), -ENOENT);
	assert_true(at_open);
	put("devices/virtual/misc/intel_ifs_0/current_batch", "none\n");
	assert_int_equal(ifs_load_batch(dir, 2, &at_open), 0);
	assert_false(at_open);
	snprintf(path, sizeof(path), "%s/nope", dir);
	assert_int_equal(ifs_run_test(path, 1, &at_open), -ENOENT);
	assert_true(at_open);
	fd = ifs_read_text("/nonexistent/file", buf, sizeof(buf));
	assert_int_equal(fd, -ENOENT);
}

static void worker_run(struct ifs_worker *w, int efd, const struct ifs_work *work,
		       struct ifs_work_result *r)
{
	uint64_t n;

	assert_int_equal(ifs_worker_submit(w, work), 0);
	assert_int_equal(read(efd, &n, sizeof(n)), (ssize_t)sizeof(n));
	assert_int_equal(ifs_worker_take(w, r), 0);
}

/* Issue 13: a reload writes current_batch even when that batch is loaded
 * (the driver reloads it), then runs the test; without reload, the batch in
 * place is not written again. */
static void test_worker_reload(void **state)
{
	struct ifs_work work = {.job = {.cpu = 5, .batch = -1}};
	struct ifs_work_result r;
	char path[600], buf[64];
	struct ifs_worker *w;
	int efd = eventfd(0, EFD_CLOEXEC);

	assert_true(efd >= 0);
	put("devices/virtual/misc/intel_ifs_0/run_test", "");
	put("devices/virtual/misc/intel_ifs_0/current_batch", "0x02\n");
	ifs_device_dir(root, 0, work.dev_dir, sizeof(work.dev_dir));
	w = ifs_worker_start(efd);
	assert_non_null(w);

	work.job.batch = 2; /* in place: not written */
	worker_run(w, efd, &work, &r);
	assert_int_equal(r.rc, 0);
	assert_false(r.reloaded);
	snprintf(path, sizeof(path), "%s/current_batch", work.dev_dir);
	assert_true(ifs_read_text(path, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "0x02\n");

	work.job.batch = -1;
	work.job.reload = true;
	worker_run(w, efd, &work, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.reloaded);
	assert_int_equal(r.batch_rc, 0);
	assert_true(ifs_read_text(path, buf, sizeof(buf)) > 0);
	/* The loaded batch, written again (over a plain file: no truncation). */
	assert_memory_equal(buf, "2\n", 2);
	snprintf(path, sizeof(path), "%s/run_test", work.dev_dir);
	assert_true(ifs_read_text(path, buf, sizeof(buf)) > 0);
	assert_memory_equal(buf, "5\n", 2);

	ifs_worker_stop(w);
	close(efd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_topology, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_topology_remember, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_topology_hints, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker_reload, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
