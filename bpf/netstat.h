/* SPDX-License-Identifier: MIT */
/* Shared between bpf/netstat.bpf.c and collectors/drops/drops_netstat.c. */
#ifndef SYSOBS_BPF_NETSTAT_H
#define SYSOBS_BPF_NETSTAT_H

#include "netns.h"

/* LINUX_MIB_* counters read per namespace (user space sets the indices,
 * UAPI linux/snmp.h). */
#define NETSTAT_N	 4
#define NETSTAT_CPUS_MAX 4096

struct netstat_ns {
	__u32 inum;
	__u32 pad;
	__u64 v[NETSTAT_N]; /* summed over the possible CPUs */
};

#define NETSTAT_NO_OFFSETS 0xFFFFFFFDu /* per-CPU offsets not found */

#endif
