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
 * Reads devices/system/cpu/cpu<N>/{online,topology/...}. A CPU without an
 * `online` file (cpu0 on x86) is online. An offline CPU whose topology
 * directory is gone (the kernel removes it at hot-unplug) belongs to no
 * known core and is left out. Returns 0 or -errno.
 */
int ifs_topology_read(const char *root, struct ifs_topology *t);
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
