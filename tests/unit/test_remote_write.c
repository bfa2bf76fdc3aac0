// SPDX-License-Identifier: MIT
/*
 * remote_write: a WriteRequest built from a batch decodes back with
 * protobuf-c after a snappy round trip (labels sorted with __name__ and the
 * external labels, samples in timestamp order per series); the registry's
 * rendered label sets parse back; Retry-After in seconds and the three
 * HTTP-date forms; the backoff sequence; the metric history read as a log
 * after a durable cursor that survives a reopen; a histogram's bucket blob
 * round trip and its NAME_bucket{le} series on the wire.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "base/arena.h"
#include "metrics/hist_blob.h"
#include "exporters/clickhouse.h"
#include "exporters/remote_write.h"
#include "exporters/sender.h"
#include "exporters/remote_write_meta.h"
#include "metrics/metrics.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store.h"
#include "storage/store_samples.h"

static void test_rendered_label_sets_parse_back(void **state)
{
	struct arena a = {0};
	struct rw_label l[RW_MAX_LABELS];
	size_t n = 99;

	assert_int_equal(rw_labels_parse("", &a, l, RW_MAX_LABELS, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rw_labels_parse("{}", &a, l, RW_MAX_LABELS, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(
	    rw_labels_parse("{reason=\"a\\\"b\\\\c\\nd\",collector=\"\",z_9=\"x,y=}\"}", &a, l,
			    RW_MAX_LABELS, &n),
	    0);
	/* collector="" is the same as no collector label for Prometheus. */
	assert_int_equal(n, 2);
	assert_string_equal(l[0].name, "reason");
	assert_string_equal(l[0].value, "a\"b\\c\nd");
	assert_string_equal(l[1].name, "z_9");
	assert_string_equal(l[1].value, "x,y=}");

	static const char *const bad[] = {
	    "{",	   "a=\"b\"",		"{a=\"b\"",   "{a=\"b\",}",
	    "{a=b}",	   "{9a=\"b\"}",	"{a=\"b\"}x", "{a=\"b\\q\"}",
	    "{a-b=\"c\"}", "{a=\"x\",a=\"y\"}", "{=\"x\"}",   "{a=\"unterminated}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rw_labels_parse(bad[i], &a, l, RW_MAX_LABELS, &n), -EINVAL);
	assert_int_equal(rw_labels_parse("{a=\"1\",b=\"2\",c=\"3\"}", &a, l, 2, &n), -EINVAL);
	arena_free(&a);
}

static void test_external_labels_are_checked(void **state)
{
	struct rw_label l[4];
	const char *why = NULL;
	size_t n;
	char ok[] = " cluster = eu1 ,replica=a, ";
	char bad_name[] = "__tenant=x";
	char no_eq[] = "cluster";
	char empty[] = "cluster=";
	char dup[] = "a=1,a=2";
	char many[] = "a=1,b=2,c=3,d=4,e=5";

	assert_int_equal(rw_external_labels_parse(ok, l, 4, &n, &why), 0);
	assert_int_equal(n, 2);
	assert_string_equal(l[0].name, "cluster");
	assert_string_equal(l[0].value, "eu1");
	assert_string_equal(l[1].name, "replica");
	assert_string_equal(l[1].value, "a");
	assert_int_equal(rw_external_labels_parse(bad_name, l, 4, &n, &why), -EINVAL);
	assert_int_equal(rw_external_labels_parse(no_eq, l, 4, &n, &why), -EINVAL);
	assert_int_equal(rw_external_labels_parse(empty, l, 4, &n, &why), -EINVAL);
	assert_int_equal(rw_external_labels_parse(dup, l, 4, &n, &why), -EINVAL);
	assert_int_equal(rw_external_labels_parse(many, l, 4, &n, &why), -EINVAL);
	assert_non_null(why);
}

static void test_labels_sort_bytewise(void **state)
{
	struct rw_label l[] = {
	    {"reason", ""}, {"__name__", ""}, {"Zone", ""}, {"_x", ""}, {"a", ""}};

	rw_labels_sort(l, 5);
	/* 'Z' (0x5a) < '_' (0x5f) < 'a': what Go's sort.Strings gives. */
	assert_string_equal(l[0].name, "Zone");
	assert_string_equal(l[1].name, "__name__");
	assert_string_equal(l[2].name, "_x");
	assert_string_equal(l[3].name, "a");
	assert_string_equal(l[4].name, "reason");
}

/* The verdict matrix (docs/remote_write.md, docs/fleet.md): only a verdict
 * on the data refuses a batch; the receiver's state keeps it. */
static void test_verdict_refuses_only_data(void **state)
{
	static const long kept[] = {0,	 401, 403, 404, 405, 407, 408, 409, 410, 413, 415, 421,
				    425, 429, 431, 451, 500, 502, 503, 504, 301, 302, 100};

	assert_int_equal(sender_verdict_of(200), SENDER_SENT);
	assert_int_equal(sender_verdict_of(204), SENDER_SENT);
	assert_int_equal(sender_verdict_of(400), SENDER_REFUSED);
	assert_int_equal(sender_verdict_of(422), SENDER_REFUSED);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_int_equal(sender_verdict_of(kept[i]), SENDER_RETRY);
	/* ClickHouse: its code decides, whatever the status. */
	assert_int_equal(clickhouse_verdict(500, "Code: 27, e.displayText() = DB::Exception: "
						 "Cannot parse input"),
			 SENDER_REFUSED);
	assert_int_equal(clickhouse_verdict(400, "Code: 53. DB::Exception: Type mismatch"),
			 SENDER_REFUSED);
	assert_int_equal(clickhouse_verdict(404, "Code: 81, e.displayText() = DB::Exception: "
						 "Database nosuchdb doesn't exist"),
			 SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(404, "Code: 60. DB::Exception: Table x doesn't exist"),
			 SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(500, "Code: 16, no such column"), SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(403, "Code: 516. Authentication failed"), SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(500, "Code: 241, memory limit exceeded"), SENDER_RETRY);
	/* a proxy's answer, no ClickHouse code: the general rule */
	assert_int_equal(clickhouse_verdict(403, "<html>Forbidden</html>"), SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(400, "<html>Bad Request</html>"), SENDER_REFUSED);
	assert_int_equal(clickhouse_verdict(0, ""), SENDER_RETRY);
	/* The code only where ClickHouse puts it, first (fuzz.clickhouse_verdict:
	 * a proxy's page quoting one went by that code, not its status). */
	assert_int_equal(clickhouse_verdict(400, "CCode: 3, e.displayText() = DB::Exception"),
			 SENDER_REFUSED);
	assert_int_equal(clickhouse_verdict(502, "<html>upstream said Code: 27</html>"),
			 SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(500, "\nCode: 27, e.displayText() = x"),
			 SENDER_REFUSED);
	assert_int_equal(clickhouse_verdict(500, "Code: 99999999999999999999"), SENDER_RETRY);
	/* 2^32 + 27: sscanf("%d") wrapped it to 27 and refused the rows */
	assert_int_equal(clickhouse_verdict(500, "Code: 4294967323"), SENDER_RETRY);
	assert_int_equal(clickhouse_verdict(200, "Code: 27"), SENDER_SENT);
}

static void test_retry_after_reads_seconds_and_dates(void **state)
{
	/* Wed, 21 Oct 2015 07:28:00 GMT */
	const time_t t = 1445412480;
	uint64_t ms = 1;

	assert_int_equal(sender_retry_after_parse("120", t, &ms), 0);
	assert_int_equal(ms, 120000);
	assert_int_equal(sender_retry_after_parse(" 3\r\n", t, &ms), 0);
	assert_int_equal(ms, 3000);
	assert_int_equal(sender_retry_after_parse("0", t, &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(sender_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT", t - 10, &ms), 0);
	assert_int_equal(ms, 10000);
	assert_int_equal(sender_retry_after_parse("Wednesday, 21-Oct-15 07:28:00 GMT", t - 7, &ms),
			 0);
	assert_int_equal(ms, 7000);
	assert_int_equal(sender_retry_after_parse("Wed Oct 21 07:28:00 2015", t - 2, &ms), 0);
	assert_int_equal(ms, 2000);
	/* A date in the past: retry now. */
	assert_int_equal(sender_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT", t + 60, &ms), 0);
	assert_int_equal(ms, 0);
	/* Huge numbers saturate instead of wrapping. */
	assert_int_equal(sender_retry_after_parse("99999999999999999999999", t, &ms), 0);
	assert_true(ms >= 1000);
	assert_int_equal(sender_retry_after_parse("12s", t, &ms), -EINVAL);
	assert_int_equal(sender_retry_after_parse("-5", t, &ms), -EINVAL);
	assert_int_equal(sender_retry_after_parse("soon", t, &ms), -EINVAL);
	assert_int_equal(sender_retry_after_parse("", t, &ms), -EINVAL);
}

static void test_public_url_has_no_credentials(void **state)
{
	char *u;

	(void)state;
	u = sender_url_public("http://user:secret@127.0.0.1:4318/v1/logs?x=1");
	assert_non_null(u);
	assert_string_equal(u, "http://127.0.0.1:4318/v1/logs?x=1");
	free(u);
	u = sender_url_public("https://ch.example:8443/");
	assert_non_null(u);
	assert_string_equal(u, "https://ch.example:8443/");
	free(u);
	assert_null(sender_url_public("http://[::1"));
	assert_int_equal(errno, EINVAL);
}

static void test_backoff_doubles_up_to_its_cap(void **state)
{
	uint64_t b = 0;
	const uint64_t want[] = {30, 60, 120, 240, 480, 960, 1920, 3840, 5000, 5000};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		b = sender_backoff_next(b, 30, 5000);
		assert_int_equal(b, want[i]);
	}
	assert_int_equal(sender_backoff_next(0, 100, 50), 50);
	assert_int_equal(sender_backoff_next(UINT64_MAX / 2 + 7, 1, UINT64_MAX), UINT64_MAX);
}

/* The labels of one decoded series as "a=b,c=d". */
static void labels_text(const Prometheus__TimeSeries *ts, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < ts->n_labels; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s=%s", i ? "," : "",
					ts->labels[i]->name, ts->labels[i]->value);
}

static Prometheus__WriteRequest *decode(const struct rw_batch *b)
{
	size_t n = 0;
	char *raw;
	Prometheus__WriteRequest *wr;

	assert_int_equal(snappy_validate_compressed_buffer((const char *)b->body, b->body_len),
			 SNAPPY_OK);
	assert_int_equal(snappy_uncompressed_length((const char *)b->body, b->body_len, &n),
			 SNAPPY_OK);
	raw = malloc(n ? n : 1);
	assert_non_null(raw);
	assert_int_equal(snappy_uncompress((const char *)b->body, b->body_len, raw, &n), SNAPPY_OK);
	wr = prometheus__write_request__unpack(NULL, n, (const uint8_t *)raw);
	free(raw);
	assert_non_null(wr);
	return wr;
}

static void test_write_request_decodes_back_after_snappy(void **state)
{
	struct rw_batch b;
	char ext_text[] = "cluster=eu1,reason=from_ext";
	struct rw_label ext[4];
	const char *why;
	size_t n_ext, n = 0;
	char text[512];
	Prometheus__WriteRequest *wr;

	assert_int_equal(rw_external_labels_parse(ext_text, ext, 4, &n_ext, &why), 0);
	assert_int_equal(rw_batch_init(&b, 8), 0);
	/* Commit order interleaves two series; series 7 has a clock step back
	 * (t=3000 after t=4000) and a repeated timestamp. */
	assert_int_equal(rw_batch_add(&b, 7, "sysobs_packet_drops_total",
				      "{reason=\"NO_SOCKET\",proto=\"udp\"}", 4000, 1),
			 0);
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 4000, 1), 0);
	assert_int_equal(rw_batch_add(&b, 7, "sysobs_packet_drops_total",
				      "{reason=\"NO_SOCKET\",proto=\"udp\"}", 3000, 0.5),
			 0);
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 5000, NAN), 0);
	assert_int_equal(rw_batch_add(&b, 7, "sysobs_packet_drops_total",
				      "{reason=\"NO_SOCKET\",proto=\"udp\"}", 5000, 2),
			 0);
	assert_int_equal(rw_batch_add(&b, 7, "sysobs_packet_drops_total",
				      "{reason=\"NO_SOCKET\",proto=\"udp\"}", 5000, 3),
			 0);
	/* A label set that does not parse is left out and counted. */
	assert_int_equal(rw_batch_add(&b, 11, "sysobs_bad", "{x=1}", 5000, 1), -EINVAL);
	assert_int_equal(b.invalid, 1);
	assert_int_equal(b.n_rows, 6);
	assert_int_equal(rw_batch_encode(&b, ext, n_ext, &n), 0);
	assert_int_equal(n, 5); /* the repeated timestamp counted once */
	assert_true(b.body_len > 0);

	wr = decode(&b);
	assert_int_equal(wr->n_timeseries, 2);
	assert_int_equal(wr->n_metadata, 0);
	/* Sorted by name, __name__ included, the series' own reason kept over
	 * the external one. */
	labels_text(wr->timeseries[0], text, sizeof(text));
	assert_string_equal(text, "__name__=sysobs_packet_drops_total,cluster=eu1,proto=udp,"
				  "reason=NO_SOCKET");
	assert_int_equal(wr->timeseries[0]->n_samples, 3);
	assert_int_equal(wr->timeseries[0]->samples[0]->timestamp, 3000);
	assert_true(wr->timeseries[0]->samples[0]->value == 0.5);
	assert_int_equal(wr->timeseries[0]->samples[1]->timestamp, 4000);
	assert_int_equal(wr->timeseries[0]->samples[2]->timestamp, 5000);
	assert_true(wr->timeseries[0]->samples[2]->value == 3);
	labels_text(wr->timeseries[1], text, sizeof(text));
	assert_string_equal(text, "__name__=sysobs_up,cluster=eu1,reason=from_ext");
	assert_int_equal(wr->timeseries[1]->n_samples, 2);
	assert_int_equal(wr->timeseries[1]->samples[0]->timestamp, 4000);
	assert_true(isnan(wr->timeseries[1]->samples[1]->value));
	prometheus__write_request__free_unpacked(wr, NULL);

	/* Full: the batch holds cap rows. */
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 6000, 1), 0);
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 7000, 1), 0);
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 8000, 1), -ENOSPC);

	/* Reset: the next batch starts empty and reuses the buffers. */
	rw_batch_reset(&b);
	assert_int_equal(b.n_rows, 0);
	assert_int_equal(rw_batch_add(&b, 9, "sysobs_up", "", 9000, 1), 0);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 1);
	wr = decode(&b);
	assert_int_equal(wr->n_timeseries, 1);
	labels_text(wr->timeseries[0], text, sizeof(text));
	assert_string_equal(text, "__name__=sysobs_up");
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_batch_free(&b);
}

/* ---- identity ---- */

static void test_identity_job_and_instance(void **state)
{
	char ext_text[] = "cluster=eu1", bad_text[] = "instance=x", host[256];
	struct rw_label ext[RW_MAX_LABELS];
	const char *why, *key;
	size_t n, n_out;
	char text[256], want[300];
	struct rw_batch b;
	Prometheus__WriteRequest *wr;

	assert_int_equal(rw_external_labels_parse(ext_text, ext, RW_MAX_LABELS, &n, &why), 0);
	/* Default instance: the host name. */
	assert_int_equal(
	    rw_identity_add("sysobs", "", host, sizeof(host), ext, RW_MAX_LABELS, &n, &key, &why),
	    0);
	assert_int_equal(n, 3);
	assert_string_equal(ext[1].name, "job");
	assert_string_equal(ext[2].name, "instance");
	assert_ptr_equal(ext[2].value, host);
	{
		char h[256] = "";

		gethostname(h, sizeof(h) - 1);
		assert_string_equal(host, h);
	}
	/* A series with its own instance keeps it; the others get the host's. */
	assert_int_equal(rw_batch_init(&b, 4), 0);
	assert_int_equal(rw_batch_add(&b, 1, "m", "{instance=\"own\"}", 1000, 1), 0);
	assert_int_equal(rw_batch_add(&b, 2, "m", "", 1000, 1), 0);
	assert_int_equal(rw_batch_encode(&b, ext, n, &n_out), 0);
	wr = decode(&b);
	labels_text(wr->timeseries[0], text, sizeof(text));
	assert_string_equal(text, "__name__=m,cluster=eu1,instance=own,job=sysobs");
	labels_text(wr->timeseries[1], text, sizeof(text));
	snprintf(want, sizeof(want), "__name__=m,cluster=eu1,instance=%s,job=sysobs", host);
	assert_string_equal(text, want);
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_batch_free(&b);
	/* Configured instance; empty job: none. */
	n = 0;
	assert_int_equal(
	    rw_identity_add("", "db7", host, sizeof(host), ext, RW_MAX_LABELS, &n, &key, &why), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ext[0].value, "db7");
	/* external_labels naming instance: refused, naming that key. */
	assert_int_equal(rw_external_labels_parse(bad_text, ext, RW_MAX_LABELS, &n, &why), 0);
	assert_int_equal(
	    rw_identity_add("sysobs", "", host, sizeof(host), ext, RW_MAX_LABELS, &n, &key, &why),
	    -EINVAL);
	assert_string_equal(key, "external_labels");
}

/* ---- destinations: [remote_write] and [remote_write.NAME] ---- */

/* text checked as a config (no file read): the return of
 * remote_write_check(), *errors its errors joined by '|'. */
static int rw_config_check(const char *text, char *errors, size_t len)
{
	struct config cfg = {0};
	struct remote_write *rw = NULL;
	size_t off = 0;
	int rc;

	assert_int_equal(remote_write_declare(&cfg), 0);
	assert_int_equal(cfg_load_buffer(&cfg, "t.ini", text, strlen(text)), 0);
	rc = remote_write_check(&cfg, "h1", false, &rw);
	errors[0] = '\0';
	for (size_t i = 0; i < cfg.n_errors && off < len; i++)
		off += (size_t)snprintf(errors + off, len - off, "%s|", cfg.errors[i]);
	assert_true(rc ? rw == NULL : 1);
	remote_write_free(rw);
	cfg_free(&cfg);
	return rc;
}

static void test_destinations_checked_each(void **state)
{
	char err[2048], text[2048];
	size_t off = 0;

	(void)state;
	/* the plain section and two named ones, each with its own cursor */
	assert_int_equal(rw_config_check("[remote_write]\nurl = http://a:9090/api/v1/write\n"
					 "[remote_write.vm]\nurl = http://b:8428/api/v1/write\n"
					 "external_labels = via=vm\n"
					 "[remote_write.off]\nurl =\n",
					 err, sizeof(err)),
			 0);
	assert_string_equal(err, "");
	/* a cursor another destination has (the default one of [remote_write.a]) */
	assert_int_equal(
	    rw_config_check("[remote_write.a]\nurl = http://a/w\n"
			    "[remote_write.b]\nurl = http://b/w\ncursor = remote_write.a\n",
			    err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "[remote_write.b] cursor"));
	assert_non_null(strstr(err, "[remote_write.a]'s cursor too"));
	/* the plain section's name taken by a named one */
	assert_int_equal(rw_config_check("[remote_write]\nurl = http://a/w\n"
					 "[remote_write.remote_write]\nurl = http://b/w\n",
					 err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "[remote_write.remote_write] url"));
	/* each section's identity is its own: the error names that section only */
	assert_int_equal(rw_config_check("[remote_write]\nurl = http://a/w\n"
					 "[remote_write.vm]\nurl = http://b/w\n"
					 "external_labels = job=x\n",
					 err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "[remote_write.vm] external_labels"));
	assert_null(strstr(err, "[remote_write] "));
	/* every error of every section, not the first only */
	assert_int_equal(rw_config_check("[remote_write.a]\nurl = ftp://a/w\n"
					 "[remote_write.b]\nurl = http://b/w\nbatch_samples = 0\n",
					 err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "[remote_write.a] url"));
	assert_non_null(strstr(err, "[remote_write.b] batch_samples"));
	/* at most 8 destinations */
	for (int i = 0; i < 9; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"[remote_write.d%d]\nurl = http://h/w\n", i);
	assert_int_equal(rw_config_check(text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "[remote_write.d8] url"));
	assert_non_null(strstr(err, "at most 8"));
	/* nothing configured: off, no error */
	assert_int_equal(rw_config_check("[remote_write.a]\nurl =\n", err, sizeof(err)), 0);
}

/* ---- histogram buckets ---- */

static void test_bucket_blob_round_trip(void **state)
{
	static const char *const le[] = {"0.1", "1", "+Inf"};
	static const uint64_t counts[] = {2, 300, 5};
	struct hist_blob_bucket bk[8];
	uint8_t blob[64];
	size_t len, n;

	len = hist_blob_encode(le, counts, 3, blob, sizeof(blob));
	/* "0.1,1\0", then 2, 300 (two bytes), 5 */
	assert_int_equal(len, 6 + 4);
	assert_int_equal(hist_blob_decode(blob, len, bk, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(bk[0].le, "0.1");
	assert_string_equal(bk[1].le, "1");
	assert_string_equal(bk[2].le, "+Inf");
	assert_int_equal(bk[0].cumulative, 2);
	assert_int_equal(bk[1].cumulative, 302);
	assert_int_equal(bk[2].cumulative, 307);
	/* Too small a buffer, no bucket: nothing encoded. */
	assert_int_equal(hist_blob_encode(le, counts, 3, blob, 8), 0);
	assert_int_equal(hist_blob_encode(le, counts, 0, blob, sizeof(blob)), 0);
	/* Malformed: truncated, a byte too many, no NUL, a trailing comma, a
	 * bound that is no number, more buckets than room. */
	assert_int_equal(hist_blob_decode(blob, len - 1, bk, 8, &n), -EINVAL);
	blob[len] = 0;
	assert_int_equal(hist_blob_decode(blob, len + 1, bk, 8, &n), -EINVAL);
	assert_int_equal(hist_blob_decode("0.1,1", 5, bk, 8, &n), -EINVAL);
	assert_int_equal(hist_blob_decode("0.1,\0\1\1", 7, bk, 8, &n), -EINVAL);
	assert_int_equal(hist_blob_decode("x\0\1\1", 5, bk, 8, &n), -EINVAL);
	assert_int_equal(hist_blob_decode(blob, len, bk, 2, &n), -EINVAL);
	/* +Inf alone. */
	assert_int_equal(hist_blob_decode("\0\7", 2, bk, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bk[0].cumulative, 7);
}

static void test_buckets_go_out_as_bucket_series(void **state)
{
	static const char *const le[] = {"0.5", "+Inf"};
	static const uint64_t counts[] = {4, 1};
	struct rw_batch b;
	uint8_t blob[32];
	size_t len = hist_blob_encode(le, counts, 2, blob, sizeof(blob)), n;
	char text[256];
	Prometheus__WriteRequest *wr;

	assert_int_equal(rw_batch_init(&b, 8), 0);
	assert_int_equal(rw_batch_add(&b, 3, "x_seconds_count", "{route=\"/a\"}", 1000, 5), 0);
	assert_int_equal(
	    rw_batch_add_buckets(&b, 3, "x_seconds_count", "{route=\"/a\"}", 1000, blob, len), 0);
	assert_int_equal(rw_batch_add_buckets(&b, 4, "y_count", "", 1000, blob, len), 0);
	/* Not a _count, or a blob that does not decode: invalid. */
	assert_int_equal(rw_batch_add_buckets(&b, 5, "y_sum", "", 1000, blob, len), -EINVAL);
	assert_int_equal(rw_batch_add_buckets(&b, 6, "z_count", "", 1000, blob, len - 1), -EINVAL);
	assert_int_equal(b.invalid, 2);
	assert_int_equal(rw_batch_encode(&b, NULL, 0, &n), 0);
	assert_int_equal(n, 5);
	wr = decode(&b);
	assert_int_equal(wr->n_timeseries, 5);
	labels_text(wr->timeseries[1], text, sizeof(text));
	assert_string_equal(text, "__name__=x_seconds_bucket,le=0.5,route=/a");
	assert_true(wr->timeseries[1]->samples[0]->value == 4);
	labels_text(wr->timeseries[2], text, sizeof(text));
	assert_string_equal(text, "__name__=x_seconds_bucket,le=+Inf,route=/a");
	assert_true(wr->timeseries[2]->samples[0]->value == 5); /* cumulative */
	labels_text(wr->timeseries[4], text, sizeof(text));
	assert_string_equal(text, "__name__=y_bucket,le=+Inf");
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_batch_free(&b);
}

/* ---- metadata ---- */

static void test_metadata_at_start_on_change_and_periodically(void **state)
{
	struct metrics *m = metrics_new();
	struct rw_meta mm = {0};
	int64_t s = 1000000000;
	Prometheus__WriteRequest *wr;
	struct rw_batch fake = {0};

	assert_non_null(metrics_counter1(m, "a_seconds_total", "A's help."));
	assert_non_null(metrics_gauge1(m, "b", "B."));
	/* At start. */
	assert_true(rw_meta_due(&mm, m, 10 * s));
	assert_int_equal(mm.n, 2);
	fake.body = mm.body;
	fake.body_len = mm.body_len;
	wr = decode(&fake);
	assert_int_equal(wr->n_timeseries, 0);
	assert_int_equal(wr->n_metadata, 2);
	assert_string_equal(wr->metadata[0]->metric_family_name, "a_seconds_total");
	assert_int_equal(wr->metadata[0]->type, PROMETHEUS__METRIC_METADATA__METRIC_TYPE__COUNTER);
	assert_string_equal(wr->metadata[0]->help, "A's help.");
	assert_string_equal(wr->metadata[0]->unit, "seconds");
	assert_int_equal(wr->metadata[1]->type, PROMETHEUS__METRIC_METADATA__METRIC_TYPE__GAUGE);
	prometheus__write_request__free_unpacked(wr, NULL);
	rw_meta_sent(&mm, 10 * s, 60 * s);
	/* Nothing new before the interval; a new family at once. */
	assert_false(rw_meta_due(&mm, m, 20 * s));
	assert_non_null(metrics_histogram(m, "c_seconds", "C.", NULL, (const double[]){1}, 1));
	assert_true(rw_meta_due(&mm, m, 21 * s));
	assert_int_equal(mm.n, 3);
	rw_meta_sent(&mm, 21 * s, 60 * s);
	assert_false(rw_meta_due(&mm, m, 80 * s));
	assert_true(rw_meta_due(&mm, m, 81 * s)); /* periodically */
	/* A failure waits its retry, unless the families change. */
	rw_meta_failed(&mm, 81 * s, 5 * s);
	assert_false(rw_meta_due(&mm, m, 85 * s));
	assert_true(rw_meta_due(&mm, m, 86 * s));
	rw_meta_free(&mm);
	metrics_free(m);
}

/* ---- the history as a log, after a durable cursor ---- */

struct seen {
	int64_t rowid[16];
	char key[16][96];
	int n;
};

static int collect(const struct store_sample *smp, void *arg)
{
	struct seen *s = arg;

	if (s->n >= 16)
		return -E2BIG;
	s->rowid[s->n] = smp->rowid;
	snprintf(s->key[s->n], sizeof(s->key[0]), "%s%s=%g@%lld", smp->name, smp->labels,
		 smp->value, (long long)smp->ts_ns);
	s->n++;
	return 0;
}

static void test_history_reads_after_a_durable_cursor(void **state)
{
	char dir[] = "/tmp/test_remote_write.XXXXXX", path[128], err[256], cmd[160];
	struct store_config cfg = {.batch_ms = 10};
	struct store_cursor *c;
	struct seen seen = {0};
	struct store *s;
	int64_t last, v;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sysobs.db", dir);
	cfg.path = path;
	s = store_open(&cfg, NULL, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(store_start(s), 0);
	assert_int_equal(store_samples_last(s, &last), 0);
	assert_int_equal(last, 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(store_submit_sample(s, 1000 + i, "m_a", "{k=\"v\"}", i), 0);
		assert_int_equal(store_submit_sample(s, 1000 + i, "m_b", "", 10 + i), 0);
	}
	assert_int_equal(store_flush(s), 0);
	assert_int_equal(store_samples_last(s, &last), 0);
	assert_int_equal(last, 10);

	c = store_cursor_open(s, "remote_write", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(store_cursor_get(c, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(store_samples_after(s, v, 3, collect, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.rowid[0], 1);
	assert_string_equal(seen.key[0], "m_a{k=\"v\"}=0@1000");
	assert_string_equal(seen.key[1], "m_b=10@1000");
	assert_string_equal(seen.key[2], "m_a{k=\"v\"}=1@1001");
	assert_int_equal(store_cursor_set(c, seen.rowid[2]), 0);
	store_cursor_close(c);
	store_close(s);

	/* Reopened: the cursor is where it was left, the walk goes on from it. */
	s = store_open(&cfg, NULL, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(store_start(s), 0);
	c = store_cursor_open(s, "remote_write", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(store_cursor_get(c, &v), 0);
	assert_int_equal(v, 3);
	seen.n = 0;
	assert_int_equal(store_samples_after(s, v, 100, collect, &seen), 0);
	assert_int_equal(seen.n, 7);
	assert_int_equal(seen.rowid[0], 4);
	assert_string_equal(seen.key[6], "m_b=14@1004");
	seen.n = 0;
	assert_int_equal(store_samples_after(s, 10, 100, collect, &seen), 0);
	assert_int_equal(seen.n, 0);
	/* Another cursor name is another row. */
	store_cursor_close(c);
	c = store_cursor_open(s, "other", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(store_cursor_get(c, &v), 0);
	assert_int_equal(v, 0);
	store_cursor_close(c);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rendered_label_sets_parse_back),
	    cmocka_unit_test(test_external_labels_are_checked),
	    cmocka_unit_test(test_labels_sort_bytewise),
	    cmocka_unit_test(test_retry_after_reads_seconds_and_dates),
	    cmocka_unit_test(test_verdict_refuses_only_data),
	    cmocka_unit_test(test_backoff_doubles_up_to_its_cap),
	    cmocka_unit_test(test_public_url_has_no_credentials),
	    cmocka_unit_test(test_write_request_decodes_back_after_snappy),
	    cmocka_unit_test(test_history_reads_after_a_durable_cursor),
	    cmocka_unit_test(test_identity_job_and_instance),
	    cmocka_unit_test(test_destinations_checked_each),
	    cmocka_unit_test(test_bucket_blob_round_trip),
	    cmocka_unit_test(test_buckets_go_out_as_bucket_series),
	    cmocka_unit_test(test_metadata_at_start_on_change_and_periodically),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
