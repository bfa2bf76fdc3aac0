/* SPDX-License-Identifier: MIT */
/*
 * The registry's data structures, shared by the registry (metrics.c, its
 * series table metrics_series.c, names and numbers metrics_format.c) and
 * its renders (metrics_render.c; the encoders metrics_text.c: text 0.0.4
 * and OpenMetrics 1.0.0, metrics_pb.c: delimited protobuf, metrics_visit.c;
 * what they share metrics_order.c). Nothing else includes this.
 *
 * Every field is guarded by metrics.lock. An encoder walks the families in
 * name order and each family's series in label order (family_order_locked)
 * under that lock, so every format renders the same snapshot.
 */
#ifndef SYSOBS_METRICS_INTERNAL_H
#define SYSOBS_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/hash.h"
#include "metrics/metrics.h"
#include "metrics/nhist.h"

/* The last exemplar of a counter, or of one classic bucket of a histogram. */
struct metric_exemplar {
	double value;
	int64_t ts_ms; /* unix milliseconds; 0: no exemplar */
	uint8_t name_len;
	char text[METRIC_EXEMPLAR_MAX + 2]; /* name NUL value NUL */
};

struct metric_series {
	struct metric *f;
	struct hash_node hnode;		   /* in f->by_values */
	struct metric_series *prev, *next; /* family list, creation order */
	const char **values;		   /* f->n_labels copies, in this allocation */
	char *labels;			   /* `{a="b",c="d"}` or "" */
	size_t labels_len;
	double value;	  /* counters, gauges */
	double sum;	  /* histograms */
	uint64_t *counts; /* histograms: n_bounds + 1, not cumulative */
	struct nhist nh;  /* observed histograms, when native buckets are on */
	/* Counters: 1; histograms: n_bounds + 1 (one per classic bucket).
	 * Allocated with the first exemplar. */
	struct metric_exemplar *ex;
	int64_t created_ms;   /* unix time the series started from zero */
	int64_t gone_ns;      /* monotonic time its object went; 0: live */
	bool created_unknown; /* counter mirrored from a total (series_set) or
			       * histogram set whole: its start is not ours */
	/* Text of the last fractional value or sum rendered: formatting a
	 * non-integer exactly costs ~1 us, and most values do not change from
	 * one scrape to the next. */
	double text_v;
	uint8_t text_len; /* 0: empty */
	char text[METRICS_VALUE_MAX - 8];
};

struct metric {
	struct metrics *m;
	enum metric_type type;
	char *name;
	char *help;
	char *owner;	  /* collector, for collect[]; NULL: the agent's own */
	const char *unit; /* from the name's suffix ("seconds", "bytes"), or NULL */
	char *name_bucket, *name_sum, *name_count; /* histograms */
	char *labels[METRIC_MAX_LABELS];
	size_t n_labels;
	double *bounds;
	char **le; /* rendered bounds, n_bounds + 1 ("+Inf") */
	size_t n_bounds;

	struct hash_table by_values; /* series by label values */
	size_t n_series;
	struct metric_series *head, *tail;

	struct metric_series **order; /* render order, valid unless order_dirty */
	size_t order_cap;
	bool order_dirty;
};

#define METRICS_HOOKS_MAX 4

struct metrics {
	pthread_mutex_t lock;
	struct metric **fams; /* sorted by name */
	size_t n_fams, cap_fams;
	size_t n_series;
	size_t last_render_len[3]; /* sizing hint for the next render, by format */
	struct metrics_native native;
	struct {
		metrics_hook_fn fn;
		void *arg;
	} hooks[METRICS_HOOKS_MAX];
	size_t n_hooks;
};

/* metrics_series.c: frees every series of f (the family stays). */
void family_clear_locked(struct metric *f);

/* metrics_format.c and metrics_order.c: what the encoders share. */
/* Escaping of the text formats: backslash, line feed, and the double quote
 * when `quote` (label values; HELP text only in OpenMetrics). */
void metrics_buf_escaped(struct buf *b, const char *s, bool quote);
size_t metrics_fmt_u64(uint64_t v, char *out); /* out: 21 bytes */
/* "seconds", "bytes", ... when the name (counters: before _total) ends with
 * _<unit>; NULL otherwise. */
const char *metrics_name_unit(const char *name, bool counter);

/* Rebuilds the sorted view of a family's series after it changed. */
int family_order_locked(struct metric *f);
/* Whether an encoder renders f for this filter (NULL: all). */
bool family_selected(const struct metric *f, const char *const *owners);
/* The native buckets of s right now: s->nh for observed histograms, else
 * rebuilt from the classic counts into *tmp (caller frees with nhist_free).
 * NULL when native buckets are off. */
const struct nhist *series_native_locked(const struct metric_series *s, struct nhist *tmp);
uint64_t series_count_locked(const struct metric_series *s);

int metrics_render_text_locked(struct metrics *m, bool openmetrics, const char *const *owners,
			       struct buf *b);
int metrics_render_pb_locked(struct metrics *m, const char *const *owners, struct buf *b);

#endif
