/* SPDX-License-Identifier: MIT */
/*
 * SQL of event tables, generated from their descriptors (storage/table.h).
 * Pure string building and binding, unit-tested in tests/unit/test_store.c.
 */
#ifndef SYSOBS_STORE_SCHEMA_H
#define SYSOBS_STORE_SCHEMA_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

#define STORE_COLS_MAX 48 /* columns per table besides id and ts */

/* [a-z_][a-z0-9_]{0,62}: safe to paste into SQL unquoted. */
bool store_ident_ok(const char *name);
/* Checks a descriptor: names, sizes, offsets, null and filter rules.
 * 0 or -EINVAL with the reason in err. */
int store_schema_check(const struct event_table *t, char *err, size_t errlen);
size_t store_schema_ncols(const struct event_table *t);
/* "CREATE TABLE t(id, ts, cols...); CREATE INDEX t_ts ..." into buf. */
int store_schema_create_sql(const struct event_table *t, char *buf, size_t len);
/* "INSERT INTO t(id, ts, cols...) VALUES (?1, ?2, ?3...)" into buf. */
int store_schema_insert_sql(const struct event_table *t, char *buf, size_t len);
/* ALTER TABLE ADD COLUMN for every column the existing table lacks. */
int store_schema_add_columns(sqlite3 *db, const struct event_table *t, char *err, size_t errlen);
/* Binds ?3... of an insert from row; SQLITE_OK or an SQLite error code. */
int store_schema_bind(sqlite3_stmt *st, const struct event_table *t, const void *row);
/* Fills row (t->row_size bytes) from result columns first... of st, in
 * t->cols order; NULL becomes the column's sentinel (-1, 0 or ""). */
void store_schema_read_row(sqlite3_stmt *st, int first, const struct event_table *t, void *row);
/* "id, ts, col1, col2, ..." into buf. */
int store_schema_select_list(const struct event_table *t, char *buf, size_t len);

#endif
