// SPDX-License-Identifier: MIT
/* A sampled drop's packet bytes as a Linux cooked v2 frame (drops_capture.h). */
#include <string.h>

#include "collectors/drops/drops_capture.h"
#include "collectors/drops/drops_decode.h"

#define ARPHRD_ETHER	1
#define ARPHRD_LOOPBACK 772
#define ARPHRD_NONE	0xFFFE
#define ETH_HLEN	14
#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

size_t drops_capture_sll2(const struct drop_sample *s, uint8_t *out, size_t room,
			  uint32_t *orig_len)
{
	size_t l2 = s->cap_l2len, n = s->cap_len > l2 ? s->cap_len - l2 : 0;
	bool eth = l2 == ETH_HLEN && s->cap_len >= ETH_HLEN;
	uint16_t proto = s->l3_proto, hatype = s->hatype;

	*orig_len = 0;
	if (!s->cap_len || room < DROPS_SLL2_HDR_LEN)
		return 0;
	if (eth && (s->cap[12] << 8 | s->cap[13]) >= 0x600)
		proto = (uint16_t)(s->cap[12] << 8 | s->cap[13]);
	if (!proto && n)
		proto = s->cap[l2] >> 4 == 6 ? ETH_P_IPV6 : s->cap[l2] >> 4 == 4 ? ETH_P_IP : 0;
	if (!hatype) /* no device: what the header says */
		hatype = eth ? ARPHRD_ETHER : ARPHRD_NONE;
	memset(out, 0, DROPS_SLL2_HDR_LEN);
	put16(out, proto);
	put32(out + 4, s->ifindex > 0 ? (uint32_t)s->ifindex : 0);
	put16(out + 8, hatype);
	out[10] = s->pkt_type;
	if (eth && (hatype == ARPHRD_ETHER || hatype == ARPHRD_LOOPBACK)) {
		out[11] = 6;
		memcpy(out + 12, s->cap + 6, 6); /* the source address */
	}
	if (n > room - DROPS_SLL2_HDR_LEN)
		n = room - DROPS_SLL2_HDR_LEN;
	memcpy(out + DROPS_SLL2_HDR_LEN, s->cap + l2, n);
	*orig_len = DROPS_SLL2_HDR_LEN + (s->cap_orig > l2 ? s->cap_orig - (uint32_t)l2 : 0);
	if (*orig_len < DROPS_SLL2_HDR_LEN + n)
		*orig_len = (uint32_t)(DROPS_SLL2_HDR_LEN + n);
	return DROPS_SLL2_HDR_LEN + n;
}
