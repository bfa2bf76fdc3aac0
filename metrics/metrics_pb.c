/* SPDX-License-Identifier: MIT */
/*
 * The protobuf encoder of the registry: each family as one
 * io.prometheus.client.MetricFamily (api/proto/prometheus/metrics.proto)
 * packed by protobuf-c, preceded by its length as a varint ("delimited").
 *
 * Histograms carry both bucket kinds, as the Go client sends them: the
 * classic cumulative buckets (without +Inf, which sample_count implies) with
 * their exemplars, and the native schema, zero bucket, spans and deltas. A
 * native histogram always has a zero threshold set, so Prometheus reads it as
 * native even before its first observation.
 *
 * Messages are built in an arena per family and point into the registry's
 * own strings: everything happens under the registry lock.
 */
#include <errno.h>
#include <string.h>

#include "base/arena.h"
#include "metrics/metrics_internal.h"
#include "api/proto/prometheus/metrics.pb-c.h"

typedef Io__Prometheus__Client__MetricFamily PbFamily;
typedef Io__Prometheus__Client__Metric PbMetric;
typedef Io__Prometheus__Client__LabelPair PbLabel;
typedef Io__Prometheus__Client__Counter PbCounter;
typedef Io__Prometheus__Client__Gauge PbGauge;
typedef Io__Prometheus__Client__Histogram PbHistogram;
typedef Io__Prometheus__Client__Bucket PbBucket;
typedef Io__Prometheus__Client__BucketSpan PbSpan;
typedef Io__Prometheus__Client__Exemplar PbExemplar;

static Google__Protobuf__Timestamp *pb_time(struct arena *ar, int64_t ms)
{
	Google__Protobuf__Timestamp *t = arena_alloc(ar, sizeof(*t));

	if (!t)
		return NULL;
	google__protobuf__timestamp__init(t);
	t->seconds = ms / 1000;
	t->nanos = (int32_t)(ms % 1000) * 1000000;
	return t;
}

static PbExemplar *pb_exemplar(struct arena *ar, const struct metric_exemplar *e)
{
	PbExemplar *x;
	PbLabel *l;

	if (!e || e->ts_ms <= 0)
		return NULL;
	x = arena_alloc(ar, sizeof(*x));
	l = arena_alloc(ar, sizeof(*l));
	PbLabel **ls = arena_alloc(ar, sizeof(*ls));
	if (!x || !l || !ls)
		return NULL;
	io__prometheus__client__exemplar__init(x);
	io__prometheus__client__label_pair__init(l);
	l->name = (char *)e->text;
	l->value = (char *)e->text + e->name_len + 1;
	ls[0] = l;
	x->n_label = 1;
	x->label = ls;
	x->has_value = 1;
	x->value = e->value;
	x->timestamp = pb_time(ar, e->ts_ms);
	return x;
}

/* Spans and deltas of one native side into arena arrays. */
static int pb_side(struct arena *ar, const struct nhist_side *side, size_t *n_spans,
		   PbSpan ***spans, size_t *n_deltas, int64_t **deltas)
{
	int32_t *off;
	uint32_t *len;
	size_t n;

	*n_spans = *n_deltas = 0;
	if (!side->len)
		return 0;
	off = arena_alloc(ar, side->len * sizeof(*off));
	len = arena_alloc(ar, side->len * sizeof(*len));
	*deltas = arena_alloc(ar, side->len * sizeof(**deltas));
	if (!off || !len || !*deltas)
		return -ENOMEM;
	n = nhist_spans(side, off, len, *deltas, n_deltas);
	*spans = arena_alloc(ar, (n ? n : 1) * sizeof(**spans));
	if (!*spans)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		PbSpan *sp = arena_alloc(ar, sizeof(*sp));

		if (!sp)
			return -ENOMEM;
		io__prometheus__client__bucket_span__init(sp);
		sp->has_offset = sp->has_length = 1;
		sp->offset = off[i];
		sp->length = len[i];
		(*spans)[i] = sp;
	}
	*n_spans = n;
	return 0;
}

static int pb_histogram(struct arena *ar, const struct metric_series *s, PbHistogram *h)
{
	const struct metric *f = s->f;
	struct nhist tmp;
	const struct nhist *nh;
	uint64_t cum = 0;
	int err = 0;

	io__prometheus__client__histogram__init(h);
	h->has_sample_count = h->has_sample_sum = 1;
	h->sample_count = series_count_locked(s);
	h->sample_sum = s->sum;
	h->bucket = arena_alloc(ar, (f->n_bounds ? f->n_bounds : 1) * sizeof(*h->bucket));
	if (!h->bucket)
		return -ENOMEM;
	for (size_t j = 0; j < f->n_bounds; j++) {
		PbBucket *bk = arena_alloc(ar, sizeof(*bk));

		if (!bk)
			return -ENOMEM;
		io__prometheus__client__bucket__init(bk);
		cum += s->counts[j];
		bk->has_cumulative_count = bk->has_upper_bound = 1;
		bk->cumulative_count = cum;
		bk->upper_bound = f->bounds[j];
		if (s->ex)
			bk->exemplar = pb_exemplar(ar, &s->ex[j]);
		h->bucket[h->n_bucket++] = bk;
	}
	if (!s->created_unknown)
		h->created_timestamp = pb_time(ar, s->created_ms);

	nh = series_native_locked(s, &tmp);
	if (!nh)
		return 0;
	h->has_schema = h->has_zero_threshold = h->has_zero_count = 1;
	h->schema = nh->schema;
	h->zero_threshold = f->m->native.zero_threshold;
	h->zero_count = nh->zero_count;
	err = pb_side(ar, &nh->pos, &h->n_positive_span, &h->positive_span, &h->n_positive_delta,
		      &h->positive_delta);
	if (!err)
		err = pb_side(ar, &nh->neg, &h->n_negative_span, &h->negative_span,
			      &h->n_negative_delta, &h->negative_delta);
	if (nh == &tmp)
		nhist_free(&tmp);
	return err;
}

static int pb_metric(struct arena *ar, const struct metric_series *s, PbMetric *pm)
{
	const struct metric *f = s->f;

	io__prometheus__client__metric__init(pm);
	if (f->n_labels) {
		pm->label = arena_alloc(ar, f->n_labels * sizeof(*pm->label));
		if (!pm->label)
			return -ENOMEM;
		for (size_t i = 0; i < f->n_labels; i++) {
			PbLabel *l = arena_alloc(ar, sizeof(*l));

			if (!l)
				return -ENOMEM;
			io__prometheus__client__label_pair__init(l);
			l->name = f->labels[i];
			l->value = (char *)s->values[i];
			pm->label[i] = l;
		}
		pm->n_label = f->n_labels;
	}
	switch (f->type) {
	case METRIC_COUNTER: {
		PbCounter *c = arena_alloc(ar, sizeof(*c));

		if (!c)
			return -ENOMEM;
		io__prometheus__client__counter__init(c);
		c->has_value = 1;
		c->value = s->value;
		c->exemplar = pb_exemplar(ar, s->ex);
		if (!s->created_unknown)
			c->created_timestamp = pb_time(ar, s->created_ms);
		pm->counter = c;
		return 0;
	}
	case METRIC_GAUGE: {
		PbGauge *g = arena_alloc(ar, sizeof(*g));

		if (!g)
			return -ENOMEM;
		io__prometheus__client__gauge__init(g);
		g->has_value = 1;
		g->value = s->value;
		pm->gauge = g;
		return 0;
	}
	case METRIC_HISTOGRAM:
		pm->histogram = arena_alloc(ar, sizeof(*pm->histogram));
		return pm->histogram ? pb_histogram(ar, s, pm->histogram) : -ENOMEM;
	}
	return -EINVAL;
}

static const Io__Prometheus__Client__MetricType pb_types[] = {
    [METRIC_COUNTER] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER,
    [METRIC_GAUGE] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE,
    [METRIC_HISTOGRAM] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM,
};

/* Appends v as a base-128 varint. */
static void put_varint(struct buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	buf_append(b, tmp, n);
}

static int family_pb(struct arena *ar, struct metric *f, struct buf *b)
{
	PbFamily fam = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
	PbMetric *ms;
	size_t len;
	int err;

	fam.name = f->name;
	if (f->help[0])
		fam.help = f->help;
	fam.has_type = 1;
	fam.type = pb_types[f->type];
	if (f->unit)
		fam.unit = (char *)f->unit;
	fam.metric = arena_alloc(ar, f->n_series * sizeof(*fam.metric));
	ms = arena_alloc(ar, f->n_series * sizeof(*ms));
	if (!fam.metric || !ms)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_series; i++) {
		err = pb_metric(ar, f->order[i], &ms[i]);
		if (err)
			return err;
		fam.metric[i] = &ms[i];
	}
	fam.n_metric = f->n_series;
	if (ar->oom)
		return -ENOMEM;
	len = protobuf_c_message_get_packed_size(&fam.base);
	put_varint(b, len);
	if (buf_reserve(b, len))
		return -ENOMEM;
	protobuf_c_message_pack(&fam.base, (uint8_t *)b->p + b->len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

int metrics_render_pb_locked(struct metrics *m, const char *const *owners, struct buf *b)
{
	struct arena ar = {0};
	int err = 0;

	for (size_t i = 0; i < m->n_fams && !err; i++) {
		struct metric *f = m->fams[i];

		if (!f->n_series || !family_selected(f, owners))
			continue;
		err = family_order_locked(f);
		if (!err)
			err = family_pb(&ar, f, b);
		arena_free(&ar);
	}
	return err ? err : (b->oom ? -ENOMEM : 0);
}
