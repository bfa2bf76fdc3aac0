/* SPDX-License-Identifier: MIT */
/*
 * The typed queries of storage/table.h (filters, indexes, data migrations)
 * compiled to SQL: a filter's values as bound parameters, an index's own
 * predicate as literals (SQLite matches a partial index's predicate against
 * a query's terms as written, and allows no parameter in it). Unit-tested in
 * tests/unit/test_store_filter.c, with the query plans.
 */
#ifndef SYSOBS_STORE_FILTER_H
#define SYSOBS_STORE_FILTER_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "storage/table.h"

#define STORE_FILTER_VALUES_MAX 1024 /* values of one eq/in condition */

/* The column of t named name, or NULL. */
const struct event_column *store_column_find(const struct event_table *t, const char *name);

/* 0, or -EINVAL with what is wrong with a condition of where in err:
 * unknown column or operator, values missing or of the wrong type. */
int store_filter_check(const struct event_table *t, const struct row_cond *where, char *err,
		       size_t errlen);

/* Appends where's conditions joined by sep: with param, each value as ?N
 * from *param on (advanced); without, as a literal. */
void store_filter_sql(sqlite3_str *q, const struct row_cond *where, const char *sep, int *param);

/* Binds where's values from parameter first on, in store_filter_sql()'s
 * order. SQLITE_OK or an SQLite error code. */
int store_filter_bind(sqlite3_stmt *st, const struct row_cond *where, int first);

/* Every row where admits, pred admits too (each condition of pred is implied
 * by one of where on its column): a partial index on pred serves where. */
bool store_filter_implies(const struct row_cond *where, const struct row_cond *pred);

/* "CREATE INDEX IF NOT EXISTS <t>_<name> ON <t>(cols) [WHERE pred]" and the
 * UPDATE of one data migration; sqlite3_free() them. NULL: no memory. */
char *store_index_sql(const struct event_table *t, const struct table_index *ix);
char *store_migration_sql(const struct event_table *t, const struct table_migration *m);

/* t's indexes and migrations name its columns rightly: 0 or -EINVAL + err. */
int store_table_queries_check(const struct event_table *t, char *err, size_t errlen);

#endif
