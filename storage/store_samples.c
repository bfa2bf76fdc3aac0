// SPDX-License-Identifier: MIT
/*
 * Metric history read as a log after a durable cursor (see store_samples.h):
 * what the remote-write sender reads, and where it keeps its place.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_samples.h"

int store_samples_after(struct store *s, int64_t after, size_t limit, store_sample_row_fn fn,
			void *arg)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int ret = 0, rc;

	if (!limit)
		return 0;
	db = store_reader_get(s);
	if (!db)
		return -EBUSY;
	/* A range scan of the table's own b-tree; the series by primary key. */
	rc = sqlite3_prepare_v2(
	    db,
	    "SELECT m.rowid, m.series_id, m.ts, m.value, s.name, s.labels, m.buckets"
	    " FROM metric_samples m JOIN metric_series s ON s.id = m.series_id"
	    " WHERE m.rowid > ?1 ORDER BY m.rowid LIMIT ?2",
	    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, after);
		sqlite3_bind_int64(st, 2, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	}
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 4);
		const char *l = (const char *)sqlite3_column_text(st, 5);
		struct store_sample smp = {
		    .rowid = sqlite3_column_int64(st, 0),
		    .series_id = sqlite3_column_int64(st, 1),
		    .ts_ns = sqlite3_column_int64(st, 2),
		    .value = sqlite3_column_type(st, 3) == SQLITE_NULL
				 ? NAN
				 : sqlite3_column_double(st, 3),
		    .name = n ? n : "",
		    .labels = l ? l : "",
		    .blob = sqlite3_column_blob(st, 6),
		    .blob_len = (size_t)sqlite3_column_bytes(st, 6),
		};

		ret = fn(&smp, arg);
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

int store_samples_last(struct store *s, int64_t *out)
{
	sqlite3 *db = store_reader_get(s);
	int rc;

	if (!db)
		return -EBUSY;
	rc = store_query_int(db, "SELECT max(rowid) FROM metric_samples", out);
	store_reader_put(s, db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

int store_samples_first(struct store *s, int64_t *out)
{
	sqlite3 *db = store_reader_get(s);
	int rc;

	if (!db)
		return -EBUSY;
	rc = store_query_int(db, "SELECT min(rowid) FROM metric_samples", out);
	store_reader_put(s, db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

#define CURSOR_KEY_MAX 64

struct store_cursor {
	sqlite3 *db;
	sqlite3_stmt *get, *set;
	char key[CURSOR_KEY_MAX];
};

void store_cursor_close(struct store_cursor *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->get);
	sqlite3_finalize(c->set);
	sqlite3_close(c->db);
	free(c);
}

struct store_cursor *store_cursor_open(struct store *s, const char *name, char *err, size_t errlen)
{
	struct store_cursor *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (snprintf(c->key, sizeof(c->key), "cursor.%s", name) >= (int)sizeof(c->key)) {
		snprintf(err, errlen, "cursor name too long");
		goto out_free;
	}
	rc = sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	sqlite3_busy_timeout(c->db, (int)s->cfg.busy_timeout_ms);
	/* synchronous is per connection (FULL by default): NORMAL like the
	 * writer, so a cursor commit costs no fsync; checkpoints stay with the
	 * store's checkpointer thread. */
	if (store_exec_rows(c->db, "PRAGMA synchronous = NORMAL") != SQLITE_OK ||
	    store_exec_rows(c->db, "PRAGMA wal_autocheckpoint = 0") != SQLITE_OK)
		goto out_sql;
	rc = sqlite3_prepare_v2(c->db, "SELECT value FROM store_meta WHERE key = ?1", -1, &c->get,
				NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
		    c->db, "INSERT OR REPLACE INTO store_meta(key, value) VALUES(?1, ?2)", -1,
		    &c->set, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	sqlite3_bind_text(c->get, 1, c->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(c->set, 1, c->key, -1, SQLITE_STATIC);
	return c;

out_sql:
	snprintf(err, errlen, "%s: %s", s->path, c->db ? sqlite3_errmsg(c->db) : "cannot open");
out_free:
	store_cursor_close(c);
	return NULL;
}

int store_cursor_find(struct store_cursor *c, int64_t *out, bool *found)
{
	int rc = sqlite3_step(c->get);

	*found = rc == SQLITE_ROW;
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(c->get, 0) : 0;
	sqlite3_reset(c->get);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

static int store_cursor_note_stmt(struct store_cursor *c, const char *sql, const char *what,
				  sqlite3_stmt **st)
{
	char key[CURSOR_KEY_MAX + 64];

	if (snprintf(key, sizeof(key), "%s/%s", c->key, what) >= (int)sizeof(key) ||
	    sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(*st, 1, key, -1, SQLITE_TRANSIENT);
	return 0;
}

int store_cursor_note_get(struct store_cursor *c, const char *what, char *buf, size_t len)
{
	sqlite3_stmt *st;
	int rc;

	buf[0] = '\0';
	if (store_cursor_note_stmt(c, "SELECT value FROM store_meta WHERE key = ?1", what, &st))
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int store_cursor_note_set(struct store_cursor *c, const char *what, const char *text)
{
	sqlite3_stmt *st;
	int rc;

	if (store_cursor_note_stmt(
		c,
		text ? "INSERT OR REPLACE INTO store_meta(key, value) VALUES(?1, ?2)"
		     : "DELETE FROM store_meta WHERE key = ?1",
		what, &st))
		return -EIO;
	if (text)
		sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
	return rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? -EBUSY : -EIO;
}

int store_cursor_notes(struct store_cursor *c, const char *prefix,
		       int (*fn)(const char *what, const char *text, void *arg), void *arg)
{
	size_t skip = strlen(c->key) + 1; /* "cursor.<name>/" */
	sqlite3_stmt *st;
	int rc = SQLITE_DONE, err = 0;

	/* substr() rather than LIKE or GLOB: a prefix holds no wildcards. */
	if (store_cursor_note_stmt(c,
				   "SELECT key, value FROM store_meta WHERE "
				   "substr(key, 1, length(?1)) = ?1 ORDER BY key",
				   prefix, &st))
		return -EIO;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);

		if (k && strlen(k) >= skip)
			err = fn(k + skip, v ? v : "", arg);
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

int store_cursor_get(struct store_cursor *c, int64_t *out)
{
	bool found;

	return store_cursor_find(c, out, &found);
}

int store_cursor_set(struct store_cursor *c, int64_t v)
{
	int rc;

	sqlite3_bind_int64(c->set, 2, v);
	rc = sqlite3_step(c->set);
	sqlite3_reset(c->set);
	if (rc == SQLITE_DONE)
		return 0;
	return rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? -EBUSY : -EIO;
}
