/* SPDX-License-Identifier: MIT */
/*
 * init_net from BPF, for the programs that walk the kernel's list of
 * network namespaces (netns.bpf.c, netstat.bpf.c): up the real_parent
 * chain of the current task to init_task (pid 0, its own parent), whose
 * nsproxy holds init_net. Include after vmlinux.h and bpf_core_read.h.
 */
#ifndef SYSOBS_BPF_INIT_NET_H
#define SYSOBS_BPF_INIT_NET_H

#define TASK_CHAIN_MAX 256 /* real_parent hops to init_task */

/* init_net, or NULL when init_task is not where it should be. */
static __always_inline struct net *init_net_find(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	for (int i = 0; i < TASK_CHAIN_MAX; i++) {
		struct task_struct *p = BPF_CORE_READ(t, real_parent);

		if (!p || p == t)
			break;
		t = p;
	}
	if (BPF_CORE_READ(t, pid) != 0 || BPF_CORE_READ(t, real_parent) != t)
		return NULL;
	return BPF_CORE_READ(t, nsproxy, net_ns);
}

#endif
