/* SPDX-License-Identifier: MIT */
/*
 * Native histogram bucket math (see nhist.h). The index of v follows the
 * Prometheus definition through frexp(), as the Go client computes it, so a
 * value exactly on a bound lands in the same bucket on both sides: for
 * schema > 0 the mantissa is searched in the table of 2^(j/2^s - 1),
 * j < 2^s; for schema <= 0 the exponent alone decides.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/nhist.h"

/*
 * bounds[s][j] = 2^(j/2^s - 1) for schema s in 1..8, rounded *down* to a
 * double: the bound is irrational (j > 0), so for a double v, v <= 2^x holds
 * exactly when v <= the largest double below 2^x. Rounding to nearest would
 * put a v just above the bound (2^0.5 as a double is above sqrt(2)) in the
 * bucket below. exp2l's 64-bit mantissa decides the direction.
 */
static double bounds_tab[NHIST_SCHEMA_MAX + 1][1 << NHIST_SCHEMA_MAX];
static pthread_once_t bounds_once = PTHREAD_ONCE_INIT;

static void bounds_init(void)
{
	for (int s = 1; s <= NHIST_SCHEMA_MAX; s++) {
		int n = 1 << s;

		for (int j = 0; j < n; j++) {
			long double x = exp2l((long double)j / n - 1);
			double d = (double)x;

			if ((long double)d > x)
				d = nextafter(d, 0);
			bounds_tab[s][j] = d;
		}
	}
}

int32_t nhist_index(double v, int schema)
{
	int exp;
	double frac = frexp(v, &exp);

	if (schema > 0) {
		const double *b;
		size_t lo = 0, hi = (size_t)1 << schema;
		int32_t n = 1 << schema;

		pthread_once(&bounds_once, bounds_init);
		b = bounds_tab[schema];
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (b[mid] >= frac)
				hi = mid;
			else
				lo = mid + 1;
		}
		return (int32_t)lo + (exp - 1) * n;
	}
	/* 2^exp is the upper bound at schema 0, except for exact powers of
	 * two (mantissa 0.5), which close the bucket below. */
	int32_t key = exp;

	if (frac == 0.5)
		key--;
	int32_t shift = -schema;
	return (key + ((1 << shift) - 1)) >> shift;
}

double nhist_upper(int32_t i, int schema)
{
	if (schema <= 0)
		return ldexp(1.0, i * (1 << -schema));
	return exp2((double)i / (double)(1 << schema));
}

static int side_add(struct nhist_side *s, int32_t idx, uint64_t n)
{
	if (!s->len) {
		s->counts = calloc(1, sizeof(*s->counts));
		if (!s->counts)
			return -ENOMEM;
		s->offset = idx;
		s->len = 1;
	} else if (idx < s->offset || idx >= s->offset + (int32_t)s->len) {
		int32_t lo = idx < s->offset ? idx : s->offset;
		int32_t hi =
		    idx >= s->offset + (int32_t)s->len ? idx : s->offset + (int32_t)s->len - 1;
		uint32_t len = (uint32_t)(hi - lo + 1);
		uint64_t *c = calloc(len, sizeof(*c));

		if (!c)
			return -ENOMEM;
		memcpy(c + (s->offset - lo), s->counts, s->len * sizeof(*c));
		free(s->counts);
		s->counts = c;
		s->offset = lo;
		s->len = len;
	}
	s->counts[idx - s->offset] += n;
	return 0;
}

/* Buckets the side would span with idx in it. */
static uint32_t side_len_with(const struct nhist_side *s, int32_t idx)
{
	int64_t lo, hi;

	if (!s->len)
		return 1;
	lo = idx < s->offset ? idx : s->offset;
	hi = s->offset + (int64_t)s->len - 1;
	if (idx > hi)
		hi = idx;
	return (uint32_t)(hi - lo + 1);
}

static void side_reduce(struct nhist_side *s)
{
	int32_t off, last;

	if (!s->len)
		return;
	/* Bucket i of schema k is bucket ceil(i/2) of schema k-1. */
	off = (s->offset + 1) >> 1;
	last = (s->offset + (int32_t)s->len - 1 + 1) >> 1;
	for (uint32_t i = 0; i < s->len; i++) {
		uint64_t c = s->counts[i];
		int32_t np = ((s->offset + (int32_t)i + 1) >> 1) - off;

		s->counts[i] = 0;
		s->counts[np] += c; /* np <= i: already merged slots only */
	}
	s->offset = off;
	s->len = (uint32_t)(last - off + 1);
}

static void nhist_reduce(struct nhist *h)
{
	if (h->schema <= NHIST_SCHEMA_MIN)
		return;
	side_reduce(&h->pos);
	side_reduce(&h->neg);
	h->schema--;
}

int nhist_add(struct nhist *h, double v, uint64_t n, double zero_threshold, unsigned max_buckets)
{
	struct nhist_side *side;
	double a = fabs(v);
	int32_t idx;

	if (!isfinite(v))
		return 0;
	if (a <= zero_threshold) {
		h->zero_count += n;
		return 0;
	}
	side = v > 0 ? &h->pos : &h->neg;
	for (;;) {
		const struct nhist_side *other = v > 0 ? &h->neg : &h->pos;

		idx = nhist_index(a, h->schema);
		if (!max_buckets || h->schema <= NHIST_SCHEMA_MIN ||
		    side_len_with(side, idx) + other->len <= max_buckets)
			break;
		nhist_reduce(h);
	}
	return side_add(side, idx, n);
}

void nhist_free(struct nhist *h)
{
	free(h->pos.counts);
	free(h->neg.counts);
	memset(&h->pos, 0, sizeof(h->pos));
	memset(&h->neg, 0, sizeof(h->neg));
	h->zero_count = 0;
}

size_t nhist_spans(const struct nhist_side *side, int32_t *span_offset, uint32_t *span_len,
		   int64_t *deltas, size_t *n_deltas)
{
	size_t n_spans = 0, nd = 0;
	int64_t prev = 0;
	int32_t end = 0; /* index after the last bucket of the previous span */
	uint32_t i = 0;

	while (i < side->len) {
		uint32_t j, zeros;

		if (!side->counts[i]) {
			i++;
			continue;
		}
		/* A new span starts at i. */
		span_offset[n_spans] =
		    n_spans ? side->offset + (int32_t)i - end : side->offset + (int32_t)i;
		span_len[n_spans] = 0;
		for (j = i; j < side->len;) {
			if (side->counts[j]) {
				deltas[nd++] = (int64_t)side->counts[j] - prev;
				prev = (int64_t)side->counts[j];
				span_len[n_spans]++;
				j++;
				continue;
			}
			/* Up to two empty buckets stay inside the span. */
			for (zeros = 0; j + zeros < side->len && !side->counts[j + zeros]; zeros++)
				;
			if (zeros > 2 || j + zeros == side->len)
				break;
			for (uint32_t z = 0; z < zeros; z++) {
				deltas[nd++] = -prev;
				prev = 0;
				span_len[n_spans]++;
			}
			j += zeros;
		}
		end = side->offset + (int32_t)j;
		n_spans++;
		i = j;
	}
	*n_deltas = nd;
	return n_spans;
}
