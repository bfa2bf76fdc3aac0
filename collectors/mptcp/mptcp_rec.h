/* SPDX-License-Identifier: MIT */
/*
 * The mptcp collector's recording format ([collector.mptcp] record = FILE
 * writes it, replay = FILE reads it; docs/mptcp.md "Recording and replay"):
 * the event socket's datagrams as the kernel sent them, with the time each
 * was received and the namespace it came from. All integers little-endian.
 *
 *   file header (16 bytes): "SYSOBSMP", u32 version (1), u32 flags (0)
 *   record (24-byte header, then len bytes of payload):
 *     u32 len, u8 kind, u8 flags, u16 family, i64 time_ns, u64 netns
 *   kinds: WATCH    a namespace watched from now on: payload its path as
 *                   configured (1..255 bytes, no NUL), family its mptcp_pm
 *                   genl family id, flags MPTCP_REC_F_SIDE when the kernel
 *                   reports the side (mptcp_genl_family_reports_side());
 *                   comes before any record of that netns
 *          DGRAM    one datagram of that netns's event socket (1..65536 bytes)
 *          OVERRUN  the socket overran there (ENOBUFS): events were lost
 *                   (no payload)
 *
 * Pure: the file is untrusted input. mptcp_rec_check() validates a whole
 * file before the replay applies any of it.
 */
#ifndef SYSOBS_MPTCP_REC_H
#define SYSOBS_MPTCP_REC_H

#include <stddef.h>
#include <stdint.h>

#define MPTCP_REC_MAGIC	      "SYSOBSMP"
#define MPTCP_REC_VERSION     1u
#define MPTCP_REC_FILE_HDR    16
#define MPTCP_REC_HDR	      24
#define MPTCP_REC_MAX_PAYLOAD 65536
#define MPTCP_REC_PATH_MAX    255

#define MPTCP_REC_F_SIDE 1u /* WATCH: the only flag; other kinds have none */

enum mptcp_rec_kind {
	MPTCP_REC_WATCH = 1,
	MPTCP_REC_DGRAM = 2,
	MPTCP_REC_OVERRUN = 3,
};

struct mptcp_rec {
	unsigned kind;
	unsigned flags;
	uint16_t family;
	int64_t time_ns;
	uint64_t netns;
	const void *data; /* the payload, inside the file's buffer */
	size_t len;
};

/* The file header into out. */
void mptcp_rec_file_header(uint8_t out[MPTCP_REC_FILE_HDR]);
/* r's record header (r->len its payload's length) into out. */
void mptcp_rec_header(uint8_t out[MPTCP_REC_HDR], const struct mptcp_rec *r);

/*
 * The record at *off of the file buf (len bytes; *off starts at 0, the file
 * header is checked there): 1 with r filled and *off past it, 0 at the end,
 * -EINVAL with the reason in err ("offset N: ...") when the header or the
 * record is bad (truncated, a length over the maximum, an unknown kind).
 */
int mptcp_rec_next(const void *buf, size_t len, size_t *off, struct mptcp_rec *r, char *err,
		   size_t errlen);

/*
 * The whole file: every record as mptcp_rec_next() reads it, each DGRAM or
 * OVERRUN after the WATCH of its netns, at most max_netns namespaces.
 * Returns the number of records, or -EINVAL with the reason in err.
 */
long mptcp_rec_check(const void *buf, size_t len, size_t max_netns, char *err, size_t errlen);

#endif
