// SPDX-License-Identifier: MIT
/*
 * Migrations at open: the core schema, versioned with PRAGMA user_version,
 * then every event table brought up to its descriptor (versions in
 * schema_migrations), each step in one transaction. Calls store_schema.c
 * and store_util.c; called by store.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "storage/store.h"
#include "storage/store_internal.h"
#include "storage/store_filter.h"
#include "storage/store_schema.h"

/* Core schema, versioned with PRAGMA user_version: entry i brings the
 * database from version i to i + 1. Append only; never edit a shipped entry. */
static const char *const store_core_migrations[] = {
    /* 1 */
    "CREATE TABLE schema_migrations(component TEXT PRIMARY KEY, version INTEGER NOT NULL);"
    "CREATE TABLE store_meta(key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE metric_series(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " labels TEXT NOT NULL, UNIQUE(name, labels));"
    "CREATE TABLE metric_samples(series_id INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL);"
    "CREATE INDEX metric_samples_series_ts ON metric_samples(series_id, ts);"
    "CREATE INDEX metric_samples_ts ON metric_samples(ts);",
    /* 2: a histogram's classic buckets on its _count sample, an opaque
     * blob for the store (the agent's metrics/hist_blob.h format). */
    "ALTER TABLE metric_samples ADD COLUMN buckets BLOB;",
    NULL,
};

/* Runs script inside one transaction and then `tail` (a version bump),
 * rolling back everything on failure. */
static int store_migrate_step(sqlite3 *db, const char *script, sqlite3_stmt *bump, char *err,
			      size_t errlen, const char *what)
{
	char *msg = NULL;
	int rc;

	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_exec(db, script, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_rollback;
	rc = sqlite3_step(bump);
	sqlite3_reset(bump);
	if (rc != SQLITE_DONE) {
		msg = sqlite3_mprintf("%s", sqlite3_errmsg(db));
		goto out_rollback;
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_rollback;
	return 0;

out_rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out_err:
	snprintf(err, errlen, "%s: %s", what, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return -EIO;
}

int store_migrate_core(struct store *s, char *err, size_t errlen)
{
	size_t known = 0;
	int64_t ver = 0;
	char what[96];
	int rc;

	while (store_core_migrations[known])
		known++;
	rc = store_query_int(s->db, "PRAGMA user_version", &ver);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: reading user_version: %s", s->path,
			 sqlite3_errmsg(s->db));
		return -EIO;
	}
	if (ver < 0 || (uint64_t)ver > known) {
		snprintf(err, errlen,
			 "%s: schema version %" PRId64 " is newer than this sysobsd knows (%zu); "
			 "refusing to touch it",
			 s->path, ver, known);
		return -EPROTO;
	}
	for (size_t v = (size_t)ver; v < known; v++) {
		char bump_sql[64];
		sqlite3_stmt *bump;

		snprintf(bump_sql, sizeof(bump_sql), "PRAGMA user_version = %zu", v + 1);
		rc = sqlite3_prepare_v2(s->db, bump_sql, -1, &bump, NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
			return -EIO;
		}
		snprintf(what, sizeof(what), "%s: core migration %zu", s->path, v + 1);
		rc = store_migrate_step(s->db, store_core_migrations[v], bump, err, errlen, what);
		sqlite3_finalize(bump);
		if (rc)
			return rc;
	}
	return 0;
}

/* err: what SQLite said about table t's step that failed; -EIO. */
static int store_table_sql_err(struct store *s, const struct event_table *t, char *err,
			       size_t errlen)
{
	snprintf(err, errlen, "%s: table %s: %s", s->path, t->name, sqlite3_errmsg(s->db));
	return -EIO;
}

/* The schema version table t is at in the file (0: not there yet). */
static int store_table_version(struct store *s, const struct event_table *t, int64_t *ver,
			       char *err, size_t errlen)
{
	sqlite3_stmt *get = NULL;
	int rc, ret = 0;

	*ver = 0;
	rc = sqlite3_prepare_v2(s->db, "SELECT version FROM schema_migrations WHERE component = ?1",
				-1, &get, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(get, 1, t->name, -1, SQLITE_STATIC);
		rc = sqlite3_step(get);
		if (rc == SQLITE_ROW)
			*ver = sqlite3_column_int64(get, 0);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = store_table_sql_err(s, t, err, errlen);
	sqlite3_finalize(get);
	return ret;
}

/* Creates t's indexes that are not there yet. */
static int store_table_indexes(struct store *s, const struct event_table *t, char *err,
			       size_t errlen)
{
	for (const struct table_index *ix = t->indexes; ix && ix->name; ix++) {
		char *sql_ix = store_index_sql(t, ix);
		int rc = sql_ix ? sqlite3_exec(s->db, sql_ix, NULL, NULL, NULL) : SQLITE_NOMEM;

		sqlite3_free(sql_ix);
		if (rc != SQLITE_OK)
			return store_table_sql_err(s, t, err, errlen);
	}
	return 0;
}

/* Creates table t from its columns, at version (its latest). */
static int store_table_create(struct store *s, const struct event_table *t, sqlite3_stmt *bump,
			      int64_t version, char *err, size_t errlen)
{
	char what[160], sql[4096];

	if (store_schema_create_sql(t, sql, sizeof(sql))) {
		snprintf(err, errlen, "table %s: CREATE too long", t->name);
		return -EIO;
	}
	sqlite3_bind_int64(bump, 2, version);
	snprintf(what, sizeof(what), "%s: creating table %s", s->path, t->name);
	return store_migrate_step(s->db, sql, bump, err, errlen, what);
}

/*
 * Brings one event table up to its descriptor. Versions in schema_migrations:
 * 1 = the table exists; each entry of t->migrations (data changes) adds one.
 * A new table is created from its columns at the latest version; an existing
 * one gets the columns it lacks, then the migrations past its version. Then
 * its indexes (IF NOT EXISTS). All in one transaction.
 */
int store_migrate_table(struct store *s, const struct event_table *t, char *err, size_t errlen)
{
	sqlite3_stmt *bump = NULL;
	size_t known = 0;
	int64_t ver = 0;
	char what[160], *mig;
	int ret = 0;

	while (t->migrations && t->migrations[known].column)
		known++;
	ret = store_table_version(s, t, &ver, err, errlen);
	if (ret)
		return ret;
	if (ver < 0 || (uint64_t)ver > known + 1) {
		snprintf(err, errlen,
			 "%s: table %s is at schema version %" PRId64
			 ", newer than this sysobsd knows (%zu); refusing to touch it",
			 s->path, t->name, ver, known + 1);
		return -EPROTO;
	}
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO schema_migrations(component, version) VALUES(?1, ?2)"
			       " ON CONFLICT(component) DO UPDATE SET version = excluded.version",
			       -1, &bump, NULL) != SQLITE_OK)
		return store_table_sql_err(s, t, err, errlen);
	sqlite3_bind_text(bump, 1, t->name, -1, SQLITE_STATIC);
	if (ver == 0) {
		ret = store_table_create(s, t, bump, (int64_t)known + 1, err, errlen);
		ver = (int64_t)known + 1;
	}
	if (!ret)
		ret = store_schema_add_columns(s->db, t, err, errlen);
	for (size_t v = (size_t)ver; !ret && v < known + 1; v++) {
		sqlite3_reset(bump);
		sqlite3_bind_int64(bump, 2, (int64_t)v + 1);
		snprintf(what, sizeof(what), "%s: table %s migration %zu", s->path, t->name, v + 1);
		mig = store_migration_sql(t, &t->migrations[v - 1]);
		ret = mig ? store_migrate_step(s->db, mig, bump, err, errlen, what) : -ENOMEM;
		sqlite3_free(mig);
	}
	if (!ret)
		ret = store_table_indexes(s, t, err, errlen);
	sqlite3_finalize(bump);
	return ret;
}
