// SPDX-License-Identifier: MIT
/* ClickHouse DDL and JSONEachRow rows (exporters/clickhouse.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lazylib.h"
#include "exporters/clickhouse.h"
#include "storage/table_value.h"

bool clickhouse_ident_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64 ||
	    !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

static const char *ch_type(const struct event_column *c)
{
	static const char *const ints[] = {"Int8", "Int16", "Int32", "Int64"};
	static const char *const uints[] = {"UInt8", "UInt16", "UInt32", "UInt64"};
	size_t k = c->size == 1 ? 0 : c->size == 2 ? 1 : c->size == 4 ? 2 : 3;

	switch (c->type) {
	case COL_INT:
		return ints[k];
	case COL_UINT:
		return uints[k];
	case COL_BOOL:
		return "UInt8";
	case COL_REAL:
		return "Float64";
	default:
		return "String";
	}
}

int clickhouse_ddl(const struct event_table *const *tables, const char *database,
		   const char *cluster, struct buf *out)
{
	buf_printf(out, "CREATE DATABASE IF NOT EXISTS %s;\n", database);
	for (size_t i = 0; tables[i]; i++) {
		const struct event_table *t = tables[i];

		buf_printf(out,
			   "\n-- %s: %s\n"
			   "CREATE TABLE IF NOT EXISTS %s.%s\n(\n"
			   "    host String,\n"
			   "    job String,\n"
			   "    labels Nested(name String, value String),\n"
			   "    db_id String,\n"
			   "    id UInt64,\n"
			   "    ts Int64,\n"
			   "    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000))",
			   t->name, t->help ? t->help : "", database, t->name);
		for (const struct event_column *c = t->cols; c->name; c++) {
			if (c->null == COL_NOT_NULL)
				buf_printf(out, ",\n    %s %s", c->name, ch_type(c));
			else
				buf_printf(out, ",\n    %s Nullable(%s)", c->name, ch_type(c));
			if (export_is_netns(c))
				buf_printf(out, ",\n    %s Nullable(String)", EXPORT_NETNS_NAME);
		}
		buf_printf(out, "\n)\nENGINE = ReplacingMergeTree()\n"
				"PARTITION BY toYYYYMM(time)\n"
				"ORDER BY (host, time, db_id, id);\n");
		if (cluster && *cluster)
			buf_printf(out,
				   "CREATE TABLE IF NOT EXISTS %s.%s_all AS %s.%s\n"
				   "ENGINE = Distributed(%s, '', %s, cityHash64(host));\n",
				   database, t->name, database, t->name, cluster, t->name);
	}
	return out->oom ? -ENOMEM : 0;
}

/* base with query (and then extra) as its parameters; malloc'ed, or NULL. */
static char *ch_query_url(const char *base, const char *query, const char *extra)
{
	/* Loaded by the destination's sender_check(), before. */
	const struct lazylib_curl *cu = lazylib_curl(NULL);
	char *esc, *url;
	size_t n;

	if (!cu)
		return NULL;
	esc = cu->easy_escape(NULL, query, 0);
	if (!esc)
		return NULL;
	n = strlen(base) + strlen(esc) + strlen(extra) + 16;
	url = malloc(n);
	if (url)
		snprintf(url, n, "%s%squery=%s%s", base, strchr(base, '?') ? "&" : "?", esc, extra);
	cu->free(esc);
	return url;
}

char *clickhouse_insert_url(const char *base, const char *database, const struct event_table *t)
{
	char query[256];

	snprintf(query, sizeof(query), "INSERT INTO %s.%s FORMAT JSONEachRow", database, t->name);
	/* Columns the receiver's table lacks (an older DDL) are skipped, not
	 * a refusal of every row (clickhouse_blob_columns_url() finds the
	 * ones that matter). */
	return ch_query_url(base, query, "&input_format_skip_unknown_fields=1");
}

char *clickhouse_blob_columns_url(const char *base, const char *database,
				  const struct event_table *const *tables, size_t n)
{
	struct buf q = {0};
	char *url;

	buf_printf(&q,
		   "SELECT concat(table, '.', name) FROM system.columns WHERE database = '%s' "
		   "AND (0",
		   database);
	for (size_t i = 0; i < n; i++)
		for (const struct event_column *c = tables[i]->cols; c->name; c++)
			if (c->type == COL_BLOB)
				buf_printf(&q, " OR (table = '%s' AND name = '%s')",
					   tables[i]->name, c->name);
	buf_puts(&q, ") FORMAT TSV");
	url = q.oom ? NULL : ch_query_url(base, q.p, "");
	buf_free(&q);
	return url;
}

/* A JSON string: quotes, backslash and control bytes escaped; other bytes
 * as they are (ClickHouse's String holds bytes). */
static void ch_str(struct buf *b, const char *s, size_t len)
{
	buf_putc(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf_putc(b, '\\');
			buf_putc(b, (char)c);
		} else if (c < 0x20) {
			buf_printf(b, "\\u%04x", c);
		} else {
			buf_putc(b, (char)c);
		}
	}
	buf_putc(b, '"');
}

int clickhouse_rows(const struct export_row *rows, size_t n, const struct export_identity *id,
		    unsigned flags, struct buf *out)
{
	for (size_t r = 0; r < n; r++) {
		const struct export_row *x = &rows[r];
		char name[256];

		buf_puts(out, "{\"host\":");
		ch_str(out, id->instance, strlen(id->instance));
		buf_puts(out, ",\"job\":");
		ch_str(out, id->job, strlen(id->job));
		buf_puts(out, ",\"labels.name\":[");
		for (size_t i = 0; i < id->n_labels; i++) {
			if (i)
				buf_putc(out, ',');
			ch_str(out, id->labels[i].name, strlen(id->labels[i].name));
		}
		buf_puts(out, "],\"labels.value\":[");
		for (size_t i = 0; i < id->n_labels; i++) {
			if (i)
				buf_putc(out, ',');
			ch_str(out, id->labels[i].value, strlen(id->labels[i].value));
		}
		buf_puts(out, "],\"db_id\":");
		ch_str(out, id->db_id, strlen(id->db_id));
		buf_printf(out, ",\"id\":%" PRId64 ",\"ts\":%" PRId64, x->id, x->ts_ns);
		for (const struct event_column *c = x->table->cols; c->name; c++) {
			struct col_value v;

			col_value(c, x->row, &v);
			if (v.kind == COLV_BLOB && !(flags & EXPORT_F_BLOBS))
				continue; /* packet bytes stay home: NULL there */
			buf_printf(out, ",\"%s\":", c->name);
			switch (v.kind) {
			case COLV_NULL:
				buf_puts(out, "null");
				break;
			case COLV_TEXT:
			case COLV_BLOB: /* a String holds bytes: ch_str() keeps each */
				ch_str(out, v.s, v.len);
				break;
			case COLV_REAL:
				if (isfinite(v.d))
					buf_printf(out, "%.17g", v.d);
				else
					buf_puts(out, "null");
				break;
			case COLV_UINT:
				buf_printf(out, "%" PRIu64, v.u);
				break;
			default:
				buf_printf(out, "%" PRId64, v.i);
				break;
			}
			if (export_netns_name(c, &v, name, sizeof(name))) {
				buf_printf(out, ",\"%s\":", EXPORT_NETNS_NAME);
				ch_str(out, name, strlen(name));
			}
		}
		buf_puts(out, "}\n");
	}
	return out->oom ? -ENOMEM : 0;
}

enum sender_verdict clickhouse_verdict(long status, const char *resp)
{
	/* CANNOT_PARSE_TEXT, CANNOT_PARSE_QUOTED_STRING,
	 * CANNOT_PARSE_INPUT_ASSERTION_FAILED, CANNOT_PARSE_DATE,
	 * CANNOT_PARSE_DATETIME, TYPE_MISMATCH, SYNTAX_ERROR (of a row),
	 * ARGUMENT_OUT_OF_BOUND, CANNOT_CONVERT_TYPE, CANNOT_PARSE_NUMBER,
	 * INCORRECT_DATA */
	static const int data_codes[] = {6, 26, 27, 38, 41, 53, 62, 69, 70, 72, 117};
	const char *p = resp;
	long code;

	if (status >= 200 && status < 300)
		return SENDER_SENT;
	/* ClickHouse's own body starts with its code; "Code: " further in is
	 * someone else's text (a proxy's page quoting it, a row's value). */
	while (p && isspace((unsigned char)*p))
		p++;
	if (!status || !p || strncmp(p, "Code: ", 6) || !isdigit((unsigned char)p[6]))
		return sender_verdict_of(status);
	code = strtol(p + 6, NULL, 10);
	for (size_t i = 0; i < sizeof(data_codes) / sizeof(data_codes[0]); i++)
		if (data_codes[i] == code)
			return SENDER_REFUSED;
	return SENDER_RETRY;
}
