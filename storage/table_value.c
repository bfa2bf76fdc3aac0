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

static const struct event_column *table_column(const struct event_table *t, const char *name)
{
	for (const struct event_column *c = t->cols; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static bool value_matches(const struct col_value *v, const struct row_value *want)
{
	if (v->kind == COLV_TEXT)
		return want->text && strlen(want->text) == v->len &&
		       !memcmp(want->text, v->s, v->len);
	if (v->kind == COLV_INT || v->kind == COLV_BOOL || v->kind == COLV_UINT)
		return !want->text && want->num == v->i;
	return false;
}

/* One condition on row; an unknown column matches nothing. */
static bool cond_matches(const struct event_table *t, const struct row_cond *cond, const void *row)
{
	const struct event_column *c = table_column(t, cond->column);
	struct col_value v;

	if (!c)
		return false;
	col_value(c, row, &v);
	if (v.kind == COLV_NULL)
		return false; /* NULL equals nothing; not_null fails */
	if (cond->op == ROW_NOT_NULL)
		return true;
	for (size_t i = 0; i < cond->n_values; i++)
		if (value_matches(&v, &cond->values[i]))
			return true;
	return false;
}

bool table_filter_match(const struct event_table *t, const struct row_cond *where, const void *row)
{
	for (const struct row_cond *cond = where; cond && cond->column; cond++)
		if (!cond_matches(t, cond, row))
			return false;
	return true;
}

bool table_group_equal(const struct event_table *t, const char *const *group_by, const void *a,
		       const void *b)
{
	for (const char *const *g = group_by; g && *g; g++) {
		const struct event_column *c = table_column(t, *g);
		struct col_value va, vb;

		if (!c)
			return false;
		col_value(c, a, &va);
		col_value(c, b, &vb);
		if (va.kind == COLV_NULL && vb.kind == COLV_NULL)
			continue;
		if (va.kind != vb.kind || va.i != vb.i || va.len != vb.len ||
		    (va.len && memcmp(va.s, vb.s, va.len)) || va.d != vb.d)
			return false;
	}
	return group_by && *group_by;
}
