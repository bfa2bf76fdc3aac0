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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_udp4),    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_tcp6),    cmocka_unit_test(test_icmp_and_unparsed),
	    cmocka_unit_test(test_rejects), cmocka_unit_test(test_protocol_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
