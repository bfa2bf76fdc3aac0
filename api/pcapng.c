// SPDX-License-Identifier: MIT
/* pcapng blocks (see pcapng.h). */
#include <string.h>

#include "api/pcapng.h"

#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 1u
#define PCAPNG_EPB 6u

#define OPT_ENDOFOPT   0
#define OPT_COMMENT    1
#define SHB_USERAPPL   4
#define IF_NAME	       2
#define IF_DESCRIPTION 3
#define IF_TSRESOL     9

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static void put_u16(struct buf *out, uint16_t v)
{
	buf_append(out, &v, sizeof(v));
}

static void put_u32(struct buf *out, uint32_t v)
{
	buf_append(out, &v, sizeof(v));
}

static void put_padded(struct buf *out, const void *data, size_t n)
{
	static const uint8_t zero[4];

	buf_append(out, data, n);
	buf_append(out, zero, pad4(n) - n);
}

/* An option's bytes: code, length, value padded to 32 bits. Values longer
 * than an option can say (65535) are cut. */
static size_t opt_size(size_t n)
{
	return 4 + pad4(n > UINT16_MAX ? UINT16_MAX : n);
}

static void put_opt(struct buf *out, uint16_t code, const void *v, size_t n)
{
	if (n > UINT16_MAX)
		n = UINT16_MAX;
	put_u16(out, code);
	put_u16(out, (uint16_t)n);
	put_padded(out, v, n);
}

static size_t str_opt_size(const char *s)
{
	return s && *s ? opt_size(strlen(s)) : 0;
}

static void put_str_opt(struct buf *out, uint16_t code, const char *s)
{
	if (s && *s)
		put_opt(out, code, s, strlen(s));
}

void pcapng_section(struct buf *out, const char *app, const char *comment)
{
	size_t len = 28 + str_opt_size(comment) + str_opt_size(app) + 4;
	uint64_t section_len = UINT64_MAX; /* -1: not given */

	put_u32(out, PCAPNG_SHB);
	put_u32(out, (uint32_t)len);
	put_u32(out, 0x1A2B3C4Du);
	put_u16(out, 1); /* major */
	put_u16(out, 0); /* minor */
	buf_append(out, &section_len, sizeof(section_len));
	put_str_opt(out, OPT_COMMENT, comment);
	put_str_opt(out, SHB_USERAPPL, app);
	put_opt(out, OPT_ENDOFOPT, NULL, 0);
	put_u32(out, (uint32_t)len);
}

void pcapng_interface(struct buf *out, const struct pcapng_if *ifc)
{
	static const uint8_t tsresol = 9; /* 10^-9 s */
	size_t len =
	    20 + str_opt_size(ifc->name) + str_opt_size(ifc->description) + opt_size(1) + 4;

	put_u32(out, PCAPNG_IDB);
	put_u32(out, (uint32_t)len);
	put_u16(out, ifc->linktype);
	put_u16(out, 0);
	put_u32(out, 0); /* snaplen: no limit */
	put_str_opt(out, IF_NAME, ifc->name);
	put_str_opt(out, IF_DESCRIPTION, ifc->description);
	put_opt(out, IF_TSRESOL, &tsresol, 1);
	put_opt(out, OPT_ENDOFOPT, NULL, 0);
	put_u32(out, (uint32_t)len);
}

void pcapng_packet(struct buf *out, const struct pcapng_packet *p)
{
	size_t opts = str_opt_size(p->comment);
	size_t len = 32 + pad4(p->caplen) + (opts ? opts + 4 : 0);

	put_u32(out, PCAPNG_EPB);
	put_u32(out, (uint32_t)len);
	put_u32(out, p->if_id);
	put_u32(out, (uint32_t)(p->ts_ns >> 32));
	put_u32(out, (uint32_t)p->ts_ns);
	put_u32(out, p->caplen);
	put_u32(out, p->origlen < p->caplen ? p->caplen : p->origlen);
	put_padded(out, p->data, p->caplen);
	if (opts) {
		put_str_opt(out, OPT_COMMENT, p->comment);
		put_opt(out, OPT_ENDOFOPT, NULL, 0);
	}
	put_u32(out, (uint32_t)len);
}
