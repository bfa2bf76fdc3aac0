/* SPDX-License-Identifier: MIT */
/*
 * In-memory metrics registry: families (counter, gauge, histogram) with fixed
 * label names, and series keyed by label values. Collectors update series from
 * the main thread; the HTTP thread renders a snapshot under the same lock, so
 * a scrape never waits on a collector's I/O, only on this lock.
 *
 * Series handles stay valid until metric_series_remove() or metrics_free().
 * Label values are copied. Up to METRIC_MAX_LABELS labels per family.
 */
#ifndef SYSOBS_METRICS_H
#define SYSOBS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRIC_MAX_LABELS 8
/* Cardinality guard: metric_series() fails with ENOSPC past this many series
 * in one family. */
#define METRIC_MAX_SERIES 100000
/* Buffer size for metrics_format_value(). */
#define METRICS_VALUE_MAX 32

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metrics;
struct metric;	      /* a family */
struct metric_series; /* one label set of a family */

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m); /* accepts NULL */

/*
 * Registers (or returns the existing) family. labels is NULL-terminated.
 * Re-registering with another type or label set returns NULL, errno EEXIST.
 * For histograms, bounds are the upper bounds (ascending, +Inf implied).
 */
struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *const *labels);
struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *const *labels);
struct metric *metrics_histogram(struct metrics *m, const char *name, const char *help,
				 const char *const *labels, const double *bounds, size_t n_bounds);

/* Finds or creates the series for these label values (as many as the family
 * has labels; NULL for a family without labels). NULL + errno on failure. */
struct metric_series *metric_series(struct metric *f, const char *const *values);
void metric_series_remove(struct metric *f, struct metric_series *s);
/* Removes every series of the family (e.g. before re-publishing a snapshot). */
void metric_clear(struct metric *f);

void series_add(struct metric_series *s, double v);	/* counters, gauges */
void series_set(struct metric_series *s, double v);	/* gauges (and counters read from
							 * a kernel total) */
void series_observe(struct metric_series *s, double v); /* histograms */
/* Replaces a histogram's state at once: counts[n_bounds + 1] per bucket (not
 * cumulative; the last is +Inf), and the sum. For kernel-side histograms. */
void series_histogram_set(struct metric_series *s, const uint64_t *counts, double sum);
double series_value(const struct metric_series *s);

/* Convenience: family + series in one call, for families without labels. */
struct metric_series *metrics_counter1(struct metrics *m, const char *name, const char *help);
struct metric_series *metrics_gauge1(struct metrics *m, const char *name, const char *help);

/*
 * Prometheus text exposition format 0.0.4 into a malloc'ed buffer
 * (HELP/TYPE lines, escaped label values, histograms with _bucket/_sum/_count).
 * Returns 0 or -ENOMEM.
 */
int metrics_render_text(struct metrics *m, char **buf, size_t *len);

/* Calls fn for every counter and gauge series (histograms: their _count and
 * _sum), with the family name and the rendered label set `{a="b",...}` (""
 * for none), under the registry lock. Used for periodic history snapshots. */
typedef void (*metrics_visit_fn)(const char *name, const char *labels, double value, void *arg);
void metrics_visit(struct metrics *m, metrics_visit_fn fn, void *arg);

size_t metrics_series_count(struct metrics *m);

/* Name rules of the exposition format: metric names [a-zA-Z_:][a-zA-Z0-9_:]*,
 * label names [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__". */
bool metrics_name_valid(const char *name);
bool metrics_label_name_valid(const char *name);

/* A sample value as Prometheus reads it: "+Inf", "-Inf", "NaN", integers
 * without exponent, otherwise the shortest form that reads back exactly.
 * buf has METRICS_VALUE_MAX bytes; returns the length. */
size_t metrics_format_value(double v, char *buf);

#endif
