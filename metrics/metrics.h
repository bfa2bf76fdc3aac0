/* SPDX-License-Identifier: MIT */
/*
 * In-memory metrics registry: families (counter, gauge, histogram) with fixed
 * label names, and series keyed by label values. Collectors update series from
 * the main thread; the HTTP thread renders a snapshot under the same lock, so
 * a scrape never waits on a collector's I/O, only on this lock.
 *
 * One registry, three encodings of the same snapshot (metrics_render):
 * Prometheus text 0.0.4, OpenMetrics 1.0.0 (units, _created, exemplars,
 * # EOF) and delimited protobuf MetricFamily (classic and native histogram
 * buckets, exemplars, created timestamps). Histograms keep classic buckets
 * for text scrapers and, when native buckets are on, exponential buckets
 * beside them, as the Go client does.
 *
 * Series handles stay valid until metric_series_remove(), until the expiry
 * after metric_series_gone(), or metrics_free(). Label values are copied.
 * Up to METRIC_MAX_LABELS labels per family.
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
/* Exemplar label name and value together, in bytes (OpenMetrics allows 128
 * UTF-8 characters for the whole label set). */
#define METRIC_EXEMPLAR_MAX 64

enum metrics_format { METRICS_FMT_TEXT, METRICS_FMT_OPENMETRICS, METRICS_FMT_PROTOBUF };

/* The Content-Type of each format, exactly. */
#define METRICS_CT_TEXT	       "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define METRICS_CT_PROTOBUF                                                                        \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "               \
	"encoding=delimited"

/* Native histogram settings of a registry. */
struct metrics_native {
	bool enabled;
	int schema;	       /* NHIST_SCHEMA_MIN..MAX (metrics/nhist.h) */
	double zero_threshold; /* |v| <= this counts in the zero bucket */
	unsigned max_buckets;  /* per series; past it the schema halves */
};

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metrics;
struct metric;	      /* a family */
struct metric_series; /* one label set of a family */

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m); /* accepts NULL */
/* Native buckets for histograms from now on (default: schema 3, zero
 * threshold 2^-128, 160 buckets). -EINVAL for values out of range. */
int metrics_set_native(struct metrics *m, const struct metrics_native *n);

/* Called at the start of every render, outside the lock: a hook updates the
 * series it owns (e.g. process_* from /proc/self) so a scrape sees them
 * fresh. Up to 4 hooks; -ENOSPC past that. */
typedef void (*metrics_hook_fn)(struct metrics *m, void *arg);
int metrics_add_hook(struct metrics *m, metrics_hook_fn fn, void *arg);

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

/* The collector a family belongs to, for /metrics?collect[]=NAME (families
 * without an owner are the agent's own and always rendered). */
int metric_set_owner(struct metric *f, const char *owner);

/* Finds or creates the series for these label values (as many as the
 * family has labels; NULL for a family without labels). NULL + errno on
 * failure. Finding a series marked gone makes it live again. */
struct metric_series *metric_series(struct metric *f, const char *const *values);
void metric_series_remove(struct metric *f, struct metric_series *s);
/* The object behind s is gone (netns deleted, volume unmounted, collector
 * stopped): s keeps being rendered, so its last increments are scraped, and
 * metrics_expire() removes it after the grace period. now_ns: CLOCK_MONOTONIC. */
void metric_series_gone(struct metric *f, struct metric_series *s, int64_t now_ns);
/* Every series of every family owned by owner is gone. */
void metrics_owner_gone(struct metrics *m, const char *owner, int64_t now_ns);
/* Removes the series gone for at least grace_ns; calls fn(owner, n) after
 * the lock is released, once per owner (NULL: the agent) with removals.
 * Returns how many were removed. */
typedef void (*metrics_removed_fn)(const char *owner, size_t n, void *arg);
size_t metrics_expire(struct metrics *m, int64_t now_ns, int64_t grace_ns, metrics_removed_fn fn,
		      void *arg);
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
/*
 * Attaches an exemplar (one label, e.g. sample_id="1234", the observed value
 * and its unix time in seconds) to a counter series or, for a histogram, to
 * the classic bucket value falls in; it replaces the previous one there.
 * Exemplars appear in OpenMetrics and protobuf. -EINVAL for an invalid label
 * name, a value that is not UTF-8, or more than METRIC_EXEMPLAR_MAX bytes.
 */
int series_exemplar(struct metric_series *s, const char *name, const char *value, double v,
		    double ts);

/* Convenience: family + series in one call, for families without labels. */
struct metric_series *metrics_counter1(struct metrics *m, const char *name, const char *help);
struct metric_series *metrics_gauge1(struct metrics *m, const char *name, const char *help);

/*
 * Renders the registry in fmt into a malloc'ed buffer (NUL-terminated for
 * the text formats). owners: NULL-terminated collector names to include
 * (families without owner always are), or NULL for all. Runs the hooks
 * first. Returns 0 or -ENOMEM.
 */
int metrics_render(struct metrics *m, enum metrics_format fmt, const char *const *owners,
		   char **buf, size_t *len);
/* Text 0.0.4 of everything (tests, benches). */
int metrics_render_text(struct metrics *m, char **buf, size_t *len);

struct nhist;

/* A histogram series' classic buckets: n of them, the last "+Inf"; le[i] is
 * the upper bound as exposed, counts[i] the observations in bucket i alone
 * (not cumulative). native: its native buckets as /metrics exposes them
 * (NULL when the registry keeps none), with the registry's zero threshold,
 * and sum: the series' sum. Valid during the visit only. */
struct metric_buckets {
	const char *const *le;
	const uint64_t *counts;
	size_t n;
	const struct nhist *native;
	double zero_threshold;
	double sum;
};
/* Calls fn for every counter and gauge series, and for a histogram series
 * as its _count (its buckets and sum in b) and its _sum (b NULL for every
 * call but the _count), with the family name and the rendered label set `{a="b",...}` (""
 * for none), under the registry lock. For the metric-history snapshots.
 * metrics/metrics_visit.c. */
typedef void (*metrics_visit_buckets_fn)(const char *name, const char *labels, double value,
					 const struct metric_buckets *b, void *arg);
void metrics_visit_buckets(struct metrics *m, metrics_visit_buckets_fn fn, void *arg);

/* Every family, in name order, under the registry lock: its name (as the
 * text format's # TYPE line has it), type, help and unit ("seconds", ...;
 * NULL for none). For remote-write metadata. metrics/metrics_visit.c. */
typedef void (*metrics_family_fn)(const char *name, enum metric_type type, const char *help,
				  const char *unit, void *arg);
void metrics_visit_families(struct metrics *m, metrics_family_fn fn, void *arg);

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
