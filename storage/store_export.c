// SPDX-License-Identifier: MIT
/*
 * Event tables read as a log for the exporters (storage/store_export.h),
 * the database's id, and retention watches.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "storage/store.h"
#include "storage/store_export.h"
#include "storage/store_internal.h"
#include "storage/store_schema.h"

static int store_rc_errno(int rc)
{
	if (rc == SQLITE_INTERRUPT)
		return -ETIMEDOUT;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return -EBUSY;
	return -EIO;
}

int store_export_read(struct store *s, const struct event_table *const *tables, size_t n,
		      int64_t after, unsigned limit, store_export_fn fn, void *arg)
{
	unsigned char row[EVENT_ROW_MAX];
	sqlite3 *db = store_reader_get(s);
	int rc = SQLITE_OK, ret = 0;

	if (!db)
		return -EBUSY;
	/* One read transaction: every table seen at the same commit. */
	rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	for (size_t i = 0; i < n && rc == SQLITE_OK && !ret; i++) {
		char cols[2048], sql[2300];
		sqlite3_stmt *st;

		if (store_schema_select_list(tables[i], cols, sizeof(cols))) {
			rc = SQLITE_ERROR;
			break;
		}
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM \"%s\" WHERE id > ?1 ORDER BY id LIMIT ?2", cols,
			 tables[i]->name);
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			break;
		sqlite3_bind_int64(st, 1, after);
		sqlite3_bind_int64(st, 2, limit);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			store_schema_read_row(st, 2, tables[i], row);
			ret = fn(i, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), row,
				 arg);
			if (ret)
				break;
		}
		sqlite3_finalize(st);
		if (rc == SQLITE_DONE || rc == SQLITE_ROW)
			rc = SQLITE_OK;
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	store_reader_put(s, db);
	if (ret)
		return ret;
	return rc == SQLITE_OK ? 0 : store_rc_errno(rc);
}

/*
 * One aggregate row per table, all in one read transaction: sql names the
 * table as %1$s and binds ?1 = after (and ?2 = upto where it has one); fold
 * takes each table's row.
 */
static int export_tables_fold(struct store *s, const struct event_table *const *tables, size_t n,
			      const char *sql_fmt, int64_t after, int64_t upto,
			      void (*fold)(sqlite3_stmt *st, void *arg), void *arg)
{
	sqlite3 *db = store_reader_get(s);
	int rc;

	if (!db)
		return -EBUSY;
	rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
		char sql[256];
		sqlite3_stmt *st;

		snprintf(sql, sizeof(sql), sql_fmt, tables[i]->name);
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			break;
		sqlite3_bind_int64(st, 1, after);
		if (sqlite3_bind_parameter_count(st) > 1)
			sqlite3_bind_int64(st, 2, upto);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			fold(st, arg);
			rc = SQLITE_OK;
		}
		sqlite3_finalize(st);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	store_reader_put(s, db);
	return rc == SQLITE_OK ? 0 : store_rc_errno(rc);
}

struct export_fold {
	uint64_t rows;
	int64_t ts_or_id; /* the oldest pending row's ts, or the span's last id */
};

static void fold_pending(sqlite3_stmt *st, void *arg)
{
	struct export_fold *f = arg;
	int64_t ts = sqlite3_column_int64(st, 1);

	f->rows += (uint64_t)sqlite3_column_int64(st, 0);
	if (sqlite3_column_type(st, 1) != SQLITE_NULL && (!f->ts_or_id || ts < f->ts_or_id))
		f->ts_or_id = ts;
}

int store_export_pending(struct store *s, const struct event_table *const *tables, size_t n,
			 int64_t after, uint64_t *rows, int64_t *oldest_ns)
{
	struct export_fold f = {0};
	int err = export_tables_fold(
	    s, tables, n,
	    "SELECT count(*), (SELECT ts FROM \"%1$s\" WHERE id > ?1 ORDER BY id LIMIT 1)"
	    " FROM \"%1$s\" WHERE id > ?1",
	    after, 0, fold_pending, &f);

	*rows = f.rows;
	*oldest_ns = f.ts_or_id;
	return err;
}

int store_db_id(struct store *s, uint64_t *out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	uint64_t v = 0;
	int rc;

	while (!v && getrandom(&v, sizeof(v), 0) != sizeof(v))
		;
	v &= INT64_MAX; /* store_meta.value is a signed integer */
	rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, (int)s->cfg.busy_timeout_ms);
		rc = sqlite3_prepare_v2(
		    db, "INSERT OR IGNORE INTO store_meta(key, value) VALUES('db_id', ?1)", -1, &st,
		    NULL);
	}
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (int64_t)v);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_finalize(st);
		st = NULL;
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "SELECT value FROM store_meta WHERE key = 'db_id'", -1,
					&st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
		if (rc == SQLITE_OK)
			*out = (uint64_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

/* ---- watches ---- */

struct store_watch *store_watch_add(struct store *s, const struct event_table *const *tables,
				    size_t n)
{
	struct store_watch *w = NULL;
	uint64_t mask = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < s->n_known && strcmp(s->known[k].name, tables[i]->name))
			k++;
		if (k == s->n_known || k >= 64)
			return NULL;
		mask |= 1ull << k;
	}
	pthread_mutex_lock(&s->watch_mu);
	for (size_t i = 0; i < STORE_WATCH_MAX && !w; i++) {
		if (!s->watches[i].used) {
			w = &s->watches[i];
			memset(w, 0, sizeof(*w));
			w->s = s;
			w->used = true;
			w->tables = mask;
		}
	}
	pthread_mutex_unlock(&s->watch_mu);
	return w;
}

void store_watch_set(struct store_watch *w, int64_t acked, int64_t read)
{
	pthread_mutex_lock(&w->s->watch_mu);
	w->acked = acked;
	w->read = read > acked ? read : acked;
	pthread_mutex_unlock(&w->s->watch_mu);
}

void store_watch_take(struct store_watch *w, uint64_t *deleted, uint64_t *inflight)
{
	pthread_mutex_lock(&w->s->watch_mu);
	*deleted = w->deleted;
	*inflight = w->inflight;
	w->deleted = w->inflight = 0;
	pthread_mutex_unlock(&w->s->watch_mu);
}

void store_watch_remove(struct store_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->s->watch_mu);
	w->used = false;
	pthread_mutex_unlock(&w->s->watch_mu);
}

void store_watch_deleted(struct store *s, size_t table, const int64_t *ids, size_t n)
{
	if (table >= 64)
		return;
	pthread_mutex_lock(&s->watch_mu);
	for (size_t i = 0; i < STORE_WATCH_MAX; i++) {
		struct store_watch *w = &s->watches[i];

		if (!w->used || !(w->tables & (1ull << table)))
			continue;
		for (size_t k = 0; k < n; k++) {
			if (ids[k] > w->read)
				w->deleted++;
			else if (ids[k] > w->acked)
				w->inflight++;
		}
	}
	pthread_mutex_unlock(&s->watch_mu);
}

static void fold_span(sqlite3_stmt *st, void *arg)
{
	struct export_fold *f = arg;

	f->rows += (uint64_t)sqlite3_column_int64(st, 0);
	if (sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_int64(st, 1) > f->ts_or_id)
		f->ts_or_id = sqlite3_column_int64(st, 1);
}

int store_export_span(struct store *s, const struct event_table *const *tables, size_t n,
		      int64_t after, int64_t upto, uint64_t *rows, int64_t *last)
{
	struct export_fold f = {.ts_or_id = after};
	int err = export_tables_fold(
	    s, tables, n, "SELECT count(*), max(id) FROM \"%1$s\" WHERE id > ?1 AND id <= ?2",
	    after, upto, fold_span, &f);

	*rows = f.rows;
	*last = f.ts_or_id;
	return err;
}
