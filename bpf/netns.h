/* SPDX-License-Identifier: MIT */
/* Shared between bpf/netns.bpf.c and collectors/netns_live.c. */
#ifndef SYSOBS_BPF_NETNS_H
#define SYSOBS_BPF_NETNS_H

/* Inode numbers the walk can return: a host with more network namespaces
 * gets NETNS_WALK_TRUNCATED and nothing is judged gone. Power of two. */
#define NETNS_LIVE_MAX 16384

/* Return values of the walk besides a count (<= NETNS_LIVE_MAX). */
#define NETNS_WALK_NO_INIT 0xFFFFFFFFu /* init_task/init_net not found */
#define NETNS_WALK_TRUNCATED                                                                       \
	0xFFFFFFFEu /* more namespaces than fit, or the                                            \
		       list did not close */

#endif
