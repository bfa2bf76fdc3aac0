/* SPDX-License-Identifier: GPL-2.0 */
/*
 * drops.bpf.c's packet parsing, for samples: the L3 and L4 headers of a
 * dropped skb (IPv4, IPv6 with its extension headers walked), read from
 * the packet itself. Included by drops.bpf.c alone (one compilation unit,
 * one object): it uses that file's RD() read macro, NOHDR and the
 * has_rdonly_cast knob, defined before the include.
 */
#ifndef SYSOBS_DROPS_PARSE_BPF_H
#define SYSOBS_DROPS_PARSE_BPF_H

struct drops_ip4 {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

struct drops_ip6 {
	__be32 ver_tc_flow;
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
};

/* Header fields the hot path needs; the sample path reads the rest. */
struct drops_parsed {
	__u16 l3;
	__u8 l4;
	__u8 flags;
	__u16 nh;    /* offset of the network header from skb->head */
	__u16 l3len; /* IP header length (IPv6: the fixed header only) */
	__u32 tail;  /* end of the linear data, offset from skb->head */
	__u32 thoff; /* transport header found by the IPv6 extension walk, 0 none */
	unsigned char *head;
};

/* The first bytes of an IPv4 or IPv6 header the hot path looks at. */
struct drops_l3min {
	__u8 b0;	 /* version nibble (and IPv4 header length) */
	__u8 proto;	 /* IPv4 protocol, IPv6 next header */
	__be16 frag_off; /* IPv4 only */
};

/*
 * Reads the few header bytes the counters need. In tp_btf programs on
 * kernels with the bpf_rdonly_cast() kfunc (v6.2, "bpf: Add a kfunc for
 * generic type cast"; the verifier inlines it) the packet bytes are read with
 * plain loads the verifier turns into fault-safe PROBE_MEM loads, which is
 * cheaper than a bpf_probe_read_kernel() call; otherwise with the helper.
 */
static __always_inline int read_l3min(const unsigned char *at, bool v6, struct drops_l3min *h,
				      const bool direct)
{
	if (direct && has_rdonly_cast) {
		if (v6) {
			struct ipv6hdr *ip6 =
			    bpf_rdonly_cast(at, bpf_core_type_id_kernel(struct ipv6hdr));

			h->b0 = *(__u8 *)ip6;
			h->proto = ip6->nexthdr;
		} else {
			struct iphdr *ip =
			    bpf_rdonly_cast(at, bpf_core_type_id_kernel(struct iphdr));

			h->b0 = *(__u8 *)ip;
			h->proto = ip->protocol;
			h->frag_off = ip->frag_off;
		}
		return 0;
	}
	if (v6) {
		struct drops_ip6 ip6;

		if (bpf_probe_read_kernel(&ip6, 8, at))
			return -1;
		h->b0 = *(__u8 *)&ip6;
		h->proto = ip6.nexthdr;
	} else {
		struct drops_ip4 ip;

		if (bpf_probe_read_kernel(&ip, 10, at))
			return -1;
		h->b0 = ip.ver_ihl;
		h->proto = ip.protocol;
		h->frag_off = ip.frag_off;
	}
	return 0;
}

#define NEXTHDR_HOP	 0
#define NEXTHDR_ROUTING	 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_AUTH	 51
#define NEXTHDR_DEST	 60
#define IP6_OFFSET	 0xfff8
#define DROPS_EXT_MAX	 8 /* extension headers walked at most */

static __always_inline bool ipv6_ext_hdr(__u8 nexthdr)
{
	return nexthdr == NEXTHDR_HOP || nexthdr == NEXTHDR_ROUTING ||
	       nexthdr == NEXTHDR_FRAGMENT || nexthdr == NEXTHDR_AUTH || nexthdr == NEXTHDR_DEST;
}

/*
 * Walks IPv6 extension headers (hop-by-hop, routing, fragment,
 * destination options, AH; at most DROPS_EXT_MAX, each within the linear
 * data) to the upper-layer protocol, as ipv6_skip_exthdr() does: lengths in
 * 8-octet units past the first 8, AH's in 4-octet units past the first 8
 * (RFC 4302), the fragment header 8 bytes. A fragment with a non-zero
 * offset carries no transport header: flagged DROPS_F_FRAGMENT, the walk
 * stops with l4 the fragment header's next header. ESP, no next header or
 * an unknown one end the walk. Only packets with extension headers pay.
 */
struct ipv6_walk_ctx {
	struct drops_parsed *p;
	__u32 off;
	__u8 nexthdr;
	bool stopped; /* by a non-first fragment or a header past the data */
};

/* One extension header; 1 ends the walk. A bpf_loop() callback: the
 * verifier checks it once, not once per header and path (an unrolled loop
 * of 8 made loading the program take seconds). */
static long ipv6_walk_one(__u32 i, void *data)
{
	struct ipv6_walk_ctx *c = data;
	struct drops_parsed *p = c->p;
	__u8 ext[4];

	if (!ipv6_ext_hdr(c->nexthdr))
		return 1;
	if (c->off + 8 > p->tail || bpf_probe_read_kernel(ext, sizeof(ext), p->head + c->off)) {
		p->flags |= DROPS_F_TRUNCATED;
		c->stopped = true;
		return 1;
	}
	if (c->nexthdr == NEXTHDR_FRAGMENT) {
		if (((__u16)ext[2] << 8 | ext[3]) & IP6_OFFSET) {
			p->flags |= DROPS_F_FRAGMENT;
			p->l4 = ext[0];
			c->stopped = true;
			return 1;
		}
		c->off += 8;
	} else if (c->nexthdr == NEXTHDR_AUTH) {
		c->off += ((__u32)ext[1] + 2) * 4;
	} else {
		c->off += ((__u32)ext[1] + 1) * 8;
	}
	c->nexthdr = ext[0];
	return 0;
}

static __always_inline void ipv6_walk(struct drops_parsed *p)
{
	struct ipv6_walk_ctx c = {
	    .p = p, .off = (__u32)p->nh + sizeof(struct drops_ip6), .nexthdr = p->l4};

	bpf_loop(DROPS_EXT_MAX, ipv6_walk_one, &c, 0);
	if (c.stopped)
		return;
	if (ipv6_ext_hdr(c.nexthdr)) { /* more than DROPS_EXT_MAX */
		p->flags |= DROPS_F_TRUNCATED;
		return;
	}
	p->l4 = c.nexthdr;
	p->thoff = c.off;
}

/*
 * Finds L3/L4 protocols from the packet bytes. network_header is an offset
 * from skb->head; it may be unset (~0) or still 0 on skbs freed before the
 * stack reached L3, so the IP version nibble is checked against the
 * ethertype before anything is trusted. transport_header is used only when
 * set (~0 = unset, e.g. drops before ip_rcv_core()) and past the network
 * header; otherwise it is computed from the IP header length.
 */
static __always_inline void parse_headers(struct sk_buff *skb, struct drops_parsed *p,
					  const bool direct)
{
	struct drops_l3min h = {};
	__u16 nh;
	bool v6;

	p->l3 = bpf_ntohs(RD(skb, protocol));
	if (p->l3 != ETH_P_IP && p->l3 != ETH_P_IPV6 && p->l3 != 0)
		return;
	nh = RD(skb, network_header);
	if (nh == NOHDR || nh == 0)
		return;
	p->head = RD(skb, head);
	/* skb->protocol is still 0 on some locally generated packets: then
	 * the version nibble decides. */
	v6 = p->l3 == ETH_P_IPV6;
	if (read_l3min(p->head + nh, v6, &h, direct))
		return;
	if (p->l3 == 0) {
		if ((h.b0 >> 4) == 6 && read_l3min(p->head + nh, true, &h, direct))
			return;
		v6 = (h.b0 >> 4) == 6;
	}
	if ((h.b0 >> 4) != (v6 ? 6 : 4) || (!v6 && (h.b0 & 0xf) < 5))
		return;
	p->l3 = v6 ? ETH_P_IPV6 : ETH_P_IP;
	p->l3len = v6 ? sizeof(struct drops_ip6) : (h.b0 & 0xf) * 4;
	/* Bytes past skb->tail are not the packet's (headers still in page
	 * fragments, a truncated packet): the header must end within the
	 * linear data to be believed. sk_buff_data_t is an offset from head
	 * on 64-bit kernels (NET_SKBUFF_DATA_USES_OFFSET). */
	p->tail = RD(skb, tail);
	if ((__u32)nh + p->l3len > p->tail) {
		p->flags |= DROPS_F_TRUNCATED;
		return;
	}
	p->l4 = h.proto;
	p->nh = nh;
	p->flags |= DROPS_F_L3_PARSED;
	if (!v6 && (bpf_ntohs(h.frag_off) & IP_OFFSET))
		p->flags |= DROPS_F_FRAGMENT;
	if (v6 && ipv6_ext_hdr(h.proto))
		ipv6_walk(p);
}

/* Transport header offset, for samples only (the counters do not need it). */
static __always_inline __u16 transport_offset(struct sk_buff *skb, const struct drops_parsed *p,
					      const bool direct)
{
	__u16 th = RD(skb, transport_header);

	/* past IPv6 extension headers: the walk read the packet itself,
	 * transport_header may still point at one of them */
	if (p->thoff)
		return p->thoff;
	return th != NOHDR && th > p->nh ? th : p->nh + p->l3len;
}

#endif /* SYSOBS_DROPS_PARSE_BPF_H */
