/* SPDX-License-Identifier: MIT */
/* What /proc tells about a process, for the agent's own metrics. */
#ifndef SYSOBS_BASE_PROCFS_H
#define SYSOBS_BASE_PROCFS_H

#include <stdint.h>

/* Open file descriptors of the process whose /proc directory is proc
 * ("/proc/self", "/proc/1234"), not counting the one this read holds when
 * proc is "/proc/self"; -1 when the directory cannot be read. */
int64_t procfs_open_fds(const char *proc);

#endif
