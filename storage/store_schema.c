// SPDX-License-Identifier: MIT
/*
 * SQL generated from event table descriptors (storage/table.h): CREATE TABLE
 * for a new table, ALTER TABLE ADD COLUMN for a column an older build did not
 * have, the INSERT statement, and the binds of one row. The row's bytes come
 * straight from the queue slot; text is bound without a copy (the slot stays
 * put until the statement has run).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_filter.h"
#include "storage/store_schema.h"
#include "storage/table_value.h"

static const char *col_sql_type(enum col_type t)
{
	switch (t) {
	case COL_REAL:
		return "REAL";
	case COL_TEXT:
		return "TEXT";
	case COL_BLOB:
		return "BLOB";
	default:
		return "INTEGER";
	}
}

bool store_ident_ok(const char *name)
{
	if (!name || !*name || strlen(name) > 63)
		return false;
	for (const char *p = name; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return !(name[0] >= '0' && name[0] <= '9');
}

int store_schema_check(const struct event_table *t, char *err, size_t errlen)
{
	const char *why = NULL;
	size_t n = 0;

	if (!store_ident_ok(t->name) || !t->collector || !t->cols || t->row_size > EVENT_ROW_MAX) {
		snprintf(err, errlen, "table %s: invalid declaration",
			 t->name ? t->name : "(null)");
		return -EINVAL;
	}
	for (const struct event_column *c = t->cols; c->name; c++, n++) {
		bool int_size = c->size == 1 || c->size == 2 || c->size == 4 || c->size == 8;

		if (!store_ident_ok(c->name) || !strcmp(c->name, "id") || !strcmp(c->name, "ts"))
			why = "bad column name";
		else if (c->offset + c->size > t->row_size)
			why = "column outside the row";
		else if ((c->type == COL_INT || c->type == COL_UINT) && !int_size)
			why = "integer size must be 1, 2, 4 or 8";
		else if (c->type == COL_REAL && c->size != sizeof(double))
			why = "REAL must be a double";
		else if (c->type == COL_BOOL && c->size != sizeof(bool))
			why = "BOOL must be a bool";
		else if (c->null == COL_NULL_NEG && c->type != COL_INT)
			why = "NULL_NEG needs a signed integer";
		else if (c->null == COL_NULL_EMPTY && c->type != COL_TEXT && c->type != COL_BLOB)
			why = "NULL_EMPTY needs text or a blob";
		else if (c->type == COL_BLOB && (c->size <= sizeof(uint16_t) || c->filter))
			why = "a BLOB needs room after its length and takes no filter";
		else if (c->filter == COL_FILTER_ENUM && !c->domain)
			why = "an enum filter needs a domain";
		else if ((c->filter == COL_FILTER_ADDR || c->filter == COL_FILTER_PREFIX) &&
			 c->type != COL_TEXT)
			why = "an address or prefix filter needs text";
		if (why) {
			snprintf(err, errlen, "table %s column %s: %s", t->name,
				 c->name ? c->name : "(null)", why);
			return -EINVAL;
		}
	}
	if (!n || n > STORE_COLS_MAX) {
		snprintf(err, errlen, "table %s: 1 to %d columns", t->name, STORE_COLS_MAX);
		return -EINVAL;
	}
	return store_table_queries_check(t, err, errlen);
}

size_t store_schema_ncols(const struct event_table *t)
{
	size_t n = 0;

	while (t->cols[n].name)
		n++;
	return n;
}

/* Appends printf output to buf at *off; false when it did not fit. */
static bool sql_add(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool sql_add(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *off) {
		*off = len;
		return false;
	}
	*off += (size_t)n;
	return true;
}

int store_schema_create_sql(const struct event_table *t, char *buf, size_t len)
{
	size_t off = 0;

	sql_add(buf, len, &off, "CREATE TABLE %s(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL",
		t->name);
	for (const struct event_column *c = t->cols; c->name; c++)
		sql_add(buf, len, &off, ", %s %s%s", c->name, col_sql_type(c->type),
			c->null == COL_NOT_NULL ? " NOT NULL" : "");
	sql_add(buf, len, &off, ");");
	if (!sql_add(buf, len, &off, "CREATE INDEX IF NOT EXISTS %s_ts ON %s(ts);", t->name,
		     t->name))
		return -ENOSPC;
	return 0;
}

int store_schema_insert_sql(const struct event_table *t, char *buf, size_t len)
{
	size_t off = 0, n = store_schema_ncols(t);

	sql_add(buf, len, &off, "INSERT INTO %s(id, ts", t->name);
	for (const struct event_column *c = t->cols; c->name; c++)
		sql_add(buf, len, &off, ", %s", c->name);
	sql_add(buf, len, &off, ") VALUES (?1, ?2");
	for (size_t i = 0; i < n; i++)
		sql_add(buf, len, &off, ", ?%zu", i + 3);
	if (!sql_add(buf, len, &off, ")"))
		return -ENOSPC;
	return 0;
}

/* Columns the table in the database lacks get added (NULL in old rows). */
int store_schema_add_columns(sqlite3 *db, const struct event_table *t, char *err, size_t errlen)
{
	char sql[256];
	bool have[STORE_COLS_MAX] = {0};
	sqlite3_stmt *st;
	size_t n = store_schema_ncols(t);
	int rc;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", t->name);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_sql;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);

		for (size_t i = 0; name && i < n; i++)
			if (!strcmp(name, t->cols[i].name))
				have[i] = true;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto out_sql;
	for (size_t i = 0; i < n; i++) {
		if (have[i])
			continue;
		/* No NOT NULL here: the rows already there have no value. */
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", t->name,
			 t->cols[i].name, col_sql_type(t->cols[i].type));
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto out_sql;
	}
	return 0;

out_sql:
	snprintf(err, errlen, "table %s: adding columns: %s", t->name, sqlite3_errmsg(db));
	return -EIO;
}

int store_schema_bind(sqlite3_stmt *st, const struct event_table *t, const void *row)
{
	int i = 3, rc = SQLITE_OK;

	for (const struct event_column *c = t->cols; c->name && rc == SQLITE_OK; c++, i++) {
		struct col_value v;

		col_value(c, row, &v);
		switch (v.kind) {
		case COLV_NULL:
			rc = sqlite3_bind_null(st, i);
			break;
		case COLV_TEXT:
			rc = sqlite3_bind_text(st, i, v.s, (int)v.len, SQLITE_STATIC);
			break;
		case COLV_BLOB:
			rc = sqlite3_bind_blob(st, i, v.s, (int)v.len, SQLITE_STATIC);
			break;
		case COLV_REAL:
			rc = sqlite3_bind_double(st, i, v.d);
			break;
		default: /* SQLite integers are signed 64-bit: a COLV_UINT wraps
			  * and reads back through the same cast */
			rc = sqlite3_bind_int64(st, i, v.i);
			break;
		}
	}
	return rc;
}

/* Writes v into an integer or bool column of row, truncating to its size. */
static void store_col_put_int(const struct event_column *c, void *row, int64_t v)
{
	unsigned char *p = (unsigned char *)row + c->offset;

	if (c->type == COL_BOOL) {
		*(bool *)p = v != 0;
		return;
	}
	switch (c->size) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = (uint64_t)v;
		break;
	}
}

void store_schema_read_row(sqlite3_stmt *st, int first, const struct event_table *t, void *row)
{
	int i = first;

	memset(row, 0, t->row_size);
	for (const struct event_column *c = t->cols; c->name; c++, i++) {
		unsigned char *p = (unsigned char *)row + c->offset;
		bool null = sqlite3_column_type(st, i) == SQLITE_NULL;

		switch (c->type) {
		case COL_TEXT: {
			const unsigned char *s = sqlite3_column_text(st, i);
			size_t n = s ? (size_t)sqlite3_column_bytes(st, i) : 0;

			if (n > c->size)
				n = c->size;
			memcpy(p, s ? (const void *)s : "", n);
			if (n < c->size)
				p[n] = '\0';
			break;
		}
		case COL_BLOB: {
			const void *b = sqlite3_column_blob(st, i);
			size_t n = b ? (size_t)sqlite3_column_bytes(st, i) : 0;
			uint16_t n16;

			if (n > c->size - sizeof(n16))
				n = c->size - sizeof(n16);
			n16 = (uint16_t)n;
			memcpy(p, &n16, sizeof(n16));
			if (n)
				memcpy(p + sizeof(n16), b, n);
			break;
		}
		case COL_REAL:
			*(double *)p = null ? 0 : sqlite3_column_double(st, i);
			break;
		default:
			store_col_put_int(c, row,
					  null ? (c->null == COL_NULL_NEG ? -1 : 0)
					       : sqlite3_column_int64(st, i));
			break;
		}
	}
}

int store_schema_select_list(const struct event_table *t, char *buf, size_t len)
{
	size_t off = 0;

	sql_add(buf, len, &off, "id, ts");
	for (const struct event_column *c = t->cols; c->name; c++)
		sql_add(buf, len, &off, ", %s", c->name);
	return off < len ? 0 : -ENOSPC;
}
