// SPDX-License-Identifier: MIT
/* The mptcp collector's recording format (mptcp_rec.h): pure encode and
 * checked decode. */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/mptcp/mptcp_rec.h"

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

void mptcp_rec_file_header(uint8_t out[MPTCP_REC_FILE_HDR])
{
	memcpy(out, MPTCP_REC_MAGIC, 8);
	put32(out + 8, MPTCP_REC_VERSION);
	put32(out + 12, 0);
}

void mptcp_rec_header(uint8_t out[MPTCP_REC_HDR], const struct mptcp_rec *r)
{
	put32(out, (uint32_t)r->len);
	out[4] = (uint8_t)r->kind;
	out[5] = (uint8_t)r->flags;
	put16(out + 6, r->family);
	put64(out + 8, (uint64_t)r->time_ns);
	put64(out + 16, r->netns);
}

static int rec_error(char *err, size_t errlen, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int rec_error(char *err, size_t errlen, size_t off, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "offset %zu: ", off);

	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int rec_file_header_check(const uint8_t *b, size_t len, char *err, size_t errlen)
{
	uint32_t v;

	if (len < MPTCP_REC_FILE_HDR || memcmp(b, MPTCP_REC_MAGIC, 8))
		return rec_error(err, errlen, 0, "not a sysobs MPTCP recording (no %s header)",
				 MPTCP_REC_MAGIC);
	v = get32(b + 8);
	if (v != MPTCP_REC_VERSION)
		return rec_error(err, errlen, 8, "format version %u, this sysobs reads %u", v,
				 MPTCP_REC_VERSION);
	if (get32(b + 12))
		return rec_error(err, errlen, 12, "unknown header flags %#x", get32(b + 12));
	return 0;
}

/* The payload of r fits its kind. */
static int rec_payload_check(const struct mptcp_rec *r, size_t off, char *err, size_t errlen)
{
	if (r->kind != MPTCP_REC_WATCH && r->flags)
		return rec_error(err, errlen, off, "record of kind %u with flags %#x", r->kind,
				 r->flags);
	switch (r->kind) {
	case MPTCP_REC_WATCH:
		if (!r->len || r->len > MPTCP_REC_PATH_MAX || memchr(r->data, 0, r->len))
			return rec_error(err, errlen, off,
					 "WATCH record: a path of 1..%d bytes without NUL, not "
					 "%zu bytes",
					 MPTCP_REC_PATH_MAX, r->len);
		if (!r->netns)
			return rec_error(err, errlen, off, "WATCH record of netns 0");
		if (r->flags & ~MPTCP_REC_F_SIDE)
			return rec_error(err, errlen, off, "WATCH record with unknown flags %#x",
					 r->flags);
		return 0;
	case MPTCP_REC_DGRAM:
		if (!r->len)
			return rec_error(err, errlen, off, "empty DGRAM record");
		return 0;
	case MPTCP_REC_OVERRUN:
		if (r->len)
			return rec_error(err, errlen, off,
					 "OVERRUN record with %zu bytes of payload", r->len);
		return 0;
	default:
		return rec_error(err, errlen, off, "unknown record kind %u", r->kind);
	}
}

int mptcp_rec_next(const void *buf, size_t len, size_t *off, struct mptcp_rec *r, char *err,
		   size_t errlen)
{
	const uint8_t *b = buf;
	size_t o = *off;
	uint32_t n;

	if (o == 0) {
		if (rec_file_header_check(b, len, err, errlen))
			return -EINVAL;
		o = MPTCP_REC_FILE_HDR;
	}
	if (o >= len) {
		*off = o;
		return 0;
	}
	if (len - o < MPTCP_REC_HDR)
		return rec_error(err, errlen, o, "truncated record header (%zu of %d bytes)",
				 len - o, MPTCP_REC_HDR);
	n = get32(b + o);
	if (n > MPTCP_REC_MAX_PAYLOAD)
		return rec_error(err, errlen, o, "record length %u over the maximum %d", n,
				 MPTCP_REC_MAX_PAYLOAD);
	if (len - o - MPTCP_REC_HDR < n)
		return rec_error(err, errlen, o, "truncated record (%u bytes announced, %zu left)",
				 n, len - o - MPTCP_REC_HDR);
	r->len = n;
	r->kind = b[o + 4];
	r->flags = b[o + 5];
	r->family = get16(b + o + 6);
	r->time_ns = (int64_t)get64(b + o + 8);
	r->netns = get64(b + o + 16);
	r->data = b + o + MPTCP_REC_HDR;
	if (rec_payload_check(r, o, err, errlen))
		return -EINVAL;
	*off = o + MPTCP_REC_HDR + n;
	return 1;
}

long mptcp_rec_check(const void *buf, size_t len, size_t max_netns, char *err, size_t errlen)
{
	uint64_t *seen = calloc(max_netns ? max_netns : 1, sizeof(*seen));
	size_t n_seen = 0, off = 0, at;
	struct mptcp_rec r = {0};
	long count = 0;
	int ret;

	if (!seen)
		return -ENOMEM;
	for (at = off; (ret = mptcp_rec_next(buf, len, &off, &r, err, errlen)) == 1; at = off) {
		size_t i = 0;

		if (at == 0)
			at = MPTCP_REC_FILE_HDR;
		while (i < n_seen && seen[i] != r.netns)
			i++;
		if (i == n_seen && r.kind != MPTCP_REC_WATCH) {
			ret = rec_error(err, errlen, at, "record of netns %llu before its WATCH",
					(unsigned long long)r.netns);
			break;
		}
		if (i == n_seen && n_seen == max_netns) {
			ret = rec_error(err, errlen, at, "more than %zu namespaces", max_netns);
			break;
		}
		if (i == n_seen)
			seen[n_seen++] = r.netns;
		count++;
	}
	free(seen);
	return ret < 0 ? ret : count;
}
