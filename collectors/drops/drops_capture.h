/* SPDX-License-Identifier: MIT */
/*
 * The packet bytes of a sampled drop as a Linux cooked v2 frame
 * (LINKTYPE_LINUX_SLL2, 276; https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html):
 * one link type for every device, with or without a MAC header (tun has
 * none, lo a zeroed Ethernet one), that Wireshark and tshark decode by the
 * ethertype it carries. Pure: unit-tested (tests/unit/test_drops_capture.c).
 */
#ifndef SYSOBS_DROPS_CAPTURE_H
#define SYSOBS_DROPS_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct drop_sample;

#define DROPS_SLL2_HDR_LEN 20 /* the LINKTYPE_LINUX_SLL2 header */

/*
 * Writes s's capture into out as a 20-byte SLL2 header (ethertype, 0,
 * ifindex, ARPHRD type, packet type, source link address when the MAC
 * header was Ethernet's) followed by the packet from its network header.
 * The ethertype is the MAC header's when it has one, else the skb's
 * protocol, else the IP version nibble. Returns the frame's length (at
 * most room), 0 when s carries no capture or room is under 20 bytes;
 * *orig_len is the frame's length before capture_bytes cut the packet.
 */
size_t drops_capture_sll2(const struct drop_sample *s, uint8_t *out, size_t room,
			  uint32_t *orig_len);

#endif
