// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the export encoders fed what the database may hold: rows
 * of every event table with arbitrary bytes in every column (text without
 * NUL or not UTF-8, NaN and infinite reals, any integer; bools and blob
 * lengths as the store reads them back, storage/store_schema.c) through
 * ClickHouse's JSONEachRow (clickhouse_rows) and OTLP logs
 * (otlp_logs_encode), and an arbitrary series name, label set and value
 * through remote_write (rw_batch_add, rw_batch_encode). Input: byte 0 the
 * table, byte 1 the row count (1 to 4), 8 bytes of timestamp, the rows'
 * bytes, then "NAME\nLABELS\n" and 8 bytes of value for remote_write.
 * Each output must decode: one JSON object a row (bytes past ASCII, which
 * ClickHouse's String takes as they are, masked for the JSON parser); a
 * protobuf request of exactly the rows, every string valid UTF-8 (Go
 * receivers refuse others); a snappy-compressed WriteRequest.
 */
#include <errno.h>
#include <jansson.h>
#include <snappy-c.h>

#include "base/utf8.h"
#include "collectors/cachefiles/cachefiles_priv.h"
#include "collectors/drops/drops.h"
#include "collectors/ifs/ifs_table.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_subflow_info.h"
#include "exporters/clickhouse.h"
#include "exporters/otlp_logs.h"
#include "exporters/proto/opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "exporters/remote_write.h"
#include "tests/fuzz/fuzz_common.h"

#define MAX_ROWS 4

static const struct event_table *const tables[] = {
    &drops_samples_table, &mptcp_events_table,	  &mptcp_subflow_samples_table,
    &ifs_scans_table,	  &cachefiles_slow_table, &cachefiles_daemon_table,
};

static const struct export_identity ident = {
    .job = "sysobs",
    .instance = "node-\"1\"\\\x7f",
    .labels = {{"dc", "par\n1"}, {"env", "prod\xc3\xa9"}},
    .n_labels = 2,
    .version = "0.0.0",
    .db_id = "5f0c",
};

/* One row as the store reads it back from the input's bytes. */
static void fill_row(const struct event_table *t, const uint8_t *d, size_t n, uint8_t *row)
{
	memset(row, 0, t->row_size);
	memcpy(row, d, n < t->row_size ? n : t->row_size);
	for (const struct event_column *c = t->cols; c->name; c++) {
		uint16_t len;

		if (c->type == COL_BOOL)
			row[c->offset] &= 1;
		if (c->type == COL_BLOB) {
			memcpy(&len, row + c->offset, sizeof(len));
			len %= (uint16_t)(c->size - 2 + 1);
			memcpy(row + c->offset, &len, sizeof(len));
		}
	}
}

static void check_clickhouse(const struct export_row *rows, size_t n, unsigned flags)
{
	struct buf out = {0};
	size_t lines = 0;
	char *p, *nl;

	FUZZ_CHECK(!clickhouse_rows(rows, n, &ident, flags, &out), "clickhouse_rows failed");
	FUZZ_CHECK(out.len && out.p[out.len - 1] == '\n', "rows not ending a line");
	for (size_t i = 0; i < out.len; i++)
		if ((unsigned char)out.p[i] >= 0x80)
			out.p[i] = 'x';
	for (p = out.p; p < out.p + out.len; p = nl + 1, lines++) {
		json_error_t e;
		json_t *j;

		nl = memchr(p, '\n', (size_t)(out.p + out.len - p));
		FUZZ_CHECK(nl, "a row without its line end");
		j = json_loadb(p, (size_t)(nl - p), JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &e);
		FUZZ_CHECK(json_is_object(j), "row %zu not a JSON object: %s", lines, e.text);
		FUZZ_CHECK(lines < n && json_number_value(json_object_get(j, "id")) ==
					    (double)rows[lines].id,
			   "row %zu id", lines);
		json_decref(j);
	}
	FUZZ_CHECK(lines == n, "%zu lines for %zu rows", lines, n);
	buf_free(&out);
}

static void check_any(const Opentelemetry__Proto__Common__V1__AnyValue *v)
{
	if (v && v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		FUZZ_CHECK(utf8_valid(v->string_value), "string not UTF-8");
}

static void check_kvs(Opentelemetry__Proto__Common__V1__KeyValue **kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(utf8_valid(kv[i]->key), "key not UTF-8");
		check_any(kv[i]->value);
	}
}

static void check_otlp(const struct export_row *rows, size_t n, unsigned flags)
{
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	struct buf out = {0};
	size_t records = 0;
	bool negative = false;
	int rc;

	for (size_t i = 0; i < n; i++)
		negative |= rows[i].ts_ns < 0;
	rc = otlp_logs_encode(rows, n, &ident, flags, &out);
	FUZZ_CHECK(rc == 0 || (rc == -EINVAL && negative), "otlp_logs_encode %d", rc);
	if (rc)
		return;
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
	    NULL, out.len, (const uint8_t *)out.p);
	FUZZ_CHECK(req, "the request does not decode");
	for (size_t r = 0; r < req->n_resource_logs; r++) {
		const Opentelemetry__Proto__Logs__V1__ResourceLogs *rl = req->resource_logs[r];

		if (rl->resource)
			check_kvs(rl->resource->attributes, rl->resource->n_attributes);
		for (size_t s = 0; s < rl->n_scope_logs; s++) {
			for (size_t l = 0; l < rl->scope_logs[s]->n_log_records; l++) {
				const Opentelemetry__Proto__Logs__V1__LogRecord *lr =
				    rl->scope_logs[s]->log_records[l];

				check_any(lr->body);
				check_kvs(lr->attributes, lr->n_attributes);
				records++;
			}
		}
	}
	FUZZ_CHECK(records == n, "%zu records for %zu rows", records, n);
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
	buf_free(&out);
}

static void check_remote_write(const uint8_t *d, size_t n, int64_t ts)
{
	char *s = fuzz_strndup(d, n), *name, *labels, *nl;
	Prometheus__WriteRequest *wr;
	struct rw_batch b;
	size_t samples, raw_len;
	double v = 1.5;
	char *raw;

	if (!s)
		return;
	name = s;
	nl = strchr(s, '\n');
	labels = nl ? (*nl = '\0', nl + 1) : (char *)"{}";
	nl = strchr(labels, '\n');
	if (nl) {
		*nl = '\0';
		if ((size_t)(nl + 1 - s) + sizeof(v) <= n)
			memcpy(&v, d + (nl + 1 - s), sizeof(v));
	}
	if (rw_batch_init(&b, 4)) {
		free(s);
		return;
	}
	rw_batch_add(&b, 1, name, labels, ts / 1000000, v);
	rw_batch_add(&b, 2, "up", labels, ts / 1000000, v);
	FUZZ_CHECK(!rw_batch_encode(&b, NULL, 0, &samples), "rw_batch_encode failed");
	FUZZ_CHECK(samples == b.n_rows, "%zu samples of %zu rows", samples, b.n_rows);
	if (b.body_len) {
		FUZZ_CHECK(snappy_uncompressed_length((const char *)b.body, b.body_len, &raw_len) ==
			       SNAPPY_OK,
			   "not snappy");
		raw = malloc(raw_len ? raw_len : 1);
		FUZZ_CHECK(raw && snappy_uncompress((const char *)b.body, b.body_len, raw,
						    &raw_len) == SNAPPY_OK,
			   "snappy");
		wr = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *)raw);
		FUZZ_CHECK(wr, "the WriteRequest does not decode");
		prometheus__write_request__free_unpacked(wr, NULL);
		free(raw);
	}
	rw_batch_free(&b);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rowbuf[MAX_ROWS][EVENT_ROW_MAX];
	struct export_row rows[MAX_ROWS];
	const struct event_table *t;
	size_t n, off = 10;
	int64_t ts;

	if (size < 10 || size > 4 * EVENT_ROW_MAX + 4096)
		return 0;
	t = tables[data[0] % (sizeof(tables) / sizeof(tables[0]))];
	n = 1 + data[1] % MAX_ROWS;
	memcpy(&ts, data + 2, sizeof(ts));
	for (size_t i = 0; i < n; i++) {
		size_t take = off < size ? size - off : 0;

		fill_row(t, data + off, take, rowbuf[i]);
		off += take < t->row_size ? take : t->row_size;
		rows[i] = (struct export_row){
		    .table = t, .id = (int64_t)i + 1, .ts_ns = i == 1 ? 0 : ts, .row = rowbuf[i]};
	}
	/* a destination with capture = true: the packet bytes go too */
	check_clickhouse(rows, n, data[1] & 0x80 ? EXPORT_F_BLOBS : 0);
	check_otlp(rows, n, data[1] & 0x80 ? EXPORT_F_BLOBS : 0);
	check_remote_write(data + off, size - off, ts);
	return 0;
}
