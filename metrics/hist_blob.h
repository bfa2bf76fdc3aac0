/* SPDX-License-Identifier: MIT */
/*
 * A histogram's classic buckets in one blob on its _count sample of the
 * metric history (metric_samples.buckets), decoded by the remote-write
 * sender into NAME_bucket{le="..."} series.
 *
 * Why a blob and not a sample series per bucket: measured on the default
 * agent (16 histogram series, 219 buckets, 226 other samples), a snapshot
 * grows the database by ~28.9 KB with a row per bucket and by ~16.1 KB with
 * this blob, against ~15 KB without buckets (docs/fleet.md).
 *
 * Layout: the upper bounds as exposed, comma-separated, "+Inf" left out,
 * then a NUL; then one LEB128 varint per bucket (n_bounds + 1, the last
 * +Inf), each the count of that bucket alone. The bounds travel with the
 * counts so that a blob decodes alone, whatever the family's bounds are
 * now (a build that changes them); they cost ~1 KB of the 16.
 */
#ifndef SYSOBS_HIST_BLOB_H
#define SYSOBS_HIST_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "metrics/nhist.h"

#define HIST_BLOB_MAX_BUCKETS 256 /* a histogram with more is kept without buckets */
#define HIST_BLOB_LE_MAX      32  /* bytes of one rendered bound */
#define HIST_BLOB_KIND_NATIVE 0xff
/* Native buckets of one side a blob may hold (the registry's default
 * max_buckets is 160 for both sides together). */
#define HIST_BLOB_NATIVE_MAX 1024

/* A series' native buckets. counts of pos and neg point at the caller's
 * storage (encode: the registry's; decode: see hist_blob_decode_native). */
struct hist_blob_native {
	int schema;
	double zero_threshold;
	double sum;
	uint64_t count; /* decode only: the classic part's total */
	uint64_t zero_count;
	struct nhist_side pos, neg;
};

/* Encodes n buckets (le[n - 1] is "+Inf") into out[cap]: its length, or 0
 * when it does not fit or n is out of range. */
size_t hist_blob_encode(const char *const *le, const uint64_t *counts, size_t n, uint8_t *out,
			size_t cap);
/* hist_blob_encode with the native buckets nh after the classic ones (nh
 * NULL: the classic layout alone, byte for byte). */
size_t hist_blob_encode_native(const char *const *le, const uint64_t *counts, size_t n,
			       const struct hist_blob_native *nh, uint8_t *out, size_t cap);

/* One decoded bucket: its bound ("+Inf" for the last) and the cumulative
 * count up to it, as NAME_bucket carries it. */
struct hist_blob_bucket {
	char le[HIST_BLOB_LE_MAX];
	uint64_t cumulative;
};

/* Decodes blob into out[max] (*n buckets, the last "+Inf"). 0, or -EINVAL
 * for anything malformed (bounds and counts disagreeing in number, a bound
 * that is not a number, trailing bytes). Pure. */
int hist_blob_decode(const void *blob, size_t len, struct hist_blob_bucket *out, size_t max,
		     size_t *n);

/* The native buckets of blob into *out, their counts in counts[max] (pos
 * first, then neg). 0; -ENOENT for a blob without them (classic only);
 * -EINVAL for anything malformed (a schema out of range, more than max
 * buckets, trailing bytes, a classic part that does not decode). Pure. */
int hist_blob_decode_native(const void *blob, size_t len, struct hist_blob_native *out,
			    uint64_t *counts, size_t max);

#endif
