/* SPDX-License-Identifier: MIT */
/* What /proc tells about a process, for the agent's own metrics. */
#ifndef SYSOBS_BASE_PROCFS_H
#define SYSOBS_BASE_PROCFS_H

#include <stdint.h>

/* Open file descriptors of the process whose /proc directory is proc
 * ("/proc/self", "/proc/1234"), not counting the one this read holds when
 * proc is "/proc/self"; -1 when the directory cannot be read. O(1) on
 * procfs since Linux 6.2 (the directory's size), else a listing. */
int64_t procfs_open_fds(const char *proc);

/* The number after "key:" on its line of /proc/self/status, read in base
 * (10 for "Threads", "VmRSS" in kB...; 16 for the "Cap*" masks). 0, -errno
 * when the file cannot be read, -ENOENT when no line has the key, -EINVAL
 * when its value is not a number. */
int procfs_status_field(const char *key, int base, uint64_t *out);

#endif
