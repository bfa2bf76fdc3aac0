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

#endif
