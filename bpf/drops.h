/* SPDX-License-Identifier: MIT */
/*
 * Types shared by bpf/drops.bpf.c and the drops collector in user space.
 * Only fixed-width types, explicit padding: the same bytes are read on both
 * sides of the ring buffer and the maps.
 */
#ifndef SYSOBS_DROPS_H
#define SYSOBS_DROPS_H

/* The namespace walks are linked into the drops object (bpf/CMakeLists.txt):
 * its skeleton names their .bss types. */
#include "netstat.h"

/*
 * In-kernel aggregation key: one per (reason, L3, L4, netns[, cgroup]).
 * The namespace is keyed by its cookie (net->net_cookie: a 64-bit number
 * from a global counter, set when the namespace is made, never reused),
 * not by its inode number alone: the kernel hands a deleted namespace's
 * inode number to the next one it makes (proc_alloc_inum(), an IDA), so
 * keyed by inode a new namespace would count on in the old one's counters.
 * The inode number rides along for the label (what `ip netns`, lsns and
 * /proc/PID/ns/net show).
 */
struct drops_key {
	__u32 reason;	/* enum skb_drop_reason value, as the kernel numbers it */
	__u16 l3_proto; /* skb->protocol in host byte order (ETH_P_IP, ...) */
	__u8 l4_proto;	/* IPPROTO_* from the IP header, 0 when not parsed */
	__u8 pad;
	__u32 netns; /* network namespace inode number, 0 when unknown */
	__u32 pad2;
	__u64 cgroup;	    /* cgroup v2 id of the drop's socket; 0 when none, or
			       when key_cgroup is off */
	__u64 netns_cookie; /* net->net_cookie, 0 when the namespace is unknown */
};

/* Direct-mapped per-CPU fast table in front of the counts hash (map
 * "slots"). Power of two. */
#define DROPS_SLOTS 1024

struct drops_slot {
	struct drops_key key;
	__u32 sampled_j; /* low 32 bits of jiffies at this key's last sample */
	__u64 count;	 /* 0 = slot free */
};

/* Slot of a key: the same function on both sides of the map. */
static inline __u32 drops_slot_hash(const struct drops_key *k)
{
	__u32 h = k->reason * 0x9E3779B1u;

	h ^= (__u32)(k->netns_cookie ^ k->netns_cookie >> 32) * 0x85EBCA77u;
	h ^= ((__u32)k->l3_proto << 8 | k->l4_proto) * 0xC2B2AE3Du;
	h ^= (__u32)(k->cgroup ^ k->cgroup >> 32) * 0x27D4EB2Fu;
	return h ^ (h >> 16);
}

/* Fragment-queue timer functions the program recognises (bpf/drops.bpf.c,
 * fragctx). */
#define DROPS_FRAG_EXPIRE_FNS 4

/* Slots of the per-CPU statistics array (map "stats"). Only rare events
 * are counted there: per-drop totals come from the counts map. */
enum drops_stat {
	DROPS_STAT_NOT_DROPS,	 /* runs for NOT_DROPPED_YET / CONSUMED */
	DROPS_STAT_MAP_OVERFLOW, /* drop not aggregated: counters map full */
	DROPS_STAT_SAMPLES,	 /* records submitted to the ring buffer */
	DROPS_STAT_SAMPLES_LOST, /* ring buffer reservation failed */
	DROPS_STAT_FRAG_MEMBERS, /* frag_list members freed with their head: not drops */
	DROPS_STAT_MAX,
};

#define DROPS_RECORD_MAGIC   0x44524f50u /* "DROP" */
#define DROPS_RECORD_VERSION 5		 /* 2: cgroup_id; 3: netns_cookie; 4: capture; 5: stack */

/* record flags */
#define DROPS_F_L3_PARSED 0x01 /* IP header read: addresses valid */
#define DROPS_F_L4_PARSED 0x02 /* transport header read: ports / ICMP valid */
#define DROPS_F_FRAGMENT  0x04 /* non-first IPv4/IPv6 fragment: no L4 header */
#define DROPS_F_HAS_DEV	  0x08 /* ifname valid: skb->dev, or skb_iif's device */
/* A header ends past the packet's linear data (skb->tail) or past the IP
 * datagram (tot_len / payload_len): what lies beyond is not read. */
#define DROPS_F_TRUNCATED 0x10

#define DROPS_IFNAMSIZ 16

/* Packet bytes a sample can carry ([collector.drops] capture_bytes at most).
 * A power of two: the program masks the copy's length with it. */
#define DROPS_CAPTURE_MAX 256

/* Kernel stack frames a sample can carry ([collector.drops] stack_depth at
 * most). */
#define DROPS_STACK_MAX 24

/* One sampled drop, as the BPF program writes it into the ring buffer. */
struct drops_record {
	__u32 magic;	/* DROPS_RECORD_MAGIC */
	__u16 version;	/* DROPS_RECORD_VERSION */
	__u16 size;	/* sizeof(struct drops_record) */
	__u64 ts_ns;	/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 location; /* kernel text address that freed the skb */
	__u32 reason;
	__u32 netns;
	__s32 ifindex; /* skb->dev->ifindex, or skb->skb_iif; 0 unknown */
	__u32 len;     /* skb->len */
	__u32 cpu;
	__u16 l3_proto; /* host byte order */
	__u8 l4_proto;
	__u8 flags;	/* DROPS_F_* */
	__u8 saddr[16]; /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
	__u16 sport; /* host byte order */
	__u16 dport;
	__u8 icmp_type;
	__u8 icmp_code;
	__u8 tcp_flags;
	__u8 pad;
	char ifname[DROPS_IFNAMSIZ];
	__u64 cgroup_id;    /* cgroup v2 id of the drop's socket, 0 none */
	__u64 netns_cookie; /* the key's */
	/* bpf_get_stack() of the drop: stack_n return addresses, innermost
	 * first (the program's own frames and the tracepoint's on top). */
	__u32 stack_n;
	__u32 pad5;
	__u64 stack[DROPS_STACK_MAX];
	/* Capture (capture_bytes > 0): cap_len bytes of the packet from its
	 * MAC header (the network header when it has none), of which cap_l2len
	 * are the link-layer header; cap_orig is the packet's length from that
	 * same start. The record ends at cap[] (size says) when capture is off. */
	__u16 cap_len;
	__u8 cap_l2len;
	__u8 pkt_type; /* skb->pkt_type: PACKET_HOST, PACKET_BROADCAST, ... */
	__u16 hatype;  /* the device's type (ARPHRD_*), 0 without a device */
	__u16 pad3;
	__u32 cap_orig;
	__u32 pad4;
	__u8 cap[DROPS_CAPTURE_MAX];
};

#endif
