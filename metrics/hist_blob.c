// SPDX-License-Identifier: MIT
/*
 * The metric history's histogram bucket blob (see hist_blob.h). Written by
 * hand: a comma list and LEB128 varints are a few lines, and a protobuf
 * message for them would cost its field tags on every snapshot.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/hist_blob.h"

struct blob_w {
	uint8_t *p;
	size_t off, cap;
	bool full;
};

static void put_u64(struct blob_w *w, uint64_t v)
{
	do {
		if (w->off >= w->cap) {
			w->full = true;
			return;
		}
		w->p[w->off++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_s64(struct blob_w *w, int64_t v)
{
	put_u64(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* A double as its IEEE 754 bits, little-endian whatever the host. */
static void put_f64(struct blob_w *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	for (int i = 0; i < 8; i++) {
		if (w->off >= w->cap) {
			w->full = true;
			return;
		}
		w->p[w->off++] = (uint8_t)(v >> (8 * i));
	}
}

static void put_side(struct blob_w *w, const struct nhist_side *s)
{
	put_s64(w, s->offset);
	put_u64(w, s->len);
	for (uint32_t i = 0; i < s->len; i++)
		put_u64(w, s->counts[i]);
}

size_t hist_blob_encode_native(const char *const *le, const uint64_t *counts, size_t n,
			       const struct hist_blob_native *nh, uint8_t *out, size_t cap)
{
	struct blob_w w = {.p = out, .cap = cap};

	if (n < 1 || n > HIST_BLOB_MAX_BUCKETS)
		return 0;
	if (nh) {
		if (nh->pos.len > HIST_BLOB_NATIVE_MAX || nh->neg.len > HIST_BLOB_NATIVE_MAX ||
		    !cap)
			return 0;
		out[w.off++] = HIST_BLOB_KIND_NATIVE;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		size_t l = strlen(le[i]);

		if (!l || l >= HIST_BLOB_LE_MAX || w.off + l + 1 > cap)
			return 0;
		if (i)
			out[w.off++] = ',';
		memcpy(out + w.off, le[i], l);
		w.off += l;
	}
	if (w.off >= cap)
		return 0;
	out[w.off++] = '\0';
	for (size_t i = 0; i < n; i++)
		put_u64(&w, counts[i]);
	if (nh) {
		put_s64(&w, nh->schema);
		put_f64(&w, nh->zero_threshold);
		put_f64(&w, nh->sum);
		put_u64(&w, nh->zero_count);
		put_side(&w, &nh->pos);
		put_side(&w, &nh->neg);
	}
	return w.full ? 0 : w.off;
}

size_t hist_blob_encode(const char *const *le, const uint64_t *counts, size_t n, uint8_t *out,
			size_t cap)
{
	return hist_blob_encode_native(le, counts, n, NULL, out, cap);
}

struct blob_r {
	const uint8_t *p, *end;
};

static int get_u64(struct blob_r *r, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		if (r->p >= r->end || shift > 63)
			return -EINVAL;
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		shift += 7;
		if (!(*r->p++ & 0x80))
			break;
	}
	*out = v;
	return 0;
}

static int get_s64(struct blob_r *r, int64_t *out)
{
	uint64_t v;

	if (get_u64(r, &v))
		return -EINVAL;
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return 0;
}

static int get_f64(struct blob_r *r, double *out)
{
	uint64_t v = 0;

	if (r->end - r->p < 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)*r->p++ << (8 * i);
	memcpy(out, &v, sizeof(*out));
	return 0;
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

/* The classic part, from after the kind byte: its buckets into out[max]
 * (*n), r->p left after the last count. */
static int hist_blob_classic(struct blob_r *r, struct hist_blob_bucket *out, size_t max, size_t *n)
{
	const uint8_t *nul = memchr(r->p, '\0', (size_t)(r->end - r->p));
	const char *s = (const char *)r->p;
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
	r->p = nul + 1;
	for (size_t i = 0; i <= k; i++) {
		uint64_t v;

		if (get_u64(r, &v))
			return -EINVAL;
		if (total + v < total)
			return -EINVAL; /* counts that overflow together */
		total += v;
		out[i].cumulative = total;
	}
	*n = k + 1;
	return 0;
}

int hist_blob_decode(const void *blob, size_t len, struct hist_blob_bucket *out, size_t max,
		     size_t *n)
{
	struct blob_r r = {.p = blob, .end = (const uint8_t *)blob + len};
	bool native = len && r.p[0] == HIST_BLOB_KIND_NATIVE;
	int err;

	*n = 0;
	if (native)
		r.p++;
	err = hist_blob_classic(&r, out, max, n);
	if (!err && !native && r.p != r.end)
		err = -EINVAL;
	if (err)
		*n = 0;
	return err;
}

static int get_side(struct blob_r *r, struct nhist_side *s, uint64_t *counts, size_t max)
{
	int64_t off;
	uint64_t len;

	if (get_s64(r, &off) || get_u64(r, &len) || off < INT32_MIN || off > INT32_MAX ||
	    len > max || len > HIST_BLOB_NATIVE_MAX || off + (int64_t)len - 1 > INT32_MAX)
		return -EINVAL;
	s->offset = (int32_t)off;
	s->len = (uint32_t)len;
	s->counts = counts;
	for (uint64_t i = 0; i < len; i++)
		if (get_u64(r, &counts[i]))
			return -EINVAL;
	return 0;
}

int hist_blob_decode_native(const void *blob, size_t len, struct hist_blob_native *out,
			    uint64_t *counts, size_t max)
{
	struct hist_blob_bucket bk[HIST_BLOB_MAX_BUCKETS];
	struct blob_r r = {.p = blob, .end = (const uint8_t *)blob + len};
	int64_t schema;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!len || r.p[0] != HIST_BLOB_KIND_NATIVE)
		return hist_blob_decode(blob, len, bk, HIST_BLOB_MAX_BUCKETS, &n) ? -EINVAL
										  : -ENOENT;
	r.p++;
	if (hist_blob_classic(&r, bk, HIST_BLOB_MAX_BUCKETS, &n) || get_s64(&r, &schema) ||
	    schema < NHIST_SCHEMA_MIN || schema > NHIST_SCHEMA_MAX ||
	    get_f64(&r, &out->zero_threshold) || get_f64(&r, &out->sum) ||
	    get_u64(&r, &out->zero_count) || get_side(&r, &out->pos, counts, max) ||
	    get_side(&r, &out->neg, counts + out->pos.len, max - out->pos.len) || r.p != r.end) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	out->schema = (int)schema;
	out->count = bk[n - 1].cumulative;
	return 0;
}
