// SPDX-License-Identifier: MIT
/* Column values of a row struct (storage/table_value.h). */
#include <string.h>

#include "storage/table_value.h"

int64_t col_int(const struct event_column *c, const void *row)
{
	const unsigned char *p = (const unsigned char *)row + c->offset;

	if (c->type == COL_BOOL)
		return *(const bool *)p;
	if (c->type == COL_INT) {
		switch (c->size) {
		case 1:
			return *(const int8_t *)p;
		case 2:
			return *(const int16_t *)p;
		case 4:
			return *(const int32_t *)p;
		default:
			return *(const int64_t *)p;
		}
	}
	switch (c->size) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		/* SQLite integers are signed 64-bit: values past INT64_MAX
		 * wrap, and read back through the same cast. */
		return (int64_t) * (const uint64_t *)p;
	}
}

void col_value(const struct event_column *c, const void *row, struct col_value *out)
{
	const unsigned char *p = (const unsigned char *)row + c->offset;

	memset(out, 0, sizeof(*out));
	switch (c->type) {
	case COL_TEXT:
		out->s = (const char *)p;
		out->len = strnlen(out->s, c->size);
		out->kind = !out->len && c->null == COL_NULL_EMPTY ? COLV_NULL : COLV_TEXT;
		return;
	case COL_BLOB: {
		uint16_t n;

		memcpy(&n, p, sizeof(n));
		if (n > c->size - sizeof(n))
			n = c->size - sizeof(n);
		out->s = (const char *)p + sizeof(n);
		out->len = n;
		out->kind = !n && c->null == COL_NULL_EMPTY ? COLV_NULL : COLV_BLOB;
		return;
	}
	case COL_REAL:
		out->d = *(const double *)p;
		out->kind = c->null == COL_NULL_ZERO && out->d == 0 ? COLV_NULL : COLV_REAL;
		return;
	default:
		out->i = col_int(c, row);
		if ((c->null == COL_NULL_NEG && out->i < 0) ||
		    (c->null == COL_NULL_ZERO && !out->i))
			out->kind = COLV_NULL;
		else if (c->type == COL_BOOL)
			out->kind = COLV_BOOL;
		else if (c->type == COL_UINT && out->i < 0)
			out->kind = COLV_UINT, out->u = (uint64_t)out->i;
		else
			out->kind = COLV_INT;
		return;
	}
}
