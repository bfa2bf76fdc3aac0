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

/* AF_PACKET sockets with receive drops, of every namespace (netstat_walk). */
#define NETSTAT_PSK_MAX 4096 /* a power of two */

struct netstat_psk {
	__u64 sk;    /* the socket's address: tells it apart between walks */
	__u32 ns;    /* index of its namespace in netstat[] */
	__u32 drops; /* sk_drops_read(): what packet_diag's SK_MEMINFO_DROPS shows */
};

#endif
