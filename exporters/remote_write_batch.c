// SPDX-License-Identifier: MIT
/*
 * The remote-write request, without I/O: label sets (the rendered series
 * labels of the history, external and identity labels), Retry-After and
 * backoff, and the batch of samples encoded as one snappy-compressed
 * WriteRequest. Pure functions, unit-tested (tests/unit/test_remote_write*.c)
 * and fuzzed (tests/fuzz/fuzz_rw_input.c); the sender is remote_write.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/lazylib.h"
#include "metrics/hist_blob.h"
#include "exporters/remote_write.h"
#include "exporters/proto/prometheus/remote.pb-c.h"

/* ---- label sets ---- */

static bool rw_label_name_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

int rw_labels_parse(const char *rendered, struct arena *a, struct rw_label *out, size_t max,
		    size_t *n)
{
	const char *p = rendered;

	*n = 0;
	if (!*p)
		return 0;
	if (*p++ != '{')
		return -EINVAL;
	if (*p == '}')
		return p[1] ? -EINVAL : 0;
	for (;;) {
		const char *name = p, *v;
		size_t nlen, vlen = 0;
		char *val;

		while (*p && *p != '=')
			p++;
		nlen = (size_t)(p - name);
		if (*p != '=' || p[1] != '"' || !rw_label_name_ok(name, nlen))
			return -EINVAL;
		p += 2;
		/* Unescaped length first, then the copy. */
		for (v = p; *v && *v != '"'; v++, vlen++)
			if (*v == '\\' && !*++v)
				return -EINVAL;
		if (*v != '"')
			return -EINVAL;
		val = arena_alloc(a, vlen + 1);
		if (!val)
			return -ENOMEM;
		for (size_t i = 0; p < v; p++) {
			if (*p == '\\') {
				p++;
				if (*p == 'n')
					val[i++] = '\n';
				else if (*p == '\\' || *p == '"')
					val[i++] = *p;
				else
					return -EINVAL;
			} else {
				val[i++] = *p;
			}
		}
		p = v + 1;
		if (vlen) { /* an empty value is an absent label */
			char *nm = arena_strndup(a, name, nlen);

			if (!nm)
				return -ENOMEM;
			if (*n >= max)
				return -EINVAL;
			for (size_t i = 0; i < *n; i++)
				if (!strcmp(out[i].name, nm))
					return -EINVAL;
			out[*n].name = nm;
			out[*n].value = val;
			(*n)++;
		}
		if (*p == '}')
			return p[1] ? -EINVAL : 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

int rw_external_labels_parse(char *text, struct rw_label *out, size_t max, size_t *n,
			     const char **why)
{
	char *save = NULL;

	*n = 0;
	for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *k, *v;

		if (!*cfg_trim(tok))
			continue;
		if (cfg_kv_split(tok, &k, &v)) {
			*why = "expected NAME=VALUE, NAME2=VALUE2";
			return -EINVAL;
		}
		if (!rw_label_name_ok(k, strlen(k)) || !strncmp(k, "__", 2)) {
			*why = "a label name is [a-zA-Z_][a-zA-Z0-9_]* and does not start with __";
			return -EINVAL;
		}
		if (!*v) {
			*why = "a label value must not be empty";
			return -EINVAL;
		}
		for (size_t i = 0; i < *n; i++)
			if (!strcmp(out[i].name, k)) {
				*why = "a label name is given twice";
				return -EINVAL;
			}
		if (*n >= max) {
			*why = "too many labels";
			return -EINVAL;
		}
		out[*n].name = k;
		out[(*n)++].value = v;
	}
	return 0;
}

static int rw_label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rw_label *)a)->name, ((const struct rw_label *)b)->name);
}

void rw_labels_sort(struct rw_label *l, size_t n)
{
	qsort(l, n, sizeof(*l), rw_label_cmp);
}

/* ---- batch ---- */

struct rw_row {
	int64_t ts_ms;
	double value;
	const struct hist_blob_native *hist; /* a native histogram, not value */
	uint32_t series;
};

struct rw_series {
	struct hash_node node; /* in rw_batch.by_id */
	int64_t id;
	const char *name;
	struct rw_label *labels;
	size_t n_labels;
	size_t count, start; /* rows of this series, then their offset in order[] */
};

int rw_batch_init(struct rw_batch *b, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
	b->rows = calloc(cap, sizeof(*b->rows));
	b->series = calloc(cap, sizeof(*b->series));
	/* never grows: a batch has at most cap series */
	if (!b->rows || !b->series || hash_init(&b->by_id, 2 * cap)) {
		rw_batch_free(b);
		return -ENOMEM;
	}
	return 0;
}

void rw_batch_reset(struct rw_batch *b)
{
	arena_free(&b->arena);
	b->arena.oom = false;
	b->n_rows = b->n_series = 0;
	b->invalid = 0;
	b->n_native = 0;
	b->body_len = 0;
	hash_reset(&b->by_id);
}

void rw_batch_free(struct rw_batch *b)
{
	arena_free(&b->arena);
	free(b->rows);
	free(b->series);
	hash_fini(&b->by_id);
	free(b->pb);
	free(b->body);
	memset(b, 0, sizeof(*b));
}

static uint64_t rw_series_hash(int64_t id)
{
	return ((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 32;
}

static struct rw_series *rw_series_find(const struct rw_batch *b, int64_t id, uint64_t h)
{
	for (struct hash_node *n = hash_chain(&b->by_id, h); n; n = n->next) {
		struct rw_series *s = hash_entry(n, struct rw_series, node);

		if (s->id == id)
			return s;
	}
	return NULL;
}

static int rw_batch_add_row(struct rw_batch *b, int64_t series_id, const char *name,
			    const char *labels, int64_t ts_ms, double value,
			    const struct hist_blob_native *hist)
{
	uint64_t h = rw_series_hash(series_id);
	struct rw_label tmp[RW_MAX_LABELS];
	struct rw_series *s;
	size_t n;
	int err;

	if (b->n_rows >= b->cap)
		return -ENOSPC;
	s = rw_series_find(b, series_id, h);
	if (!s) {
		s = &b->series[b->n_series];
		/* One label fewer than the cap: __name__ joins them. */
		err = rw_labels_parse(labels, &b->arena, tmp, RW_MAX_LABELS - 1, &n);
		if (err == -EINVAL || !*name)
			b->invalid++;
		if (err || !*name)
			return err ? err : -EINVAL;
		memset(s, 0, sizeof(*s));
		s->id = series_id;
		s->name = arena_strdup(&b->arena, name);
		s->labels = arena_alloc(&b->arena, (n ? n : 1) * sizeof(*s->labels));
		if (!s->name || !s->labels)
			return -ENOMEM;
		memcpy(s->labels, tmp, n * sizeof(*tmp));
		s->n_labels = n;
		hash_add(&b->by_id, &s->node, h);
		b->n_series++;
	}
	b->rows[b->n_rows].series = (uint32_t)(s - b->series);
	b->rows[b->n_rows].ts_ms = ts_ms;
	b->rows[b->n_rows].value = value;
	b->rows[b->n_rows].hist = hist;
	s->count++;
	b->n_rows++;
	return 0;
}

int rw_batch_add(struct rw_batch *b, int64_t series_id, const char *name, const char *labels,
		 int64_t ts_ms, double value)
{
	return rw_batch_add_row(b, series_id, name, labels, ts_ms, value, NULL);
}

int rw_batch_add_hist(struct rw_batch *b, int64_t series_id, const char *name, const char *labels,
		      int64_t ts_ms, const struct hist_blob_native *h)
{
	return rw_batch_add_row(b, series_id, name, labels, ts_ms, 0, h);
}

/* Timestamp order; rows of equal timestamps keep their commit order. */
static int rw_order_cmp(const void *a, const void *b, void *arg)
{
	const struct rw_row *rows = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int64_t tx = rows[x].ts_ms, ty = rows[y].ts_ms;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The labels of one series on the wire: __name__, its own, then every
 * external label it does not have; sorted. */
static int rw_series_labels(struct rw_batch *b, const struct rw_series *s,
			    const struct rw_label *ext, size_t n_ext, Prometheus__TimeSeries *ts)
{
	size_t n = 0, cap = s->n_labels + 1 + n_ext;
	struct rw_label *l = arena_alloc(&b->arena, cap * sizeof(*l));
	Prometheus__Label *pl = arena_alloc(&b->arena, cap * sizeof(*pl));
	Prometheus__Label **pp = arena_alloc(&b->arena, cap * sizeof(*pp));

	if (!l || !pl || !pp)
		return -ENOMEM;
	l[n].name = "__name__";
	l[n++].value = s->name;
	for (size_t i = 0; i < s->n_labels; i++)
		l[n++] = s->labels[i];
	for (size_t e = 0; e < n_ext; e++) {
		bool have = false;

		for (size_t i = 0; i < s->n_labels && !have; i++)
			have = !strcmp(s->labels[i].name, ext[e].name);
		if (!have)
			l[n++] = ext[e];
	}
	rw_labels_sort(l, n);
	for (size_t i = 0; i < n; i++) {
		prometheus__label__init(&pl[i]);
		pl[i].name = (char *)l[i].name;
		pl[i].value = (char *)l[i].value;
		pp[i] = &pl[i];
	}
	ts->labels = pp;
	ts->n_labels = n;
	return 0;
}

/* The arrays of one encoding, in the batch's arena: a row order, then per
 * series its TimeSeries, and the samples and histograms of all series, each
 * series' run from where the previous one ended (k, nh). */
struct rw_enc {
	uint32_t *order;
	Prometheus__TimeSeries *ts, **tsp;
	Prometheus__Sample *sm, **smp;
	Prometheus__Histogram **hp;
	size_t k, nh;
};

static int rw_enc_alloc(struct rw_batch *b, struct rw_enc *e)
{
	size_t rows = b->n_rows ? b->n_rows : 1, series = b->n_series ? b->n_series : 1;

	memset(e, 0, sizeof(*e));
	e->order = arena_alloc(&b->arena, rows * sizeof(*e->order));
	e->ts = arena_alloc(&b->arena, series * sizeof(*e->ts));
	e->tsp = arena_alloc(&b->arena, series * sizeof(*e->tsp));
	e->sm = arena_alloc(&b->arena, rows * sizeof(*e->sm));
	e->smp = arena_alloc(&b->arena, rows * sizeof(*e->smp));
	e->hp = arena_alloc(&b->arena, rows * sizeof(*e->hp));
	if (!e->order || !e->ts || !e->tsp || !e->sm || !e->smp || !e->hp)
		return -ENOMEM;
	return 0;
}

/* Rows by series, commit order within each (a counting sort), then each
 * series' rows in timestamp order: snapshots commit in time order, a clock
 * step back is what would break it, and the spec wants timestamp order. */
static void rw_batch_order(struct rw_batch *b, uint32_t *order)
{
	size_t off = 0;

	for (size_t i = 0; i < b->n_series; i++) {
		b->series[i].start = off;
		off += b->series[i].count;
		b->series[i].count = 0;
	}
	for (size_t r = 0; r < b->n_rows; r++) {
		struct rw_series *s = &b->series[b->rows[r].series];

		order[s->start + s->count++] = (uint32_t)r;
	}
	for (size_t i = 0; i < b->n_series; i++) {
		const struct rw_series *s = &b->series[i];
		uint32_t *o = order + s->start;

		for (size_t j = 1; j < s->count; j++)
			if (b->rows[o[j]].ts_ms < b->rows[o[j - 1]].ts_ms) {
				qsort_r(o, s->count, sizeof(*o), rw_order_cmp, b->rows);
				break;
			}
	}
}

/* The samples (or native histograms: a series is all histograms or none)
 * of one series, appended at e->k (e->nh). Of rows with equal timestamps
 * the later is kept: the receiver would refuse the second as a duplicate. */
static int rw_series_points(struct rw_batch *b, const struct rw_series *s, struct rw_enc *e)
{
	const uint32_t *o = e->order + s->start;
	size_t first = e->k, first_h = e->nh;

	for (size_t j = 0; j < s->count; j++) {
		const struct rw_row *r = &b->rows[o[j]];

		if (r->hist) {
			if (e->nh > first_h && e->hp[e->nh - 1]->timestamp == r->ts_ms)
				e->nh--;
			e->hp[e->nh] = rw_hist_pb(&b->arena, r->hist, r->ts_ms);
			if (!e->hp[e->nh++])
				return -ENOMEM;
			continue;
		}
		if (e->k > first && e->sm[e->k - 1].timestamp == r->ts_ms) {
			e->sm[e->k - 1].value = r->value;
			continue;
		}
		prometheus__sample__init(&e->sm[e->k]);
		e->sm[e->k].timestamp = r->ts_ms;
		e->sm[e->k].value = r->value;
		e->smp[e->k] = &e->sm[e->k];
		e->k++;
	}
	return 0;
}

/* The request packed, then snappy-compressed into b->body. */
static int rw_batch_pack(struct rw_batch *b, const struct lazylib_snappy *sn,
			 const Prometheus__WriteRequest *wr)
{
	size_t packed = prometheus__write_request__get_packed_size(wr);
	size_t zlen = sn->max_compressed_length(packed);

	if (bytes_reserve(&b->pb, &b->pb_cap, packed ? packed : 1) ||
	    bytes_reserve(&b->body, &b->body_cap, zlen))
		return -ENOMEM;
	prometheus__write_request__pack(wr, b->pb);
	if (sn->compress((const char *)b->pb, packed, (char *)b->body, &zlen) != SNAPPY_OK)
		return -ENOMEM;
	b->body_len = zlen;
	return 0;
}

int rw_batch_encode(struct rw_batch *b, const struct rw_label *ext, size_t n_ext, size_t *n_samples)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	/* Loaded by remote_write's config check (base/lazylib.h). */
	const struct lazylib_snappy *sn = lazylib_snappy(NULL);
	struct rw_enc e;

	*n_samples = 0;
	if (!sn)
		return -ENOENT;
	b->body_len = 0;
	if (rw_enc_alloc(b, &e))
		return -ENOMEM;
	rw_batch_order(b, e.order);
	for (size_t i = 0; i < b->n_series; i++) {
		Prometheus__TimeSeries *ts = &e.ts[i];
		size_t first = e.k, first_h = e.nh;

		if (rw_series_points(b, &b->series[i], &e))
			return -ENOMEM;
		prometheus__time_series__init(ts);
		ts->samples = e.smp + first;
		ts->n_samples = e.k - first;
		ts->histograms = e.hp + first_h;
		ts->n_histograms = e.nh - first_h;
		if (rw_series_labels(b, &b->series[i], ext, n_ext, ts))
			return -ENOMEM;
		e.tsp[i] = ts;
	}
	wr.timeseries = e.tsp;
	wr.n_timeseries = b->n_series;
	if (rw_batch_pack(b, sn, &wr))
		return -ENOMEM;
	*n_samples = e.k + e.nh;
	return 0;
}
