// SPDX-License-Identifier: MIT
/*
 * Read side of the store: metric history series and samples, and the newest
 * rows of a table per group. (Pages of event tables: store_history.c.)
 * Plain C out: no JSON here. See store_query.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/store.h"
#include "storage/store_filter.h"
#include "storage/store_internal.h"
#include "storage/store_query.h"
#include "storage/store_schema.h"

/* Ends a read: the callback's stop value, or the statement's error (rc:
 * sqlite3_step()'s last result; SQLITE_INTERRUPT is the query timeout). */
static int read_end(struct store *s, sqlite3 *db, sqlite3_stmt *st, int ret, int rc)
{
	if (!ret && rc != SQLITE_DONE)
		ret = rc == SQLITE_INTERRUPT ? -ETIMEDOUT : -EIO;
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return ret;
}

/* ---- metric history ---- */

int store_series_each(struct store *s, const char *name, store_series_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int ret = 0, rc;

	db = store_reader_get(s);
	if (!db)
		return -EBUSY;
	rc = sqlite3_prepare_v2(db,
				name ? "SELECT id, name, labels FROM metric_series WHERE name = ?1"
				       " ORDER BY id"
				     : "SELECT id, name, labels FROM metric_series ORDER BY id",
				-1, &st, NULL);
	if (rc == SQLITE_OK && name)
		rc = sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 1);
		const char *l = (const char *)sqlite3_column_text(st, 2);

		ret = fn(sqlite3_column_int64(st, 0), n ? n : "", l ? l : "", arg);
		if (ret)
			break;
		rc = SQLITE_OK;
	}
	return read_end(s, db, st, ret, rc);
}

int store_series_samples(struct store *s, int64_t series_id, int64_t from_ns, int64_t to_ns,
			 store_sample_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int ret = 0, rc;

	if (from_ns > to_ns)
		return 0;
	db = store_reader_get(s);
	if (!db)
		return -EBUSY;
	/* The index metric_samples_series_ts serves both the range and the order. */
	rc = sqlite3_prepare_v2(db,
				"SELECT ts, value FROM metric_samples WHERE series_id = ?1"
				" AND ts >= ?2 AND ts <= ?3 ORDER BY ts",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, series_id);
		sqlite3_bind_int64(st, 2, from_ns);
		sqlite3_bind_int64(st, 3, to_ns);
	}
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		double v =
		    sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);

		ret = fn(sqlite3_column_int64(st, 0), v, arg);
		if (ret)
			break;
		rc = SQLITE_OK;
	}
	return read_end(s, db, st, ret, rc);
}

/* "SELECT max(id), ts, cols FROM t WHERE ... GROUP BY ... ORDER BY 1": the
 * predicate of each partial index the filter implies, as the index spells it
 * (literals), then the filter's own conditions as parameters ?1... */
static char *latest_sql(const struct event_table *t, const char *const *group_by,
			const struct row_cond *where)
{
	char cols[2048];
	sqlite3_str *q;
	int param = 1;
	bool first = true;

	if (store_schema_select_list(t, cols, sizeof(cols)))
		return NULL;
	q = sqlite3_str_new(NULL);
	/* SQLite: with max(), the bare columns come from the row of the max. */
	sqlite3_str_appendf(q, "SELECT max(id), %s FROM %s", cols + strlen("id, "), t->name);
	for (const struct table_index *ix = t->indexes; ix && ix->name; ix++)
		if (ix->where && ix->where->column && store_filter_implies(where, ix->where)) {
			sqlite3_str_appendall(q, first ? " WHERE " : " AND ");
			store_filter_sql(q, ix->where, " AND ", NULL);
			first = false;
		}
	if (where && where->column) {
		sqlite3_str_appendall(q, first ? " WHERE " : " AND ");
		store_filter_sql(q, where, " AND ", &param);
	}
	for (const char *const *g = group_by; g && *g; g++)
		sqlite3_str_appendf(q, "%s%s", g == group_by ? " GROUP BY " : ", ", *g);
	if (!group_by || !*group_by)
		sqlite3_str_appendall(q, " GROUP BY id");
	sqlite3_str_appendall(q, " ORDER BY 1");
	return sqlite3_str_finish(q);
}

int store_latest_sql(const struct event_table *t, const char *const *group_by,
		     const struct row_cond *where, char **sql, char *err, size_t errlen)
{
	*sql = NULL;
	if (store_filter_check(t, where, err, errlen))
		return -EINVAL;
	for (const char *const *g = group_by; g && *g; g++)
		if (!store_column_find(t, *g)) {
			snprintf(err, errlen, "table %s: group by %s: no such column", t->name, *g);
			return -EINVAL;
		}
	*sql = latest_sql(t, group_by, where);
	return *sql ? 0 : -ENOMEM;
}

int store_latest(struct store *s, const struct event_table *t, const char *const *group_by,
		 const struct row_cond *where, store_row_fn fn, void *arg)
{
	unsigned char row[EVENT_ROW_MAX];
	sqlite3_stmt *st = NULL;
	char *sql, err[256];
	sqlite3 *db;
	int rc, ret;

	ret = store_latest_sql(t, group_by, where, &sql, err, sizeof(err));
	if (ret) {
		if (ret == -EINVAL)
			store_log(s, NULL, 0, STORE_LOG_ERR, "%s", err);
		return ret;
	}
	db = store_reader_get(s);
	if (!db) {
		sqlite3_free(sql);
		return -EBUSY;
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc == SQLITE_OK)
		rc = store_filter_bind(st, where, 1);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_schema_read_row(st, 2, t, row);
		fn(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), row, arg);
		rc = SQLITE_OK;
	}
	return read_end(s, db, st, 0, rc);
}
