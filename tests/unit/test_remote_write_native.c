// SPDX-License-Identifier: MIT
/*
 * remote_write native histograms: the history blob with native buckets
 * round-trips (negative buckets, the zero bucket, empty buckets inside the
 * range, a histogram without observations), a blob of the classic layout
 * (the only one before the kind byte) still decodes and has no native part,
 * any truncation is refused; on the wire a native histogram is one
 * TimeSeries.histograms entry of NAME whose spans and deltas expand back to
 * the registry's buckets, with its _sum row left out; from a registry
 * through a snapshot, the store and the sender, the count and the buckets
 * arrive as observed.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "metrics/hist_blob.h"
#include "exporters/remote_write.h"
#include "agent/snapshot.h"
#include "metrics/metrics.h"
#include "metrics/nhist.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store.h"
#include "storage/store_samples.h"

static const char *const le[] = {"0.5", "2", "+Inf"};

/* 0 twice (the zero bucket), -3 and -0.5 (negative buckets), 1 and 1.1
 * (neighbours), 1000 (a gap of empty buckets before it). */
static const double obs[] = {0, 0, -3, -0.5, 1, 1.1, 1000};

static void build(struct nhist *h, uint64_t classic[3])
{
	memset(h, 0, sizeof(*h));
	h->schema = 3;
	classic[0] = classic[1] = classic[2] = 0;
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
		assert_int_equal(nhist_add(h, obs[i], 1, NHIST_ZERO_THRESHOLD_DEFAULT, 160), 0);
		classic[obs[i] <= 0.5 ? 0 : obs[i] <= 2 ? 1 : 2]++;
	}
}

static struct hist_blob_native as_blob(const struct nhist *h, double sum)
{
	return (struct hist_blob_native){
	    .schema = h->schema,
	    .zero_threshold = NHIST_ZERO_THRESHOLD_DEFAULT,
	    .sum = sum,
	    .zero_count = h->zero_count,
	    .pos = h->pos,
	    .neg = h->neg,
	};
}

static void assert_side_equal(const struct nhist_side *a, const struct nhist_side *b)
{
	assert_int_equal(a->offset, b->offset);
	assert_int_equal(a->len, b->len);
	for (uint32_t i = 0; i < a->len; i++)
		assert_int_equal(a->counts[i], b->counts[i]);
}

static void test_native_blob_round_trip(void **state)
{
	struct nhist h;
	uint64_t classic[3], counts[256];
	struct hist_blob_native in, out;
	struct hist_blob_bucket bk[4];
	uint8_t blob[256];
	size_t len, n;

	build(&h, classic);
	assert_true(h.neg.len > 0);
	assert_true(h.pos.len > 20); /* 1.1 .. 1000: empty buckets between */
	in = as_blob(&h, 998.6);
	len = hist_blob_encode_native(le, classic, 3, &in, blob, sizeof(blob));
	assert_true(len > 0);
	assert_int_equal(blob[0], HIST_BLOB_KIND_NATIVE);
	assert_int_equal(hist_blob_decode_native(blob, len, &out, counts, 256), 0);
	assert_int_equal(out.schema, 3);
	assert_true(out.zero_threshold == NHIST_ZERO_THRESHOLD_DEFAULT);
	assert_true(out.sum == 998.6);
	assert_int_equal(out.count, 7);
	assert_int_equal(out.zero_count, 2);
	assert_side_equal(&out.pos, &h.pos);
	assert_side_equal(&out.neg, &h.neg);
	/* The classic part reads as before. */
	assert_int_equal(hist_blob_decode(blob, len, bk, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(bk[1].le, "2");
	assert_int_equal(bk[1].cumulative, 6);
	assert_int_equal(bk[2].cumulative, 7);
	/* Every truncation, a byte too many, too little room: refused. */
	for (size_t l = 0; l < len; l++)
		assert_int_equal(hist_blob_decode_native(blob, l, &out, counts, 256), -EINVAL);
	blob[len] = 0;
	assert_int_equal(hist_blob_decode_native(blob, len + 1, &out, counts, 256), -EINVAL);
	assert_int_equal(hist_blob_decode_native(blob, len, &out, counts, h.pos.len), -EINVAL);
	/* A schema out of range. */
	in.schema = 9;
	len = hist_blob_encode_native(le, classic, 3, &in, blob, sizeof(blob));
	assert_int_equal(hist_blob_decode_native(blob, len, &out, counts, 256), -EINVAL);
	/* Too small a buffer: nothing. */
	assert_int_equal(hist_blob_encode_native(le, classic, 3, &in, blob, 20), 0);
	nhist_free(&h);
}

static void test_classic_blob_has_no_native_part(void **state)
{
	static const uint64_t classic[] = {1, 2, 3};
	struct hist_blob_native out;
	uint64_t counts[4];
	uint8_t blob[64], old[64];
	size_t len = hist_blob_encode_native(le, classic, 3, NULL, blob, sizeof(blob));

	/* Without native buckets, the bytes of a blob before the kind byte. */
	assert_int_equal(hist_blob_encode(le, classic, 3, old, sizeof(old)), len);
	assert_memory_equal(blob, old, len);
	assert_memory_equal(blob, "0.5,2\0\1\2\3", len);
	assert_int_equal(hist_blob_decode_native(blob, len, &out, counts, 4), -ENOENT);
	assert_int_equal(hist_blob_decode_native(blob, len - 1, &out, counts, 4), -EINVAL);
}

static void test_empty_native_histogram(void **state)
{
	static const uint64_t classic[] = {0, 0, 0};
	struct hist_blob_native in = {.schema = -4, .zero_threshold = 0.001}, out;
	uint64_t counts[4];
	uint8_t blob[64];
	size_t len = hist_blob_encode_native(le, classic, 3, &in, blob, sizeof(blob));
	struct arena a = {0};
	Prometheus__Histogram *p;

	assert_int_equal(hist_blob_decode_native(blob, len, &out, counts, 4), 0);
	assert_int_equal(out.schema, -4);
	assert_int_equal(out.count, 0);
	assert_int_equal(out.pos.len + out.neg.len, 0);
	p = rw_hist_pb(&a, &out, 5000);
	assert_non_null(p);
	assert_int_equal(p->n_positive_spans + p->n_negative_spans, 0);
	assert_int_equal(p->count_case, PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT);
	assert_int_equal(p->count_int, 0);
	assert_int_equal(p->schema, -4);
	assert_int_equal(p->timestamp, 5000);
	arena_free(&a);
}

static Prometheus__WriteRequest *decode(const struct rw_batch *b)
{
	size_t n = 0;
	char *raw;
	Prometheus__WriteRequest *wr;

	assert_int_equal(snappy_uncompressed_length((const char *)b->body, b->body_len, &n),
			 SNAPPY_OK);
	raw = malloc(n ? n : 1);
	assert_non_null(raw);
	assert_int_equal(snappy_uncompress((const char *)b->body, b->body_len, raw, &n), SNAPPY_OK);
	wr = prometheus__write_request__unpack(NULL, n, (const uint8_t *)raw);
	free(raw);
	assert_non_null(wr);
	return wr;
}

static const char *label(const Prometheus__TimeSeries *ts, const char *name)
{
	for (size_t i = 0; i < ts->n_labels; i++)
		if (!strcmp(ts->labels[i]->name, name))
			return ts->labels[i]->value;
	return "";
}

/* Spans and deltas back into a dense side, as a receiver reads them: each
 * bucket of index idx with its count into counts[idx - base]. */
static void expand(Prometheus__BucketSpan **sp, size_t n_sp, const int64_t *d, size_t n_d,
		   int32_t base, uint64_t *counts, size_t max)
{
	int32_t idx = 0;
	int64_t c = 0;
	size_t k = 0;

	memset(counts, 0, max * sizeof(*counts));
	for (size_t i = 0; i < n_sp; i++) {
		idx += sp[i]->offset;
		for (uint32_t j = 0; j < sp[i]->length; j++, idx++) {
			assert_true(k < n_d);
			c += d[k++];
			assert_true(c >= 0);
			assert_true(idx - base >= 0 && (size_t)(idx - base) < max);
			counts[idx - base] = (uint64_t)c;
		}
	}
	assert_int_equal(k, n_d);
}

static void assert_hist_matches(const Prometheus__Histogram *p, const struct nhist *h)
{
	uint64_t c[256];

	assert_int_equal(p->schema, h->schema);
	assert_int_equal(p->zero_count_case, PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_INT);
	assert_int_equal(p->zero_count_int, h->zero_count);
	assert_true(p->zero_threshold == NHIST_ZERO_THRESHOLD_DEFAULT);
	expand(p->positive_spans, p->n_positive_spans, p->positive_deltas, p->n_positive_deltas,
	       h->pos.offset, c, 256);
	for (uint32_t i = 0; i < h->pos.len; i++)
		assert_int_equal(c[i], h->pos.counts[i]);
	expand(p->negative_spans, p->n_negative_spans, p->negative_deltas, p->n_negative_deltas,
	       h->neg.offset, c, 256);
	for (uint32_t i = 0; i < h->neg.len; i++)
		assert_int_equal(c[i], h->neg.counts[i]);
}

static void add_rows(struct rw_batch *b, bool native, const uint8_t *blob, size_t len)
{
	struct store_sample count = {.series_id = 4,
				     .name = "x_seconds_count",
				     .labels = "{route=\"/a\"}",
				     .value = 7,
				     .blob = blob,
				     .blob_len = len};
	struct store_sample sum = {
	    .series_id = 5, .name = "x_seconds_sum", .labels = "{route=\"/a\"}", .value = 998.6};
	struct store_sample up = {.series_id = 6, .name = "up", .labels = "", .value = 1};

	assert_int_equal(rw_batch_add_history(b, native, &count, 2000), 0);
	assert_int_equal(rw_batch_add_history(b, native, &sum, 2000), 0);
	assert_int_equal(rw_batch_add_history(b, native, &up, 2000), 0);
}

static void test_native_histogram_on_the_wire(void **state)
{
	struct nhist h;
	uint64_t classic[3];
	struct hist_blob_native in;
	uint8_t blob[256], old[64];
	size_t len, old_len, n;
	struct rw_batch b;
	Prometheus__WriteRequest *wr;
	Prometheus__Histogram *p;

	build(&h, classic);
	in = as_blob(&h, 998.6);
	len = hist_blob_encode_native(le, classic, 3, &in, blob, sizeof(blob));
	assert_int_equal(rw_batch_init(&b, 300), 0);

	/* native_histograms: one histogram of x_seconds, no _sum, up kept. */
	add_rows(&b, true, blob, len);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 2);
	wr = decode(&b);
	assert_int_equal(wr->n_timeseries, 2);
	assert_string_equal(label(wr->timeseries[0], "__name__"), "x_seconds");
	assert_string_equal(label(wr->timeseries[0], "route"), "/a");
	assert_int_equal(wr->timeseries[0]->n_samples, 0);
	assert_int_equal(wr->timeseries[0]->n_histograms, 1);
	p = wr->timeseries[0]->histograms[0];
	assert_int_equal(p->timestamp, 2000);
	assert_int_equal(p->count_case, PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT);
	assert_int_equal(p->count_int, 7);
	assert_true(p->sum == 998.6);
	assert_true(p->n_negative_spans > 0);
	assert_true(p->n_positive_spans > 1); /* the gap before 1000 */
	assert_hist_matches(p, &h);
	assert_string_equal(label(wr->timeseries[1], "__name__"), "up");
	prometheus__write_request__free_unpacked(wr, NULL);

	/* Off: the classic form from the same rows. */
	rw_batch_reset(&b);
	add_rows(&b, false, blob, len);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 1 + 3 + 1 + 1); /* _count, 3 _bucket, _sum, up */
	wr = decode(&b);
	assert_string_equal(label(wr->timeseries[1], "__name__"), "x_seconds_bucket");
	for (size_t i = 0; i < wr->n_timeseries; i++)
		assert_int_equal(wr->timeseries[i]->n_histograms, 0);
	prometheus__write_request__free_unpacked(wr, NULL);

	/* On, but a blob without native buckets: classic, _sum included. */
	rw_batch_reset(&b);
	old_len = hist_blob_encode(le, classic, 3, old, sizeof(old));
	add_rows(&b, true, old, old_len);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 6);
	rw_batch_free(&b);
	nhist_free(&h);
}

/* A series' native histograms go out in timestamp order (a clock step back
 * reorders them), and of two with equal timestamps the later committed one,
 * as for samples: the receiver would refuse the second as a duplicate. */
static void test_native_histograms_in_time_order_later_kept(void **state)
{
	struct nhist h;
	uint64_t classic[3];
	struct hist_blob_native first, back, again;
	struct rw_batch b;
	Prometheus__WriteRequest *wr;
	Prometheus__TimeSeries *ts;
	size_t n;

	build(&h, classic);
	first = as_blob(&h, 1);
	back = as_blob(&h, 2);
	again = as_blob(&h, 3);
	assert_int_equal(rw_batch_init(&b, 8), 0);
	assert_int_equal(rw_batch_add_hist(&b, 4, "x_seconds", "{route=\"/a\"}", 3000, &first), 0);
	assert_int_equal(rw_batch_add(&b, 6, "up", "", 3000, 1), 0);
	assert_int_equal(rw_batch_add_hist(&b, 4, "x_seconds", "{route=\"/a\"}", 2000, &back), 0);
	assert_int_equal(rw_batch_add_hist(&b, 4, "x_seconds", "{route=\"/a\"}", 3000, &again), 0);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 3); /* 2 histograms, 1 sample */
	wr = decode(&b);
	assert_int_equal(wr->n_timeseries, 2);
	ts = wr->timeseries[0];
	assert_string_equal(label(ts, "__name__"), "x_seconds");
	assert_int_equal(ts->n_samples, 0);
	assert_int_equal(ts->n_histograms, 2);
	assert_int_equal(ts->histograms[0]->timestamp, 2000);
	assert_true(ts->histograms[0]->sum == 2);
	assert_int_equal(ts->histograms[1]->timestamp, 3000);
	assert_true(ts->histograms[1]->sum == 3);
	assert_hist_matches(ts->histograms[1], &h);
	assert_int_equal(wr->timeseries[1]->n_samples, 1);
	assert_int_equal(wr->timeseries[1]->n_histograms, 0);
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_batch_free(&b);
	nhist_free(&h);
}

/* The store's rows into a batch, as the sender reads them. */
static int to_batch(const struct store_sample *smp, void *arg)
{
	return rw_batch_add_history(arg, true, smp, smp->ts_ns / 1000000);
}

static void test_registry_to_wire_through_the_history(void **state)
{
	char dir[] = "/tmp/test_rw_native.XXXXXX", path[128], err[256], cmd[160];
	struct store_config cfg = {.batch_ms = 10};
	struct metrics *m = metrics_new();
	struct metric *f;
	struct metric_series *s;
	struct nhist want = {.schema = 3};
	struct rw_batch b;
	struct store *st;
	Prometheus__WriteRequest *wr;
	const Prometheus__TimeSeries *ts = NULL;
	size_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sysobs.db", dir);
	cfg.path = path;
	st = store_open(&cfg, NULL, err, sizeof(err));
	assert_non_null(st);
	assert_int_equal(store_start(st), 0);
	f = metrics_histogram(m, "lat_seconds", "L.", (const char *const[]){"op", NULL},
			      (const double[]){0.001, 0.01, 0.1}, 3);
	s = metric_series(f, (const char *const[]){"read"});
	assert_non_null(s);
	for (int i = 0; i < 200; i++) {
		double v = 0.0001 * (1 + i * i % 997);

		series_observe(s, v);
		assert_int_equal(nhist_add(&want, v, 1, NHIST_ZERO_THRESHOLD_DEFAULT, 160), 0);
	}
	assert_int_equal(agent_snapshot(m, st, NULL, 3000000000ll), 0);
	assert_int_equal(store_flush(st), 0);

	assert_int_equal(rw_batch_init(&b, 300), 0);
	assert_int_equal(store_samples_after(st, 0, 100, to_batch, &b), 0);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	wr = decode(&b);
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const char *name = label(wr->timeseries[i], "__name__");

		assert_true(strncmp(name, "lat_seconds_", 12)); /* no _count, _sum, _bucket */
		if (!strcmp(name, "lat_seconds"))
			ts = wr->timeseries[i];
	}
	assert_non_null(ts);
	assert_string_equal(label(ts, "op"), "read");
	assert_int_equal(ts->n_histograms, 1);
	assert_int_equal(ts->histograms[0]->count_int, 200);
	assert_int_equal(ts->histograms[0]->timestamp, 3000);
	assert_hist_matches(ts->histograms[0], &want);
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_batch_free(&b);
	nhist_free(&want);
	store_close(st);
	metrics_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_native_blob_round_trip),
	    cmocka_unit_test(test_classic_blob_has_no_native_part),
	    cmocka_unit_test(test_empty_native_histogram),
	    cmocka_unit_test(test_native_histogram_on_the_wire),
	    cmocka_unit_test(test_native_histograms_in_time_order_later_kept),
	    cmocka_unit_test(test_registry_to_wire_through_the_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
