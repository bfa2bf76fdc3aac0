/* SPDX-License-Identifier: MIT */
/*
 * A pcapng writer (IETF draft-ietf-opsawg-pcapng): the Section Header Block,
 * Interface Description Blocks and Enhanced Packet Blocks, in host byte
 * order as the format allows (the reader learns it from the byte-order
 * magic). Written here because it is ~100 lines and libpcap, the one
 * library that writes pcapng, does not: its writer is classic pcap only.
 * Pure: appends to a buf, unit-tested (tests/unit/test_pcapng.c).
 */
#ifndef SYSOBS_PCAPNG_H
#define SYSOBS_PCAPNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define PCAPNG_LINKTYPE_RAW	   101 /* raw IPv4/IPv6 */
#define PCAPNG_LINKTYPE_LINUX_SLL2 276 /* Linux cooked capture v2 */

struct pcapng_if {
	uint16_t linktype;
	const char *name;	 /* if_name, or NULL */
	const char *description; /* if_description, or NULL */
};

struct pcapng_packet {
	uint32_t if_id; /* index of its interface block in the section, from 0 */
	uint64_t ts_ns; /* unix time, ns (the interfaces say if_tsresol 9) */
	const uint8_t *data;
	uint32_t caplen, origlen;
	const char *comment; /* opt_comment, or NULL */
};

/* The Section Header Block that starts a file (shb_userappl: app;
 * opt_comment: comment, or NULL). */
void pcapng_section(struct buf *out, const char *app, const char *comment);
/* One Interface Description Block; timestamps in ns, no snap length. */
void pcapng_interface(struct buf *out, const struct pcapng_if *ifc);
/* One Enhanced Packet Block. */
void pcapng_packet(struct buf *out, const struct pcapng_packet *p);

#endif
