// SPDX-License-Identifier: MIT
/*
 * One page of an event table's history, newest first, for the API's generic
 * history route: the SQL comes from the table's descriptor, each row is read
 * back into the table's row struct (store_schema_read_row) and handed to the
 * caller, which never sees SQL.
 *
 * Picking the access path matters at millions of rows: with a window that
 * reaches the newest rows, walking ids down from the cursor and filtering
 * finds a page after a few rows; with a window far in the past, or one that
 * holds few rows, the ts index finds its ids without reading rows. A bounded
 * count on the ts index (at most STORE_WINDOW_SMALL index entries) tells
 * which case this is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "storage/store.h"
#include "storage/store_history.h"
#include "storage/store_schema.h"

#define STORE_WINDOW_SMALL 10000

static bool store_window_small(sqlite3 *db, const char *table, const char *where, int64_t a,
			       int64_t b)
{
	sqlite3_stmt *st;
	char sql[256];
	bool small = false;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT %d)",
		 table, where, STORE_WINDOW_SMALL);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, a);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW)
		small = sqlite3_column_int64(st, 0) < STORE_WINDOW_SMALL;
	sqlite3_finalize(st);
	return small;
}

/* " AND (a = ?5 OR b = ?5) AND c = ?6" for the filters, parameters from ?5. */
static int store_filter_sql(const struct store_page_query *q, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < q->n_filters; i++) {
		const struct store_filter *f = &q->filters[i];
		int n = snprintf(buf + off, len - off, " AND (");

		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
		for (size_t k = 0; k < f->n_cols; k++) {
			if (f->cols[k]->filter == COL_FILTER_PREFIX)
				n = snprintf(buf + off, len - off,
					     "%ssubstr(%s, 1, length(?%zu)) = ?%zu",
					     k ? " OR " : "", f->cols[k]->name, i + 5, i + 5);
			else
				n = snprintf(buf + off, len - off, "%s%s = ?%zu", k ? " OR " : "",
					     f->cols[k]->name, i + 5);
			if (n < 0 || (size_t)n >= len - off)
				return -ENOSPC;
			off += (size_t)n;
		}
		if (off + 2 > len)
			return -ENOSPC;
		buf[off++] = ')';
		buf[off] = '\0';
	}
	return 0;
}

int store_history_page(struct store *s, const struct event_table *t,
		       const struct store_page_query *q, store_page_fn fn, void *arg)
{
	char cols[2048], filt[1024], sql[4096];
	unsigned char row[EVENT_ROW_MAX];
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int rc, n = 0;

	if (q->n_filters > STORE_FILTERS_MAX || store_schema_select_list(t, cols, sizeof(cols)) ||
	    store_filter_sql(q, filt, sizeof(filt)))
		return -EINVAL;
	db = store_reader_get(s);
	if (!db)
		return -EBUSY;
	if (!q->start_ns && q->end_ns == INT64_MAX && !q->n_filters) {
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM %s WHERE id < ?1 AND ?2 = ?2 AND ?3 = ?3"
			 " ORDER BY id DESC LIMIT ?4",
			 cols, t->name);
	} else if ((q->end_ns != INT64_MAX &&
		    !store_window_small(db, t->name, "ts >= ?1", q->end_ns, 0)) ||
		   store_window_small(db, t->name, "ts >= ?1 AND ts < ?2", q->start_ns,
				      q->end_ns)) {
		/* Many rows newer than the window, or few in it: ids from the
		 * ts index alone, then just those rows. The + keeps SQLite off
		 * the rowid order in the inner query. */
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM %s WHERE id IN (SELECT id FROM %s"
			 " WHERE ts >= ?2 AND ts < ?3 AND +id < ?1%s ORDER BY +id DESC"
			 " LIMIT ?4) ORDER BY id DESC",
			 cols, t->name, t->name, filt);
	} else {
		/* The window reaches (nearly) the newest rows: walk ids down
		 * from the cursor, filtering. */
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM %s WHERE id < ?1 AND +ts >= ?2 AND +ts < ?3%s"
			 " ORDER BY id DESC LIMIT ?4",
			 cols, t->name, filt);
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(st, 1, q->cursor);
	sqlite3_bind_int64(st, 2, q->start_ns);
	sqlite3_bind_int64(st, 3, q->end_ns);
	sqlite3_bind_int64(st, 4, (int64_t)q->limit);
	for (size_t i = 0; i < q->n_filters; i++) {
		const struct store_filter *f = &q->filters[i];

		if (f->text)
			sqlite3_bind_text(st, (int)i + 5, f->text, -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, (int)i + 5, f->value);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_schema_read_row(st, 2, t, row);
		if (fn(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), row, arg)) {
			rc = SQLITE_NOMEM;
			break;
		}
		n++;
	}
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	if (rc == SQLITE_INTERRUPT)
		return -ETIMEDOUT; /* past [storage] query_timeout */
	return rc == SQLITE_DONE ? n : -EIO;
}
