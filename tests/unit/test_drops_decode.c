// SPDX-License-Identifier: MIT
/* Ring-buffer record decoder of the drops collector. */
#include <errno.h>
#include <linux/types.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "bpf/drops.h"
#include "collectors/drops/drops_capture.h"
#include "collectors/drops/drops_decode.h"

static struct drops_record udp4_record(void)
{
	struct drops_record r = {
	    .magic = DROPS_RECORD_MAGIC,
	    .version = DROPS_RECORD_VERSION,
	    .size = sizeof(r),
	    .ts_ns = 123456789,
	    .location = 0xffffffff81abcdefull,
	    .reason = 3,
	    .netns = 4026531840u,
	    .ifindex = 1,
	    .len = 10,
	    .cpu = 1,
	    .l3_proto = 0x0800,
	    .l4_proto = 17,
	    .flags = DROPS_F_L3_PARSED | DROPS_F_L4_PARSED | DROPS_F_HAS_DEV,
	    .saddr = {10, 0, 0, 1},
	    .daddr = {127, 0, 0, 1},
	    .sport = 40000,
	    .dport = 9,
	    .ifname = "lo",
	    .netns_cookie = 1,
	};
	return r;
}

static void test_udp4(void **state)
{
	struct drops_record r = udp4_record();
	struct drop_sample s;

	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_int_equal(s.ts_mono_ns, 123456789);
	assert_int_equal(s.reason, 3);
	assert_int_equal(s.netns, 4026531840u);
	assert_int_equal(s.netns_cookie, 1);
	assert_true(s.has_addrs);
	assert_string_equal(s.saddr, "10.0.0.1");
	assert_string_equal(s.daddr, "127.0.0.1");
	assert_true(s.has_ports);
	assert_false(s.has_icmp);
	assert_int_equal(s.sport, 40000);
	assert_int_equal(s.dport, 9);
	assert_string_equal(s.ifname, "lo");
	assert_string_equal(drops_protocol_name(s.l3_proto, s.l4_proto), "udp");
}

/* A truncated UDP header: addresses, no ports, the flag passed on. */
static void test_truncated(void **state)
{
	struct drops_record r = udp4_record();
	struct drop_sample s;

	r.flags = DROPS_F_L3_PARSED | DROPS_F_TRUNCATED;
	r.sport = r.dport = 0;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_true(s.truncated);
	assert_true(s.has_addrs);
	assert_false(s.has_ports);
	assert_false(s.has_icmp);
	assert_string_equal(s.ifname, ""); /* no DROPS_F_HAS_DEV: not a device */
	r = udp4_record();
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_false(s.truncated);
	assert_false(s.fragment);
	/* a non-first fragment: addresses and protocol, no ports */
	r.flags = DROPS_F_L3_PARSED | DROPS_F_FRAGMENT;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_true(s.fragment);
	assert_false(s.has_ports);
	assert_string_equal(drops_protocol_name(s.l3_proto, s.l4_proto), "udp");
}

static void test_tcp6(void **state)
{
	struct drops_record r = udp4_record();
	struct drop_sample s;

	r.l3_proto = 0x86DD;
	r.l4_proto = 6;
	r.tcp_flags = 0x02;
	memset(r.saddr, 0, 16);
	memset(r.daddr, 0, 16);
	r.saddr[15] = 1;
	r.daddr[0] = 0xfd;
	r.daddr[15] = 2;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_string_equal(s.saddr, "::1");
	assert_string_equal(s.daddr, "fd00::2");
	assert_int_equal(s.tcp_flags, 0x02);
	assert_string_equal(drops_protocol_name(s.l3_proto, s.l4_proto), "tcp");
}

static void test_icmp_and_unparsed(void **state)
{
	struct drops_record r = udp4_record();
	struct drop_sample s;

	r.l4_proto = 1;
	r.icmp_type = 8;
	r.icmp_code = 0;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_true(s.has_icmp);
	assert_false(s.has_ports);
	assert_int_equal(s.icmp_type, 8);

	/* No L3 parsed, no device: no addresses, empty ifname. */
	r = udp4_record();
	r.flags = 0;
	r.l3_proto = 0x0806;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_false(s.has_addrs);
	assert_false(s.has_ports);
	assert_string_equal(s.saddr, "");
	assert_string_equal(s.ifname, "");
	assert_string_equal(drops_protocol_name(s.l3_proto, s.l4_proto), "arp");
}

static void test_rejects(void **state)
{
	struct drops_record r = udp4_record();
	struct drop_sample s;

	assert_int_equal(drops_record_decode(&r, sizeof(r) - 1, &s), -EINVAL);
	assert_int_equal(drops_record_decode(NULL, sizeof(r), &s), -EINVAL);
	r.magic ^= 1;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	r = udp4_record();
	r.version = DROPS_RECORD_VERSION + 1;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	r = udp4_record();
	r.size = sizeof(r) + 8;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	/* Addresses claimed for a non-IP packet. */
	r = udp4_record();
	r.l3_proto = 0x0806;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	/* Ports claimed for a protocol without ports. */
	r = udp4_record();
	r.l4_proto = 47;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	/* Unterminated interface name. */
	r = udp4_record();
	memset(r.ifname, 'x', sizeof(r.ifname));
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	/* Longer buffers (ring-buffer padding) are fine. */
	{
		unsigned char buf[sizeof(r) + 8] = {0};

		r = udp4_record();
		memcpy(buf, &r, sizeof(r));
		assert_int_equal(drops_record_decode(buf, sizeof(buf), &s), 0);
	}
}

static void test_protocol_names(void **state)
{
	char buf[16];

	assert_string_equal(drops_protocol_name(0x0800, 1), "icmp");
	assert_string_equal(drops_protocol_name(0x86DD, 58), "icmpv6");
	assert_string_equal(drops_protocol_name(0x86DD, 132), "sctp");
	assert_string_equal(drops_protocol_name(0x0800, 200), "ip");
	assert_string_equal(drops_protocol_name(0, 0), "none");
	assert_string_equal(drops_protocol_name(0x88cc, 0), "other");
	assert_string_equal(drops_l3_name(0x0800, buf, sizeof(buf)), "ipv4");
	assert_string_equal(drops_l3_name(0x86DD, buf, sizeof(buf)), "ipv6");
	assert_string_equal(drops_l3_name(0x88cc, buf, sizeof(buf)), "0x88cc");
}

/* The capture: both record sizes, its bounds, and the cooked v2 frame. */
static void test_capture(void **state)
{
	static const uint8_t eth_ip[] = {
	    0,	  0,	0,   0,	 0, 0, 2, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x00, /* Ethernet */
	    0x45, 0,	0,   28, 0, 1, 0, 0,	64,   17,   0,	  0,	10,   0,
	    0,	  1,	127, 0,	 0, 1,	     /* IPv4 */
	    0x9c, 0x40, 0,   9,	 0, 8, 0, 0, /* UDP */
	};
	struct drops_record r = udp4_record();
	struct drop_sample s;
	uint8_t frame[DROPS_SLL2_HDR_LEN + 256];
	uint32_t orig;
	size_t n;

	/* capture off: the record ends at cap[] */
	r.size = offsetof(struct drops_record, cap);
	assert_int_equal(drops_record_decode(&r, r.size, &s), 0);
	assert_int_equal(s.cap_len, 0);
	assert_int_equal(drops_capture_sll2(&s, frame, sizeof(frame), &orig), 0);
	r.cap_len = 4; /* a short record cannot carry bytes */
	assert_int_equal(drops_record_decode(&r, r.size, &s), -EINVAL);

	r = udp4_record();
	memcpy(r.cap, eth_ip, sizeof(eth_ip));
	r.cap_len = sizeof(eth_ip);
	r.cap_l2len = 14;
	r.cap_orig = 14 + 28 + 100; /* 100 bytes of payload not copied */
	r.hatype = 1;
	r.pkt_type = 0;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	assert_int_equal(drops_record_decode(&r, sizeof(r) - 1, &s), -EINVAL);
	assert_int_equal(s.cap_len, sizeof(eth_ip));
	n = drops_capture_sll2(&s, frame, sizeof(frame), &orig);
	assert_int_equal(n, 20 + 28);
	assert_int_equal(orig, 20 + 28 + 100);
	assert_int_equal(frame[0] << 8 | frame[1], 0x0800); /* ethertype */
	assert_int_equal(frame[2] | frame[3], 0);
	assert_int_equal(frame[4] << 24 | frame[5] << 16 | frame[6] << 8 | frame[7],
			 1);			       /* ifindex */
	assert_int_equal(frame[8] << 8 | frame[9], 1); /* ARPHRD_ETHER */
	assert_int_equal(frame[10], 0);		       /* PACKET_HOST */
	assert_int_equal(frame[11], 6);
	assert_memory_equal(frame + 12, eth_ip + 6, 6); /* the source MAC */
	assert_memory_equal(frame + 20, eth_ip + 14, 28);
	/* room for less: cut, the original length kept */
	assert_int_equal(drops_capture_sll2(&s, frame, 30, &orig), 30);
	assert_int_equal(orig, 20 + 28 + 100);
	assert_int_equal(drops_capture_sll2(&s, frame, 19, &orig), 0);

	/* no L2 (a tun): from the network header, ARPHRD_NONE, no address;
	 * no protocol on the skb: the version nibble decides */
	memcpy(r.cap, eth_ip + 14, 28);
	r.cap_len = 28;
	r.cap_l2len = 0;
	r.cap_orig = 28;
	r.hatype = 0;
	r.l3_proto = 0;
	r.flags = 0;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), 0);
	n = drops_capture_sll2(&s, frame, sizeof(frame), &orig);
	assert_int_equal(n, 48);
	assert_int_equal(orig, 48);
	assert_int_equal(frame[0] << 8 | frame[1], 0x0800);
	assert_int_equal(frame[8] << 8 | frame[9], 0xFFFE);
	assert_int_equal(frame[11], 0);

	/* bounds: more than the record holds, or more than the packet */
	r.cap_len = DROPS_CAPTURE_MAX + 1;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
	r.cap_len = 28;
	r.cap_orig = 27;
	assert_int_equal(drops_record_decode(&r, sizeof(r), &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_udp4),    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_tcp6),    cmocka_unit_test(test_icmp_and_unparsed),
	    cmocka_unit_test(test_rejects), cmocka_unit_test(test_protocol_names),
	    cmocka_unit_test(test_capture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
