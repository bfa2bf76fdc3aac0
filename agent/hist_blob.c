// SPDX-License-Identifier: MIT
/*
 * The metric history's histogram bucket blob (see hist_blob.h). Written by
 * hand: a comma list and LEB128 varints are a few lines, and a protobuf
 * message for them would cost its field tags on every snapshot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/hist_blob.h"

size_t hist_blob_encode(const char *const *le, const uint64_t *counts, size_t n, uint8_t *out,
			size_t cap)
{
	size_t off = 0;

	if (n < 1 || n > HIST_BLOB_MAX_BUCKETS)
		return 0;
	for (size_t i = 0; i + 1 < n; i++) {
		size_t l = strlen(le[i]);

		if (!l || l >= HIST_BLOB_LE_MAX || off + l + 1 > cap)
			return 0;
		if (i)
			out[off++] = ',';
		memcpy(out + off, le[i], l);
		off += l;
	}
	if (off >= cap)
		return 0;
	out[off++] = '\0';
	for (size_t i = 0; i < n; i++) {
		uint64_t v = counts[i];

		do {
			if (off >= cap)
				return 0;
			out[off++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
	}
	return off;
}

static int hist_blob_bound(const char *s, size_t l, char *out)
{
	char *end;

	if (!l || l >= HIST_BLOB_LE_MAX)
		return -EINVAL;
	memcpy(out, s, l);
	out[l] = '\0';
	strtod(out, &end);
	return *end ? -EINVAL : 0;
}

int hist_blob_decode(const void *blob, size_t len, struct hist_blob_bucket *out, size_t max,
		     size_t *n)
{
	const uint8_t *p = blob, *end = p + len, *nul = memchr(p, '\0', len);
	const char *s = (const char *)p;
	uint64_t total = 0;
	size_t k = 0;

	*n = 0;
	if (!nul)
		return -EINVAL;
	/* Bounds: "a,b,c" (empty for a histogram with +Inf alone). */
	while (s < (const char *)nul) {
		const char *c = memchr(s, ',', (size_t)((const char *)nul - s));
		size_t l = (size_t)((c ? c : (const char *)nul) - s);

		if (k + 1 >= max || hist_blob_bound(s, l, out[k].le))
			return -EINVAL;
		k++;
		s += l + (c ? 1 : 0);
		if (c && s == (const char *)nul)
			return -EINVAL; /* a trailing comma */
	}
	if (k + 1 > max)
		return -EINVAL;
	strcpy(out[k].le, "+Inf");
	p = nul + 1;
	for (size_t i = 0; i <= k; i++) {
		uint64_t v = 0;
		unsigned shift = 0;

		for (;;) {
			if (p >= end || shift > 63)
				return -EINVAL;
			v |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
			if (!(*p++ & 0x80))
				break;
		}
		if (total + v < total)
			return -EINVAL; /* counts that overflow together */
		total += v;
		out[i].cumulative = total;
	}
	if (p != end)
		return -EINVAL;
	*n = k + 1;
	return 0;
}
