// SPDX-License-Identifier: GPL-2.0
/*
 * The network namespaces alive now, as the kernel lists them: a walk of
 * net_namespace_list under RCU, run on demand (BPF_PROG_TEST_RUN of a
 * raw_tp program that is never attached) rather than guessed from /proc.
 *
 * Why not /proc/PID/ns/net and /run/netns: after the agent drops its
 * privileges it may not look into other users' processes, and a namespace
 * can be held by nothing a scan finds (an open fd, a socket, a bind mount in
 * another mount namespace). Why not a hook on namespace teardown: there is
 * no tracepoint there, kprobes and fentry are not everywhere (this project's
 * CI host refuses fentry), and the list is the kernel's own answer.
 *
 * Finding the list without kallsyms data symbols (CONFIG_KALLSYMS_ALL is
 * often off) or BTF variables: init_task is the root of every task's
 * real_parent chain and its nsproxy holds init_net; init_net was the first
 * namespace set up (net_ns_init), so it is the first entry and the list head
 * is init_net.list.prev. New namespaces are appended (list_add_tail_rcu) and
 * cleanup_net() removes them with list_del_rcu() before it frees anything
 * after synchronize_rcu(), so following ->next inside one RCU read section
 * (test_run holds rcu_read_lock for raw_tp programs) is the kernel's own
 * for_each_net_rcu(). Every read is bpf_probe_read_kernel (BPF_CORE_READ).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "init_net.h"

#include "netns.h"

char LICENSE[] SEC("license") = "GPL";

/* Filled by the walk; user space reads them through the mmap of .bss:
 * each namespace's inode number and its cookie (net->net_cookie, never
 * reused: it tells a namespace from a later one with its inode number). */
__u32 live_netns[NETNS_LIVE_MAX];
__u64 live_cookie[NETNS_LIVE_MAX];

struct netns_walk {
	struct list_head *head;
	struct list_head *pos;
	__u64 list_off; /* offsetof(struct net, list) */
	__u32 n;
	bool closed;
};

static long netns_walk_one(__u64 i, struct netns_walk *w)
{
	struct list_head *pos = w->pos; /* a local: CO-RE relocates kernel types only */
	struct net *net;

	if (pos == w->head) {
		w->closed = true;
		return 1;
	}
	if (w->n >= NETNS_LIVE_MAX)
		return 1;
	net = (struct net *)((void *)pos - w->list_off);
	live_netns[w->n & (NETNS_LIVE_MAX - 1)] = BPF_CORE_READ(net, ns.inum);
	live_cookie[w->n & (NETNS_LIVE_MAX - 1)] = BPF_CORE_READ(net, net_cookie);
	w->n++;
	pos = BPF_CORE_READ(pos, next);
	w->pos = pos;
	return pos ? 0 : 1;
}

SEC("raw_tp")
int netns_walk(void *ctx)
{
	struct netns_walk w = {.list_off = bpf_core_field_offset(struct net, list)};
	struct net *init_net;

	init_net = init_net_find();
	if (!init_net)
		return NETNS_WALK_NO_INIT;
	w.pos = (struct list_head *)((void *)init_net + w.list_off);
	w.head = BPF_CORE_READ(init_net, list.prev);
	bpf_loop(NETNS_LIVE_MAX + 1, netns_walk_one, &w, 0);
	return w.closed ? w.n : NETNS_WALK_TRUNCATED;
}
