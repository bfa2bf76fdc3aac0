// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own TCP counters of every network namespace, for the drops
 * the kfree_skb tracepoint does not see (a SYN refused by a full listen
 * queue is freed with consume_skb(): tcp_conn_request() -> drop ->
 * tcp_listendrop(), and tcp_rcv_state_process() consumes it). The same walk
 * as bpf/netns.bpf.c (net_namespace_list from init_task's nsproxy, under
 * the RCU read lock test_run holds), reading for each namespace the
 * LINUX_MIB_* counters user space asks for from net->mib.net_statistics,
 * a per-CPU array of unsigned long, summed over the possible CPUs: what
 * /proc/net/netstat prints in that namespace (snmp_fold_field()), and the
 * receive drops of its AF_PACKET sockets (psk_one).
 *
 * A per-CPU pointer is an offset to add __per_cpu_offset[cpu] to. That
 * array is a data symbol (kallsyms without CONFIG_KALLSYMS_ALL hides it)
 * and typed per-CPU ksyms need kallsyms too, so the offsets are measured:
 * a per-CPU array map keeps its per-CPU pointer in bpf_array.pptrs[0], and
 * bpf_map_lookup_percpu_elem() (v5.19) returns its address on a CPU; the
 * difference is that CPU's offset. Reading the map's address and the
 * element's as numbers needs allow_ptr_leaks at load (CAP_PERFMON); the
 * agent loads as root and runs the walk unprivileged later (test_run).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "init_net.h"

#include "netstat.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 ncpus = 1;		      /* possible CPUs */
const volatile __u32 mib_idx[NETSTAT_N] = {}; /* LINUX_MIB_* */

struct netstat_ns netstat[NETNS_LIVE_MAX];
/* AF_PACKET sockets with drops, this walk's (npsk of them); see psk_one */
struct netstat_psk psk[NETSTAT_PSK_MAX];
__u32 npsk;
__u64 cpu_off[NETSTAT_CPUS_MAX];
volatile __u64 ptrbuf; /* a pointer stored and read back as a number */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} probe SEC(".maps");

struct walk {
	struct list_head *head;
	struct list_head *pos;
	__u64 list_off;
	__u64 pptr;
	__u32 nmib; /* unsigned longs in struct linux_mib */
	__u32 n;
	bool closed, bad;
};

static long cpu_one(__u64 cpu, struct walk *w)
{
	__u32 zero = 0;
	void *p;

	if (cpu >= ncpus || cpu >= NETSTAT_CPUS_MAX)
		return 1;
	p = bpf_map_lookup_percpu_elem(&probe, &zero, cpu);
	if (!p) {
		w->bad = true;
		return 1;
	}
	ptrbuf = (__u64)p;
	cpu_off[cpu & (NETSTAT_CPUS_MAX - 1)] = ptrbuf - w->pptr;
	return 0;
}

struct sum {
	__u64 mib;
	__u32 slot;
};

static long sum_cpu(__u64 cpu, struct sum *s)
{
	struct netstat_ns *e = &netstat[s->slot & (NETNS_LIVE_MAX - 1)];
	__u64 base, v;

	if (cpu >= ncpus || cpu >= NETSTAT_CPUS_MAX)
		return 1;
	base = s->mib + cpu_off[cpu & (NETSTAT_CPUS_MAX - 1)];
	for (int i = 0; i < NETSTAT_N; i++) {
		v = 0;
		bpf_probe_read_kernel(&v, sizeof(v), (void *)(base + (__u64)mib_idx[i] * 8));
		e->v[i] += v;
	}
	return 0;
}

/*
 * AF_PACKET receive drops (a full receive buffer, a full TPACKET ring:
 * packet_rcv() / tpacket_rcv()) free a shared skb, so kfree_skb does not
 * fire; the kernel counts them per socket, in po->tp_drops (what
 * PACKET_STATISTICS returns, and resets) and in sk_drops (what packet_diag's
 * PACKET_DIAG_MEMINFO shows as SK_MEMINFO_DROPS, never reset): read here,
 * sk_drops plus the NUMA drop counters where the kernel has them (6.18:
 * sk->sk_drop_counters, sk_drops_read()). net->packet.sklist is the
 * namespace's list of packet sockets (RCU, which test_run holds).
 */
struct sock___drops {
	struct numa_drop_counters *sk_drop_counters;
} __attribute__((preserve_access_index));

struct numa_drop_counters___sysobs {
	atomic_t drops0;
	atomic_t drops1;
} __attribute__((preserve_access_index));

struct psk_walk {
	struct hlist_node *pos;
	__u64 node_off; /* of sk_node in struct sock */
	__u32 ns;
};

static long psk_one(__u64 i, struct psk_walk *p)
{
	struct hlist_node *pos = p->pos;
	struct netstat_psk *e;
	struct sock *sk;
	__u32 drops;

	if (!pos || npsk >= NETSTAT_PSK_MAX)
		return 1;
	sk = (struct sock *)((void *)pos - p->node_off);
	drops = (__u32)BPF_CORE_READ(sk, sk_drops.counter);
	if (bpf_core_field_exists(struct sock___drops, sk_drop_counters)) {
		struct numa_drop_counters___sysobs *dc =
		    (void *)BPF_CORE_READ((struct sock___drops *)sk, sk_drop_counters);

		if (dc)
			drops += (__u32)BPF_CORE_READ(dc, drops0.counter) +
				 (__u32)BPF_CORE_READ(dc, drops1.counter);
	}
	if (drops) {
		e = &psk[npsk & (NETSTAT_PSK_MAX - 1)];
		e->sk = (__u64)sk;
		e->ns = p->ns;
		e->drops = drops;
		npsk++;
	}
	pos = BPF_CORE_READ(pos, next);
	p->pos = pos;
	return pos ? 0 : 1;
}

static long ns_one(__u64 i, struct walk *w)
{
	struct list_head *pos = w->pos;
	struct netstat_ns *e;
	struct sum s;
	struct net *net;

	if (pos == w->head) {
		w->closed = true;
		return 1;
	}
	if (w->n >= NETNS_LIVE_MAX)
		return 1;
	net = (struct net *)((void *)pos - w->list_off);
	e = &netstat[w->n & (NETNS_LIVE_MAX - 1)];
	e->inum = BPF_CORE_READ(net, ns.inum);
	for (int k = 0; k < NETSTAT_N; k++)
		e->v[k] = 0;
	s.mib = (__u64)BPF_CORE_READ(net, mib.net_statistics);
	s.slot = w->n;
	if (s.mib)
		bpf_loop(NETSTAT_CPUS_MAX, sum_cpu, &s, 0);
	{
		struct psk_walk p = {
		    .pos = BPF_CORE_READ(net, packet.sklist.first),
		    .node_off = bpf_core_field_offset(struct sock, __sk_common.skc_node),
		    .ns = w->n,
		};

		if (p.pos)
			bpf_loop(NETSTAT_PSK_MAX, psk_one, &p, 0);
	}
	w->n++;
	pos = BPF_CORE_READ(pos, next);
	w->pos = pos;
	return pos ? 0 : 1;
}

SEC("raw_tp")
int netstat_walk(void *ctx)
{
	struct walk w = {.list_off = bpf_core_field_offset(struct net, list)};
	struct net *init_net;
	__u64 m;

	for (int i = 0; i < NETSTAT_N; i++)
		if (mib_idx[i] >= bpf_core_type_size(struct linux_mib) / 8)
			return NETSTAT_NO_OFFSETS;
	/* the probe map's per-CPU pointer, then each CPU's offset */
	ptrbuf = (__u64)&probe;
	m = ptrbuf;
	if (bpf_probe_read_kernel(&w.pptr, sizeof(w.pptr),
				  (void *)(m + bpf_core_field_offset(struct bpf_array, pptrs))) ||
	    !w.pptr)
		return NETSTAT_NO_OFFSETS;
	bpf_loop(NETSTAT_CPUS_MAX, cpu_one, &w, 0);
	if (w.bad)
		return NETSTAT_NO_OFFSETS;

	init_net = init_net_find();
	if (!init_net)
		return NETNS_WALK_NO_INIT;
	npsk = 0;
	w.pos = (struct list_head *)((void *)init_net + w.list_off);
	w.head = BPF_CORE_READ(init_net, list.prev);
	bpf_loop(NETNS_LIVE_MAX + 1, ns_one, &w, 0);
	return w.closed ? w.n : NETNS_WALK_TRUNCATED;
}
