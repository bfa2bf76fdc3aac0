/* SPDX-License-Identifier: MIT */
/*
 * Read side of the store for the HTTP routes: event history merged across
 * tables by global id, metric history (Prometheus-like series selection), and
 * a generic "result row -> JSON object" for collectors' own routes.
 *
 * All functions take a connection from the reader pool themselves, except
 * store_row_json, which works on a statement the caller stepped.
 */
#ifndef SYSOBS_STORE_QUERY_H
#define SYSOBS_STORE_QUERY_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct event_table;

typedef void (*store_row_fn)(int64_t id, int64_t ts_ns, const void *row, void *arg);

/*
 * The newest row of each group (group_by: columns of t) among rows matching
 * where (SQL over t's columns, or NULL), read back into t's row struct, in
 * id order. 0, -EINVAL (statement too long), -EBUSY (no reader), -EIO.
 */
int store_latest(struct store *s, const struct event_table *t, const char *group_by,
		 const char *where, store_row_fn fn, void *arg);

#define STORE_SERIES_POINTS_MAX 11000 /* per series, like Prometheus */
#define STORE_SERIES_MAX	1000  /* series per query */
#define STORE_MATCHERS_MAX	16    /* label matchers per query */

/*
 * One result row as a JSON object keyed by column name: INTEGER -> integer,
 * REAL -> real (non-finite -> null), TEXT -> string (invalid UTF-8 bytes
 * replaced by '?'), BLOB -> lowercase hex string, NULL -> null. A column
 * named "ts" (unix ns) additionally yields "time" in RFC 3339 with ns.
 * NULL on allocation failure.
 */
json_t *store_row_json(sqlite3_stmt *st);

/*
 * One page of a collector's history route, the way every such route pages:
 * st is a prepared and bound query ordered by id DESC whose first column is
 * id and whose LIMIT is limit + 1 (the extra row only says that a next page
 * exists). Steps it; each row becomes store_row_json() plus what decorate
 * (may be NULL) adds. Returns {"<key>": [...], "next_cursor": "<id>" | null},
 * next_cursor being the id of the last row returned when more follow. NULL
 * with *err = -ENOMEM or a SQLite result code: never a short page.
 */
json_t *store_page_json(sqlite3_stmt *st, unsigned limit, const char *key,
			void (*decorate)(sqlite3_stmt *st, json_t *row), int *err);

/* "2026-12-03T02:13:00.123456789Z" into buf (>= 31 bytes). Returns the length
 * or -ENOSPC. */
int store_format_time(int64_t ns, char *buf, size_t len);

/*
 * Events newest first, merged by id across the tables of one collector (or
 * all when collector is NULL): rows with id < cursor and since <= ts < until,
 * at most limit (0 = 100). Each row: id, ts, time, collector, table and the
 * table's columns. *rows_out is a new JSON array; *next_cursor is the id to
 * pass as the next cursor, or -1 when there are no more rows.
 * Returns 0, -ENOENT (no table belongs to that collector), -EBUSY (no reader
 * free), -EIO / -ENOMEM; err says what.
 */
int store_query_events(struct store *s, const char *collector, int64_t since_ns, int64_t until_ns,
		       int64_t cursor, unsigned limit, json_t **rows_out, int64_t *next_cursor,
		       char *err, size_t errlen);

enum store_match_op {
	STORE_MATCH_EQ, /* label="value" */
	STORE_MATCH_NE, /* label!="value" */
};

struct store_matcher {
	char label[64];
	char value[256];
	enum store_match_op op;
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
int store_matcher_parse(const char *s, char *name, size_t name_len, struct store_matcher *out,
			size_t max, size_t *n, char *err, size_t errlen);

/*
 * Metric history of one metric, series filtered by matchers (each a selector
 * string as above; a metric name given there must agree with metric, and
 * names the metric when metric is NULL). Samples with since <= ts < until;
 * with step_ns > 0 only the last sample of each step bucket (buckets aligned
 * on since, or on the epoch when since <= 0) is kept.
 * *out: [{"metric": {"__name__": ..., labels...}, "values": [[unix_s, v], ...]}]
 * (series without samples in range are left out; non-finite values -> null).
 * Returns 0, -EINVAL (bad selector), -E2BIG (more than STORE_SERIES_MAX series
 * or STORE_SERIES_POINTS_MAX points in one series), -EBUSY, -EIO, -ENOMEM.
 */
int store_query_series(struct store *s, const char *metric, const char *const *matchers,
		       size_t n_matchers, int64_t since_ns, int64_t until_ns, int64_t step_ns,
		       json_t **out, char *err, size_t errlen);

#endif
