/* SPDX-License-Identifier: MIT */
/*
 * One column of a row struct as a value: the one reading of a descriptor's
 * types and NULL sentinels (storage/table.h) for every reader of a row
 * (the store's binds, the API's messages, the exporters' encoders).
 */
#ifndef SYSOBS_TABLE_VALUE_H
#define SYSOBS_TABLE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

enum col_kind {
	COLV_NULL, /* the column's sentinel: no value */
	COLV_INT,  /* i: COL_INT, and COL_UINT up to INT64_MAX */
	COLV_UINT, /* u: COL_UINT past INT64_MAX */
	COLV_BOOL, /* i: 0 or 1 */
	COLV_REAL, /* d */
	COLV_TEXT, /* s[len], not NUL-terminated when it fills the column */
	COLV_BLOB, /* s[len]: bytes */
};

struct col_value {
	enum col_kind kind;
	int64_t i;
	uint64_t u;
	double d;
	const char *s;
	size_t len;
};

/* The value of column c in row. */
void col_value(const struct event_column *c, const void *row, struct col_value *out);

/* An integer or bool column of row, widened (unsigned 64-bit wraps). */
int64_t col_int(const struct event_column *c, const void *row);

/* row (of t) meets every condition of where (storage/table.h), as the
 * store's SQL would decide: a NULL column equals nothing. What the unit
 * tests' recording sink answers sink_latest() with. */
bool table_filter_match(const struct event_table *t, const struct row_cond *where, const void *row);

/* Rows a and b of t fall in the same group of group_by (NULL-terminated
 * column names; NULL values group together, as SQL's GROUP BY does). False
 * for no group_by: each row is its own group. */
bool table_group_equal(const struct event_table *t, const char *const *group_by, const void *a,
		       const void *b);

#endif
