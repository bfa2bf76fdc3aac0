/* SPDX-License-Identifier: MIT */
/*
 * IFS device discovery and CPU topology from sysfs, under a configurable
 * root (the FUSE fake in tests, /sys in production). Reads only; the one
 * write, run_test, lives in ifs_worker.c.
 */
#ifndef SYSOBS_IFS_SYSFS_H
#define SYSOBS_IFS_SYSFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/ifs/ifs_sched.h"

struct ifs_topology {
	struct ifs_core_info *cores; /* sorted by (package, core_id) */
	size_t n_cores;
	int cpu_core[IFS_MAX_CPUS]; /* core index of a cpu, -1 unknown */
	unsigned n_cpus;	    /* highest cpu seen + 1 */
	/* CPUs that exist but are offline without a topology directory: their
	 * core is unknown to sysfs until they are back online. */
	uint64_t offline[IFS_CPU_WORDS];
};

/* Reads a small sysfs file into buf (NUL-terminated). Returns the length or
 * -errno. */
int ifs_read_text(const char *path, char *buf, size_t len);
/* Strips trailing newlines and spaces, as sysfs values end. */
void ifs_trim_nl(char *s);

/* "<root>/devices/virtual/misc/intel_ifs_<n>" into buf. */
void ifs_device_dir(const char *root, int n, char *buf, size_t len);
/* Which intel_ifs_<N> exist: bit per test type. -errno if the misc class
 * directory cannot be read (no IFS driver at all). */
int ifs_devices_discover(const char *root, unsigned *mask);

/*
 * Package and core of a CPU from what survives its offlining. The kernel
 * removes an offline CPU's topology/ and drops it from its siblings'
 * thread_siblings_list and core_cpus_list (remove_siblinginfo), so no
 * sysfs file names the core of a thread offline since boot (nosmt,
 * isolation) or since before a restart. The x86 topology debugfs does:
 * kernel/debug/x86/topo/cpus/<N> (arch/x86/kernel/cpu/debugfs.c, Linux
 * 6.9 and later) prints pkg_id and core_id from cpu_data(N), kept after
 * the CPU goes offline, for every CPU that was ever brought up (x86 boots
 * every thread once, nosmt included). Root only, so read at start-up.
 */
struct ifs_cpu_hint {
	bool known;
	int package, core_id;
};
/* Fills hints[0..IFS_MAX_CPUS) from <root>/kernel/debug/x86/topo/cpus/;
 * returns how many CPUs it names, or -errno if the directory cannot be
 * read (debugfs not mounted, not root, not x86, before 6.9). */
int ifs_topology_hints_read(const char *root, struct ifs_cpu_hint *hints);

/*
 * Reads devices/system/cpu/cpu<N>/{online,topology/...}. A CPU without an
 * `online` file (cpu0 on x86) is online. An offline CPU whose topology
 * directory is gone (the kernel removes it at hot-unplug) joins its core
 * as an offline thread if hints (may be NULL) know it; otherwise it belongs
 * to no known core and is left out (t->offline). Returns 0 or -errno.
 */
int ifs_topology_read(const char *root, const struct ifs_cpu_hint *hints, struct ifs_topology *t);
/* Adds cpu, offline, to core (package, core_id) of t, the core made if
 * new (a core known only from the history). 0 or -ENOMEM. */
int ifs_topology_add_offline(struct ifs_topology *t, int cpu, int package, int core_id);
/*
 * Keeps in t, as offline threads of their old core, the CPUs of old that are
 * now offline without topology (t->offline): hot-unplug does not move a
 * thread to another core, and without this a core with an offline thread
 * would lose it from its thread list (deny_cpus included), and a core with
 * every thread offline would vanish. 0 or -ENOMEM (t unchanged then).
 */
int ifs_topology_remember(struct ifs_topology *t, const struct ifs_topology *old);
void ifs_topology_free(struct ifs_topology *t);

#endif
