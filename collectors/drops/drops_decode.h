/* SPDX-License-Identifier: MIT */
/*
 * Pure decoder of the records bpf/drops.bpf.c writes into its ring buffer,
 * and the protocol names used as metric labels. No I/O: unit-tested and
 * fuzzed (tests/fuzz/fuzz_drops_record.c).
 */
#ifndef SYSOBS_DROPS_DECODE_H
#define SYSOBS_DROPS_DECODE_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct drop_sample {
	uint64_t ts_mono_ns; /* CLOCK_MONOTONIC of the drop */
	uint64_t location;   /* kernel text address */
	uint32_t reason;
	uint32_t netns;
	int32_t ifindex;
	uint32_t len;
	uint32_t cpu;
	uint16_t l3_proto;
	uint8_t l4_proto;
	bool has_addrs; /* saddr/daddr valid */
	bool has_ports; /* sport/dport valid (TCP, UDP, UDP-Lite, SCTP) */
	bool has_icmp;	/* icmp_type/code valid */
	bool fragment;
	bool truncated; /* a header ended early: its fields are left out */
	uint16_t sport, dport;
	uint8_t icmp_type, icmp_code;
	uint8_t tcp_flags;
	char saddr[INET6_ADDRSTRLEN];
	char daddr[INET6_ADDRSTRLEN];
	char ifname[16];       /* "" when the skb had no device */
	uint64_t cgroup_id;    /* cgroup v2 id of the drop's socket, 0 none */
	uint64_t netns_cookie; /* net->net_cookie of netns, 0 none */
	/* The kernel stack, innermost first (stack_n 0: none) */
	uint32_t stack_n;
	uint64_t stack[24];
	/* The capture (cap_len 0: none): cap_len bytes from the MAC header
	 * (cap_l2len bytes of it) or the network header, of a packet of
	 * cap_orig bytes from there. */
	uint16_t cap_len;
	uint8_t cap_l2len;
	uint8_t pkt_type; /* PACKET_HOST, ... */
	uint16_t hatype;  /* ARPHRD_*, 0 without a device */
	uint32_t cap_orig;
	uint8_t cap[256];
};

/* Decodes one ring-buffer record. 0, or -EINVAL for a short/foreign/corrupt
 * record (size, magic, version or an impossible field). */
int drops_record_decode(const void *buf, size_t len, struct drop_sample *out);

/* Metric label for (L3 ethertype, L4 IP protocol): "tcp", "udp", "icmp",
 * "icmpv6", "sctp", ... "ip" for other IP protocols, "arp", "none" when the
 * skb carried no protocol, "other". Static strings, bounded set. */
const char *drops_protocol_name(uint16_t l3_proto, uint8_t l4_proto);
/* "ipv4", "ipv6", "arp", "none" or "0x<ethertype>" into buf. */
const char *drops_l3_name(uint16_t l3_proto, char *buf, size_t len);

#endif
