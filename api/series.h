/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/series: metric history from the store, selected like a
 * Prometheus instant vector selector and sampled like query_range, answered
 * as a SeriesList (api/proto/sysobs.proto) through api/reply.h.
 *
 * The pieces under it are pure and public for the unit tests: the selector
 * parser, the parser of the label text the registry renders (and the store
 * keeps), and the step grid.
 */
#ifndef SYSOBS_API_SERIES_H
#define SYSOBS_API_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_request;
struct http_response;
struct store;

#define SERIES_POINTS_MAX	11000  /* per series, as Prometheus caps query_range */
#define SERIES_POINTS_TOTAL_MAX 250000 /* per answer: a few MB of JSON */
#define SERIES_MAX		1000   /* matching series per query */
#define SERIES_MATCHERS_MAX	16     /* label matchers per query, all match[] together */
/* A grid point takes the newest sample at most this old (Prometheus' default
 * lookback delta), and start defaults to end minus SERIES_RANGE_DEFAULT_NS. */
#define SERIES_LOOKBACK_NS	(300LL * 1000000000)
#define SERIES_RANGE_DEFAULT_NS (3600LL * 1000000000)

/*
 * GET /api/v1/series?metric=&match[]=&start=&end=&step=
 *
 * Series of one metric (named by metric, by a selector, or by a
 * {__name__="..."} matcher), kept when every matcher of every match[] holds
 * (= and !=; an absent label equals ""; regex matchers are refused). Window:
 * end defaults to now, start to end - 1h. Without step, each series' raw
 * samples with start <= ts <= end; with step, the points t = start + k*step
 * (k >= 0, t <= end), each the value of the newest sample at or before t
 * and less than SERIES_LOOKBACK_NS older, none when there is no such sample.
 * Series without any point are left out. More than SERIES_MAX series,
 * SERIES_POINTS_MAX points in one series or SERIES_POINTS_TOTAL_MAX in all is
 * a 400 saying what to narrow. next_cursor is always empty.
 */
void api_series(const struct http_request *req, struct http_response *res, struct store *store);
/* The same with "now" given (relative times, the default end). */
void api_series_at(const struct http_request *req, struct http_response *res, struct store *store,
		   int64_t now_ns);

/* ---- selectors ---- */

enum series_match_op {
	SERIES_MATCH_EQ, /* label="value" */
	SERIES_MATCH_NE, /* label!="value" */
};

struct series_matcher {
	char label[64];
	char value[256];
	enum series_match_op op;
};

/*
 * Parses one series selector, in any of the forms
 *	metric{label="value",other!="v"}   {label="value"}   label="value"
 * (values double-quoted with \" \\ \n escapes; whitespace allowed around
 * tokens). The metric name, if any, goes to name (else name[0] = '\0');
 * matchers are appended to out[*n..max). Pure function.
 * Returns 0, or -EINVAL with a message (regex matchers =~ !~ are refused),
 * -E2BIG when more than max matchers.
 */
int series_matcher_parse(const char *s, char *name, size_t name_len, struct series_matcher *out,
			 size_t max, size_t *n, char *err, size_t errlen);

/* ---- label text ---- */

struct series_label {
	const char *name, *value;
};

struct series_labels {
	size_t n;
	struct series_label *v; /* in text order */
};

/*
 * Parses a label set as the metrics registry renders it and the store keeps
 * it (metric_series.labels): "" or {a="b",c="d"}, values with \\ \" \n
 * escapes, into one allocation (free() it). Pure apart from malloc.
 * Returns 0, -EINVAL (not such text) or -ENOMEM.
 */
int series_labels_parse(const char *text, struct series_labels **out);

/* ---- the step grid ---- */

struct series_point {
	int64_t ts_ns;
	double value;
};

/* A growable array of points. */
struct series_points {
	struct series_point *v;
	size_t n, cap;
};

/*
 * Points on the grid t = start + k*step, t <= end, from samples fed oldest
 * first: a grid time is decided as soon as a sample after it (or the end of
 * the samples) shows which sample is the newest at or before it.
 */
struct series_grid {
	int64_t next; /* the first grid time not decided yet */
	int64_t end, step;
	bool done; /* every grid time is decided */
	bool have; /* last holds a sample */
	struct series_point last;
};

/* step > 0. */
void series_grid_init(struct series_grid *g, int64_t start_ns, int64_t end_ns, int64_t step_ns);
/* Feeds the next sample (ts not before the previous one's), appending the
 * points it decides to out. 0 or -ENOMEM. */
int series_grid_add(struct series_grid *g, int64_t ts_ns, double value, struct series_points *out);
/* No more samples: appends the remaining points. 0 or -ENOMEM. */
int series_grid_finish(struct series_grid *g, struct series_points *out);

/* The number of grid times from start to end (0 when start > end),
 * saturating at UINT64_MAX. */
uint64_t series_grid_count(int64_t start_ns, int64_t end_ns, int64_t step_ns);

#endif
