// SPDX-License-Identifier: GPL-2.0
/*
 * drops: counts every packet drop the kernel reports through the
 * skb:kfree_skb tracepoint by (reason, L3, L4, netns) in per-CPU maps (a
 * direct-mapped slot table backed by a bounded hash), and sends a
 * rate-limited sample of drops (with addresses and ports parsed from the
 * packet) through a ring buffer.
 *
 * Two entry points share one body; user space autoloads exactly one:
 *  - tp_btf/kfree_skb: BTF-typed arguments, direct (CO-RE) loads from the skb;
 *  - raw_tp/kfree_skb: the fallback where tp_btf cannot attach; every read is
 *    bpf_probe_read_kernel() (BPF_CORE_READ).
 * Both are several times cheaper per event than the classic tracepoint.
 *
 * Drop reason values are never hard-coded: SKB_NOT_DROPPED_YET and
 * SKB_CONSUMED are CO-RE enum relocations resolved against the running
 * kernel's BTF at load; user space names every other value from BTF.
 *
 * A BPF object is one compilation unit (its programs share the maps and
 * the static inline body) and is loaded once for its one BTF parse: the
 * shared types live in drops.h, the packet parsing in drops_parse.bpf.h,
 * included below.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "drops.h"
#include "init_net.h"
#include "netns.h"

#define ETH_P_IP       0x0800
#define ETH_P_IPV6     0x86DD
#define IP_OFFSET      0x1fff
#define IPPROTO_ICMPV6 58
#define NOHDR	       ((__u16)~0U) /* skb->*_header when unset (skb_*_header_was_set) */

char LICENSE[] SEC("license") = "GPL";

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* Knobs set by user space between open and load. */
/* kfree_skb has a 4th argument, rx_sk (v6.11, "net: add rx_sk to
 * trace_kfree_skb"); user space reads the arity from the tracepoint's BTF. */
const volatile bool has_rx_sk = false;
/* Token bucket per CPU: a sample costs sample_cost_ns of credit; credit
 * accrues at 1 ns per ns up to sample_burst_ns. cost 0 = no sampling. */
const volatile __u64 sample_cost_ns = 0;
const volatile __u64 sample_burst_ns = 0;
/* The kernel has the bpf_rdonly_cast() kfunc (user space looks in BTF). */
const volatile bool has_rdonly_cast = false;
/* false: every drop goes to the counts hash (the fast slots off). */
const volatile bool use_slots = true;
/* The socket's cgroup is part of the key (container_label). */
const volatile bool key_cgroup = false;
/*
 * Text of skb_release_data(), [frag_free_lo, frag_free_lo + frag_free_len),
 * from kallsyms; length 0 when unknown. kfreeing a head skb releases its
 * data with skb_release_data(), which frees every frag_list member (the
 * other fragments of a reassembled IP datagram, GRO frag_list segments)
 * with kfree_skb_list_reason(shinfo->frag_list, reason). That function is
 * __fix_address (noinline), so the tracepoint's location for each member
 * is its return address inside skb_release_data(), and the reason is the
 * one skb_release_all() got: NOT_SPECIFIED from __kfree_skb(), whether the
 * head was dropped (kfree_skb tracepoint, with the head's reason) or
 * consumed (consume_skb tracepoint). Other callers of
 * kfree_skb_list_reason() free lists of heads (GSO segments, qdisc to_free
 * lists); their location is their own caller. So a location inside
 * skb_release_data() is a member, never a drop of its own: the head's
 * event already says whether the packet was dropped, and why.
 */
const volatile __u64 frag_free_lo = 0;
const volatile __u64 frag_free_len = 0;
/* Capture for samples (sample_capture()): bytes at most, 0 = off;
 * capture_payload: past the headers too. */
const volatile __u32 capture_bytes = 0;
const volatile bool capture_payload = false;
/* Kernel stack frames kept with a sample (<= DROPS_STACK_MAX), 0 = none. */
const volatile __u32 stack_depth = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096); /* resized by user space (map_entries) */
	__type(key, struct drops_key);
	__type(value, __u64);
} counts SEC(".maps");

/*
 * Fast path in front of "counts": a per-CPU direct-mapped table of
 * DROPS_SLOTS {key, count} slots indexed by a hash of the key. Per-CPU array
 * lookups are inlined by the verifier (v6.10, "bpf: inline
 * bpf_map_lookup_elem() helper for PERCPU_ARRAY maps"), a hash map lookup
 * is a helper call plus jhash: the table saves ~30 ns per drop. A slot is
 * claimed by the first key that hashes to it on that CPU; a key finding its
 * slot taken goes to "counts". User space sums both.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROPS_SLOTS);
	__type(key, __u32);
	__type(value, struct drops_slot);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROPS_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct drops_bucket {
	__u64 last_ns;
	__s64 credit_ns;    /* below 0: the reserve is in use */
	__u64 skip;	    /* drops to pass without looking at the clock */
	__u64 skipped;	    /* drops passed since the last look */
	__u64 skip_jiffies; /* jiffy in which skip was set */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct drops_bucket);
} buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* resized by user space (ring_bytes) */
} samples SEC(".maps");

static __always_inline void stat_inc(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &slot);

	if (v)
		*v += 1;
}

#define DROPS_SKIP_MAX 256

/* The key period, in jiffies: 1 s at HZ=1000, 4 s at 250, 10 s at 100. Not
 * CONFIG_HZ through a __kconfig extern: libbpf then refuses to load the
 * object on a kernel without a readable config (Debian's 6.1 cloud kernel
 * under qemu has neither /proc/config.gz nor /boot/config-*). */
#define DROPS_KEY_PERIOD_J 1000

/*
 * Whether a drop may be sampled: returns its time (non-zero) or 0.
 *
 * Per-CPU token bucket, no atomics: the host-wide rate is split evenly over
 * the CPUs; a sample costs sample_cost_ns of credit, credit accrues at 1 ns
 * per ns up to sample_burst_ns.
 *
 * Fair to rare keys: a drop whose key (reason, protocols, netns) has not
 * been sampled on this CPU within a key period (DROPS_KEY_PERIOD_J; the
 * first drop of a key is always due) may also draw on a reserve of
 * sample_burst_ns below zero, which ordinary drops never touch. A flood of
 * one reason keeps its credit near zero and its key never due (it gets a
 * sample every 1/rate), so the first drop of a rare reason in the middle
 * of the flood is sampled, and again once per period. The reserve is paid
 * back from the same accrual: over any window samples stay within
 * rate x time + 2 x burst. Keys in the counts hash (no slot) have no
 * per-key state: only their first drop is due.
 *
 * Reading the clock is the dearest part of the check, so once the bucket
 * is empty the program estimates how many drops will arrive before the
 * next token (from the arrival rate since the last look) and skips the
 * clock for those, unless the drop's key is due: in a flood the check is
 * one inlined map lookup, a jiffies load and a decrement.
 */
static __always_inline __u64 sample_allowed(struct drops_slot *slot, bool new_key)
{
	__s64 cost = sample_cost_ns, burst = sample_burst_ns, credit;
	__u32 zero = 0;
	struct drops_bucket *b;
	__u64 now, elapsed, need, j;
	bool due;

	b = bpf_map_lookup_elem(&buckets, &zero);
	if (!b)
		return 0;
	j = bpf_jiffies64();
	due = new_key || (slot && (__u32)j - slot->sampled_j >= DROPS_KEY_PERIOD_J);
	/* A skip is only good within the jiffy it was set in: after a pause
	 * the next drops must see the clock again (bpf_jiffies64() is a load,
	 * far cheaper than bpf_ktime_get_ns()). */
	if (b->skip) {
		if (j == b->skip_jiffies && !due) {
			b->skip--;
			b->skipped++;
			return 0;
		}
		b->skip = 0;
	}
	now = bpf_ktime_get_ns();
	elapsed = now - b->last_ns;
	credit = b->credit_ns + (__s64)elapsed;
	if (b->last_ns == 0 || credit > burst)
		credit = burst;
	b->last_ns = now;
	if (credit < cost && !(due && credit + burst >= cost)) {
		/* Drops until the next token = time to it / inter-arrival time. */
		need = (__u64)(cost - credit) * (b->skipped + 1);
		need = elapsed ? need / elapsed : DROPS_SKIP_MAX;
		b->skip = need > DROPS_SKIP_MAX ? DROPS_SKIP_MAX : need;
		if (b->skip)
			b->skip_jiffies = j;
		b->skipped = 0;
		b->credit_ns = credit;
		return 0;
	}
	b->skipped = 0;
	b->credit_ns = credit - cost;
	if (slot)
		slot->sampled_j = (__u32)j;
	return now;
}

/*
 * Reads a field through a BTF pointer: a direct CO-RE load in tp_btf
 * programs, bpf_probe_read_kernel() in raw_tp ones. `direct` is a
 * compile-time constant after inlining, so only one form is emitted.
 */
#define RD(p, field) (direct ? ((p)->field) : BPF_CORE_READ(p, field))

#include "drops_parse.bpf.h"

/*
 * The namespace of the UDP socket udp_destruct_common() is destroying, by
 * the task it runs in (fentry/fexit below). It frees the datagrams the
 * socket never read with a plain kfree_skb(): no rx_sk, no skb->sk (UDP
 * does not charge them with skb_set_owner_r()), and skb->dev is not a
 * device but dev_scratch (udp_set_dev_scratch(): truesize, length and
 * flags packed into the pointer's place). The socket's namespace is the
 * datagrams'. Keyed by task, not CPU: in process context the function may
 * migrate between its entry and a free; in softirq context (the RCU
 * callback of a SOCK_RCU_FREE socket) the interrupted task does not change.
 * Used only for a drop whose location lies inside udp_destruct_common()
 * (sock_free_lo), so another drop in the same task never takes it.
 */
struct drops_sockns {
	__u32 inum;
	__u32 pad;
	__u64 cookie;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* task_struct address */
	__type(value, struct drops_sockns);
} sockctx SEC(".maps");

/* udp_destruct_common()'s text (from kallsyms); length 0 = fentry/fexit
 * not loaded. */
const volatile __u64 sock_free_lo = 0;
const volatile __u64 sock_free_len = 0;

/*
 * Fragment queues that time out (reason FRAG_REASM_TIMEOUT). The expiry
 * runs in the queue's timer (ip_expire(), ip6_frag_expire(), conntrack's
 * nf_ct_frag6_expire()): no socket, and only the head has a device, which
 * the expiry looks up again by qp->iif; the other fragments are freed by
 * inet_frag_destroy() -> inet_frag_rbtree_purge(), and in them skb->dev
 * is not a device at all: it shares its place with skb->rbnode (the
 * fragment tree), so it holds a pointer to another skb or NULL. The
 * namespace is the queue's, fq->fqdir->net, and the queue is the timer
 * that is running: the tracepoints timer:timer_expire_entry and
 * timer_expire_exit (call_timer_fn()) bracket the callback, and the timer
 * is embedded in struct inet_frag_queue. The pair below keeps, per CPU,
 * the namespace of the fragment queue whose timer runs there (timer
 * callbacks run in softirq and do not nest on a CPU), only for a timer
 * whose function is one of those expiries (addresses from kallsyms;
 * none known: the pair is not attached, and such drops count in netns 0,
 * never by the rbnode pointer). Cost: one compare per timer expiry.
 */
const volatile __u64 frag_expire_fn[DROPS_FRAG_EXPIRE_FNS] = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64); /* struct net * of the running fragment timer, 0 none */
} fragctx SEC(".maps");

static __always_inline bool is_frag_timeout(__u32 reason)
{
	return bpf_core_enum_value_exists(enum skb_drop_reason,
					  SKB_DROP_REASON_FRAG_REASM_TIMEOUT) &&
	       reason ==
		   bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_FRAG_REASM_TIMEOUT);
}

static __always_inline struct net *frag_timer_net(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&fragctx, &zero);

	return v ? (struct net *)*v : NULL;
}

/* timer_expire_entry(timer, baseclk): raw_tp, every read a probe read */
SEC("raw_tp/timer_expire_entry")
int BPF_PROG(drops_timer_entry, struct timer_list *timer)
{
	__u64 fn = (__u64)BPF_CORE_READ(timer, function), *v;
	struct inet_frag_queue *q;
	__u32 zero = 0;
	bool ours = false;

	for (int j = 0; j < DROPS_FRAG_EXPIRE_FNS; j++)
		ours |= fn && fn == frag_expire_fn[j];
	if (!ours)
		return 0;
	v = bpf_map_lookup_elem(&fragctx, &zero);
	if (!v)
		return 0;
	q = (void *)timer - bpf_core_field_offset(struct inet_frag_queue, timer);
	*v = (__u64)BPF_CORE_READ(q, fqdir, net);
	return 0;
}

SEC("raw_tp/timer_expire_exit")
int BPF_PROG(drops_timer_exit, struct timer_list *timer)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&fragctx, &zero);

	if (v && *v)
		*v = 0;
	return 0;
}

/*
 * Fragments pending when their namespace is deleted (issue 33). The
 * namespace's exit frees them, not a timer: cleanup_net() (the work
 * net_cleanup_work, in a kworker) -> pre_exit -> fqdir_pre_exit() ->
 * inet_frag_rbtree_purge(), reason FRAG_REASM_TIMEOUT, with no timer
 * running, no socket and the rbnode in skb->dev. cleanup_net() cleans a
 * batch: every namespace whose last reference went before it ran, still in
 * the kernel's list with a reference count of 0. At
 * workqueue:workqueue_execute_start of that work the list is walked; when
 * the batch is one namespace, its inode number and cookie are kept for the
 * kworker (per task, until workqueue_execute_end) and its purged fragments
 * take them; a batch of several leaves them in netns 0, never in a wrong
 * one. Only for the work function cleanup_net (address from kallsyms;
 * unknown: not attached). Cost: one probe read and a compare per work item
 * run, a walk of the namespace list per namespace cleanup.
 */
const volatile __u64 net_cleanup_fn = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64); /* task_struct address of the kworker */
	__type(value, struct drops_sockns);
} netexit SEC(".maps");

/* The namespace reference count: ns.__ns_ref from 6.18, ns.count before. */
struct ns_common___ref {
	refcount_t __ns_ref;
} __attribute__((preserve_access_index));

struct ns_common___count {
	refcount_t count;
} __attribute__((preserve_access_index));

struct exit_walk {
	struct list_head *head;
	struct list_head *pos;
	__u64 list_off, ns_off;
	__u32 dying;
	bool closed;
	struct drops_sockns ns;
};

static long exit_one(__u64 i, struct exit_walk *w)
{
	struct list_head *pos = w->pos;
	struct net *net;
	void *nsc;
	int refs;

	if (pos == w->head) {
		w->closed = true;
		return 1;
	}
	net = (struct net *)((void *)pos - w->list_off);
	nsc = (void *)net + w->ns_off;
	if (bpf_core_field_exists(struct ns_common___ref, __ns_ref))
		refs = BPF_CORE_READ((struct ns_common___ref *)nsc, __ns_ref.refs.counter);
	else
		refs = BPF_CORE_READ((struct ns_common___count *)nsc, count.refs.counter);
	if (!refs) {
		w->dying++;
		w->ns.inum = BPF_CORE_READ(net, ns.inum);
		w->ns.cookie = BPF_CORE_READ(net, net_cookie);
	}
	pos = BPF_CORE_READ(pos, next);
	w->pos = pos;
	return pos ? 0 : 1;
}

/* workqueue_execute_start(work): raw_tp, every read a probe read */
SEC("raw_tp/workqueue_execute_start")
int BPF_PROG(drops_work_start, struct work_struct *work)
{
	struct exit_walk w = {
	    .list_off = bpf_core_field_offset(struct net, list),
	    .ns_off = bpf_core_field_offset(struct net, ns),
	};
	struct net *init_net;
	__u64 task;

	if (!net_cleanup_fn || (__u64)BPF_CORE_READ(work, func) != net_cleanup_fn)
		return 0;
	init_net = init_net_find();
	if (!init_net)
		return 0;
	w.pos = (struct list_head *)((void *)init_net + w.list_off);
	w.head = BPF_CORE_READ(init_net, list.prev);
	bpf_loop(NETNS_LIVE_MAX + 1, exit_one, &w, 0);
	if (!w.closed || w.dying != 1)
		return 0;
	task = bpf_get_current_task();
	bpf_map_update_elem(&netexit, &task, &w.ns, BPF_ANY);
	return 0;
}

/* workqueue_execute_end(work, function): the work may be freed by now */
SEC("raw_tp/workqueue_execute_end")
int BPF_PROG(drops_work_end, struct work_struct *work, work_func_t function)
{
	__u64 task;

	if (!net_cleanup_fn || (__u64)function != net_cleanup_fn)
		return 0;
	task = bpf_get_current_task();
	bpf_map_delete_elem(&netexit, &task);
	return 0;
}

/* The namespace's identity in the key: its inode number (the label) and
 * its cookie (what tells a reused inode number apart; see struct
 * drops_key). net_cookie is set when the namespace is made ("net:
 * initialize net->net_cookie at netns setup", v5.12). */
static __always_inline void key_netns(struct drops_key *key, struct net *net, const bool direct)
{
	key->netns = RD(net, ns.inum);
	key->netns_cookie = RD(net, net_cookie);
}

/*
 * The namespace of a drop (into key->netns, key->netns_cookie), and the
 * device when skb->dev really is one. skb->dev shares its place with
 * dev_scratch (UDP receive queues), so it is believed to be a device only
 * when its nd_net reads: a scratch value is no kernel address (its high
 * bits are a bool and a length), and the load of a non-kernel address
 * yields 0 (PROBE_MEM loads, bpf_probe_read_kernel() failing). Without a
 * device: the namespace of skb->sk, of rx_sk (v6.11), or of the UDP socket
 * being destroyed on this CPU; none (0) when none is known. A fragment
 * queue that timed out: the queue's namespace (frag_timer_net()).
 */
static __always_inline void netns_of(struct sk_buff *skb, void *location, __u32 reason,
				     struct sock *rx_sk, struct drops_key *key,
				     struct net_device **devp, struct net **netp, struct sock **skp,
				     const bool direct)
{
	struct net_device *dev = RD(skb, dev);
	struct net *net = NULL;
	struct sock *sk;

	if (is_frag_timeout(reason)) {
		/* skb->dev is the head's device or an rbnode pointer */
		net = frag_timer_net(); /* a scalar: probe reads only */
		if (net) {
			if (dev && BPF_CORE_READ(dev, nd_net.net) == net)
				*devp = dev;
			*netp = net;
			key_netns(key, net, false);
			return;
		}
		if (net_cleanup_fn) {
			/* the namespace's exit purging its queues (netexit) */
			__u64 task = bpf_get_current_task();
			struct drops_sockns *ns = bpf_map_lookup_elem(&netexit, &task);

			if (ns) {
				key->netns = ns->inum;
				key->netns_cookie = ns->cookie;
				return;
			}
		}
		dev = NULL;
	}
	if (dev) {
		net = RD(dev, nd_net.net);
		if (net) {
			*devp = dev;
			key_netns(key, net, direct);
			return;
		}
	}
	sk = RD(skb, sk);
	if (!sk)
		sk = rx_sk;
	*skp = sk;
	if (sk)
		net = RD(sk, __sk_common.skc_net.net);
	if (net) {
		*netp = net;
		key_netns(key, net, direct);
		return;
	}
	if ((__u64)location - sock_free_lo < sock_free_len) {
		__u64 task = bpf_get_current_task();
		struct drops_sockns *ns = bpf_map_lookup_elem(&sockctx, &task);

		if (ns) {
			key->netns = ns->inum;
			key->netns_cookie = ns->cookie;
		}
	}
}

/*
 * Transport fields of a sample, each only when its bytes lie within both
 * the linear data and the IP datagram (never the bytes after a short
 * header, nor Ethernet padding before ip_rcv() trims it): TCP ports and
 * flags need 14 bytes, UDP, UDP-Lite and SCTP ports 4, ICMP type and code
 * 2. A transport header shorter than its fixed size (TCP 20, UDP 8, SCTP
 * 12, ICMP 8, ICMPv6 4) flags the sample truncated.
 */
static __always_inline void sample_l4(struct sk_buff *skb, struct drops_record *r,
				      const struct drops_parsed *p, __u32 *l4_end,
				      const bool direct)
{
	__u32 thoff = transport_offset(skb, p, direct), end = p->tail, ip_end, avail;
	__u16 need = 0, full = 0;
	__be16 iplen = 0;
	__u8 l4[14];

	/* IPv4 tot_len, IPv6 payload_len (0: a jumbogram, bounded by tail) */
	if (bpf_probe_read_kernel(&iplen, 2, p->head + p->nh + (p->l3 == ETH_P_IP ? 2 : 4)))
		return;
	ip_end = p->nh + bpf_ntohs(iplen) + (p->l3 == ETH_P_IP ? 0 : sizeof(struct drops_ip6));
	if (iplen && ip_end < end)
		end = ip_end;
	avail = end > thoff ? end - thoff : 0;
	switch (p->l4) {
	case IPPROTO_TCP:
		need = 14, full = 20;
		break;
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
		need = 4, full = 8;
		break;
	case IPPROTO_SCTP:
		need = 4, full = 12;
		break;
	case IPPROTO_ICMP:
		need = 2, full = 8;
		break;
	case IPPROTO_ICMPV6:
		need = 2, full = 4;
		break;
	default:
		return;
	}
	if (avail < full)
		r->flags |= DROPS_F_TRUNCATED;
	/* the capture's headers-only bound (TCP's options below) */
	*l4_end = thoff + (p->l4 == IPPROTO_ICMPV6 ? 8 : full);
	if (avail < need || bpf_probe_read_kernel(l4, sizeof(l4), p->head + thoff))
		return;
	if (p->l4 == IPPROTO_ICMP || p->l4 == IPPROTO_ICMPV6) {
		r->icmp_type = l4[0];
		r->icmp_code = l4[1];
	} else {
		if (p->l4 == IPPROTO_TCP) {
			r->tcp_flags = l4[13];
			if ((l4[12] >> 4) > 5)
				*l4_end = thoff + (l4[12] >> 4) * 4;
		}
		r->sport = ((__u16)l4[0] << 8) | l4[1];
		r->dport = ((__u16)l4[2] << 8) | l4[3];
	}
	r->flags |= DROPS_F_L4_PARSED;
}

#define NETDEV_HASHBITS 8 /* include/linux/netdevice.h: net->dev_index_head buckets */
#define DROPS_DEV_CHAIN 8 /* devices of one bucket looked at, at most */

/*
 * The device of ifindex in net, as dev_get_by_index_rcu() finds it: the
 * chain net->dev_index_head[ifindex & 255] of net_device.index_hlist
 * nodes. Tracepoints run under RCU, as that function does; every read is
 * bpf_probe_read_kernel() (these are not pointers the verifier trusts).
 * For samples only: a drop without a device but with skb_iif and a socket
 * (QUEUE_PURGE, SOCKET_CLOSE, ...) gets its device's name.
 */
struct dev_find_ctx {
	struct hlist_node *n;
	__u32 off; /* of index_hlist in struct net_device */
	int ifindex;
	struct net_device *found;
};

static long dev_find_one(__u32 i, void *data)
{
	struct dev_find_ctx *c = data;
	struct hlist_node *n = c->n;
	struct net_device *d;

	if (!n)
		return 1;
	d = (void *)n - c->off;
	if (BPF_CORE_READ(d, ifindex) == c->ifindex) {
		c->found = d;
		return 1;
	}
	c->n = BPF_CORE_READ(n, next);
	return 0;
}

static __always_inline struct net_device *dev_by_index(struct net *net, int ifindex)
{
	struct dev_find_ctx c = {.off = bpf_core_field_offset(struct net_device, index_hlist),
				 .ifindex = ifindex};
	struct hlist_head *heads = BPF_CORE_READ(net, dev_index_head);

	if (!heads || bpf_probe_read_kernel(&c.n, sizeof(c.n),
					    &heads[ifindex & ((1 << NETDEV_HASHBITS) - 1)]))
		return NULL;
	bpf_loop(DROPS_DEV_CHAIN, dev_find_one, &c, 0);
	return c.found;
}

/* The cgroup (v2) the socket was created in (sock_cgroup_data, set at
 * socket creation, CONFIG_SOCK_CGROUP_DATA); its id is the kernfs node id,
 * the inode number of its directory in cgroupfs, never reused. 0: none.
 * Only a full socket has one (the kernel's sk_fullsock()): skb->sk may be a
 * TIME_WAIT or NEW_SYN_RECV mini socket (early demux, a SYN-ACK), which
 * ends after struct sock_common, and reading sk_cgrp_data there read
 * whatever follows it (a kernel address came out as a cgroup id). */
#define SK_TCP_TIME_WAIT    6
#define SK_TCP_NEW_SYN_RECV 12
static __always_inline __u64 sock_cgroup_id(struct sock *sk)
{
	struct cgroup *cg;
	__u8 state;

	/* a kernel without cgroups has an empty sock_cgroup_data */
	if (!bpf_core_field_exists(sk->sk_cgrp_data.cgroup) || !sk)
		return 0;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state == SK_TCP_TIME_WAIT || state == SK_TCP_NEW_SYN_RECV)
		return 0;
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	return cg ? BPF_CORE_READ(cg, kn, id) : 0;
}

#define ETH_P_ARP    0x0806
#define ARP_HDR_LEN  28 /* Ethernet/IPv4 ARP */
#define DROPS_L2_MAX 64 /* a MAC header longer than this is not believed */

/*
 * The packet's first bytes, for a sample: from the MAC header when the skb
 * has one (mac_header set, before the network header, at most
 * DROPS_L2_MAX bytes before it), else from the network header; up to
 * capture_bytes and never past the linear data (skb->tail: bytes in page
 * fragments are not copied). Without capture_payload the copy also ends
 * with the headers, so no application byte of TCP or UDP is ever read:
 * after the transport header (TCP with its options, UDP 8, ICMP 8) when
 * it was parsed, else after the IP header (non-first fragments, other
 * protocols), the ARP header for ARP, and the MAC header alone for any
 * other ethertype. cap_orig is the packet's whole length from the same
 * start: skb->len counts from skb->data, which may lie before or after it.
 */
static __always_inline void sample_capture(struct sk_buff *skb, struct drops_record *r,
					   const struct drops_parsed *p, __u32 l4_end,
					   struct net_device *dev, const bool direct)
{
	__u16 mac = RD(skb, mac_header), nh = RD(skb, network_header);
	unsigned char *head = RD(skb, head), *data = RD(skb, data);
	__u32 start, end = RD(skb, tail), n;
	__s64 orig;

	if (nh == NOHDR || nh == 0)
		return;
	start = nh;
	if (mac != NOHDR && mac < nh && nh - mac <= DROPS_L2_MAX)
		start = mac;
	if (!capture_payload) {
		__u32 hdr_end = nh;

		if (l4_end)
			hdr_end = l4_end;
		else if (p->flags & DROPS_F_L3_PARSED)
			hdr_end = p->thoff ?: (__u32)nh + p->l3len;
		else if (p->l3 == ETH_P_ARP)
			hdr_end = (__u32)nh + ARP_HDR_LEN;
		if (hdr_end < end)
			end = hdr_end;
	}
	if (end <= start)
		return;
	n = end - start;
	if (n > capture_bytes)
		n = capture_bytes;
	/* for the verifier: a length it can bound whatever the compiler made
	 * of the compares above */
	barrier_var(n);
	n &= DROPS_CAPTURE_MAX * 2 - 1;
	if (n > DROPS_CAPTURE_MAX)
		n = DROPS_CAPTURE_MAX;
	if (bpf_probe_read_kernel(r->cap, n, head + start))
		return;
	orig = (__s64)RD(skb, len) + (data - head) - start;
	r->cap_len = n;
	r->cap_l2len = nh - start;
	r->cap_orig = orig > n ? orig : n;
	r->pkt_type = BPF_CORE_READ_BITFIELD_PROBED(skb, pkt_type);
	r->hatype = dev ? BPF_CORE_READ(dev, type) : 0;
}

static __always_inline void emit_sample(void *ctx, struct sk_buff *skb, void *location,
					__u32 reason, struct drops_key *key, struct drops_parsed *p,
					struct net_device *dev, struct net *net, struct sock *sk,
					__u64 now, const bool direct)
{
	/* Two fixed sizes, chosen at load: capture_bytes is a frozen rodata
	 * constant, so the verifier sees one constant size on the path it
	 * keeps. (The dynptr API, bpf_ringbuf_reserve_dynptr(), v5.19, would
	 * fit each record to its packet; not done yet.) */
	const __u32 size = capture_bytes ? sizeof(struct drops_record)
					 : __builtin_offsetof(struct drops_record, cap);
	struct drops_record *r;
	__u32 l4_end = 0;

	r = bpf_ringbuf_reserve(&samples, size, 0);
	if (!r) {
		stat_inc(DROPS_STAT_SAMPLES_LOST);
		return;
	}
	/* cap[] is written as far as cap_len says, and read no further */
	__builtin_memset(r, 0, __builtin_offsetof(struct drops_record, cap));
	r->magic = DROPS_RECORD_MAGIC;
	r->version = DROPS_RECORD_VERSION;
	r->size = size;
	r->ts_ns = now;
	r->location = (__u64)location;
	r->reason = reason;
	r->netns = key->netns;
	r->netns_cookie = key->netns_cookie;
	r->len = RD(skb, len);
	r->cpu = bpf_get_smp_processor_id();
	r->l3_proto = key->l3_proto;
	r->l4_proto = key->l4_proto;
	r->flags = p->flags;

	if (dev) {
		r->flags |= DROPS_F_HAS_DEV;
		r->ifindex = RD(dev, ifindex);
		bpf_probe_read_kernel_str(r->ifname, sizeof(r->ifname), &dev->name);
	} else {
		r->ifindex = RD(skb, skb_iif);
		if (r->ifindex > 0 && net && (dev = dev_by_index(net, r->ifindex))) {
			r->flags |= DROPS_F_HAS_DEV;
			bpf_probe_read_kernel_str(r->ifname, sizeof(r->ifname), &dev->name);
		}
	}

	if (p->flags & DROPS_F_L3_PARSED) {
		if (p->l3 == ETH_P_IP) {
			bpf_probe_read_kernel(r->saddr, 4, p->head + p->nh + 12);
			bpf_probe_read_kernel(r->daddr, 4, p->head + p->nh + 16);
		} else {
			bpf_probe_read_kernel(r->saddr, 16, p->head + p->nh + 8);
			bpf_probe_read_kernel(r->daddr, 16, p->head + p->nh + 24);
		}
	}
	if ((p->flags & DROPS_F_L3_PARSED) && !(p->flags & DROPS_F_FRAGMENT))
		sample_l4(skb, r, p, &l4_end, direct);
	r->cgroup_id = key->cgroup ?: sock_cgroup_id(sk);
	if (stack_depth) {
		/* a constant size (frozen rodata): the walk stops at the depth */
		long n = bpf_get_stack(
		    ctx, r->stack,
		    (stack_depth < DROPS_STACK_MAX ? stack_depth : DROPS_STACK_MAX) * sizeof(__u64),
		    0);

		r->stack_n = n > 0 ? n / sizeof(__u64) : 0;
	}
	if (capture_bytes)
		sample_capture(skb, r, p, l4_end, dev, direct);
	bpf_ringbuf_submit(r, 0);
	stat_inc(DROPS_STAT_SAMPLES);
}

/* Counts the drop in its fast slot: the slot, or NULL when another key
 * owns it. *new_key: the key just claimed the slot. */
static __always_inline struct drops_slot *count_in_slot(const struct drops_key *key, bool *new_key)
{
	__u32 idx = drops_slot_hash(key) & (DROPS_SLOTS - 1);
	struct drops_slot *s = bpf_map_lookup_elem(&slots, &idx);

	if (!s)
		return NULL;
	/* Per-CPU and never re-entered on one CPU (tracing programs do not
	 * nest), so claim-then-count needs no atomics. */
	if (!s->count) {
		s->key = *key;
		s->count = 1;
		*new_key = true;
		return s;
	}
	/* the cookie stands for the namespace: equal cookies, equal inodes */
	if (s->key.reason != key->reason || s->key.netns_cookie != key->netns_cookie ||
	    s->key.l3_proto != key->l3_proto || s->key.l4_proto != key->l4_proto ||
	    (key_cgroup && s->key.cgroup != key->cgroup))
		return NULL;
	s->count++;
	return s;
}

/* Counts the drop in the hash; true when it inserted the key. */
static __always_inline bool count_in_hash(const struct drops_key *key)
{
	__u64 one = 1, *cnt;
	long err;

	cnt = bpf_map_lookup_elem(&counts, key);
	if (cnt) {
		*cnt += 1;
		return false;
	}
	/* Per-CPU hash: another CPU may insert the same key first. */
	err = bpf_map_update_elem(&counts, key, &one, BPF_NOEXIST);
	if (err == -17 /* EEXIST */) {
		cnt = bpf_map_lookup_elem(&counts, key);
		if (cnt)
			*cnt += 1;
		return false;
	}
	if (err)
		stat_inc(DROPS_STAT_MAP_OVERFLOW);
	return !err;
}

static __always_inline int handle_drop(void *ctx, struct sk_buff *skb, void *location, __u32 reason,
				       struct sock *rx_sk, const bool direct)
{
	struct drops_key key = {};
	struct drops_parsed p = {};
	struct net_device *dev = NULL;
	struct net *net = NULL;
	struct sock *sk = NULL;
	struct drops_slot *slot = NULL;
	bool new_key = false;
	__u64 now;

	/* A frag_list member freed with its head (see frag_free_lo): folded
	 * into the head's event. Constant-false when frag_free_len is 0. */
	if ((__u64)location - frag_free_lo < frag_free_len) {
		stat_inc(DROPS_STAT_FRAG_MEMBERS);
		return 0;
	}
	/*
	 * Not drops. SKB_NOT_DROPPED_YET = 0 ("net: skb: use
	 * SKB_NOT_DROPPED_YET as the first value", v5.19) and SKB_CONSUMED
	 * ("net: dropreason: add SKB_CONSUMED reason", v6.2); kernels without
	 * them never report them, hence the existence checks.
	 */
	if ((bpf_core_enum_value_exists(enum skb_drop_reason, SKB_NOT_DROPPED_YET) &&
	     reason == bpf_core_enum_value(enum skb_drop_reason, SKB_NOT_DROPPED_YET)) ||
	    (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_CONSUMED) &&
	     reason == bpf_core_enum_value(enum skb_drop_reason, SKB_CONSUMED))) {
		stat_inc(DROPS_STAT_NOT_DROPS);
		return 0;
	}
	/* No per-event statistics here: user space derives events (sum of
	 * counts + overflow) and unsampled drops (events - samples - lost),
	 * which keeps one map update off the hot path. */
	parse_headers(skb, &p, direct);
	key.reason = reason;
	key.l3_proto = p.l3;
	key.l4_proto = p.l4;
	netns_of(skb, location, reason, rx_sk, &key, &dev, &net, &sk, direct);
	if (key_cgroup) {
		if (!sk) /* a drop with a device: netns_of() did not look */
			sk = RD(skb, sk) ?: rx_sk;
		key.cgroup = sock_cgroup_id(sk);
	}

	if (use_slots)
		slot = count_in_slot(&key, &new_key);
	if (!slot)
		new_key = count_in_hash(&key);

	if (!sample_cost_ns)
		return 0;
	/* bpf_ktime_get_coarse_ns() would be cheaper, but tracing programs
	 * may not call it (they can run inside timekeeping). */
	now = sample_allowed(slot, new_key);
	if (!now)
		return 0;
	if (!sk) /* a drop with a device: netns_of() did not look */
		sk = RD(skb, sk) ?: rx_sk;
	emit_sample(ctx, skb, location, reason, &key, &p, dev, net, sk, now, direct);
	return 0;
}

/* See sockctx. Loaded with the tp_btf program when the kernel's BTF has
 * udp_destruct_common(); runs once per UDP socket destroyed, never per
 * packet. Defined before the kfree_skb programs: libbpf loads programs in
 * this order, so a kernel that refuses fentry says so before the big
 * program is verified (the agent then loads again without them). */
SEC("fentry/udp_destruct_common")
int BPF_PROG(drops_udp_destruct_enter, struct sock *sk)
{
	__u64 task = bpf_get_current_task();
	struct net *net = sk->__sk_common.skc_net.net;
	struct drops_sockns ns = {.inum = net->ns.inum, .cookie = net->net_cookie};

	/* a full map: those datagrams stay in netns 0 */
	bpf_map_update_elem(&sockctx, &task, &ns, BPF_ANY);
	return 0;
}

/* A nested destroy in the same task (a softirq over a process-context one)
 * deletes the entry early: the rest of the outer socket's datagrams count
 * in netns 0, never in a wrong one. */
SEC("fexit/udp_destruct_common")
int BPF_PROG(drops_udp_destruct_exit, struct sock *sk)
{
	__u64 task = bpf_get_current_task();

	bpf_map_delete_elem(&sockctx, &task);
	return 0;
}

/*
 * trace_kfree_skb(skb, location, reason[, rx_sk]): the reason argument
 * arrived in v5.17 ("net: skb: introduce kfree_skb_reason()"), rx_sk in
 * v6.11. User space refuses kernels without reason before loading, and sets
 * has_rx_sk; a 3-argument tracepoint must not see ctx[3] read (the verifier
 * prunes that branch because has_rx_sk is a frozen rodata constant).
 */
SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_tp_btf, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *rx_sk = has_rx_sk ? (struct sock *)ctx[3] : NULL;

	return handle_drop(ctx, skb, location, reason, rx_sk, true);
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(drops_raw_tp, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *rx_sk = has_rx_sk ? (struct sock *)ctx[3] : NULL;

	return handle_drop(ctx, skb, location, reason, rx_sk, false);
}

/*
 * Benchmark reference only (bench/bench_drops_stats --baseline), never
 * loaded by the agent: the cheapest useful program on this tracepoint, one
 * per-CPU array counter. Its cost is the floor that BPF run statistics and
 * the tp_btf entry add to any program here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} baseline_count SEC(".maps");

SEC("tp_btf/kfree_skb")
int BPF_PROG(drops_baseline, struct sk_buff *skb)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&baseline_count, &zero);

	if (v)
		*v += 1;
	return 0;
}
