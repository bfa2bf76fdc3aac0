/* SPDX-License-Identifier: MIT */
/*
 * What the agent's own BPF programs cost the kernel: run count and run time
 * of every program sysobsd holds, from the kernel's run statistics
 * (bpf_prog_info run_cnt, run_time_ns), which it keeps only while someone
 * holds a BPF_ENABLE_STATS fd (or kernel.bpf_stats_enabled is 1). Part of
 * the self collector.
 */
#ifndef SYSOBS_SELF_BPF_H
#define SYSOBS_SELF_BPF_H

#include <stddef.h>
#include <stdint.h>

/* One program the agent holds, its statistics summed over the fds that
 * name the same program id. */
struct self_bpf_prog {
	uint32_t id;
	char name[16]; /* bpf_prog_info.name (the kernel cuts it at 15) */
	uint64_t run_cnt, run_time_ns;
};

/* BPF_ENABLE_STATS(BPF_STATS_RUN_TIME): the fd that keeps the kernel's run
 * statistics on while it is open, or -errno (EPERM without CAP_SYS_ADMIN,
 * EINVAL before Linux 5.8). */
int self_bpf_stats_enable(void);

/* The BPF programs among the fds of this process (fd_dir: "/proc/self/fd"),
 * one entry per program id, at most max. The count, or -errno. */
int self_bpf_progs(const char *fd_dir, struct self_bpf_prog *out, size_t max);

#endif
