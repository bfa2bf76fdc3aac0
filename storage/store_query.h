/* SPDX-License-Identifier: MIT */
/*
 * Read side of the store: metric history (series and their samples, as plain
 * C callbacks: selection and encoding are the API's) and the newest rows of
 * a table per group (start-up state of a collector). Pages of event tables
 * are storage/store_history.h. Every function takes a connection from the
 * reader pool itself.
 */
#ifndef SYSOBS_STORE_QUERY_H
#define SYSOBS_STORE_QUERY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct event_table;
struct row_cond;

typedef void (*store_row_fn)(int64_t id, int64_t ts_ns, const void *row, void *arg);

/*
 * The newest row of each group (group_by: NULL-terminated names of t's
 * columns; NULL: every row) among rows matching where (typed conditions,
 * storage/table.h; NULL: all rows), read back into t's row struct, in id
 * order. 0, -EINVAL (a condition or group column t cannot take: logged),
 * -EBUSY (no reader), -EIO.
 */
int store_latest(struct store *s, const struct event_table *t, const char *const *group_by,
		 const struct row_cond *where, store_row_fn fn, void *arg);

/* The statement store_latest() runs (sqlite3_free() it), for the query
 * plan's test. 0, -EINVAL with the reason in err, -ENOMEM. */
int store_latest_sql(const struct event_table *t, const char *const *group_by,
		     const struct row_cond *where, char **sql, char *err, size_t errlen);

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
