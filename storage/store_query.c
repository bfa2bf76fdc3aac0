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

int store_latest(struct store *s, const struct event_table *t, const char *group_by,
		 const char *where, store_row_fn fn, void *arg)
{
	char cols[2048], sql[4096];
	unsigned char row[EVENT_ROW_MAX];
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int rc, ret = 0;

	if (store_schema_select_list(t, cols, sizeof(cols)))
		return -EINVAL;
	/* SQLite: with max(), the bare columns come from the row of the max. */
	if (snprintf(sql, sizeof(sql), "SELECT max(id), %s FROM %s%s%s GROUP BY %s ORDER BY 1",
		     cols + strlen("id, "), t->name, where ? " WHERE " : "", where ? where : "",
		     group_by) >= (int)sizeof(sql))
		return -EINVAL;
	db = store_reader_get(s);
	if (!db)
		return -EBUSY;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_schema_read_row(st, 2, t, row);
		fn(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), row, arg);
		rc = SQLITE_OK;
	}
	return read_end(s, db, st, ret, rc);
}
