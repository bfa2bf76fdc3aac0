// SPDX-License-Identifier: MIT
/* Ring-buffer record decoder of the drops collector (see drops_decode.h). */
#include <errno.h>
#include <linux/types.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bpf/drops.h"
#include "collectors/drops/drops_decode.h"

#define ETH_P_IP   0x0800
#define ETH_P_ARP  0x0806
#define ETH_P_IPV6 0x86DD

/* The header of a record as the BPF program writes it: its magic and
 * version, one of two sizes (without cap[] when capture is off) that len
 * holds, and counts and protocols within their bounds. */
static bool drops_record_valid(const struct drops_record *r, size_t head, size_t len)
{
	if (r->magic != DROPS_RECORD_MAGIC || r->version != DROPS_RECORD_VERSION ||
	    (r->size != sizeof(*r) && r->size != head) || len < r->size)
		return false;
	if (r->stack_n > DROPS_STACK_MAX)
		return false;
	if (r->size == head ? r->cap_len != 0
			    : (r->cap_len > DROPS_CAPTURE_MAX || r->cap_orig < r->cap_len))
		return false;
	if ((r->flags & DROPS_F_L3_PARSED) && r->l3_proto != ETH_P_IP && r->l3_proto != ETH_P_IPV6)
		return false;
	return true;
}

/* The fields every record has, its stack, and the captured bytes (cap,
 * which follow the header in buf) when there are some. */
static void drops_sample_fill(const struct drops_record *r, const unsigned char *cap,
			      struct drop_sample *out)
{
	memset(out, 0, sizeof(*out));
	out->ts_mono_ns = r->ts_ns;
	out->location = r->location;
	out->reason = r->reason;
	out->netns = r->netns;
	out->ifindex = r->ifindex;
	out->len = r->len;
	out->cpu = r->cpu;
	out->l3_proto = r->l3_proto;
	out->l4_proto = r->l4_proto;
	out->fragment = r->flags & DROPS_F_FRAGMENT;
	out->truncated = r->flags & DROPS_F_TRUNCATED;
	out->cgroup_id = r->cgroup_id;
	out->netns_cookie = r->netns_cookie;
	out->stack_n = r->stack_n;
	memcpy(out->stack, r->stack, r->stack_n * sizeof(r->stack[0]));
	if (r->cap_len) {
		out->cap_len = r->cap_len;
		out->cap_l2len = r->cap_l2len;
		out->pkt_type = r->pkt_type;
		out->hatype = r->hatype;
		out->cap_orig = r->cap_orig;
		memcpy(out->cap, cap, r->cap_len);
	}
}

/* The ports, TCP flags or ICMP type and code the BPF program parsed;
 * -EINVAL for a transport it does not parse. */
static int drops_sample_l4(const struct drops_record *r, struct drop_sample *out)
{
	switch (r->l4_proto) {
	case IPPROTO_TCP:
		out->tcp_flags = r->tcp_flags;
		/* fallthrough */
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
		out->has_ports = true;
		out->sport = r->sport;
		out->dport = r->dport;
		return 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		out->has_icmp = true;
		out->icmp_type = r->icmp_type;
		out->icmp_code = r->icmp_code;
		return 0;
	default:
		return -EINVAL;
	}
}

int drops_record_decode(const void *buf, size_t len, struct drop_sample *out)
{
	const size_t head = offsetof(struct drops_record, cap);
	struct drops_record r;
	int af;

	_Static_assert(sizeof(out->cap) == DROPS_CAPTURE_MAX, "capture sizes differ");
	_Static_assert(sizeof(out->stack) == sizeof(r.stack), "stack sizes differ");
	if (!buf || len < head)
		return -EINVAL;
	memcpy(&r, buf, head); /* ring-buffer data is 8-aligned; copy anyway */
	if (!drops_record_valid(&r, head, len))
		return -EINVAL;
	drops_sample_fill(&r, (const unsigned char *)buf + head, out);
	if (r.flags & DROPS_F_L3_PARSED) {
		af = r.l3_proto == ETH_P_IP ? AF_INET : AF_INET6;
		if (!inet_ntop(af, r.saddr, out->saddr, sizeof(out->saddr)) ||
		    !inet_ntop(af, r.daddr, out->daddr, sizeof(out->daddr)))
			return -EINVAL;
		out->has_addrs = true;
	}
	if ((r.flags & DROPS_F_L4_PARSED) && drops_sample_l4(&r, out))
		return -EINVAL;
	if (r.flags & DROPS_F_HAS_DEV) {
		/* The kernel string may fill all 16 bytes only if unterminated:
		 * bpf_probe_read_kernel_str() always terminates, so reject it. */
		if (!memchr(r.ifname, '\0', sizeof(r.ifname)))
			return -EINVAL;
		memcpy(out->ifname, r.ifname, sizeof(r.ifname));
	}
	return 0;
}

const char *drops_protocol_name(uint16_t l3_proto, uint8_t l4_proto)
{
	switch (l3_proto) {
	case ETH_P_IP:
	case ETH_P_IPV6:
		break;
	case ETH_P_ARP:
		return "arp";
	case 0:
		return "none";
	default:
		return "other";
	}
	switch (l4_proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_UDPLITE:
		return "udplite";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	case IPPROTO_IGMP:
		return "igmp";
	case IPPROTO_GRE:
		return "gre";
	case IPPROTO_ESP:
		return "esp";
	case IPPROTO_AH:
		return "ah";
	default:
		return "ip";
	}
}

const char *drops_l3_name(uint16_t l3_proto, char *buf, size_t len)
{
	switch (l3_proto) {
	case ETH_P_IP:
		snprintf(buf, len, "ipv4");
		break;
	case ETH_P_IPV6:
		snprintf(buf, len, "ipv6");
		break;
	case ETH_P_ARP:
		snprintf(buf, len, "arp");
		break;
	case 0:
		snprintf(buf, len, "none");
		break;
	default:
		snprintf(buf, len, "0x%04x", l3_proto);
		break;
	}
	return buf;
}
