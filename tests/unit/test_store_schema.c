// SPDX-License-Identifier: MIT
/*
 * Event table descriptors (storage/table.h) and the SQL the store generates
 * from them (storage/store_schema.c): the CREATE and INSERT text for every
 * column type, every NULL rule read back from SQLite, the declarations
 * store_schema_check() refuses, the five real tables against the schema the
 * previous build spelled by hand, and the migration of a database that build
 * left behind (tests/data/store/v1.sql).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/collector.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "storage/store.h"
#include "storage/store_filter.h"
#include "storage/store_schema.h"

/* Not in a header: cachefiles.c exports it for tests. */
extern const struct event_table cachefiles_slow_table;

static char err[512];

/* ---- helpers ------------------------------------------------------------ */

static sqlite3 *memory_db(void)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	return db;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
}

/* The first column of the first row of sql as SQL text: quote()d values
 * read as literals ('abc', 42, NULL); "(no row)" when there is none. */
static const char *cell(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *cell(sqlite3 *db, const char *fmt, ...)
{
	static char out[4096];
	char sql[1024];
	sqlite3_stmt *st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		snprintf(out, sizeof(out), "%s",
			 sqlite3_column_type(st, 0) == SQLITE_NULL
			     ? "NULL"
			     : (const char *)sqlite3_column_text(st, 0));
	else
		snprintf(out, sizeof(out), "(no row)");
	sqlite3_finalize(st);
	return out;
}

/* Column `column` of row `id` of table, quote()d. */
static const char *value_of(sqlite3 *db, const char *table, int64_t id, const char *column)
{
	return cell(db, "SELECT quote(%s) FROM %s WHERE id = %lld", column, table, (long long)id);
}

static void create_table(sqlite3 *db, const struct event_table *t)
{
	char sql[4096];

	assert_int_equal(store_schema_create_sql(t, sql, sizeof(sql)), 0);
	exec_ok(db, sql);
}

/* Inserts row as the store's writer does (generated INSERT, ?1 id, ?2 ts,
 * store_schema_bind for the rest). */
static void insert_row(sqlite3 *db, const struct event_table *t, int64_t id, const void *row)
{
	char sql[4096];
	sqlite3_stmt *st;

	assert_int_equal(store_schema_insert_sql(t, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, 1000 + id);
	assert_int_equal(store_schema_bind(st, t, row), SQLITE_OK);
	if (sqlite3_step(st) != SQLITE_DONE)
		fail_msg("insert into %s: %s", t->name, sqlite3_errmsg(db));
	sqlite3_finalize(st);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("%s: cannot open", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void data_path(char *buf, size_t len, const char *rel)
{
	const char *dir = getenv("SYSOBS_TEST_DATA");

	assert_non_null(dir);
	snprintf(buf, len, "%s/%s", dir, rel);
}

/* Runs tests/data/store/v1.sql (the previous build's database) in db. */
static void load_v1(sqlite3 *db)
{
	char path[4096], *sql;

	data_path(path, sizeof(path), "store/v1.sql");
	sql = read_file(path);
	exec_ok(db, sql);
	free(sql);
}

/* A table as the agent registers it: through its collector's ops. NULL for
 * a collector built without it (drops in a build without BPF). */
static const struct event_table *real_table(const char *name)
{
	for (const struct collector_ops *const *o = collector_registry; *o; o++) {
		for (const struct event_table *const *t = (*o)->tables; t && *t; t++) {
			if (!strcmp((*t)->name, name))
				return *t;
		}
	}
	return NULL;
}

/* "name TYPE, name TYPE, ..." of table, in column order. */
static const char *columns_of(sqlite3 *db, const char *table)
{
	return cell(db,
		    "SELECT group_concat(name || ' ' || type, ', ') FROM"
		    " (SELECT name, type FROM pragma_table_info('%s') ORDER BY cid)",
		    table);
}

/* "name(col,col) ..." of table's indexes, by name. */
static const char *indexes_of(sqlite3 *db, const char *table)
{
	return cell(
	    db,
	    "SELECT group_concat(ix, ' ') FROM (SELECT m.name || '(' ||"
	    " (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(m.name)"
	    " ORDER BY seqno)) || ')' AS ix FROM sqlite_master m WHERE m.type = 'index'"
	    " AND m.tbl_name = '%s' AND m.sql IS NOT NULL ORDER BY m.name)",
	    table);
}

/* ---- generated SQL ------------------------------------------------------ */

struct all_types_row {
	int8_t i8;
	int16_t i16;
	int32_t i32;
	int64_t i64;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	bool flag;
	double ratio;
	char label[8];
};

#define ALL_COL(f, t) COL(struct all_types_row, f, t, COL_NOT_NULL)
static const struct event_column all_types_cols[] = {
    ALL_COL(i8, COL_INT),     ALL_COL(i16, COL_INT),	ALL_COL(i32, COL_INT),
    ALL_COL(i64, COL_INT),    ALL_COL(u8, COL_UINT),	ALL_COL(u16, COL_UINT),
    ALL_COL(u32, COL_UINT),   ALL_COL(u64, COL_UINT),	ALL_COL(flag, COL_BOOL),
    ALL_COL(ratio, COL_REAL), ALL_COL(label, COL_TEXT), {0},
};

static const struct event_table all_types_table = {
    .name = "all_types",
    .collector = "test",
    .cols = all_types_cols,
    .row_size = sizeof(struct all_types_row),
};

/* One column per NULL rule, and a text column its value fills to the last
 * byte (no NUL): the next field must not leak into it. */
struct nulls_row {
	int32_t neg;	/* COL_NULL_NEG */
	int64_t neg64;	/* COL_NULL_NEG */
	int32_t zero;	/* COL_NULL_ZERO */
	uint32_t uzero; /* COL_NULL_ZERO, unsigned */
	double rzero;	/* COL_NULL_ZERO, REAL */
	char empty[8];	/* COL_NULL_EMPTY */
	char text[8];	/* COL_NOT_NULL */
	int32_t number; /* COL_NOT_NULL */
	char full[8];	/* COL_NOT_NULL, may have no NUL */
	char after[8];	/* not a column */
};

#define NULLS_COL(f, t, n) COL(struct nulls_row, f, t, n)
static const struct event_column nulls_cols[] = {
    NULLS_COL(neg, COL_INT, COL_NULL_NEG),     NULLS_COL(neg64, COL_INT, COL_NULL_NEG),
    NULLS_COL(zero, COL_INT, COL_NULL_ZERO),   NULLS_COL(uzero, COL_UINT, COL_NULL_ZERO),
    NULLS_COL(rzero, COL_REAL, COL_NULL_ZERO), NULLS_COL(empty, COL_TEXT, COL_NULL_EMPTY),
    NULLS_COL(text, COL_TEXT, COL_NOT_NULL),   NULLS_COL(number, COL_INT, COL_NOT_NULL),
    NULLS_COL(full, COL_TEXT, COL_NOT_NULL),   {0},
};

static const struct event_table nulls_table = {
    .name = "nulls",
    .collector = "test",
    .cols = nulls_cols,
    .row_size = sizeof(struct nulls_row),
};

static void create_names_every_column_with_its_sql_type(void **state)
{
	char sql[4096];

	assert_int_equal(store_schema_check(&all_types_table, err, sizeof(err)), 0);
	assert_int_equal(store_schema_ncols(&all_types_table), 11);
	assert_int_equal(store_schema_create_sql(&all_types_table, sql, sizeof(sql)), 0);
	assert_string_equal(sql,
			    "CREATE TABLE all_types(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,"
			    " i8 INTEGER NOT NULL, i16 INTEGER NOT NULL, i32 INTEGER NOT NULL,"
			    " i64 INTEGER NOT NULL, u8 INTEGER NOT NULL, u16 INTEGER NOT NULL,"
			    " u32 INTEGER NOT NULL, u64 INTEGER NOT NULL, flag INTEGER NOT NULL,"
			    " ratio REAL NOT NULL, label TEXT NOT NULL);"
			    "CREATE INDEX IF NOT EXISTS all_types_ts ON all_types(ts);");
}

static void create_leaves_nullable_columns_without_not_null(void **state)
{
	char sql[4096];

	assert_int_equal(store_schema_check(&nulls_table, err, sizeof(err)), 0);
	assert_int_equal(store_schema_create_sql(&nulls_table, sql, sizeof(sql)), 0);
	assert_string_equal(sql, "CREATE TABLE nulls(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,"
				 " neg INTEGER, neg64 INTEGER, zero INTEGER, uzero INTEGER,"
				 " rzero REAL, empty TEXT, text TEXT NOT NULL,"
				 " number INTEGER NOT NULL, full TEXT NOT NULL);"
				 "CREATE INDEX IF NOT EXISTS nulls_ts ON nulls(ts);");
}

static void insert_lists_id_ts_and_every_column_in_order(void **state)
{
	char sql[4096];

	assert_int_equal(store_schema_insert_sql(&all_types_table, sql, sizeof(sql)), 0);
	assert_string_equal(sql, "INSERT INTO all_types(id, ts, i8, i16, i32, i64, u8, u16, u32,"
				 " u64, flag, ratio, label) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
				 " ?8, ?9, ?10, ?11, ?12, ?13)");
	assert_int_equal(store_schema_insert_sql(&nulls_table, sql, sizeof(sql)), 0);
	assert_string_equal(sql, "INSERT INTO nulls(id, ts, neg, neg64, zero, uzero, rzero, empty,"
				 " text, number, full) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
				 " ?9, ?10, ?11)");
}

static void sql_that_does_not_fit_is_enospc(void **state)
{
	char sql[40];

	assert_int_equal(store_schema_create_sql(&all_types_table, sql, sizeof(sql)), -ENOSPC);
	assert_int_equal(store_schema_insert_sql(&all_types_table, sql, sizeof(sql)), -ENOSPC);
}

/* ---- binds, read back --------------------------------------------------- */

static void every_type_reads_back_at_its_limits(void **state)
{
	sqlite3 *db = memory_db();
	struct all_types_row lo = {
	    .i8 = INT8_MIN,
	    .i16 = INT16_MIN,
	    .i32 = INT32_MIN,
	    .i64 = INT64_MIN,
	    .u8 = 0,
	    .u16 = 0,
	    .u32 = 0,
	    .u64 = 0,
	    .flag = false,
	    .ratio = -1e300,
	    .label = "a",
	};
	struct all_types_row hi = {
	    .i8 = INT8_MAX,
	    .i16 = INT16_MAX,
	    .i32 = INT32_MAX,
	    .i64 = INT64_MAX,
	    .u8 = UINT8_MAX,
	    .u16 = UINT16_MAX,
	    .u32 = UINT32_MAX,
	    .u64 = (uint64_t)INT64_MAX + 2,
	    .flag = true,
	    .ratio = 0.1,
	    .label = "héllo",
	};
	sqlite3_stmt *st;

	create_table(db, &all_types_table);
	insert_row(db, &all_types_table, 1, &lo);
	insert_row(db, &all_types_table, 2, &hi);

	assert_string_equal(value_of(db, "all_types", 1, "i8"), "-128");
	assert_string_equal(value_of(db, "all_types", 1, "i16"), "-32768");
	assert_string_equal(value_of(db, "all_types", 1, "i32"), "-2147483648");
	assert_string_equal(value_of(db, "all_types", 1, "i64"), "-9223372036854775808");
	assert_string_equal(value_of(db, "all_types", 1, "u8"), "0");
	assert_string_equal(value_of(db, "all_types", 1, "u64"), "0");
	assert_string_equal(value_of(db, "all_types", 1, "flag"), "0");
	assert_string_equal(value_of(db, "all_types", 1, "label"), "'a'");

	assert_string_equal(value_of(db, "all_types", 2, "i8"), "127");
	assert_string_equal(value_of(db, "all_types", 2, "i16"), "32767");
	assert_string_equal(value_of(db, "all_types", 2, "i32"), "2147483647");
	assert_string_equal(value_of(db, "all_types", 2, "i64"), "9223372036854775807");
	assert_string_equal(value_of(db, "all_types", 2, "u8"), "255");
	assert_string_equal(value_of(db, "all_types", 2, "u16"), "65535");
	assert_string_equal(value_of(db, "all_types", 2, "u32"), "4294967295");
	assert_string_equal(value_of(db, "all_types", 2, "flag"), "1");
	assert_string_equal(value_of(db, "all_types", 2, "label"), "'héllo'");
	/* Unsigned integers are never sign-extended. */
	assert_string_equal(cell(db, "SELECT count(*) FROM all_types WHERE u8 < 0 OR u16 < 0"
				     " OR u32 < 0"),
			    "0");

	/* A UINT64 above INT64_MAX is stored as its two's complement (SQLite
	 * integers are signed 64-bit) and reads back through the same cast. */
	assert_string_equal(value_of(db, "all_types", 2, "u64"), "-9223372036854775807");
	assert_int_equal(
	    sqlite3_prepare_v2(db, "SELECT u64, ratio FROM all_types ORDER BY id", -1, &st, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true(sqlite3_column_double(st, 1) == -1e300);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true((uint64_t)sqlite3_column_int64(st, 0) == (uint64_t)INT64_MAX + 2);
	/* A REAL is stored as a REAL, bit for bit. */
	assert_int_equal(sqlite3_column_type(st, 1), SQLITE_FLOAT);
	assert_true(sqlite3_column_double(st, 1) == 0.1);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void each_null_sentinel_is_stored_as_null_and_only_it(void **state)
{
	sqlite3 *db = memory_db();
	struct nulls_row sentinels = {
	    .neg = -1,
	    .neg64 = INT64_MIN,
	    .zero = 0,
	    .uzero = 0,
	    .rzero = 0.0,
	    .empty = "",
	    .text = "",
	    .number = 0,
	    .full = "full",
	};
	struct nulls_row values = {
	    .neg = 0,
	    .neg64 = INT64_MAX,
	    .zero = -3,
	    .uzero = UINT32_MAX,
	    .rzero = -2.5,
	    .empty = "x",
	    .text = "y",
	    .number = -1,
	    .full = "f",
	};

	create_table(db, &nulls_table);
	insert_row(db, &nulls_table, 1, &sentinels);
	insert_row(db, &nulls_table, 2, &values);

	/* NULL_NEG: -1, or any negative, is NULL ... */
	assert_string_equal(value_of(db, "nulls", 1, "neg"), "NULL");
	assert_string_equal(value_of(db, "nulls", 1, "neg64"), "NULL");
	/* ... and 0 is a value. */
	assert_string_equal(value_of(db, "nulls", 2, "neg"), "0");
	assert_string_equal(value_of(db, "nulls", 2, "neg64"), "9223372036854775807");
	/* NULL_ZERO: 0 is NULL, signed, unsigned or REAL; anything else a value. */
	assert_string_equal(value_of(db, "nulls", 1, "zero"), "NULL");
	assert_string_equal(value_of(db, "nulls", 1, "uzero"), "NULL");
	assert_string_equal(value_of(db, "nulls", 1, "rzero"), "NULL");
	assert_string_equal(value_of(db, "nulls", 2, "zero"), "-3");
	assert_string_equal(value_of(db, "nulls", 2, "uzero"), "4294967295");
	assert_string_equal(value_of(db, "nulls", 2, "rzero"), "-2.5");
	/* NULL_EMPTY: "" is NULL. */
	assert_string_equal(value_of(db, "nulls", 1, "empty"), "NULL");
	assert_string_equal(value_of(db, "nulls", 2, "empty"), "'x'");
	/* NOT_NULL: "" stays an empty string and 0 or -1 stays a number. */
	assert_string_equal(value_of(db, "nulls", 1, "text"), "''");
	assert_string_equal(value_of(db, "nulls", 1, "number"), "0");
	assert_string_equal(value_of(db, "nulls", 2, "number"), "-1");
	sqlite3_close(db);
}

static void text_filling_its_array_is_stored_as_exactly_its_size(void **state)
{
	sqlite3 *db = memory_db();
	struct nulls_row r = {.empty = "e", .text = "t"};

	/* "abcdefgh" fills char full[8] with no NUL; "after" follows it. */
	memcpy(r.full, "abcdefgh", sizeof(r.full));
	memcpy(r.after, "XYZXYZX", sizeof(r.after));
	create_table(db, &nulls_table);
	insert_row(db, &nulls_table, 1, &r);
	assert_string_equal(value_of(db, "nulls", 1, "full"), "'abcdefgh'");
	assert_string_equal(cell(db, "SELECT length(CAST(full AS BLOB)) FROM nulls"), "8");
	assert_string_equal(cell(db, "SELECT hex(full) FROM nulls"), "6162636465666768");
	/* One byte short of full: the NUL ends it. */
	memcpy(r.full, "abcdefg", 8);
	insert_row(db, &nulls_table, 2, &r);
	assert_string_equal(value_of(db, "nulls", 2, "full"), "'abcdefg'");
	sqlite3_close(db);
}

/* ---- store_schema_check ------------------------------------------------- */

struct check_row {
	int32_t a;
	uint32_t u;
	char s[8];
	int32_t b;
};

static const char *const check_values[] = {"x", NULL};
static const struct col_domain check_domain = {.values = check_values};

/* A table whose second column is bad: store_schema_check must say why. */
static void assert_refused(struct event_column bad, const char *why)
{
	struct event_column cols[] = {
	    COL(struct check_row, a, COL_INT, COL_NOT_NULL),
	    bad,
	    {0},
	};
	struct event_table t = {
	    .name = "checked",
	    .collector = "test",
	    .cols = cols,
	    .row_size = sizeof(struct check_row),
	};

	err[0] = '\0';
	if (store_schema_check(&t, err, sizeof(err)) != -EINVAL)
		fail_msg("column %s accepted; expected \"%s\"", bad.name ? bad.name : "(null)",
			 why);
	if (!strstr(err, why) || (bad.name && !strstr(err, bad.name)))
		fail_msg("column %s refused with \"%s\"; expected \"%s\"", bad.name, err, why);
}

static void check_accepts_a_good_declaration(void **state)
{
	struct event_column cols[] = {
	    COL(struct check_row, a, COL_INT, COL_NULL_NEG),
	    COL(struct check_row, u, COL_UINT, COL_NULL_ZERO, .filter = COL_FILTER_EQ),
	    COL(struct check_row, s, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM,
		.domain = &check_domain),
	    {0},
	};
	struct event_table t = {.name = "checked",
				.collector = "test",
				.cols = cols,
				.row_size = sizeof(struct check_row)};

	assert_int_equal(store_schema_check(&t, err, sizeof(err)), 0);
}

static void check_refuses_each_bad_column(void **state)
{
	const uint16_t row = sizeof(struct check_row);

	assert_refused((struct event_column){.name = "bad-name", .type = COL_INT, .size = 4},
		       "bad column name");
	assert_refused((struct event_column){.name = "9lives", .type = COL_INT, .size = 4},
		       "bad column name");
	assert_refused((struct event_column){.name = "id", .type = COL_INT, .size = 4},
		       "bad column name");
	assert_refused((struct event_column){.name = "ts", .type = COL_INT, .size = 4},
		       "bad column name");
	assert_refused(
	    (struct event_column){.name = "past", .type = COL_INT, .offset = row - 2, .size = 4},
	    "column outside the row");
	assert_refused((struct event_column){.name = "odd", .type = COL_INT, .size = 3},
		       "integer size must be 1, 2, 4 or 8");
	assert_refused((struct event_column){.name = "uodd", .type = COL_UINT, .size = 3},
		       "integer size must be 1, 2, 4 or 8");
	assert_refused(
	    (struct event_column){
		.name = "u", .type = COL_UINT, .offset = 4, .size = 4, .null = COL_NULL_NEG},
	    "NULL_NEG needs a signed integer");
	assert_refused(
	    (struct event_column){
		.name = "s", .type = COL_TEXT, .offset = 8, .size = 8, .filter = COL_FILTER_ENUM},
	    "an enum filter needs a domain");
	assert_refused((struct event_column){.name = "r", .type = COL_REAL, .size = 4},
		       "REAL must be a double");
	assert_refused((struct event_column){.name = "bo", .type = COL_BOOL, .size = 4},
		       "BOOL must be a bool");
	assert_refused(
	    (struct event_column){.name = "b", .type = COL_INT, .size = 4, .null = COL_NULL_EMPTY},
	    "NULL_EMPTY needs text");
	assert_refused(
	    (struct event_column){
		.name = "b", .type = COL_INT, .size = 4, .filter = COL_FILTER_ADDR},
	    "an address or prefix filter needs text");
}

static void check_refuses_a_bad_table_name_and_too_many_columns(void **state)
{
	static char names[STORE_COLS_MAX + 1][8];
	struct event_column cols[STORE_COLS_MAX + 2];
	struct event_table t = {
	    .name = "bad name", .collector = "test", .cols = cols, .row_size = 8};

	memset(cols, 0, sizeof(cols));
	for (int i = 0; i < STORE_COLS_MAX + 1; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		cols[i] = (struct event_column){.name = names[i], .type = COL_INT, .size = 1};
	}
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "invalid declaration"));

	/* 49 columns: one past the limit. */
	t.name = "wide";
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "1 to 48 columns"));
	/* 48: the limit itself is fine. */
	cols[STORE_COLS_MAX] = (struct event_column){0};
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), 0);
	/* None at all is not. */
	cols[0] = (struct event_column){0};
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	/* Nor is a row larger than a queue slot. */
	cols[0] = (struct event_column){.name = "c0", .type = COL_INT, .size = 1};
	t.row_size = EVENT_ROW_MAX + 1;
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
}

/* ---- the real tables ---------------------------------------------------- */

static const struct real {
	const char *name;
	/* Columns the descriptor adds to the previous build's schema (each
	 * added with ALTER TABLE to an existing table). */
	const char *added;
	/* A column of the previous schema the descriptor no longer has (it
	 * stays in an existing table, unread). */
	const char *removed;
} real_tables[] = {
    {"self_samples", ""}, /* collectors/self.c */
    /* collectors/drops/drops.c; issue 14 added the next five, issue 35 the capture,
     * issue 34 the Kubernetes names */
    {"drop_samples",
     ", truncated INTEGER, fragment INTEGER, cgroup_id INTEGER, cgroup TEXT,"
     " container TEXT, netns_cookie INTEGER, stack TEXT, capture BLOB, orig_len INTEGER,"
     " pod TEXT, pod_namespace TEXT, pod_uid TEXT, container_name TEXT"},
    /* collectors/mptcp/mptcp_table.c; issue 34 the Kubernetes names */
    {"mptcp_events",
     ", reset_reason_name TEXT, deny_join_id0 INTEGER, pod TEXT, pod_namespace TEXT, pod_uid TEXT"},
    /* collectors/ifs/ifs.c: the JSON-in-a-string "decoded" became columns */
    {"ifs_scans",
     ", control_error INTEGER, signature_error INTEGER, array_bitmask INTEGER,"
     " array_bank INTEGER, ctrl_result INTEGER, bundle_idx INTEGER, pgm_idx INTEGER,"
     " sbaf_status INTEGER, test_fail INTEGER"
     /* issue 13: the file and errno of a failed write, the reload retry */
     ", error_file TEXT, write_errno INTEGER, reloaded INTEGER",
     ", decoded TEXT"},
    {"cachefiles_slow", ", kworker INTEGER"}, /* collectors/cachefiles/cachefiles.c */
};

#define N_REAL (sizeof(real_tables) / sizeof(real_tables[0]))

static void the_exported_descriptors_are_the_registered_ones(void **state)
{
	assert_ptr_equal(real_table("mptcp_events"), &mptcp_events_table);
	assert_ptr_equal(real_table("cachefiles_slow"), &cachefiles_slow_table);
	assert_non_null(real_table("self_samples"));
	assert_non_null(real_table("ifs_scans"));
}

/* A fresh table from each descriptor has exactly the columns (names, SQL
 * types, order) and indexes of the CREATE statements the previous build
 * spelled by hand, plus the columns added since. */
static void real_tables_match_the_previous_hand_written_schema(void **state)
{
	sqlite3 *old_db = memory_db();

	load_v1(old_db);
	for (size_t i = 0; i < N_REAL; i++) {
		const struct event_table *t = real_table(real_tables[i].name);
		sqlite3 *new_db;
		char expect[2048];

		if (!t) {
			print_message("%s: not in this build\n", real_tables[i].name);
			continue;
		}
		if (store_schema_check(t, err, sizeof(err)))
			fail_msg("%s: %s", t->name, err);
		new_db = memory_db();
		create_table(new_db, t);
		for (const struct table_index *ix = t->indexes; ix && ix->name; ix++) {
			char *ix_sql = store_index_sql(t, ix);

			exec_ok(new_db, ix_sql);
			sqlite3_free(ix_sql);
		}

		snprintf(expect, sizeof(expect), "%s%s", columns_of(old_db, t->name),
			 real_tables[i].added);
		if (real_tables[i].removed) {
			char *cut = strstr(expect, real_tables[i].removed);

			assert_non_null(cut);
			memmove(cut, cut + strlen(real_tables[i].removed),
				strlen(cut + strlen(real_tables[i].removed)) + 1);
		}
		assert_string_equal(columns_of(new_db, t->name), expect);
		snprintf(expect, sizeof(expect), "%s", indexes_of(old_db, t->name));
		assert_string_equal(indexes_of(new_db, t->name), expect);
		sqlite3_close(new_db);
	}
	/* mptcp_events_token stays a partial index. */
	assert_non_null(strstr(cell(old_db, "SELECT sql FROM sqlite_master WHERE name ="
					    " 'mptcp_events_token'"),
			       "WHERE type IN ('CREATED', 'CLOSED')"));
	sqlite3_close(old_db);
}

/* ---- migrating the previous build's database ---------------------------- */

static char tmpdir[256], dbpath[512];

static int make_tmpdir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_store_schema.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/sysobs.db", tmpdir);
	return 0;
}

static int remove_tmpdir(void **state)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Every row of table as one line per row of quote()d values, over the
 * columns the table has now (the previous build's, before migrating). */
static char *dump_rows(sqlite3 *db, const char *table, const char *columns, int64_t max_id)
{
	char sql[2048], *out;
	sqlite3_stmt *st;
	size_t len = 0, cap = 1;

	snprintf(sql, sizeof(sql), "SELECT %s FROM %s WHERE id <= %lld ORDER BY id", columns, table,
		 (long long)max_id);
	out = calloc(1, cap);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *line = (const char *)sqlite3_column_text(st, 0);
		size_t n = strlen(line);

		out = realloc(out, cap + n + 1);
		memcpy(out + len, line, n);
		len += n;
		out[len++] = '\n';
		out[len] = '\0';
		cap += n + 1;
	}
	sqlite3_finalize(st);
	return out;
}

/* "quote(id) || '|' || quote(ts) || ..." over table's current columns. */
static void quoted_columns(sqlite3 *db, const char *table, char *buf, size_t len)
{
	snprintf(buf, len, "%s",
		 cell(db,
		      "SELECT group_concat('quote(' || name || ')', ' || ''|'' || ') FROM"
		      " (SELECT name FROM pragma_table_info('%s') ORDER BY cid)",
		      table));
}

/* Writes a plausible value into every column of a row from the descriptor
 * alone (for rows whose struct is private to their collector). */
static void fill_row(const struct event_table *t, void *row, int seed)
{
	memset(row, 0, t->row_size);
	for (const struct event_column *c = t->cols; c->name; c++) {
		unsigned char *p = (unsigned char *)row + c->offset;

		switch (c->type) {
		case COL_TEXT:
			snprintf((char *)p, c->size, "%s",
				 c->domain && c->domain->values ? c->domain->values[0] : "new");
			break;
		case COL_REAL:
			*(double *)p = seed + 0.5;
			break;
		case COL_BOOL:
			*(bool *)p = true;
			break;
		default:
			switch (c->size) {
			case 1:
				*(uint8_t *)p = (uint8_t)seed;
				break;
			case 2:
				*(uint16_t *)p = (uint16_t)seed;
				break;
			case 4:
				*(uint32_t *)p = (uint32_t)seed;
				break;
			default:
				*(uint64_t *)p = (uint64_t)seed;
				break;
			}
		}
	}
}

static void load_event(const char *name, struct mptcp_event *ev)
{
	static char buf[8192] __attribute__((aligned(8)));
	char path[4096], rel[256];
	size_t n;
	FILE *f;

	snprintf(rel, sizeof(rel), "mptcp/%s", name);
	data_path(path, sizeof(path), rel);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(mptcp_event_decode((struct nlmsghdr *)buf, n, ev), 0);
}

static void a_previous_build_database_migrates_in_place(void **state)
{
	const struct event_table *tables[N_REAL + 1] = {0};
	struct store_config cfg = {.path = dbpath, .batch_ms = 20};
	char *before[N_REAL] = {0}, cols[N_REAL][2048];
	unsigned char row[EVENT_ROW_MAX] __attribute__((aligned(8)));
	size_t n = 0;
	int64_t old_max, old_rows;
	struct mptcp_event ev;
	struct mptcp_row mrow;
	struct store *s;
	sqlite3 *db;

	/* The previous build's file, as it left it. */
	assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
	load_v1(db);
	for (size_t i = 0; i < N_REAL; i++) {
		quoted_columns(db, real_tables[i].name, cols[i], sizeof(cols[i]));
		before[i] = dump_rows(db, real_tables[i].name, cols[i], INT64_MAX);
		if ((tables[n] = real_table(real_tables[i].name)))
			n++;
	}
	old_max = atoll(cell(db, "SELECT max(id) FROM (SELECT id FROM self_samples UNION ALL"
				 " SELECT id FROM drop_samples UNION ALL SELECT id FROM"
				 " mptcp_events UNION ALL SELECT id FROM ifs_scans UNION ALL"
				 " SELECT id FROM cachefiles_slow)"));
	old_rows = atoll(cell(db, "SELECT (SELECT count(*) FROM self_samples) + (SELECT count(*)"
				  " FROM drop_samples) + (SELECT count(*) FROM mptcp_events) +"
				  " (SELECT count(*) FROM ifs_scans) + (SELECT count(*) FROM"
				  " cachefiles_slow)"));
	assert_int_equal(old_max, 14);
	assert_int_equal(old_rows, 12);
	assert_string_equal(cell(db, "SELECT value FROM store_meta WHERE key = 'id_floor'"), "2");
	assert_string_equal(cell(db, "SELECT count(*) FROM pragma_table_info('mptcp_events')"
				     " WHERE name = 'reset_reason_name'"),
			    "0");
	sqlite3_close(db);

	/* It opens with this build's descriptors. */
	s = store_open(&cfg, tables, err, sizeof(err));
	if (!s)
		fail_msg("store_open: %s", err);
	assert_int_equal(store_start(s), 0);

	/* New rows go in after the old ones: one per table, mptcp's from a
	 * recorded kernel message. */
	for (size_t i = 0; i < n; i++) {
		if (tables[i] == &mptcp_events_table) {
			load_event("reset-server-SUB_CLOSED.bin", &ev);
			mptcp_row_fill(&ev, 4026531840u, &mrow);
			assert_int_equal(store_submit(s, tables[i], 1764800000000000000LL, &mrow),
					 0);
			continue;
		}
		fill_row(tables[i], row, (int)i + 1);
		assert_int_equal(store_submit(s, tables[i], 1764800000000000000LL, row), 0);
	}
	assert_int_equal(store_flush(s), 0);
	store_close(s);

	assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
	/* Versions: the core went to 2 (metric_samples.buckets); mptcp_events
	 * went to 2 (its data migration), the others stay at 1. */
	assert_string_equal(cell(db, "PRAGMA user_version"), "2");
	for (size_t i = 0; i < n; i++)
		assert_string_equal(cell(db,
					 "SELECT version FROM schema_migrations WHERE"
					 " component = '%s'",
					 tables[i]->name),
				    tables[i] == &mptcp_events_table ? "2" : "1");

	/* Every old row is still there, every old value as it was. */
	for (size_t i = 0; i < N_REAL; i++) {
		char *after = dump_rows(db, real_tables[i].name, cols[i], old_max);

		assert_string_equal(after, before[i]);
		free(after);
		free(before[i]);
	}

	/* The new column was added, NULL where the migration had nothing to
	 * say; the old SUB_CLOSED (reset_reason 2) now reads 'resource'. */
	assert_string_equal(cell(db, "SELECT type FROM pragma_table_info('mptcp_events')"
				     " WHERE name = 'reset_reason_name'"),
			    "TEXT");
	assert_string_equal(value_of(db, "mptcp_events", 10, "type"), "'SUB_CLOSED'");
	assert_string_equal(value_of(db, "mptcp_events", 10, "reset_reason"), "2");
	assert_string_equal(value_of(db, "mptcp_events", 10, "reset_reason_name"), "'resource'");
	assert_string_equal(value_of(db, "mptcp_events", 5, "reset_reason_name"), "NULL");
	assert_string_equal(value_of(db, "mptcp_events", 14, "reset_reason_name"), "NULL");
	/* A few old values spelled out (the dumps above hold them all). */
	assert_string_equal(value_of(db, "drop_samples", 4, "reason"), "'NO_SOCKET'");
	assert_string_equal(value_of(db, "drop_samples", 9, "sport"), "NULL");
	assert_string_equal(value_of(db, "cachefiles_slow", 6, "latency_seconds"), "0.25");
	assert_string_equal(value_of(db, "ifs_scans", 13, "details"), "NULL");
	assert_string_equal(value_of(db, "self_samples", 11, "rss_bytes"), "11534336");
	assert_string_equal(cell(db, "SELECT count(*) FROM metric_samples"), "15");

	/* The old indexes are all still there. */
	assert_string_equal(cell(db, "SELECT group_concat(name, ' ') FROM (SELECT name FROM"
				     " sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
				     " ORDER BY name)"),
			    "cachefiles_slow_ts drop_samples_ts ifs_scans_core ifs_scans_scan_id"
			    " ifs_scans_ts metric_samples_series_ts metric_samples_ts"
			    " mptcp_events_token mptcp_events_ts self_samples_ts");

	/* The new rows took the ids right after the old maximum, in order. */
	for (size_t i = 0; i < n; i++) {
		char id[32];

		snprintf(id, sizeof(id), "%lld", (long long)old_max + 1 + (long long)i);
		assert_string_equal(cell(db, "SELECT id FROM %s WHERE id > %lld", tables[i]->name,
					 (long long)old_max),
				    id);
	}
	assert_string_equal(cell(db, "SELECT reset_reason_name FROM mptcp_events WHERE id > 14"),
			    "unspec");
	assert_string_equal(cell(db, "SELECT quote(token) FROM mptcp_events WHERE id > 14"),
			    "3252632107");
	sqlite3_close(db);

	/* Opened again, nothing is migrated twice. */
	s = store_open(&cfg, tables, err, sizeof(err));
	if (!s)
		fail_msg("store_open again: %s", err);
	store_close(s);
	assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
	assert_string_equal(
	    cell(db, "SELECT version FROM schema_migrations WHERE component = 'mptcp_events'"),
	    "2");
	assert_string_equal(value_of(db, "mptcp_events", 10, "reset_reason_name"), "'resource'");
	assert_string_equal(cell(db, "SELECT count(*) FROM mptcp_events"), "5");
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(create_names_every_column_with_its_sql_type),
	    cmocka_unit_test(create_leaves_nullable_columns_without_not_null),
	    cmocka_unit_test(insert_lists_id_ts_and_every_column_in_order),
	    cmocka_unit_test(sql_that_does_not_fit_is_enospc),
	    cmocka_unit_test(every_type_reads_back_at_its_limits),
	    cmocka_unit_test(each_null_sentinel_is_stored_as_null_and_only_it),
	    cmocka_unit_test(text_filling_its_array_is_stored_as_exactly_its_size),
	    cmocka_unit_test(check_accepts_a_good_declaration),
	    cmocka_unit_test(check_refuses_each_bad_column),
	    cmocka_unit_test(check_refuses_a_bad_table_name_and_too_many_columns),
	    cmocka_unit_test(the_exported_descriptors_are_the_registered_ones),
	    cmocka_unit_test(real_tables_match_the_previous_hand_written_schema),
	    cmocka_unit_test_setup_teardown(a_previous_build_database_migrates_in_place,
					    make_tmpdir, remove_tmpdir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
