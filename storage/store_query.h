/* SPDX-License-Identifier: MIT */
/*
 * Read side of the store for the HTTP routes: event history merged across
 * tables by global id, metric history (series and their samples, as plain C
 * callbacks: selection and encoding are the API's), and a generic "result row
 * -> JSON object" for collectors' own routes.
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

/*
 * Metric history, as the agent's snapshots write it: table metric_series
 * (id, name, labels: the registry's rendered label set, `{a="b",c="d"}` or
 * "" for none) and metric_samples (series_id, ts in unix ns, value).
 *
 * Both walks take one reader from the pool for the length of the call, and
 * call fn with it held: fn must not call back into the store (copy what it
 * needs, read samples after the walk). fn returns 0 to go on; anything else
 * stops the walk, which returns that value (a negative errno such as -E2BIG
 * for a caller's cap). Otherwise they return 0, -EBUSY (no reader free within
 * 2 s) or -EIO.
 */
typedef int (*store_series_fn)(int64_t id, const char *name, const char *labels, void *arg);
typedef int (*store_sample_fn)(int64_t ts_ns, double value, void *arg);

/* Every series of metric name (all series when name is NULL), by id. The
 * strings are valid during the call only. */
int store_series_each(struct store *s, const char *name, store_series_fn fn, void *arg);

/* The samples of one series with from_ns <= ts <= to_ns, oldest first. A NULL
 * value (never written by the agent) reads as NaN. */
int store_series_samples(struct store *s, int64_t series_id, int64_t from_ns, int64_t to_ns,
			 store_sample_fn fn, void *arg);

#endif
