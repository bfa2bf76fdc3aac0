/* SPDX-License-Identifier: MIT */
/*
 * Native (exponential) histogram buckets, as Prometheus defines them: with
 * schema s (-4..8) bucket i holds the values in (2^((i-1)/2^s), 2^(i/2^s)],
 * so each power of two is split into 2^s buckets (schema 3: 8, ~9% wide).
 * Values in [-zero_threshold, zero_threshold] go to the zero bucket.
 *
 * One side (positive or negative values) is a dense run of counts from index
 * `offset`: latency distributions fill a contiguous range, and a dense array
 * makes an observation one index computation and one increment. When a
 * series would need more than max_buckets, its schema drops by one (two
 * neighbouring buckets merge), as the Go client does, so memory per series
 * stays bounded whatever is observed.
 *
 * Pure and single-threaded: the registry calls these under its lock.
 */
#ifndef SYSOBS_NHIST_H
#define SYSOBS_NHIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NHIST_SCHEMA_MIN (-4)
#define NHIST_SCHEMA_MAX 8
/* The Go client's default zero threshold: 2^-128. */
#define NHIST_ZERO_THRESHOLD_DEFAULT 2.938735877055719e-39
#define NHIST_MAX_BUCKETS_DEFAULT    160

struct nhist_side {
	int32_t offset; /* index of counts[0] */
	uint32_t len;
	uint64_t *counts;
};

struct nhist {
	int8_t schema;
	uint64_t zero_count;
	struct nhist_side pos, neg;
};

/* Index of the bucket holding v (finite, > 0) in schema. */
int32_t nhist_index(double v, int schema);
/* Upper bound of bucket i in schema: 2^(i/2^schema). */
double nhist_upper(int32_t i, int schema);

/* Counts one observation of v (n times). Non-finite values and values beyond
 * the bucket range are not placed (the caller counts them in count and sum
 * only). max_buckets bounds pos.len + neg.len (merging schema down; never
 * below NHIST_SCHEMA_MIN). -ENOMEM leaves h as it was. */
int nhist_add(struct nhist *h, double v, uint64_t n, double zero_threshold, unsigned max_buckets);
void nhist_free(struct nhist *h);

/*
 * Spans and deltas of one side, as the protobuf wire format wants them: runs
 * of non-empty buckets separated by gaps (gaps of up to 2 empty buckets are
 * cheaper inside a span, as zero deltas, like the Go client does). Writes
 * the spans (offset: gap to the previous span, or the first index; length)
 * and the deltas (each count minus the previous one of the side) into caller
 * arrays of side->len entries; returns the number of spans, *n_deltas the
 * deltas written.
 */
size_t nhist_spans(const struct nhist_side *side, int32_t *span_offset, uint32_t *span_len,
		   int64_t *deltas, size_t *n_deltas);

#endif
