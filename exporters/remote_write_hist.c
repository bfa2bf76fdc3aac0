// SPDX-License-Identifier: MIT
/*
 * A histogram from the metric history on the wire. Classic: the blob on its
 * _count sample (metrics/hist_blob.h) becomes one sample of
 * NAME_bucket{...,le="<bound>"} per bucket, cumulative as in an exposition,
 * so histogram_quantile() works on any receiver. Native ([remote_write]
 * native_histograms): the blob's native buckets become one
 * TimeSeries.histograms entry of NAME, with count and sum, as Prometheus's
 * own remote-write sender sends a native histogram (no _count, _sum or
 * _bucket series beside it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "metrics/hist_blob.h"
#include "exporters/remote_write.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store_samples.h"

/* A bucket series' id in a batch: apart from every history series id
 * (positive, from SQLite) and from the other buckets of its histogram;
 * i == HIST_BLOB_MAX_BUCKETS is the native histogram's series. */
static int64_t rw_bucket_id(int64_t series_id, size_t i)
{
	return -(series_id * (HIST_BLOB_MAX_BUCKETS + 1) + (int64_t)i) - 1;
}

/* NAME_count -> NAME in name[cap]; -EINVAL for another name. */
static int rw_hist_name(const char *count_name, char *name, size_t cap)
{
	size_t nlen = strlen(count_name);

	if (nlen < 6 || strcmp(count_name + nlen - 6, "_count") || nlen - 6 + 8 > cap)
		return -EINVAL;
	snprintf(name, cap, "%.*s", (int)(nlen - 6), count_name);
	return 0;
}

int rw_batch_add_buckets(struct rw_batch *b, int64_t series_id, const char *count_name,
			 const char *labels, int64_t ts_ms, const void *blob, size_t len)
{
	struct hist_blob_bucket bk[HIST_BLOB_MAX_BUCKETS];
	size_t n, llen = strlen(labels);
	char name[256], lbl[1024];
	int err;

	if (rw_hist_name(count_name, name, sizeof(name)) ||
	    hist_blob_decode(blob, len, bk, HIST_BLOB_MAX_BUCKETS, &n)) {
		b->invalid++;
		return -EINVAL;
	}
	strcat(name, "_bucket");
	/* `{a="b"}` -> `{a="b",le="x"}`; "" -> `{le="x"}`. */
	if (llen && (llen < 2 || labels[llen - 1] != '}')) {
		b->invalid++;
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		int w = llen > 2 ? snprintf(lbl, sizeof(lbl), "%.*s,le=\"%s\"}", (int)(llen - 1),
					    labels, bk[i].le)
				 : snprintf(lbl, sizeof(lbl), "{le=\"%s\"}", bk[i].le);

		if (w < 0 || (size_t)w >= sizeof(lbl)) {
			b->invalid++;
			return -EINVAL;
		}
		err = rw_batch_add(b, rw_bucket_id(series_id, i), name, lbl, ts_ms,
				   (double)bk[i].cumulative);
		if (err)
			return err;
	}
	return 0;
}

int rw_batch_add_native(struct rw_batch *b, int64_t series_id, const char *count_name,
			const char *labels, int64_t ts_ms, const void *blob, size_t len)
{
	uint64_t tmp[2 * HIST_BLOB_NATIVE_MAX];
	struct hist_blob_native *h;
	uint64_t *counts;
	char name[256];
	size_t n;
	int err;

	if (rw_hist_name(count_name, name, sizeof(name))) {
		b->invalid++;
		return -EINVAL;
	}
	h = arena_alloc(&b->arena, sizeof(*h));
	if (!h)
		return -ENOMEM;
	err = hist_blob_decode_native(blob, len, h, tmp, 2 * HIST_BLOB_NATIVE_MAX);
	if (err == -EINVAL)
		b->invalid++;
	if (err)
		return err;
	/* The counts, from the stack into the batch's arena. */
	n = h->pos.len + h->neg.len;
	counts = arena_alloc(&b->arena, (n ? n : 1) * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	memcpy(counts, tmp, n * sizeof(*counts));
	h->pos.counts = counts;
	h->neg.counts = counts + h->pos.len;
	err = rw_batch_add_hist(b, rw_bucket_id(series_id, HIST_BLOB_MAX_BUCKETS), name, labels,
				ts_ms, h);
	if (err)
		return err;
	b->n_native++;
	/* The _sum row that follows is in the histogram already. */
	if (strlen(labels) < sizeof(b->native_sum_labels)) {
		snprintf(b->native_sum_name, sizeof(b->native_sum_name), "%s_sum", name);
		strcpy(b->native_sum_labels, labels);
		b->native_sum_ts = ts_ms;
	}
	return 0;
}

static bool rw_batch_native_sum(const struct rw_batch *b, const char *name, const char *labels,
				int64_t ts_ms)
{
	return b->native_sum_name[0] && ts_ms == b->native_sum_ts &&
	       !strcmp(name, b->native_sum_name) && !strcmp(labels, b->native_sum_labels);
}

/* One side's spans and deltas into arena arrays (nhist_spans, as the
 * /metrics protobuf encoder does). */
static int rw_hist_side(struct arena *a, const struct nhist_side *side, size_t *n_spans,
			Prometheus__BucketSpan ***spans, size_t *n_deltas, int64_t **deltas)
{
	size_t cap = side->len ? side->len : 1, n;
	int32_t *off = arena_alloc(a, cap * sizeof(*off));
	uint32_t *len = arena_alloc(a, cap * sizeof(*len));
	Prometheus__BucketSpan *sp = arena_alloc(a, cap * sizeof(*sp));

	*spans = arena_alloc(a, cap * sizeof(**spans));
	*deltas = arena_alloc(a, cap * sizeof(**deltas));
	if (!off || !len || !sp || !*spans || !*deltas)
		return -ENOMEM;
	n = nhist_spans(side, off, len, *deltas, n_deltas);
	for (size_t i = 0; i < n; i++) {
		prometheus__bucket_span__init(&sp[i]);
		sp[i].offset = off[i];
		sp[i].length = len[i];
		(*spans)[i] = &sp[i];
	}
	*n_spans = n;
	return 0;
}

Prometheus__Histogram *rw_hist_pb(struct arena *a, const struct hist_blob_native *h, int64_t ts_ms)
{
	Prometheus__Histogram *p = arena_alloc(a, sizeof(*p));

	if (!p)
		return NULL;
	prometheus__histogram__init(p);
	p->count_case = PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT;
	p->count_int = h->count;
	p->sum = h->sum;
	p->schema = h->schema;
	p->zero_threshold = h->zero_threshold;
	p->zero_count_case = PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_INT;
	p->zero_count_int = h->zero_count;
	p->timestamp = ts_ms;
	if (rw_hist_side(a, &h->pos, &p->n_positive_spans, &p->positive_spans,
			 &p->n_positive_deltas, &p->positive_deltas) ||
	    rw_hist_side(a, &h->neg, &p->n_negative_spans, &p->negative_spans,
			 &p->n_negative_deltas, &p->negative_deltas))
		return NULL;
	return p;
}

int rw_batch_add_history(struct rw_batch *b, bool native, const struct store_sample *smp,
			 int64_t ts_ms)
{
	int err;

	if (native && smp->blob && smp->blob_len) {
		err = rw_batch_add_native(b, smp->series_id, smp->name, smp->labels, ts_ms,
					  smp->blob, smp->blob_len);
		if (err != -ENOENT)
			return err;
		b->native_sum_name[0] = '\0'; /* its _sum goes out: classic */
	} else if (native && rw_batch_native_sum(b, smp->name, smp->labels, ts_ms)) {
		return 0;
	}
	err = rw_batch_add(b, smp->series_id, smp->name, smp->labels, ts_ms, smp->value);
	if (!err && smp->blob && smp->blob_len)
		err = rw_batch_add_buckets(b, smp->series_id, smp->name, smp->labels, ts_ms,
					   smp->blob, smp->blob_len);
	return err;
}
