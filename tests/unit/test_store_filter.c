// SPDX-License-Identifier: MIT
/*
 * Typed queries (storage/table.h) compiled by the store (store_filter.c):
 *  - the SQL of sink_latest()'s query: values as parameters, the predicate of
 *    a partial index the filter implies added as the index spells it;
 *  - the query plans of the collectors' own queries (MPTCP recovery, IFS
 *    restore) use their indexes (EXPLAIN QUERY PLAN);
 *  - the store's SQL and the recording sink's in-memory evaluation
 *    (table_filter_match(), table_group_equal()) give the same rows for the
 *    same filters on the same table;
 *  - a filter or an index the table cannot take is refused with its reason;
 *  - indexes and data migrations compile to the statements they replaced.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/ifs/ifs_table.h"
#include "collectors/mptcp/mptcp.h"
#include "storage/store_filter.h"
#include "storage/store_query.h"
#include "storage/store_schema.h"
#include "storage/table_value.h"

static char err[256];

struct t_row {
	char kind[16];
	int32_t num;
	uint32_t grp;
	double val;
};

static const struct event_column t_cols[] = {
    COL(struct t_row, kind, COL_TEXT, COL_NULL_EMPTY),
    COL(struct t_row, num, COL_INT, COL_NULL_NEG),
    COL(struct t_row, grp, COL_UINT, COL_NOT_NULL),
    COL(struct t_row, val, COL_REAL, COL_NOT_NULL),
    {0},
};

static const char *const t_ix_cols[] = {"grp", "id", NULL};
static const struct row_value t_ix_kinds[] = {ROW_TEXT("a"), ROW_TEXT("b")};
static const struct row_cond t_ix_where[] = {ROW_COND_IN("kind", t_ix_kinds), {0}};
static const struct table_index t_indexes[] = {
    {.name = "grp", .columns = t_ix_cols, .where = t_ix_where},
    {0},
};

static const struct event_table t_table = {
    .name = "t_filter",
    .collector = "test",
    .cols = t_cols,
    .row_size = sizeof(struct t_row),
    .indexes = t_indexes,
};

static sqlite3 *db_with(const struct event_table *t)
{
	char sql[4096];
	sqlite3 *db;

	assert_int_equal(store_schema_check(t, err, sizeof(err)), 0);
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(store_schema_create_sql(t, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	for (const struct table_index *ix = t->indexes; ix && ix->name; ix++) {
		char *ix_sql = store_index_sql(t, ix);

		assert_int_equal(sqlite3_exec(db, ix_sql, NULL, NULL, NULL), SQLITE_OK);
		sqlite3_free(ix_sql);
	}
	return db;
}

/* The plan of store_latest()'s statement, its details joined. */
static void plan_of(sqlite3 *db, const struct event_table *t, const char *const *group_by,
		    const struct row_cond *where, char *plan, size_t len)
{
	char *sql, *explain;
	sqlite3_stmt *st;

	assert_int_equal(store_latest_sql(t, group_by, where, &sql, err, sizeof(err)), 0);
	explain = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
	assert_int_equal(sqlite3_prepare_v2(db, explain, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(store_filter_bind(st, where, 1), SQLITE_OK);
	plan[0] = '\0';
	while (sqlite3_step(st) == SQLITE_ROW) {
		strncat(plan, (const char *)sqlite3_column_text(st, 3), len - strlen(plan) - 1);
		strncat(plan, "; ", len - strlen(plan) - 1);
	}
	sqlite3_finalize(st);
	sqlite3_free(explain);
	sqlite3_free(sql);
}

/* The MPTCP recovery's filter: the partial token index's predicate joins
 * the query, so SQLite searches that index by token. */
static void mptcp_recovery_uses_the_partial_token_index(void **state)
{
	static const char *const by_token[] = {"token", NULL};
	static const struct row_value created[] = {ROW_TEXT("CREATED")}, netns[] = {ROW_NUM(1)},
				      tokens[] = {ROW_NUM(7), ROW_NUM(8)};
	static const struct row_cond where[] = {
	    ROW_COND_EQ("type", created),
	    ROW_COND_EQ("netns", netns),
	    ROW_COND_IN("token", tokens),
	    {0},
	};
	static const struct row_value established[] = {ROW_TEXT("ESTABLISHED")};
	static const struct row_cond other[] = {ROW_COND_EQ("type", established), {0}};
	sqlite3 *db = db_with(&mptcp_events_table);
	char plan[1024], *sql;

	(void)state;
	assert_int_equal(
	    store_latest_sql(&mptcp_events_table, by_token, where, &sql, err, sizeof(err)), 0);
	assert_non_null(strstr(sql, " FROM mptcp_events WHERE type IN ('CREATED', 'CLOSED') AND"
				    " type = ?1 AND netns = ?2 AND token IN (?3, ?4)"
				    " GROUP BY token ORDER BY 1"));
	sqlite3_free(sql);
	plan_of(db, &mptcp_events_table, by_token, where, plan, sizeof(plan));
	assert_non_null(strstr(plan, "USING INDEX mptcp_events_token (token=?)"));

	/* ESTABLISHED rows are not in the index: no predicate, no index */
	assert_int_equal(
	    store_latest_sql(&mptcp_events_table, by_token, other, &sql, err, sizeof(err)), 0);
	assert_null(strstr(sql, "'CLOSED'"));
	sqlite3_free(sql);
	plan_of(db, &mptcp_events_table, by_token, other, plan, sizeof(plan));
	assert_null(strstr(plan, "mptcp_events_token"));
	sqlite3_close(db);
}

/* The IFS restore's filter reads ifs_scans by its (core, id) index. */
static void ifs_restore_uses_the_core_index(void **state)
{
	static const char *const group[] = {"test", "package", "core", NULL};
	static const struct row_value any[] = {ROW_TEXT("pass"), ROW_TEXT("fail"),
					       ROW_TEXT("untested")};
	static const struct row_cond where[] = {
	    ROW_COND_NOT_NULL("core"),
	    ROW_COND_IN("status", any),
	    {0},
	};
	sqlite3 *db = db_with(&ifs_scans_table);
	char plan[1024];

	(void)state;
	plan_of(db, &ifs_scans_table, group, where, plan, sizeof(plan));
	assert_non_null(strstr(plan, "ifs_scans_core"));
	sqlite3_close(db);
}

static void insert(sqlite3 *db, int64_t id, const struct t_row *r)
{
	char sql[1024];
	sqlite3_stmt *st;

	assert_int_equal(store_schema_insert_sql(&t_table, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, id * 10);
	assert_int_equal(store_schema_bind(st, &t_table, r), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

/* The ids store_latest()'s statement answers, joined with ','. */
static void ids_by_sql(sqlite3 *db, const char *const *group_by, const struct row_cond *where,
		       char *out, size_t len)
{
	char *sql;
	sqlite3_stmt *st;

	assert_int_equal(store_latest_sql(&t_table, group_by, where, &sql, err, sizeof(err)), 0);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(store_filter_bind(st, where, 1), SQLITE_OK);
	out[0] = '\0';
	while (sqlite3_step(st) == SQLITE_ROW)
		snprintf(out + strlen(out), len - strlen(out), "%lld,",
			 (long long)sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	sqlite3_free(sql);
}

/* The same ids as the recording sink computes them: the newest matching row
 * of each group, in id order. */
static void ids_in_memory(const struct t_row *rows, size_t n, const char *const *group_by,
			  const struct row_cond *where, char *out, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		bool newer = false;

		if (!table_filter_match(&t_table, where, &rows[i]))
			continue;
		for (size_t j = i + 1; j < n && !newer; j++)
			newer = table_filter_match(&t_table, where, &rows[j]) &&
				table_group_equal(&t_table, group_by, &rows[i], &rows[j]);
		if (!newer)
			snprintf(out + strlen(out), len - strlen(out), "%zu,", i + 1);
	}
}

/* Every filter below gives the same rows from SQLite and from memory, over
 * rows with NULLs in both nullable columns. */
static void sql_and_memory_agree(void **state)
{
	static const char *const kinds[] = {"a", "b", "c", ""};
	static const char *const by_grp[] = {"grp", NULL}, *const by_kind_num[] = {"kind", "num",
										   NULL};
	static const struct row_value a[] = {ROW_TEXT("a")}, ab[] = {ROW_TEXT("a"), ROW_TEXT("b")},
				      n3[] = {ROW_NUM(3)},
				      nums[] = {ROW_NUM(0), ROW_NUM(2), ROW_NUM(5)};
	static const struct row_cond
	    f_none[] = {{0}},
	    f_eq[] = {ROW_COND_EQ("kind", a), {0}},
	    f_in[] = {ROW_COND_IN("kind", ab), ROW_COND_IN("num", nums), {0}},
	    f_nn[] = {ROW_COND_NOT_NULL("num"), ROW_COND_NOT_NULL("kind"), {0}},
	    f_grp[] = {ROW_COND_EQ("grp", n3), ROW_COND_NOT_NULL("kind"), {0}};
	const struct row_cond *filters[] = {NULL, f_none, f_eq, f_in, f_nn, f_grp};
	const char *const *groups[] = {NULL, by_grp, by_kind_num};
	struct t_row rows[60];
	sqlite3 *db = db_with(&t_table);
	char by_sql[1024], by_mem[1024];
	unsigned seed = 7;

	(void)state;
	for (size_t i = 0; i < 60; i++) {
		seed = seed * 1103515245u + 12345u;
		memset(&rows[i], 0, sizeof(rows[i]));
		snprintf(rows[i].kind, sizeof(rows[i].kind), "%s", kinds[(seed >> 8) % 4]);
		rows[i].num = (int32_t)((seed >> 12) % 7) - 1; /* -1: NULL */
		rows[i].grp = (seed >> 16) % 5;
		rows[i].val = i * 0.5;
		insert(db, (int64_t)i + 1, &rows[i]);
	}
	for (size_t f = 0; f < sizeof(filters) / sizeof(filters[0]); f++)
		for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
			ids_by_sql(db, groups[g], filters[f], by_sql, sizeof(by_sql));
			ids_in_memory(rows, 60, groups[g], filters[f], by_mem, sizeof(by_mem));
			if (strcmp(by_sql, by_mem))
				fail_msg("filter %zu group %zu: SQL %s, memory %s", f, g, by_sql,
					 by_mem);
			assert_true(strlen(by_sql) > 0 || f == 4 || f == 5);
		}
	sqlite3_close(db);
}

static void refused(const struct row_cond *where, const char *why)
{
	char *sql = NULL;

	assert_int_equal(store_latest_sql(&t_table, NULL, where, &sql, err, sizeof(err)), -EINVAL);
	assert_null(sql);
	if (!strstr(err, why))
		fail_msg("\"%s\" does not say \"%s\"", err, why);
}

/* A filter the table cannot take is refused, saying which condition and why;
 * so is a group column it does not have. */
static void bad_filters_refused(void **state)
{
	static const struct row_value text[] = {ROW_TEXT("x")}, num[] = {ROW_NUM(1)},
				      two[] = {ROW_NUM(1), ROW_NUM(2)};
	static const char *const no_col[] = {"nope", NULL};
	const struct row_cond
	    unknown[] = {ROW_COND_EQ("nope", num), {0}},
	    text_on_int[] = {ROW_COND_EQ("num", text), {0}},
	    num_on_text[] = {ROW_COND_IN("kind", num), {0}},
	    eq_two[] = {{.column = "num", .op = ROW_EQ, .values = two, .n_values = 2}, {0}},
	    in_none[] = {{.column = "num", .op = ROW_IN}, {0}},
	    nn_values[] = {{.column = "num", .op = ROW_NOT_NULL, .values = num, .n_values = 1},
			   {0}},
	    on_real[] = {ROW_COND_EQ("val", num), {0}},
	    bad_op[] = {{.column = "num", .op = (enum row_op)9}, {0}};
	char *sql = NULL;

	(void)state;
	refused(unknown, "filter on nope (eq): no such column");
	refused(text_on_int, "filter on num (eq): a number column compares with numbers");
	refused(num_on_text, "filter on kind (in): a text column compares with text values");
	refused(eq_two, "eq takes one value");
	refused(in_none, "in takes one value or more");
	refused(nn_values, "not_null takes no value");
	refused(on_real, "only integer, bool and text columns");
	refused(bad_op, "unknown operator");
	assert_int_equal(store_latest_sql(&t_table, no_col, NULL, &sql, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "group by nope: no such column"));
}

/* Indexes and migrations: the statements they compile to, and a
 * descriptor naming a column its table lacks refused at the check. */
static void indexes_and_migrations(void **state)
{
	static const char *const names[] = {[1] = "one", [3] = "it's"};
	static const struct table_migration mig = {
	    .column = "kind", .from = "num", .names = names, .n_names = 4};
	static const char *const bad_cols[] = {"grp", "nope", NULL};
	static const struct table_index bad_ix[] = {{.name = "x", .columns = bad_cols}, {0}};
	static const struct row_value v[] = {ROW_TEXT("a")};
	static const struct row_cond bad_where[] = {ROW_COND_EQ("nope", v), {0}};
	static const struct table_index bad_pred[] = {
	    {.name = "y", .columns = t_ix_cols, .where = bad_where}, {0}};
	static const struct table_migration bad_mig[] = {
	    {.column = "grp", .from = "num", .names = names, .n_names = 4}, {0}};
	struct event_table t = t_table;
	char *sql;

	(void)state;
	sql = store_index_sql(&mptcp_events_table, &mptcp_events_table.indexes[0]);
	assert_string_equal(sql, "CREATE INDEX IF NOT EXISTS mptcp_events_token ON"
				 " mptcp_events(token, ts) WHERE type IN ('CREATED', 'CLOSED')");
	sqlite3_free(sql);
	sql = store_migration_sql(&t_table, &mig);
	assert_string_equal(sql, "UPDATE t_filter SET kind = CASE num WHEN 1 THEN 'one'"
				 " WHEN 3 THEN 'it''s' END WHERE num IN (1, 3);");
	sqlite3_free(sql);

	t.indexes = bad_ix;
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "index x: no column nope"));
	t.indexes = bad_pred;
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "filter on nope"));
	t.indexes = NULL;
	t.migrations = bad_mig;
	assert_int_equal(store_schema_check(&t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "migration of grp"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(mptcp_recovery_uses_the_partial_token_index),
	    cmocka_unit_test(ifs_restore_uses_the_core_index),
	    cmocka_unit_test(sql_and_memory_agree),
	    cmocka_unit_test(bad_filters_refused),
	    cmocka_unit_test(indexes_and_migrations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
