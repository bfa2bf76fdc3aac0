// SPDX-License-Identifier: MIT
/*
 * otlp_dump OUT.pb [EXPECTED.json]: encodes a fixed set of event rows with
 * otlp_logs_encode() into OUT.pb (an ExportLogsServiceRequest), and writes
 * what each record must hold, in the JSON that tests/tools/otlp/decode.mjs
 * prints, to EXPECTED.json (integration.otlp_decode compares the two).
 *
 * The expectation is spelled apart from the encoder: the resource, the
 * severities and the bodies literally, the attributes from the rows through
 * col_value() (the one reading of a column), each in its OTLP type.
 * The rows: ifs_scans (fail, pass; NULL columns), mptcp_events (a reset),
 * and a table of every column type (a uint64 past INT64_MAX, reals, bools,
 * text with spaces, quotes and multi-byte UTF-8).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/ifs/ifs_table.h"
#include "collectors/mptcp/mptcp.h"
#include "exporters/otlp_logs.h"
#include "storage/table_value.h"

struct dump_row {
	double d;
	double zero;
	uint64_t u;
	int64_t i;
	bool yes, no;
	char text[48];
};

#define D_COL(f, t, n, ...) COL(struct dump_row, f, t, n, __VA_ARGS__)
static const struct event_column dump_cols[] = {
    D_COL(d, COL_REAL, COL_NOT_NULL),	   D_COL(zero, COL_REAL, COL_NULL_ZERO),
    D_COL(u, COL_UINT, COL_NOT_NULL),	   D_COL(i, COL_INT, COL_NOT_NULL),
    D_COL(yes, COL_BOOL, COL_NOT_NULL),	   D_COL(no, COL_BOOL, COL_NOT_NULL),
    D_COL(text, COL_TEXT, COL_NULL_EMPTY), {0},
};

static const struct event_table dump_table = {
    .name = "otlp_dump",
    .cols = dump_cols,
    .row_size = sizeof(struct dump_row),
};

struct fixture {
	struct export_row row;
	int severity;
	const char *severity_text, *body;
};

static json_t *any_string(const char *s)
{
	return json_pack("{s:s}", "stringValue", s);
}

static json_t *any_int(int64_t v)
{
	char digits[24];

	snprintf(digits, sizeof(digits), "%" PRId64, v);
	return json_pack("{s:s}", "intValue", digits);
}

/* A non-NULL column's attribute value, as decode.mjs prints it. */
static json_t *any_column(const struct col_value *cv)
{
	char s[256];

	switch (cv->kind) {
	case COLV_INT:
		return any_int(cv->i);
	case COLV_UINT:
		snprintf(s, sizeof(s), "%" PRIu64, cv->u);
		return any_string(s);
	case COLV_BOOL:
		return json_pack("{s:b}", "boolValue", (int)cv->i);
	case COLV_REAL:
		return json_pack("{s:f}", "doubleValue", cv->d);
	default:
		snprintf(s, sizeof(s), "%.*s", (int)cv->len, cv->s);
		return any_string(s);
	}
}

static json_t *expected_record(const struct fixture *f, json_t *resource, json_t *scope)
{
	const struct event_table *t = f->row.table;
	json_t *attrs = json_object();
	char ts[24], name[64];

	json_object_set_new(attrs, "sysobs.table", any_string(t->name));
	json_object_set_new(attrs, "sysobs.id", any_int(f->row.id));
	for (const struct event_column *c = t->cols; c->name; c++) {
		struct col_value cv;

		col_value(c, f->row.row, &cv);
		if (cv.kind != COLV_NULL)
			json_object_set_new(attrs, c->name, any_column(&cv));
	}
	snprintf(ts, sizeof(ts), "%" PRId64, f->row.ts_ns);
	snprintf(name, sizeof(name), "sysobs.%s", t->name);
	return json_pack("{s:O, s:O, s:s, s:s, s:i, s:s, s:s, s:o, s:o}", "resource", resource,
			 "scope", scope, "time_unix_nano", ts, "observed_time_unix_nano", ts,
			 "severity_number", f->severity, "severity_text", f->severity_text,
			 "event_name", name, "body", any_string(f->body), "attributes", attrs);
}

int main(int argc, char **argv)
{
	const struct export_identity id = {
	    .job = "sysobs",
	    .instance = "host-a.example",
	    .labels = {{"cluster", "eu1"}, {"region", "west"}},
	    .n_labels = 2,
	    .version = "9.8.7",
	    .db_id = "5d41402abc4b2a76",
	};
	struct ifs_row fail, pass;
	struct mptcp_row reset = {
	    .token = -1,
	    .family = 10,
	    .sport = -1,
	    .dport = -1,
	    .loc_id = 2,
	    .rem_id = -1,
	    .backup = -1,
	    .error = 104,
	    .flags = -1,
	    .timeout = -1,
	    .if_idx = -1,
	    .reset_reason = 4,
	    .reset_flags = 0,
	    .server_side = 1,
	    .deny_join_id0 = -1,
	    .netns = 4026532000u,
	    .type = "SUB_CLOSED",
	    .saddr = "fd00::1",
	    .daddr = "fd00::2",
	    .reset_reason_name = "wq2big",
	};
	struct dump_row kinds = {
	    .d = 0.1,
	    .u = UINT64_MAX,
	    .i = INT64_MIN,
	    .yes = true,
	    .text = "caf\xc3\xa9 \xe2\x9c\x93 \"q\" a=b",
	};
	struct dump_row plain = {.d = -1.5e-7, .u = 42, .i = 0, .no = true, .text = "x"};
	struct buf out = {0};
	json_t *resource, *scope, *expected;
	FILE *f;
	int err;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s OUT.pb [EXPECTED.json]\n", argv[0]);
		return 2;
	}
	ifs_row_init(&fail);
	snprintf(fail.device, sizeof(fail.device), "intel_ifs_1");
	snprintf(fail.test, sizeof(fail.test), "array");
	fail.cpu = 17;
	fail.core = 9;
	fail.package = 1;
	snprintf(fail.status, sizeof(fail.status), "fail");
	snprintf(fail.details, sizeof(fail.details), "0x80000001");
	fail.array_bitmask = 0x3;
	fail.duration_ns = 812000;
	fail.scan_id = 1234;
	snprintf(fail.requested_by, sizeof(fail.requested_by), "scheduler");
	ifs_row_init(&pass);
	snprintf(pass.test, sizeof(pass.test), "scan");
	snprintf(pass.status, sizeof(pass.status), "pass");
	pass.cpu = 0;

	const struct fixture fx[] = {
	    {{&ifs_scans_table, 1, 1700000000000000001LL, &fail},
	     17,
	     "ERROR",
	     "duration_ns=812000 device=intel_ifs_1 test=array cpu=17 core=9 package=1 "
	     "status=fail details=0x80000001 requested_by=scheduler scan_id=1234 "
	     "array_bitmask=3"},
	    {{&ifs_scans_table, 2, 1700000000500000000LL, &pass},
	     9,
	     "INFO",
	     "test=scan cpu=0 status=pass"},
	    {{&mptcp_events_table, 3, 1700000001999999999LL, &reset},
	     13,
	     "WARN",
	     "netns=4026532000 type=SUB_CLOSED family=10 saddr=fd00::1 daddr=fd00::2 loc_id=2 "
	     "error=104 reset_reason=4 reset_flags=0 server_side=1 reset_reason_name=wq2big"},
	    {{&dump_table, INT64_MAX, 1, &kinds},
	     9,
	     "INFO",
	     "d=0.1 u=18446744073709551615 i=-9223372036854775808 yes=true no=false "
	     "text=\"caf\xc3\xa9 \xe2\x9c\x93 \\\"q\\\" a=b\""},
	    {{&dump_table, 5, 0, &plain},
	     9,
	     "INFO",
	     "d=-1.5e-07 u=42 i=0 yes=false no=true text=x"},
	};
	const size_t n = sizeof(fx) / sizeof(fx[0]);
	struct export_row rows[sizeof(fx) / sizeof(fx[0])];

	for (size_t i = 0; i < n; i++)
		rows[i] = fx[i].row;
	err = otlp_logs_encode(rows, n, &id, 0, &out);
	if (err) {
		fprintf(stderr, "otlp_dump: encode: %s\n", strerror(-err));
		return 1;
	}
	f = fopen(argv[1], "wb");
	if (!f || fwrite(out.p, 1, out.len, f) != out.len || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	buf_free(&out);
	if (argc < 3)
		return 0;

	resource =
	    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "service.name", any_string("sysobs"),
		      "service.instance.id", any_string("host-a.example"), "host.name",
		      any_string("host-a.example"), "service.version", any_string("9.8.7"),
		      "sysobs.db_id", any_string("5d41402abc4b2a76"), "cluster", any_string("eu1"),
		      "region", any_string("west"));
	scope = json_pack("{s:s, s:s}", "name", "sysobsd", "version", "9.8.7");
	expected = json_array();
	if (!resource || !scope || !expected)
		return 1;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(expected, expected_record(&fx[i], resource, scope));
	err = json_dump_file(expected, argv[2], JSON_INDENT(1));
	json_decref(expected);
	json_decref(resource);
	json_decref(scope);
	if (err) {
		fprintf(stderr, "otlp_dump: cannot write %s\n", argv[2]);
		return 1;
	}
	return 0;
}
