// SPDX-License-Identifier: MIT
/*
 * Typed filters, indexes and migrations of event tables (storage/table.h)
 * compiled to SQL: the one place their SQL is written. See store_filter.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "storage/store_filter.h"
#include "storage/store_schema.h"

const struct event_column *store_column_find(const struct event_table *t, const char *name)
{
	for (const struct event_column *c = t->cols; name && c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static bool index_column_ok(const struct event_table *t, const char *name)
{
	return name && (!strcmp(name, "id") || !strcmp(name, "ts") || store_column_find(t, name));
}

static const char *const row_op_names[] = {"eq", "in", "not_null"};

/* Why cond cannot be compiled for t, or NULL. */
static const char *cond_problem(const struct event_table *t, const struct row_cond *cond)
{
	const struct event_column *c = store_column_find(t, cond->column);

	if (!c)
		return "no such column";
	if ((unsigned)cond->op > ROW_NOT_NULL)
		return "unknown operator";
	if (cond->op == ROW_NOT_NULL)
		return cond->n_values ? "not_null takes no value" : NULL;
	if (c->type == COL_REAL || c->type == COL_BLOB)
		return "only integer, bool and text columns compare with eq/in";
	if (!cond->values || !cond->n_values || (cond->op == ROW_EQ && cond->n_values != 1))
		return cond->op == ROW_EQ ? "eq takes one value" : "in takes one value or more";
	if (cond->n_values > STORE_FILTER_VALUES_MAX)
		return "too many values";
	for (size_t i = 0; i < cond->n_values; i++)
		if ((c->type == COL_TEXT) != (cond->values[i].text != NULL))
			return c->type == COL_TEXT ? "a text column compares with text values"
						   : "a number column compares with numbers";
	return NULL;
}

int store_filter_check(const struct event_table *t, const struct row_cond *where, char *err,
		       size_t errlen)
{
	for (const struct row_cond *cond = where; cond && cond->column; cond++) {
		const char *why = cond_problem(t, cond);

		if (why) {
			snprintf(
			    err, errlen, "table %s: filter on %s (%s): %s", t->name, cond->column,
			    (unsigned)cond->op <= ROW_NOT_NULL ? row_op_names[cond->op] : "?", why);
			return -EINVAL;
		}
	}
	return 0;
}

/* One value of cond, as a literal or as the next bound parameter. */
static void value_sql(sqlite3_str *q, const struct row_value *v, int *param)
{
	if (param)
		sqlite3_str_appendf(q, "?%d", (*param)++);
	else if (v->text)
		sqlite3_str_appendf(q, "%Q", v->text);
	else
		sqlite3_str_appendf(q, "%lld", (long long)v->num);
}

void store_filter_sql(sqlite3_str *q, const struct row_cond *where, const char *sep, int *param)
{
	for (const struct row_cond *cond = where; cond && cond->column; cond++) {
		sqlite3_str_appendf(q, "%s%s", cond == where ? "" : sep, cond->column);
		if (cond->op == ROW_NOT_NULL) {
			sqlite3_str_appendall(q, " IS NOT NULL");
			continue;
		}
		sqlite3_str_appendall(q, cond->op == ROW_EQ ? " = " : " IN (");
		for (size_t i = 0; i < cond->n_values; i++) {
			if (i)
				sqlite3_str_appendall(q, ", ");
			value_sql(q, &cond->values[i], param);
		}
		if (cond->op == ROW_IN)
			sqlite3_str_appendchar(q, 1, ')');
	}
}

int store_filter_bind(sqlite3_stmt *st, const struct row_cond *where, int first)
{
	int rc = SQLITE_OK;

	for (const struct row_cond *cond = where; cond && cond->column; cond++)
		for (size_t i = 0; i < cond->n_values && rc == SQLITE_OK; i++) {
			const struct row_value *v = &cond->values[i];

			rc = v->text ? sqlite3_bind_text(st, first++, v->text, -1, SQLITE_STATIC)
				     : sqlite3_bind_int64(st, first++, v->num);
		}
	return rc;
}

static bool value_eq(const struct row_value *a, const struct row_value *b)
{
	if (a->text || b->text)
		return a->text && b->text && !strcmp(a->text, b->text);
	return a->num == b->num;
}

/* Every row that cond admits, p admits too (both on the same column). */
static bool cond_implies(const struct row_cond *cond, const struct row_cond *p)
{
	if (strcmp(cond->column, p->column))
		return false;
	if (p->op == ROW_NOT_NULL)
		return true; /* eq and in admit no NULL */
	if (cond->op == ROW_NOT_NULL)
		return false;
	for (size_t i = 0; i < cond->n_values; i++) {
		bool found = false;

		for (size_t j = 0; j < p->n_values && !found; j++)
			found = value_eq(&cond->values[i], &p->values[j]);
		if (!found)
			return false;
	}
	return true;
}

bool store_filter_implies(const struct row_cond *where, const struct row_cond *pred)
{
	for (const struct row_cond *p = pred; p && p->column; p++) {
		bool held = false;

		for (const struct row_cond *cond = where; cond && cond->column && !held; cond++)
			held = cond_implies(cond, p);
		if (!held)
			return false;
	}
	return true;
}

char *store_index_sql(const struct event_table *t, const struct table_index *ix)
{
	sqlite3_str *q = sqlite3_str_new(NULL);

	sqlite3_str_appendf(q, "CREATE INDEX IF NOT EXISTS %s_%s ON %s(", t->name, ix->name,
			    t->name);
	for (const char *const *col = ix->columns; col && *col; col++)
		sqlite3_str_appendf(q, "%s%s", col == ix->columns ? "" : ", ", *col);
	sqlite3_str_appendchar(q, 1, ')');
	if (ix->where && ix->where->column) {
		sqlite3_str_appendall(q, " WHERE ");
		store_filter_sql(q, ix->where, " AND ", NULL);
	}
	return sqlite3_str_finish(q);
}

char *store_migration_sql(const struct event_table *t, const struct table_migration *m)
{
	sqlite3_str *q = sqlite3_str_new(NULL);
	bool any = false;

	sqlite3_str_appendf(q, "UPDATE %s SET %s = CASE %s", t->name, m->column, m->from);
	for (size_t v = 0; v < m->n_names; v++)
		if (m->names[v])
			sqlite3_str_appendf(q, " WHEN %lld THEN %Q", (long long)v, m->names[v]);
	sqlite3_str_appendf(q, " END WHERE %s IN (", m->from);
	for (size_t v = 0; v < m->n_names; v++)
		if (m->names[v]) {
			sqlite3_str_appendf(q, "%s%lld", any ? ", " : "", (long long)v);
			any = true;
		}
	sqlite3_str_appendall(q, ");");
	return sqlite3_str_finish(q);
}

int store_table_queries_check(const struct event_table *t, char *err, size_t errlen)
{
	for (const struct table_index *ix = t->indexes; ix && ix->name; ix++) {
		if (!store_ident_ok(ix->name) || !ix->columns || !ix->columns[0]) {
			snprintf(err, errlen, "table %s: index %s: invalid declaration", t->name,
				 ix->name);
			return -EINVAL;
		}
		for (const char *const *col = ix->columns; *col; col++)
			if (!index_column_ok(t, *col)) {
				snprintf(err, errlen, "table %s: index %s: no column %s", t->name,
					 ix->name, *col);
				return -EINVAL;
			}
		if (store_filter_check(t, ix->where, err, errlen))
			return -EINVAL;
	}
	for (const struct table_migration *m = t->migrations; m && m->column; m++) {
		const struct event_column *to = store_column_find(t, m->column);
		const struct event_column *from = store_column_find(t, m->from);

		if (!to || to->type != COL_TEXT || !from ||
		    (from->type != COL_INT && from->type != COL_UINT) || !m->names) {
			snprintf(err, errlen, "table %s: migration of %s: invalid declaration",
				 t->name, m->column);
			return -EINVAL;
		}
	}
	return 0;
}
