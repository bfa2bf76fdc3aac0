// SPDX-License-Identifier: MIT
/*
 * OTLP logs (exporters/otlp_logs.c): rows of ifs_scans, mptcp_events and a
 * table of every column type, encoded and decoded back with protobuf-c's
 * unpack of ExportLogsServiceRequest: the resource (job and instance as
 * OpenTelemetry's Prometheus compatibility maps them, version, db id,
 * external labels), the scope, and for each record times, severity (the
 * tables' own), event name, logfmt body and typed attributes, NULL columns
 * left out, a uint64 past INT64_MAX as digits, invalid UTF-8 replaced. Rows
 * that cannot be encoded leave the output as it was. The response: empty,
 * partial success, garbage.
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

#include "base/config.h"
#include "collectors/drops/drops.h"
#include "collectors/ifs/ifs_table.h"
#include "collectors/mptcp/mptcp.h"
#include "exporters/otlp_logs.h"
#include "exporters/proto/opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest otlp_request;
typedef Opentelemetry__Proto__Logs__V1__LogRecord otlp_record;
typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_kv;
typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_any;

#define STR_CASE   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define INT_CASE   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE
#define BOOL_CASE  OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE
#define DBL_CASE   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE
#define BYTES_CASE OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE

/* A table with every column type and NULL kind, and its own severity. */
struct kinds_row {
	int64_t neg;		 /* COL_NULL_NEG */
	int32_t small;		 /* COL_NOT_NULL, may be negative */
	uint64_t big;		 /* COL_NULL_ZERO */
	double real;		 /* COL_NOT_NULL */
	double zreal;		 /* COL_NULL_ZERO */
	bool flag;		 /* COL_NOT_NULL */
	char text[24];		 /* COL_NULL_EMPTY */
	char always[8];		 /* COL_NOT_NULL: "" is a value */
	COL_BLOB_FIELD(8) bytes; /* COL_NULL_EMPTY: a packet capture's kind */
};

#define K_COL(f, t, n, ...) COL(struct kinds_row, f, t, n, __VA_ARGS__)
static const struct event_column kinds_cols[] = {
    K_COL(neg, COL_INT, COL_NULL_NEG),	    K_COL(small, COL_INT, COL_NOT_NULL),
    K_COL(big, COL_UINT, COL_NULL_ZERO),    K_COL(real, COL_REAL, COL_NOT_NULL),
    K_COL(zreal, COL_REAL, COL_NULL_ZERO),  K_COL(flag, COL_BOOL, COL_NOT_NULL),
    K_COL(text, COL_TEXT, COL_NULL_EMPTY),  K_COL(always, COL_TEXT, COL_NOT_NULL),
    K_COL(bytes, COL_BLOB, COL_NULL_EMPTY), {0},
};

static int kinds_severity(const void *row)
{
	const struct kinds_row *r = row;

	return r->small < 0 ? 0 : EVENT_SEVERITY_DEBUG; /* 0: cannot be encoded */
}

static const struct event_table kinds_table = {
    .name = "kinds",
    .cols = kinds_cols,
    .row_size = sizeof(struct kinds_row),
    .severity = kinds_severity,
};

static struct export_identity test_identity(void)
{
	struct export_identity id = {
	    .job = "sysobs",
	    .instance = "host-a",
	    .labels = {{"cluster", "eu1"}, {"env", "prod"}},
	    .n_labels = 2,
	    .version = "1.2.3",
	    .db_id = "0f1e2d3c",
	};
	return id;
}

static otlp_request *encode_flags(const struct export_row *rows, size_t n,
				  const struct export_identity *id, unsigned flags)
{
	struct buf b = {0};
	otlp_request *req;

	assert_int_equal(otlp_logs_encode(rows, n, id, flags, &b), 0);
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
	    NULL, b.len, (const uint8_t *)b.p);
	assert_non_null(req);
	buf_free(&b);
	assert_int_equal(req->n_resource_logs, 1);
	assert_int_equal(req->resource_logs[0]->n_scope_logs, 1);
	return req;
}

static otlp_request *encode_and_decode(const struct export_row *rows, size_t n,
				       const struct export_identity *id)
{
	return encode_flags(rows, n, id, 0);
}

static void request_free(otlp_request *req)
{
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
}

static otlp_record *record_at(otlp_request *req, size_t i)
{
	Opentelemetry__Proto__Logs__V1__ScopeLogs *sl = req->resource_logs[0]->scope_logs[0];

	assert_true(i < sl->n_log_records);
	return sl->log_records[i];
}

static void assert_kv_string(const otlp_kv *kv, const char *key, const char *value)
{
	assert_string_equal(kv->key, key);
	assert_non_null(kv->value);
	assert_int_equal(kv->value->value_case, STR_CASE);
	assert_string_equal(kv->value->string_value, value);
}

static void assert_kv_int(const otlp_kv *kv, const char *key, int64_t value)
{
	assert_string_equal(kv->key, key);
	assert_non_null(kv->value);
	assert_int_equal(kv->value->value_case, INT_CASE);
	assert_true(kv->value->int_value == value);
}

/* The record of one row: times, severity, name, body, the two keys. */
static void assert_record_head(const otlp_record *r, int64_t ts, int sev, const char *sev_text,
			       const char *table, int64_t id, const char *body)
{
	assert_true(r->time_unix_nano == (uint64_t)ts);
	assert_true(r->observed_time_unix_nano == (uint64_t)ts);
	assert_int_equal(r->severity_number, sev);
	assert_string_equal(r->severity_text, sev_text);
	assert_true(!strncmp(r->event_name, "sysobs.", 7));
	assert_string_equal(r->event_name + 7, table);
	assert_non_null(r->body);
	assert_int_equal(r->body->value_case, STR_CASE);
	assert_string_equal(r->body->string_value, body);
	assert_true(r->n_attributes >= 2);
	assert_kv_string(r->attributes[0], "sysobs.table", table);
	assert_kv_int(r->attributes[1], "sysobs.id", id);
	assert_int_equal(r->dropped_attributes_count, 0);
	assert_int_equal(r->flags, 0);
	assert_int_equal(r->trace_id.len, 0);
	assert_int_equal(r->span_id.len, 0);
}

static void test_resource_scope_and_ifs_rows_decode_back(void **state)
{
	struct export_identity id = test_identity();
	struct ifs_row fail, untested, pass;
	struct export_row rows[3];
	otlp_request *req;
	Opentelemetry__Proto__Resource__V1__Resource *res;
	Opentelemetry__Proto__Common__V1__InstrumentationScope *scope;
	otlp_record *r;

	(void)state;
	ifs_row_init(&fail);
	strcpy(fail.device, "intel_ifs_0");
	strcpy(fail.test, "scan");
	fail.cpu = 3;
	fail.core = 1;
	fail.package = 0;
	strcpy(fail.status, "fail");
	strcpy(fail.details, "0x8081");
	fail.error_code = 0;
	strcpy(fail.error_name, "no_error");
	strcpy(fail.reason, "core failed the scan at chunk 5");
	fail.chunk_num = 5;
	fail.scan_id = 42;
	untested = fail;
	strcpy(untested.status, "untested");
	ifs_row_init(&pass);
	strcpy(pass.status, "pass");
	pass.cpu = 0;

	rows[0] = (struct export_row){&ifs_scans_table, 7, 1700000000123456789LL, &fail};
	rows[1] = (struct export_row){&ifs_scans_table, 8, 1700000001000000000LL, &untested};
	rows[2] = (struct export_row){&ifs_scans_table, 9, 1700000002000000000LL, &pass};
	req = encode_and_decode(rows, 3, &id);

	/* job sysobs, instance host-a: what a Prometheus-side receiver maps
	 * back to job="sysobs", instance="host-a". */
	res = req->resource_logs[0]->resource;
	assert_non_null(res);
	assert_int_equal(res->n_attributes, 7);
	assert_kv_string(res->attributes[0], "service.name", "sysobs");
	assert_kv_string(res->attributes[1], "service.instance.id", "host-a");
	assert_kv_string(res->attributes[2], "host.name", "host-a");
	assert_kv_string(res->attributes[3], "service.version", "1.2.3");
	assert_kv_string(res->attributes[4], "sysobs.db_id", "0f1e2d3c");
	assert_kv_string(res->attributes[5], "cluster", "eu1");
	assert_kv_string(res->attributes[6], "env", "prod");
	scope = req->resource_logs[0]->scope_logs[0]->scope;
	assert_non_null(scope);
	assert_string_equal(scope->name, "sysobsd");
	assert_string_equal(scope->version, "1.2.3");
	assert_int_equal(req->resource_logs[0]->scope_logs[0]->n_log_records, 3);

	r = record_at(req, 0);
	assert_record_head(r, 1700000000123456789LL, 17, "ERROR", "ifs_scans", 7,
			   "device=intel_ifs_0 test=scan cpu=3 core=1 package=0 status=fail "
			   "details=0x8081 error_code=0 error_name=no_error chunk_num=5 "
			   "scan_id=42 reason=\"core failed the scan at chunk 5\"");
	/* Every non-NULL column, in the descriptor's order, nothing else. */
	assert_int_equal(r->n_attributes, 2 + 12);
	assert_kv_string(r->attributes[2], "device", "intel_ifs_0");
	assert_kv_string(r->attributes[3], "test", "scan");
	assert_kv_int(r->attributes[4], "cpu", 3);
	assert_kv_int(r->attributes[5], "core", 1);
	assert_kv_int(r->attributes[6], "package", 0);
	assert_kv_string(r->attributes[7], "status", "fail");
	assert_kv_string(r->attributes[8], "details", "0x8081");
	assert_kv_int(r->attributes[9], "error_code", 0);
	assert_kv_string(r->attributes[10], "error_name", "no_error");
	assert_kv_int(r->attributes[11], "chunk_num", 5);
	assert_kv_int(r->attributes[12], "scan_id", 42);
	assert_kv_string(r->attributes[13], "reason", "core failed the scan at chunk 5");

	r = record_at(req, 1);
	assert_record_head(r, 1700000001000000000LL, 13, "WARN", "ifs_scans", 8,
			   "device=intel_ifs_0 test=scan cpu=3 core=1 package=0 status=untested "
			   "details=0x8081 error_code=0 error_name=no_error chunk_num=5 "
			   "scan_id=42 reason=\"core failed the scan at chunk 5\"");
	assert_kv_string(r->attributes[7], "status", "untested");

	r = record_at(req, 2);
	assert_record_head(r, 1700000002000000000LL, 9, "INFO", "ifs_scans", 9,
			   "cpu=0 status=pass");
	assert_int_equal(r->n_attributes, 4);
	assert_kv_int(r->attributes[2], "cpu", 0);
	assert_kv_string(r->attributes[3], "status", "pass");
	request_free(req);
}

static const otlp_kv *attr(const otlp_record *r, const char *key);

static void mptcp_row_null(struct mptcp_row *r)
{
	memset(r, 0, sizeof(*r));
	r->token = r->family = r->sport = r->dport = r->loc_id = r->rem_id = r->backup = -1;
	r->error = r->flags = r->timeout = r->if_idx = r->reset_reason = r->reset_flags = -1;
	r->server_side = r->deny_join_id0 = -1;
}

static void test_mptcp_rows_and_their_severity(void **state)
{
	struct export_identity id = test_identity();
	struct mptcp_row created, reset, refused;
	struct export_row rows[3];
	otlp_request *req;
	otlp_record *r;

	(void)state;
	mptcp_row_null(&created);
	created.netns = 4026531840u;
	strcpy(created.type, "CREATED");
	created.token = 0x1a2b3c4d;
	created.family = 2;
	strcpy(created.saddr, "10.0.0.1");
	strcpy(created.daddr, "10.0.0.2");
	created.sport = 40000;
	created.dport = 443;
	created.server_side = 0;
	reset = created;
	strcpy(reset.type, "SUB_CLOSED");
	reset.reset_reason = 1;
	strcpy(reset.reset_reason_name, "mptcp");
	refused = created;
	strcpy(refused.type, "SUB_CLOSED");
	refused.error = 111;
	/* of a pod's namespace: its names under the semantic conventions */
	strcpy(refused.pod, "web-7d9f");
	strcpy(refused.pod_namespace, "shop");
	strcpy(refused.pod_uid, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");

	rows[0] = (struct export_row){&mptcp_events_table, 100, 1, &created};
	rows[1] = (struct export_row){&mptcp_events_table, 101, 2, &reset};
	rows[2] = (struct export_row){&mptcp_events_table, 102, 3, &refused};
	req = encode_and_decode(rows, 3, &id);
	r = record_at(req, 0);
	assert_record_head(r, 1, 9, "INFO", "mptcp_events", 100,
			   "netns=4026531840 type=CREATED token=439041101 family=2 "
			   "saddr=10.0.0.1 daddr=10.0.0.2 sport=40000 dport=443 server_side=0");
	assert_int_equal(r->n_attributes, 2 + 9);
	assert_kv_int(r->attributes[2], "netns", 4026531840LL);
	assert_kv_string(r->attributes[3], "type", "CREATED");
	assert_kv_int(r->attributes[4], "token", 0x1a2b3c4d);
	assert_kv_int(r->attributes[5], "family", 2);
	assert_kv_string(r->attributes[6], "saddr", "10.0.0.1");
	assert_kv_string(r->attributes[7], "daddr", "10.0.0.2");
	assert_kv_int(r->attributes[8], "sport", 40000);
	assert_kv_int(r->attributes[9], "dport", 443);
	assert_kv_int(r->attributes[10], "server_side", 0);
	r = record_at(req, 1);
	assert_record_head(r, 2, 13, "WARN", "mptcp_events", 101,
			   "netns=4026531840 type=SUB_CLOSED token=439041101 family=2 "
			   "saddr=10.0.0.1 daddr=10.0.0.2 sport=40000 dport=443 reset_reason=1 "
			   "server_side=0 reset_reason_name=mptcp");
	r = record_at(req, 2);
	assert_record_head(r, 3, 13, "WARN", "mptcp_events", 102,
			   "netns=4026531840 type=SUB_CLOSED token=439041101 family=2 "
			   "saddr=10.0.0.1 daddr=10.0.0.2 sport=40000 dport=443 error=111 "
			   "server_side=0 pod=web-7d9f pod_namespace=shop "
			   "pod_uid=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	assert_int_equal(r->n_attributes, 2 + 10 + 3);
	assert_kv_string(attr(r, "k8s.pod.name"), "k8s.pod.name", "web-7d9f");
	assert_kv_string(attr(r, "k8s.namespace.name"), "k8s.namespace.name", "shop");
	assert_kv_string(attr(r, "k8s.pod.uid"), "k8s.pod.uid", refused.pod_uid);
	assert_null(attr(r, "pod"));
	request_free(req);
}

static void test_every_column_type(void **state)
{
	struct export_identity id = test_identity();
	struct kinds_row full = {
	    .neg = 5,
	    .small = 0,
	    .big = UINT64_MAX - 1,
	    .real = 0.1,
	    .zreal = -2.5,
	    .flag = false,
	    .text = "a \"b\"\\c\n\xc3\xa9\xff",
	    .always = "",
	};
	struct kinds_row nulls = {.neg = -1, .small = 7, .big = 123, .real = 1e300, .flag = true};
	struct export_row rows[2] = {
	    {&kinds_table, INT64_MAX, INT64_MAX, &full},
	    {&kinds_table, 0, 0, &nulls},
	};
	otlp_request *req;
	otlp_record *r;

	(void)state;
	req = encode_and_decode(rows, 2, &id);
	r = record_at(req, 0);
	/* Invalid UTF-8 (the lone 0xff) is U+FFFD on the wire; logfmt quotes
	 * and escapes; the real is the shortest spelling that reads back. */
	assert_record_head(r, INT64_MAX, 5, "DEBUG", "kinds", INT64_MAX,
			   "neg=5 small=0 big=18446744073709551614 real=0.1 zreal=-2.5 flag=false "
			   "text=\"a \\\"b\\\"\\\\c\\n\xc3\xa9\xef\xbf\xbd\" always=\"\"");
	assert_int_equal(r->n_attributes, 2 + 8);
	assert_kv_int(r->attributes[2], "neg", 5);
	assert_kv_int(r->attributes[3], "small", 0);
	/* Past INT64_MAX: its digits, as a string. */
	assert_kv_string(r->attributes[4], "big", "18446744073709551614");
	assert_string_equal(r->attributes[5]->key, "real");
	assert_int_equal(r->attributes[5]->value->value_case, DBL_CASE);
	assert_true(r->attributes[5]->value->double_value == 0.1);
	assert_string_equal(r->attributes[6]->key, "zreal");
	assert_true(r->attributes[6]->value->double_value == -2.5);
	assert_string_equal(r->attributes[7]->key, "flag");
	assert_int_equal(r->attributes[7]->value->value_case, BOOL_CASE);
	assert_false(r->attributes[7]->value->bool_value);
	assert_kv_string(r->attributes[8], "text", "a \"b\"\\c\n\xc3\xa9\xef\xbf\xbd");
	assert_kv_string(r->attributes[9], "always", "");

	r = record_at(req, 1);
	assert_record_head(r, 0, 5, "DEBUG", "kinds", 0,
			   "small=7 big=123 real=1e+300 flag=true always=\"\"");
	assert_int_equal(r->n_attributes, 2 + 5);
	assert_kv_int(r->attributes[2], "small", 7);
	assert_kv_int(r->attributes[3], "big", 123);
	assert_true(r->attributes[4]->value->double_value == 1e300);
	assert_true(r->attributes[5]->value->bool_value);
	assert_kv_string(r->attributes[6], "always", "");
	request_free(req);
}

/* A COL_BLOB column (a packet capture) stays home unless the destination
 * asks (EXPORT_F_BLOBS): then a bytes attribute with every byte as it is,
 * and never in the text body; no bytes is NULL, no attribute. */
static void test_blobs_only_when_asked(void **state)
{
	struct export_identity id = test_identity();
	struct kinds_row packet = {.neg = 1,
				   .bytes = {.len = 5, .data = {0, 0xff, '"', '\\', 0x80}}};
	struct kinds_row none = {.neg = 2};
	struct export_row rows[2] = {{&kinds_table, 1, 1, &packet}, {&kinds_table, 2, 2, &none}};
	otlp_request *req;
	const otlp_kv *kv;
	otlp_record *r;

	(void)state;
	req = encode_and_decode(rows, 2, &id);
	assert_null(attr(record_at(req, 0), "bytes"));
	request_free(req);
	req = encode_flags(rows, 2, &id, EXPORT_F_BLOBS);
	r = record_at(req, 0);
	kv = attr(r, "bytes");
	assert_non_null(kv);
	assert_int_equal(kv->value->value_case, BYTES_CASE);
	assert_int_equal(kv->value->bytes_value.len, 5);
	assert_memory_equal(kv->value->bytes_value.data, "\0\xff\"\\\x80", 5);
	assert_null(strstr(r->body->string_value, "bytes"));
	assert_null(attr(record_at(req, 1), "bytes"));
	request_free(req);
}

/* A drop of a named pod: its Kubernetes columns under OpenTelemetry's
 * semantic-convention names; the node from NODE_NAME on the resource. */
static const otlp_kv *attr(const otlp_record *r, const char *key)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, key))
			return r->attributes[i];
	return NULL;
}

static void test_kubernetes_semantic_conventions(void **state)
{
	struct export_identity id = test_identity();
	struct drops_row d = {
	    .reason = "NO_SOCKET",
	    .ifindex = -1,
	    .sport = -1,
	    .dport = -1,
	    .icmp_type = -1,
	    .icmp_code = -1,
	    .tcp_flags = -1,
	    .container = "d21a21475ff295d3f8fcc2b5956cdbaf79d66eb37f6e335a3247bb7aa6c7f0e7",
	    .pod = "web-7d9f",
	    .pod_namespace = "shop",
	    .pod_uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
	    .container_name = "app",
	};
	struct export_row row = {&drops_samples_table, 7, 1000, &d};
	const Opentelemetry__Proto__Resource__V1__Resource *res;
	otlp_request *req;
	otlp_record *r;

	(void)state;
	setenv("NODE_NAME", "node-17", 1);
	req = encode_and_decode(&row, 1, &id);
	unsetenv("NODE_NAME");
	r = record_at(req, 0);
	assert_kv_string(attr(r, "k8s.pod.name"), "k8s.pod.name", "web-7d9f");
	assert_kv_string(attr(r, "k8s.namespace.name"), "k8s.namespace.name", "shop");
	assert_kv_string(attr(r, "k8s.pod.uid"), "k8s.pod.uid", d.pod_uid);
	assert_kv_string(attr(r, "k8s.container.name"), "k8s.container.name", "app");
	assert_kv_string(attr(r, "container.id"), "container.id", d.container);
	assert_null(attr(r, "pod"));
	assert_null(attr(r, "container"));
	assert_non_null(strstr(r->body->string_value, "pod=web-7d9f"));
	res = req->resource_logs[0]->resource;
	assert_kv_string(res->attributes[res->n_attributes - 3], "k8s.node.name", "node-17");
	request_free(req);
}

static void test_job_maps_to_service_name_and_namespace(void **state)
{
	struct export_identity id = test_identity();
	struct kinds_row row = {.small = 1};
	struct export_row one = {&kinds_table, 1, 1, &row};
	otlp_request *req;
	Opentelemetry__Proto__Resource__V1__Resource *res;

	(void)state;
	/* No job: OpenTelemetry requires a service.name; the program's. No
	 * version, no db id, no labels: those attributes are left out. */
	id.job = "";
	id.version = NULL;
	id.db_id = "";
	id.n_labels = 0;
	req = encode_and_decode(&one, 1, &id);
	res = req->resource_logs[0]->resource;
	assert_int_equal(res->n_attributes, 3);
	assert_kv_string(res->attributes[0], "service.name", "sysobsd");
	assert_kv_string(res->attributes[1], "service.instance.id", "host-a");
	assert_kv_string(res->attributes[2], "host.name", "host-a");
	assert_string_equal(req->resource_logs[0]->scope_logs[0]->scope->version, "");
	request_free(req);

	/* namespace/name, as job = "<service.namespace>/<service.name>". */
	id.job = "infra/sysobs";
	req = encode_and_decode(&one, 1, &id);
	res = req->resource_logs[0]->resource;
	assert_int_equal(res->n_attributes, 4);
	assert_kv_string(res->attributes[0], "service.namespace", "infra");
	assert_kv_string(res->attributes[1], "service.name", "sysobs");
	request_free(req);

	/* A job that does not split into two non-empty parts is the name. */
	id.job = "/sysobs";
	req = encode_and_decode(&one, 1, &id);
	assert_kv_string(req->resource_logs[0]->resource->attributes[0], "service.name", "/sysobs");
	request_free(req);
}

static void test_bad_rows_leave_the_output_alone(void **state)
{
	struct export_identity id = test_identity();
	struct kinds_row ok = {.small = 1}, bad_sev = {.small = -1};
	struct export_row rows[2] = {{&kinds_table, 1, 1, &ok}, {&kinds_table, 2, 2, &bad_sev}};
	struct export_row neg_ts = {&kinds_table, 1, -1, &ok};
	struct export_row no_table = {NULL, 1, 1, &ok};
	struct export_row no_row = {&kinds_table, 1, 1, NULL};
	struct buf b = {0};
	otlp_request *req;
	size_t prefix;

	(void)state;
	buf_puts(&b, "prefix");
	prefix = b.len;
	assert_int_equal(otlp_logs_encode(rows, 2, &id, 0, &b), -EINVAL);
	assert_int_equal(otlp_logs_encode(&neg_ts, 1, &id, 0, &b), -EINVAL);
	assert_int_equal(otlp_logs_encode(&no_table, 1, &id, 0, &b), -EINVAL);
	assert_int_equal(otlp_logs_encode(&no_row, 1, &id, 0, &b), -EINVAL);
	id.labels[1].name = "cluster";
	assert_int_equal(otlp_logs_encode(rows, 1, &id, 0, &b), -EINVAL);
	assert_int_equal(b.len, prefix);
	assert_string_equal(b.p, "prefix");

	/* A good one appends after what out held. */
	id = test_identity();
	assert_int_equal(otlp_logs_encode(rows, 1, &id, 0, &b), 0);
	assert_true(b.len > prefix);
	assert_memory_equal(b.p, "prefix", prefix);
	assert_int_equal(b.p[b.len], '\0');
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
	    NULL, b.len - prefix, (const uint8_t *)b.p + prefix);
	assert_non_null(req);
	request_free(req);
	buf_free(&b);

	/* No rows: a request with the resource and no records. */
	req = encode_and_decode(NULL, 0, &id);
	assert_int_equal(req->resource_logs[0]->scope_logs[0]->n_log_records, 0);
	request_free(req);
}

static void test_severity_names(void **state)
{
	(void)state;
	assert_null(otlp_severity_text(0));
	assert_string_equal(otlp_severity_text(1), "TRACE");
	assert_string_equal(otlp_severity_text(EVENT_SEVERITY_DEBUG), "DEBUG");
	assert_string_equal(otlp_severity_text(EVENT_SEVERITY_INFO), "INFO");
	assert_string_equal(otlp_severity_text(12), "INFO");
	assert_string_equal(otlp_severity_text(EVENT_SEVERITY_WARN), "WARN");
	assert_string_equal(otlp_severity_text(EVENT_SEVERITY_ERROR), "ERROR");
	assert_string_equal(otlp_severity_text(24), "FATAL");
	assert_null(otlp_severity_text(25));
}

static void test_response_empty_partial_and_garbage(void **state)
{
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse resp =
	    OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsPartialSuccess ps =
	    OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_PARTIAL_SUCCESS__INIT;
	uint8_t body[128];
	static const uint8_t garbage[] = {0x0a, 0x7f, 0x01};
	char msg[64], small[6];
	int64_t rejected = -1;
	size_t len;

	(void)state;
	/* Empty: full success. */
	strcpy(msg, "stale");
	assert_int_equal(otlp_logs_response("", 0, 10, &rejected, msg, sizeof(msg)), 0);
	assert_int_equal(rejected, 0);
	assert_string_equal(msg, "");
	/* A response without partial_success (0 bytes of fields too). */
	len = opentelemetry__proto__collector__logs__v1__export_logs_service_response__pack(&resp,
											    body);
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, msg, sizeof(msg)), 0);
	assert_int_equal(rejected, 0);
	/* Partial success. */
	ps.rejected_log_records = 3;
	ps.error_message = "3 records too old";
	resp.partial_success = &ps;
	len = opentelemetry__proto__collector__logs__v1__export_logs_service_response__pack(&resp,
											    body);
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, msg, sizeof(msg)), 0);
	assert_int_equal(rejected, 3);
	assert_string_equal(msg, "3 records too old");
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, small, sizeof(small)), 0);
	assert_string_equal(small, "3 rec");
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, NULL, 0), 0);
	assert_int_equal(rejected, 3);
	/* A count past the request or negative (the receiver's error: an int64
	 * on the wire) stays within [0, sent]; the message is printable. */
	ps.rejected_log_records = 1000;
	ps.error_message = "bad\nline\x1b[31m";
	len = opentelemetry__proto__collector__logs__v1__export_logs_service_response__pack(&resp,
											    body);
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, msg, sizeof(msg)), 0);
	assert_int_equal(rejected, 10);
	assert_string_equal(msg, "bad?line?[31m");
	ps.rejected_log_records = -5;
	len = opentelemetry__proto__collector__logs__v1__export_logs_service_response__pack(&resp,
											    body);
	assert_int_equal(otlp_logs_response(body, len, 10, &rejected, msg, sizeof(msg)), 0);
	assert_int_equal(rejected, 0);
	/* Garbage: a length past the end. */
	assert_int_equal(
	    otlp_logs_response(garbage, sizeof(garbage), 10, &rejected, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(otlp_logs_response("<html>", 6, 10, &rejected, msg, sizeof(msg)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resource_scope_and_ifs_rows_decode_back),
	    cmocka_unit_test(test_mptcp_rows_and_their_severity),
	    cmocka_unit_test(test_every_column_type),
	    cmocka_unit_test(test_blobs_only_when_asked),
	    cmocka_unit_test(test_job_maps_to_service_name_and_namespace),
	    cmocka_unit_test(test_kubernetes_semantic_conventions),
	    cmocka_unit_test(test_bad_rows_leave_the_output_alone),
	    cmocka_unit_test(test_severity_names),
	    cmocka_unit_test(test_response_empty_partial_and_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
