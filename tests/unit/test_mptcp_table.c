/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the mptcp_events table: the CREATE, indexes and INSERT the
 * store generates from its descriptor run on an in-memory SQLite database;
 * rows come from mptcp_row_fill() on recorded kernel messages and on
 * hand-built ones (unknown type and attributes, reset reasons), bound by
 * store_schema_bind() as the store's writer does. Checks the
 * NULL-for-absent rule and the text columns.
 */
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "storage/store_filter.h"
#include "storage/store_schema.h"

static sqlite3 *db;
static int64_t next_id = 1;

static int setup(void **state)
{
	char sql[4096];

	assert_int_equal(store_schema_check(&mptcp_events_table, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(store_schema_create_sql(&mptcp_events_table, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	for (const struct table_index *ix = mptcp_events_table.indexes; ix && ix->name; ix++) {
		char *ix_sql = store_index_sql(&mptcp_events_table, ix);

		assert_int_equal(sqlite3_exec(db, ix_sql, NULL, NULL, NULL), SQLITE_OK);
		sqlite3_free(ix_sql);
	}
	return 0;
}

static int teardown(void **state)
{
	sqlite3_close(db);
	return 0;
}

/* Inserts one row the way the store's writer does; returns its id. */
static int64_t insert(const struct mptcp_row *row)
{
	char sql[4096];
	sqlite3_stmt *st;
	int64_t id = next_id++;

	assert_int_equal(store_schema_insert_sql(&mptcp_events_table, sql, sizeof(sql)), 0);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, 1000 + id);
	assert_int_equal(store_schema_bind(st, &mptcp_events_table, row), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	return id;
}

/* The row of a recorded message, seen in the initial netns. */
/* The files were recorded on 6.18: absent server side means client. */
static int load_absent_is_client = 1;

static void load_row(const char *name, struct mptcp_row *row)
{
	static char buf[8192] __attribute__((aligned(8)));
	const char *dir = getenv("SYSOBS_TEST_DATA");
	struct mptcp_event ev;
	char path[4096];
	size_t n;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/mptcp/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(mptcp_event_decode((struct nlmsghdr *)buf, n, &ev), 0);
	mptcp_event_side_resolve(&ev, load_absent_is_client);
	memset(row, 0xa5, sizeof(*row)); /* mptcp_row_fill sets every field */
	mptcp_row_fill(&ev, 4026531840u, row);
}

/* One column of row id as text ("NULL" for NULL). */
static const char *col(int64_t id, const char *column)
{
	static char out[256];
	char sql[256];
	sqlite3_stmt *st;

	snprintf(sql, sizeof(sql), "SELECT %s FROM mptcp_events WHERE id = %lld", column,
		 (long long)id);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	if (sqlite3_column_type(st, 0) == SQLITE_NULL)
		snprintf(out, sizeof(out), "NULL");
	else
		snprintf(out, sizeof(out), "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return out;
}

static void test_sub_established_row(void **state)
{
	struct mptcp_row row;
	int64_t id;

	load_row("client-0003-SUB_ESTABLISHED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "type"), "SUB_ESTABLISHED");
	assert_string_equal(col(id, "netns"), "4026531840");
	assert_string_equal(col(id, "token"), "3753675707");
	assert_string_equal(col(id, "family"), "2");
	assert_string_equal(col(id, "saddr"), "10.231.2.1");
	assert_string_equal(col(id, "daddr"), "10.231.1.2");
	assert_string_equal(col(id, "sport"), "49069");
	assert_string_equal(col(id, "dport"), "10080");
	assert_string_equal(col(id, "loc_id"), "2");
	assert_string_equal(col(id, "rem_id"), "0");
	assert_string_equal(col(id, "backup"), "0");
	assert_string_equal(col(id, "if_idx"), "3");
	/* Not sent by the kernel for this event: NULL, not 0. */
	assert_string_equal(col(id, "error"), "NULL");
	assert_string_equal(col(id, "timeout"), "NULL");
	assert_string_equal(col(id, "reset_reason"), "NULL");
	assert_string_equal(col(id, "server_side"), "NULL");
	assert_string_equal(col(id, "unknown_attrs"), "NULL");
	assert_string_equal(col(id, "reset_reason_name"), "NULL");
}

static void test_closed_and_created_rows(void **state)
{
	struct mptcp_row row;
	int64_t id;

	load_row("client-0008-CLOSED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "type"), "CLOSED");
	assert_string_equal(col(id, "saddr"), "NULL");
	assert_string_equal(col(id, "sport"), "NULL");
	assert_string_equal(col(id, "family"), "NULL");
	/* 6.18 says nothing on the client side: 0 on a 5.19+ kernel, unknown
	 * (NULL) on 5.12-5.18, which have no server-side information. */
	load_row("client-0001-CREATED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "server_side"), "0");
	assert_string_equal(col(id, "flags"), "NULL");
	assert_string_equal(col(id, "deny_join_id0"), "NULL");
	load_absent_is_client = 0;
	load_row("client-0001-CREATED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "server_side"), "NULL");
	load_row("server-0002-CREATED.bin", &row); /* FLAGS says it anyway */
	load_absent_is_client = 1;
	id = insert(&row);
	assert_string_equal(col(id, "server_side"), "1");
	assert_string_equal(col(id, "flags"), "2");
	assert_string_equal(col(id, "deny_join_id0"), "0");
	load_row("reset-server-SUB_CLOSED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "reset_reason"), "0");
	assert_string_equal(col(id, "reset_reason_name"), "unspec");
	assert_string_equal(col(id, "reset_flags"), "0");
	assert_string_equal(col(id, "error"), "104");
	load_row("client-0011-CREATED.bin", &row);
	id = insert(&row);
	assert_string_equal(col(id, "saddr"), "::1");
}

static void test_unknown_row(void **state)
{
	static char buf[512] __attribute__((aligned(8)));
	struct mptcp_event ev;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	struct mptcp_row row;
	int64_t id;

	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = 42;
	mnl_attr_put_u32(nlh, MPTCP_EVA_TOKEN, 9);
	mnl_attr_put_u64(nlh, 30, 1);
	assert_int_equal(mptcp_event_decode(nlh, nlh->nlmsg_len, &ev), 0);
	mptcp_row_fill(&ev, 1, &row);
	id = insert(&row);
	assert_string_equal(col(id, "type"), "UNKNOWN_42");
	assert_string_equal(col(id, "netns"), "1");
	assert_string_equal(col(id, "token"), "9");
	assert_string_equal(col(id, "unknown_attrs"), "[{\"type\":30,\"len\":8}]");
	assert_string_equal(col(id, "family"), "NULL");
	assert_string_equal(col(id, "server_side"), "NULL");
}

/* A SUB_CLOSED carrying reset_reason (and nothing else of interest). */
static int64_t insert_reset(int with_reason, uint32_t reason)
{
	static char buf[512] __attribute__((aligned(8)));
	struct mptcp_event ev;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	struct mptcp_row row;

	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = MPTCP_EV_SUB_CLOSED;
	mnl_attr_put_u32(nlh, MPTCP_EVA_TOKEN, 7);
	if (with_reason)
		mnl_attr_put_u32(nlh, MPTCP_EVA_RESET_REASON, reason);
	assert_int_equal(mptcp_event_decode(nlh, nlh->nlmsg_len, &ev), 0);
	mptcp_row_fill(&ev, 4026531840u, &row);
	return insert(&row);
}

/* reset_reason_name spells the kernel's MPTCP_RST_* reason; NULL when the
 * kernel sent no reason or one this code does not know (the number stays). */
static void test_reset_reason_names(void **state)
{
	int64_t id;

	id = insert_reset(1, 2);
	assert_string_equal(col(id, "type"), "SUB_CLOSED");
	assert_string_equal(col(id, "reset_reason"), "2");
	assert_string_equal(col(id, "reset_reason_name"), "resource");
	id = insert_reset(1, 6);
	assert_string_equal(col(id, "reset_reason_name"), "middlebox");
	id = insert_reset(1, 99);
	assert_string_equal(col(id, "reset_reason"), "99");
	assert_string_equal(col(id, "reset_reason_name"), "NULL");
	id = insert_reset(0, 0);
	assert_string_equal(col(id, "reset_reason"), "NULL");
	assert_string_equal(col(id, "reset_reason_name"), "NULL");
}

/* The history query's two steps use the indexes they were written for. */
static void test_query_plans(void **state)
{
	sqlite3_stmt *st;
	char plan[1024] = "";

	assert_int_equal(sqlite3_prepare_v2(db,
					    "EXPLAIN QUERY PLAN SELECT max(ts) FROM mptcp_events"
					    " WHERE token = 1 AND type IN ('CREATED', 'CLOSED')",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		strncat(plan, (const char *)sqlite3_column_text(st, 3),
			sizeof(plan) - strlen(plan) - 1);
	sqlite3_finalize(st);
	assert_non_null(strstr(plan, "mptcp_events_token"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sub_established_row),
	    cmocka_unit_test(test_closed_and_created_rows),
	    cmocka_unit_test(test_unknown_row),
	    cmocka_unit_test(test_reset_reason_names),
	    cmocka_unit_test(test_query_plans),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
