// SPDX-License-Identifier: MIT
/*
 * Read side of the store: events merged across tables by global id, metric
 * history series and samples, and result rows as JSON. See store_query.h.
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

#define STORE_QUERY_DEF_LIMIT 100

int store_format_time(int64_t ns, char *buf, size_t len)
{
	int64_t sec = ns / 1000000000, frac = ns % 1000000000;
	struct tm tm;
	time_t t;
	int n;

	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	t = (time_t)sec;
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09" PRId64 "Z", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}

/* jansson refuses invalid UTF-8; a kernel-supplied string (comm, path) may
 * hold anything, so replace bytes outside printable ASCII and retry. */
static json_t *store_text_json(const unsigned char *p, int len)
{
	json_t *j;
	char *copy;

	if (!p)
		return json_null();
	j = json_stringn((const char *)p, (size_t)len);
	if (j)
		return j;
	copy = malloc((size_t)len + 1);
	if (!copy)
		return NULL;
	for (int i = 0; i < len; i++)
		copy[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	j = json_stringn(copy, (size_t)len);
	free(copy);
	return j;
}

static json_t *store_col_json(sqlite3_stmt *st, int i)
{
	static const char hex[] = "0123456789abcdef";

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT: {
		double v = sqlite3_column_double(st, i);

		return isfinite(v) ? json_real(v) : json_null();
	}
	case SQLITE_TEXT:
		return store_text_json(sqlite3_column_text(st, i), sqlite3_column_bytes(st, i));
	case SQLITE_BLOB: {
		const unsigned char *b = sqlite3_column_blob(st, i);
		int n = sqlite3_column_bytes(st, i);
		char *h = malloc((size_t)n * 2 + 1);
		json_t *j;

		if (!h)
			return NULL;
		for (int k = 0; k < n; k++) {
			h[2 * k] = hex[b[k] >> 4];
			h[2 * k + 1] = hex[b[k] & 15];
		}
		j = json_stringn(h, (size_t)n * 2);
		free(h);
		return j;
	}
	default:
		return json_null();
	}
}

/* Adds column i (and "time" after a "ts" column) to o. */
static int store_col_add(json_t *o, sqlite3_stmt *st, int i)
{
	const char *name = sqlite3_column_name(st, i);
	json_t *v = store_col_json(st, i);

	if (!v || json_object_set_new(o, name, v))
		return -ENOMEM;
	if (strcmp(name, "ts") == 0 && sqlite3_column_type(st, i) == SQLITE_INTEGER) {
		char buf[48];

		if (store_format_time(sqlite3_column_int64(st, i), buf, sizeof(buf)) > 0 &&
		    json_object_set_new(o, "time", json_string(buf)))
			return -ENOMEM;
	}
	return 0;
}

json_t *store_page_json(sqlite3_stmt *st, unsigned limit, const char *key,
			void (*decorate)(sqlite3_stmt *st, json_t *row), int *err)
{
	json_t *rows = json_array(), *page;
	int64_t last_id = -1;
	unsigned n = 0;
	bool more = false;
	int rc;

	*err = -ENOMEM;
	if (!rows)
		return NULL;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row;

		if (n == limit) {
			more = true;
			break;
		}
		row = store_row_json(st);
		if (!row || json_array_append_new(rows, row))
			goto err;
		if (decorate)
			decorate(st, row);
		last_id = sqlite3_column_int64(st, 0);
		n++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		*err = rc;
		goto err;
	}
	page = json_object();
	if (!page) {
		json_decref(rows);
		return NULL;
	}
	if (json_object_set_new(page, key, rows)) { /* steals rows, even on error */
		json_decref(page);
		return NULL;
	}
	if (json_object_set_new(page, "next_cursor",
				more && last_id > 0 ? json_sprintf("%" PRId64, last_id)
						    : json_null())) {
		json_decref(page);
		return NULL;
	}
	*err = 0;
	return page;
err:
	json_decref(rows);
	return NULL;
}

json_t *store_row_json(sqlite3_stmt *st)
{
	json_t *o = json_object();
	int n = sqlite3_column_count(st);

	if (!o)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (store_col_add(o, st, i)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* ---- events ---- */

struct store_ev_cursor {
	const struct event_table *t;
	sqlite3_stmt *st;
	int64_t id;
	bool live;
	int id_col, ts_col;
};

static void store_ev_step(struct store_ev_cursor *c, int *rc_out)
{
	int rc = sqlite3_step(c->st);

	c->live = rc == SQLITE_ROW;
	if (c->live)
		c->id = sqlite3_column_int64(c->st, c->id_col);
	else if (rc != SQLITE_DONE)
		*rc_out = rc;
}

/* id, ts, time, collector, table first, then the table's own columns. */
static json_t *store_ev_row(struct store_ev_cursor *c)
{
	json_t *o = json_object();
	int n = sqlite3_column_count(c->st);

	if (!o)
		return NULL;
	if (store_col_add(o, c->st, c->id_col) || store_col_add(o, c->st, c->ts_col) ||
	    json_object_set_new(o, "collector", json_string(c->t->collector)) ||
	    json_object_set_new(o, "table", json_string(c->t->name)))
		goto out_free;
	for (int i = 0; i < n; i++) {
		if (i != c->id_col && i != c->ts_col && store_col_add(o, c->st, i))
			goto out_free;
	}
	return o;
out_free:
	json_decref(o);
	return NULL;
}

/*
 * Plans for a time-bounded page. Ids follow arrival order, not ts, so a
 * window cannot be turned into an id range. Instead count rows through the
 * ts index, stopping at STORE_WINDOW_SMALL (so the probe costs at most that
 * many index entries): is the window small (then the ts index finds it
 * cheaply), and are there many rows after it (walking ids down from the
 * newest would skip them all)?
 */
#define STORE_WINDOW_SMALL 10000

static bool store_window_small(sqlite3 *db, const char *table, const char *where, int64_t a,
			       int64_t b)
{
	sqlite3_stmt *st;
	char sql[256];
	bool small = false;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT 1 FROM \"%s\" WHERE %s LIMIT %d)",
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

static int store_col_index(sqlite3_stmt *st, const char *name)
{
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		if (strcmp(sqlite3_column_name(st, i), name) == 0)
			return i;
	}
	return -1;
}

int store_query_events(struct store *s, const char *collector, int64_t since_ns, int64_t until_ns,
		       int64_t cursor, unsigned limit, json_t **rows_out, int64_t *next_cursor,
		       char *err, size_t errlen)
{
	const struct event_table *const *tables = store_tables(s);
	struct store_ev_cursor *cur = NULL;
	size_t n_cur = 0, n_tables = 0;
	bool bound_since = since_ns > 0, bound_until = until_ns < INT64_MAX;
	json_t *rows = NULL;
	sqlite3 *db = NULL;
	int64_t last_id = -1;
	int ret = 0, rc = SQLITE_OK;

	*rows_out = NULL;
	*next_cursor = -1;
	if (!limit)
		limit = STORE_QUERY_DEF_LIMIT;
	if (cursor <= 0)
		cursor = INT64_MAX;
	while (tables[n_tables])
		n_tables++;
	cur = calloc(n_tables ? n_tables : 1, sizeof(*cur));
	rows = json_array();
	if (!cur || !rows) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_tables; i++) {
		if (!collector || strcmp(tables[i]->collector, collector) == 0)
			cur[n_cur++].t = tables[i];
	}
	if (!n_cur && collector) {
		snprintf(err, errlen, "no event tables for collector '%s'", collector);
		ret = -ENOENT;
		goto out;
	}
	db = store_reader_get(s);
	if (!db) {
		snprintf(err, errlen, "all database readers are busy");
		ret = -EBUSY;
		goto out;
	}
	for (size_t i = 0; i < n_cur; i++) {
		struct store_ev_cursor *c = &cur[i];
		char sql[320];

		if (!bound_since && !bound_until) {
			/* Newest first by rowid alone: no sort, no index. */
			snprintf(sql, sizeof(sql),
				 "SELECT * FROM \"%s\" WHERE id < ?1 ORDER BY id DESC LIMIT ?4",
				 c->t->name);
		} else if ((bound_until &&
			    !store_window_small(db, c->t->name, "ts >= ?1", until_ns, 0)) ||
			   store_window_small(db, c->t->name, "ts >= ?1 AND ts < ?2", since_ns,
					      until_ns)) {
			/* Many rows newer than the window, or few in it:
			 * pick ids from the ts index alone (covering: no row
			 * reads, cost ~ rows in the window), then read just
			 * those rows. The + keeps SQLite off the rowid order
			 * in the inner query. */
			snprintf(sql, sizeof(sql),
				 "SELECT * FROM \"%s\" WHERE id IN (SELECT id FROM \"%s\""
				 " WHERE ts >= ?2 AND ts < ?3 AND +id < ?1 ORDER BY +id DESC"
				 " LIMIT ?4) ORDER BY id DESC",
				 c->t->name, c->t->name);
		} else {
			/* The window reaches (nearly) the newest rows: walk ids
			 * down from the cursor, filtering; window rows come
			 * first, as ids follow arrival time. */
			snprintf(sql, sizeof(sql),
				 "SELECT * FROM \"%s\" WHERE id < ?1 AND +ts >= ?2 AND +ts < ?3"
				 " ORDER BY id DESC LIMIT ?4",
				 c->t->name);
		}
		if (sqlite3_prepare_v2(db, sql, -1, &c->st, NULL) != SQLITE_OK) {
			snprintf(err, errlen, "table %s: %s", c->t->name, sqlite3_errmsg(db));
			ret = -EIO;
			goto out;
		}
		sqlite3_bind_int64(c->st, 1, cursor);
		sqlite3_bind_int64(c->st, 2, since_ns);
		sqlite3_bind_int64(c->st, 3, until_ns);
		sqlite3_bind_int64(c->st, 4, (int64_t)limit + 1);
		c->id_col = store_col_index(c->st, "id");
		c->ts_col = store_col_index(c->st, "ts");
		if (c->id_col < 0 || c->ts_col < 0) {
			snprintf(err, errlen, "table %s has no id/ts columns", c->t->name);
			ret = -EIO;
			goto out;
		}
		store_ev_step(c, &rc);
	}
	for (;;) {
		struct store_ev_cursor *best = NULL;
		json_t *row;

		for (size_t i = 0; i < n_cur; i++) {
			if (cur[i].live && (!best || cur[i].id > best->id))
				best = &cur[i];
		}
		if (!best || rc != SQLITE_OK)
			break;
		if (json_array_size(rows) == limit) {
			*next_cursor = last_id;
			break;
		}
		row = store_ev_row(best);
		if (!row || json_array_append_new(rows, row)) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		last_id = best->id;
		store_ev_step(best, &rc);
	}
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "reading events: %s", sqlite3_errmsg(db));
		ret = -EIO;
		goto out;
	}
	*rows_out = rows;
	rows = NULL;
out:
	for (size_t i = 0; i < n_cur; i++)
		sqlite3_finalize(cur[i].st);
	store_reader_put(s, db);
	free(cur);
	json_decref(rows);
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
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return ret;
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
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return ret;
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
	if (rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return ret;
}
