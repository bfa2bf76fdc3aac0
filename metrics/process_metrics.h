/* SPDX-License-Identifier: MIT */
/*
 * The standard process metrics every Prometheus client library exports, so
 * the usual panels and alerts work on sysobsd: process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds, process_max_fds, process_start_time_seconds. Read from
 * /proc/self at every render (a registry hook), like the Go client's
 * process collector.
 */
#ifndef SYSOBS_PROCESS_METRICS_H
#define SYSOBS_PROCESS_METRICS_H

#include "metrics/metrics.h"

/* Registers the families and the hook. 0 or -errno. */
int process_metrics_register(struct metrics *m);

/* What one read of /proc/self found; -1 for what could not be read. */
struct process_stat {
	double cpu_seconds;
	double start_time_seconds;
	double resident_bytes, virtual_bytes;
	double open_fds, max_fds;
};

#endif
