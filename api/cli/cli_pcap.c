// SPDX-License-Identifier: MIT
/*
 * sysobs drops pcap --follow: one pcapng stream out of the agent's
 * successive pcapng pages. Each page is a file of its own (a section
 * header, its interfaces numbered from 0, its packets); the stream keeps
 * the first section header, writes an interface the first time it is
 * seen (numbered in the stream's order) and a packet only when its id
 * (the "id=N" that starts its comment) is newer than any written, with
 * its interface id renumbered. Block layout: pcapng.h's writer.
 */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"

#define PCAP_SHB 0x0A0D0D0Au
#define PCAP_IDB 1u
#define PCAP_EPB 6u

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The id in an EPB's comment, 0 when it has none. */
static int64_t epb_id(const uint8_t *b, uint32_t len)
{
	uint32_t caplen = rd32(b + 20), off = 28 + ((caplen + 3) & ~3u);

	while (off + 4 <= len - 4) {
		uint16_t code, olen;

		memcpy(&code, b + off, 2);
		memcpy(&olen, b + off + 2, 2);
		if (!code || off + 4 + olen > len - 4)
			break;
		if (code == 1 && olen > 3 && !memcmp(b + off + 4, "id=", 3))
			return strtoll((const char *)b + off + 7, NULL, 10);
		off += 4 + ((olen + 3u) & ~3u);
	}
	return 0;
}

long pcap_follow_merge(struct pcap_follow *f, const uint8_t *in, size_t len, FILE *out)
{
	uint32_t local[PCAP_FOLLOW_IFS]; /* this page's interface -> the stream's */
	size_t n_local = 0, off = 0;
	int64_t newest = f->max_id;
	long written = 0;

	while (off + 12 <= len) {
		const uint8_t *b = in + off;
		uint32_t type = rd32(b), blen = rd32(b + 4);

		if (blen < 12 || blen % 4 || blen > len - off)
			return -1;
		if (type == PCAP_SHB) {
			if (!f->started)
				fwrite(b, 1, blen, out);
			f->started = true;
			n_local = 0;
		} else if (type == PCAP_IDB) {
			size_t i;

			if (n_local == PCAP_FOLLOW_IFS)
				return -1;
			for (i = 0; i < f->n_ifs; i++)
				if (f->if_len[i] == blen && !memcmp(f->ifs[i], b, blen))
					break;
			if (i == f->n_ifs) {
				if (i == PCAP_FOLLOW_IFS || !(f->ifs[i] = malloc(blen)))
					return -1;
				memcpy(f->ifs[i], b, blen);
				f->if_len[i] = blen;
				f->n_ifs++;
				fwrite(b, 1, blen, out);
			}
			local[n_local++] = (uint32_t)i;
		} else if (type == PCAP_EPB && blen >= 32) {
			int64_t id = epb_id(b, blen);
			uint32_t ifid = rd32(b + 8);

			if (ifid >= n_local)
				return -1;
			if (id > f->max_id) {
				fwrite(b, 1, 8, out);
				fwrite(&local[ifid], 1, 4, out);
				fwrite(b + 12, 1, blen - 12, out);
				written++;
				if (id > newest)
					newest = id;
			}
		}
		off += blen;
	}
	f->max_id = newest;
	return written;
}

void pcap_follow_free(struct pcap_follow *f)
{
	for (size_t i = 0; i < f->n_ifs; i++)
		free(f->ifs[i]);
	f->n_ifs = 0;
}
