/* SPDX-License-Identifier: MIT */
/*
 * Where start-up's memory goes. With SYSOBS_MEM_STAGES=1 in the environment,
 * mem_stage("collector drops init") logs, at warn so that any log level
 * shows it, the process's VmRSS now and its VmHWM since the previous stage
 * (each call resets the peak: "5" to /proc/self/clear_refs, Linux >= 4.0),
 * with glibc's heap in use and held (mallinfo2). bench/idle_rss.sh
 * STAGES=1 prints the table. Without the variable it does nothing.
 */
#ifndef SYSOBS_MEM_STAGE_H
#define SYSOBS_MEM_STAGE_H

/* stage: what was just done; a string logged as is. Main thread only. */
void mem_stage(const char *stage);

#endif
