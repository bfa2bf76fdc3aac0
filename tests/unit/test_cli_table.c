/* SPDX-License-Identifier: MIT */
/* api/cli/cli_table: any list printed from its GET /api/v1/schema entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/cli/cli_table.h"
#include "api/proto/messages.h"
#include "api/proto/sysobs.pb-c.h"

static Sysobs__V1__SchemaColumn col(const char *field, const char *kind, const char *port)
{
	Sysobs__V1__SchemaColumn c = SYSOBS__V1__SCHEMA_COLUMN__INIT;

	c.field = (char *)field;
	c.kind = (char *)kind;
	c.port_field = (char *)port;
	return c;
}

/* Packs list, prints it as route says, returns the text (freed by caller). */
static char *render(const ProtobufCMessage *list, Sysobs__V1__SchemaColumn *cols, size_t n,
		    bool history, int64_t after_id, int64_t *max_id, size_t *rows)
{
	Sysobs__V1__SchemaRoute r = SYSOBS__V1__SCHEMA_ROUTE__INIT;
	Sysobs__V1__SchemaColumn *cp[16];
	struct table_view v = {0};
	size_t len = protobuf_c_message_get_packed_size(list), tlen;
	uint8_t *buf = malloc(len + 1);
	char *text = NULL;
	FILE *out = open_memstream(&text, &tlen);

	assert_non_null(buf);
	assert_non_null(out);
	protobuf_c_message_pack(list, buf);
	for (size_t i = 0; i < n; i++)
		cp[i] = &cols[i];
	r.columns = cp;
	r.n_columns = n;
	r.history = history;
	r.list_message = (char *)list->descriptor->name;
	*rows = table_print(out, &r, sysobs_message_find(list->descriptor->name), buf, len, &v,
			    true, after_id, max_id);
	fclose(out);
	free(buf);
	return text;
}

/* list printed with cols (not history) is exactly want. */
static void assert_prints(const ProtobufCMessage *list, Sysobs__V1__SchemaColumn *cols, size_t n,
			  const char *want)
{
	int64_t max_id = 0;
	size_t rows;
	char *text = render(list, cols, n, false, 0, &max_id, &rows);

	assert_string_equal(text, want);
	free(text);
}

static void test_history_rows_print_oldest_first_with_every_kind(void **state)
{
	Google__Protobuf__Timestamp t1 = GOOGLE__PROTOBUF__TIMESTAMP__INIT, t2 = t1;
	Sysobs__V1__DropSample a = SYSOBS__V1__DROP_SAMPLE__INIT, b = a, *rows[2] = {&b, &a};
	Sysobs__V1__DropSampleList l = SYSOBS__V1__DROP_SAMPLE_LIST__INIT;
	Sysobs__V1__SchemaColumn cols[] = {
	    col("time", "time", ""),	       col("reason", "string", ""),
	    col("saddr", "endpoint", "sport"), col("daddr", "endpoint", "dport"),
	    col("len", "integer", ""),
	};
	int64_t max_id = 0;
	size_t n;
	char *text;

	(void)state;
	t1.seconds = 1764936000; /* 2025-12-05T12:00:00Z */
	t1.nanos = 123456789;
	t2.seconds = 1764936001;
	a.id = 7;
	a.time = &t1;
	a._reason_case = SYSOBS__V1__DROP_SAMPLE___REASON_REASON;
	a.reason = "NO_SOCKET";
	a._saddr_case = SYSOBS__V1__DROP_SAMPLE___SADDR_SADDR;
	a.saddr = "127.0.0.1";
	a._sport_case = SYSOBS__V1__DROP_SAMPLE___SPORT_SPORT;
	a.sport = 40101;
	a._daddr_case = SYSOBS__V1__DROP_SAMPLE___DADDR_DADDR;
	a.daddr = "::1";
	a._dport_case = SYSOBS__V1__DROP_SAMPLE___DPORT_DPORT;
	a.dport = 9;
	a.len = 29;
	b.id = 8;
	b.time = &t2;
	b.len = 1500; /* no reason, no addresses: "-" */
	l.data = rows;
	l.n_data = 2;

	text = render(&l.base, cols, 5, true, 0, &max_id, &n);
	assert_int_equal(n, 2);
	assert_int_equal(max_id, 8);
	assert_string_equal(
	    text, "TIME                      REASON     SADDR            DADDR    LEN\n"
		  "2025-12-05T12:00:00.123Z  NO_SOCKET  127.0.0.1:40101  [::1]:9  29\n"
		  "2025-12-05T12:00:01.000Z  -          -                -        1500\n");
	free(text);

	/* --follow: only what is newer than the newest printed */
	text = render(&l.base, cols, 5, true, 7, &max_id, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(text, "12:00:01.000Z"));
	assert_null(strstr(text, "NO_SOCKET"));
	free(text);
}

static void test_enums_tokens_and_lists_have_their_formats(void **state)
{
	Sysobs__V1__Collector c = SYSOBS__V1__COLLECTOR__INIT, *cp[] = {&c};
	Sysobs__V1__CollectorList cl = SYSOBS__V1__COLLECTOR_LIST__INIT;
	Sysobs__V1__MptcpEvent e = SYSOBS__V1__MPTCP_EVENT__INIT, *ep[] = {&e};
	Sysobs__V1__MptcpEventList el = SYSOBS__V1__MPTCP_EVENT_LIST__INIT;
	Sysobs__V1__IfsCore core = SYSOBS__V1__IFS_CORE__INIT, *corep[] = {&core};
	Sysobs__V1__IfsCoreList il = SYSOBS__V1__IFS_CORE_LIST__INIT;
	Sysobs__V1__SchemaColumn ccols[] = {col("name", "string", ""), col("state", "enum", ""),
					    col("routes", "list", "")};
	Sysobs__V1__SchemaColumn ecols[] = {col("token", "token", ""), col("backup", "bool", "")};
	Sysobs__V1__SchemaColumn icols[] = {col("cpus", "list", ""), col("online", "bool", ""),
					    col("last", "list", "")};
	char *routes[] = {"GET /a", "GET /b"};
	uint32_t cpus[] = {1, 5};
	(void)state;
	c.name = "drops";
	c.state = SYSOBS__V1__COLLECTOR_STATE__RUNNING;
	c.routes = routes;
	c.n_routes = 2;
	cl.data = cp;
	cl.n_data = 1;
	assert_prints(&cl.base, ccols, 3,
		      "NAME   STATE    ROUTES\ndrops  running  GET /a,GET /b\n");
	c.state = SYSOBS__V1__COLLECTOR_STATE__COLLECTOR_STATE_UNSPECIFIED;
	assert_prints(&cl.base, ccols, 2, "NAME   STATE\ndrops  unspecified\n");

	e.id = 1;
	e._token_case = SYSOBS__V1__MPTCP_EVENT___TOKEN_TOKEN;
	e.token = 0xd114306a;
	el.data = ep;
	el.n_data = 1;
	assert_prints(&el.base, ecols, 2, "TOKEN     BACKUP\nd114306a  -\n");

	core.cpus = cpus;
	core.n_cpus = 2;
	core.online = 1;
	il.data = corep;
	il.n_data = 1;
	assert_prints(&il.base, icols, 3, "CPUS  ONLINE  LAST\n1,5   yes     0\n");
}

/* A column whose row has a naming field (netns_name for netns) shows the
 * name when there is one, else the value. */
static void test_a_named_value_shows_its_name(void **state)
{
	Sysobs__V1__MptcpEvent a = SYSOBS__V1__MPTCP_EVENT__INIT, b = a, *rows[2] = {&a, &b};
	Sysobs__V1__MptcpEventList l = SYSOBS__V1__MPTCP_EVENT_LIST__INIT;
	Sysobs__V1__SchemaColumn cols[] = {col("netns", "integer", "")};

	(void)state;
	cols[0].name_field = "netns_name";
	a.netns = 4026531840u;
	a._netns_name_case = SYSOBS__V1__MPTCP_EVENT___NETNS_NAME_NETNS_NAME;
	a.netns_name = "blue";
	b.netns = 4026532001u;
	l.data = rows;
	l.n_data = 2;
	assert_prints(&l.base, cols, 1, "NETNS\nblue\n4026532001\n");
}

static void test_an_answer_that_does_not_decode_is_an_error(void **state)
{
	Sysobs__V1__SchemaRoute r = SYSOBS__V1__SCHEMA_ROUTE__INIT;
	struct table_view v = {0};
	const uint8_t junk[] = {0x0a, 0xff, 0xff};
	int64_t max_id = 0;

	(void)state;
	assert_int_equal(table_print(stdout, &r, &sysobs__v1__drop_sample_list__descriptor, junk,
				     sizeof(junk), &v, true, 0, &max_id),
			 (size_t)-1);
}

static void test_every_message_of_the_proto_is_found_by_name(void **state)
{
	size_t n = 0;

	(void)state;
	for (const ProtobufCMessageDescriptor *const *d = sysobs_messages; *d; d++, n++)
		assert_ptr_equal(sysobs_message_find((*d)->name), *d);
	assert_true(n >= 40);
	assert_ptr_equal(sysobs_message_find("sysobs.v1.SchemaRouteList"),
			 &sysobs__v1__schema_route_list__descriptor);
	assert_null(sysobs_message_find("sysobs.v1.Nope"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_history_rows_print_oldest_first_with_every_kind),
	    cmocka_unit_test(test_enums_tokens_and_lists_have_their_formats),
	    cmocka_unit_test(test_a_named_value_shows_its_name),
	    cmocka_unit_test(test_an_answer_that_does_not_decode_is_an_error),
	    cmocka_unit_test(test_every_message_of_the_proto_is_found_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
