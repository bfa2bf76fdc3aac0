/* SPDX-License-Identifier: MIT */
/*
 * ClickHouse as an event destination: its tables from the event table
 * descriptors (the DDL shipped in deploy/clickhouse/ is this output), and
 * rows as JSONEachRow for INSERT over its HTTP interface.
 *
 * Each table has the host's identity (host = instance, job, the external
 * labels as a Nested), the row's key (db_id, id), ts (unix ns, Int64) and
 * time (DateTime, from ts: MATERIALIZED, so both ClickHouse 18.16, which has
 * no DateTime64, and current releases take it), then one column per
 * descriptor column (Nullable where the column has a NULL; a packet
 * capture, COL_BLOB, is a Nullable(String) of its bytes, filled only for a
 * destination with capture = true). The engine is
 * ReplacingMergeTree ordered by (host, time, db_id, id): a batch sent again
 * after a lost answer collapses into one row per key at merge time and in
 * SELECT ... FINAL.
 */
#ifndef SYSOBS_CLICKHOUSE_H
#define SYSOBS_CLICKHOUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "exporters/export_row.h"
#include "exporters/sender.h"

/* [A-Za-z_][A-Za-z0-9_]{0,63}: a database or table name that needs no quoting. */
bool clickhouse_ident_ok(const char *s);

/*
 * CREATE DATABASE and one CREATE TABLE per table into out. distributed:
 * also a Distributed table <name>_all over cluster (each shard holding the
 * local tables in its default database). 0 or -ENOMEM.
 */
int clickhouse_ddl(const struct event_table *const *tables, const char *database,
		   const char *cluster, struct buf *out);

/* base URL with the INSERT of table t into database as its query
 * (malloc'ed), or NULL when out of memory. */
char *clickhouse_insert_url(const char *base, const char *database, const struct event_table *t);

/* The URL of a SELECT of the COL_BLOB columns of tables[0..n) that the
 * receiver's database has, one "table.column" a line (an INSERT skips a
 * column its table lacks: a table made by an older DDL would take rows
 * without their captures). malloc'ed, or NULL when out of memory. */
char *clickhouse_blob_columns_url(const char *base, const char *database,
				  const struct event_table *const *tables, size_t n);

/* rows[0..n), all of one table, as JSONEachRow lines appended to out; a
 * COL_BLOB column's bytes only with EXPORT_F_BLOBS in flags (else left
 * out: NULL in the table). 0 or -ENOMEM. */
int clickhouse_rows(const struct export_row *rows, size_t n, const struct export_identity *id,
		    unsigned flags, struct buf *out);

/*
 * The verdict on ClickHouse's answer (status 0: none). Its error body starts
 * "Code: N." with the exception code, whatever the HTTP status (18.16
 * answers 500 to most, later releases 400, 404, 403...): the codes of data
 * it cannot take (a value that does not parse or convert) refuse the rows,
 * sent again they would fail again; every other code (a database or table
 * missing, a column the table lacks, authentication, memory, too many
 * parts) is the destination's state and retried. An answer whose body does
 * not start with "Code: N" (a proxy's, even one quoting a code further on)
 * goes by sender_verdict_of().
 */
enum sender_verdict clickhouse_verdict(long status, const char *resp);

#endif
