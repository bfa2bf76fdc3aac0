// SPDX-License-Identifier: MIT
/*
 * api/series: the step grid (alignment on start, samples on and between grid
 * times, the 5-minute lookback, end inclusive), selector parsing, the label
 * text of stored series read back (escapes included, against what the
 * metrics registry renders), and GET /api/v1/series end to end on hand-built
 * requests over a real store: selection, raw and stepped points, the default
 * window, the caps, and both encodings.
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

#include <cmocka.h>
#include <jansson.h>

#include "api/http.h"
#include "metrics/metrics.h"
#include "api/proto/sysobs.pb-c.h"
#include "api/series.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "storage/store.h"

#define S   1000000000LL
#define MIN (60 * S)
/* 2023-11-14T22:13:20Z */
#define BASE (1700000000LL * S)

/* ---- the step grid ---- */

struct sample {
	int64_t ts;
	double v;
};

/* The points of samples (oldest first) on the grid start..end by step. */
static struct series_points grid_of(const struct sample *s, size_t n, int64_t start, int64_t end,
				    int64_t step)
{
	struct series_points pts = {0};
	struct series_grid g;

	series_grid_init(&g, start, end, step);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(series_grid_add(&g, s[i].ts, s[i].v, &pts), 0);
	assert_int_equal(series_grid_finish(&g, &pts), 0);
	return pts;
}

static void assert_point(const struct series_points *pts, size_t i, int64_t ts, double v)
{
	if (i >= pts->n)
		fail_msg("point %zu missing: only %zu points", i, pts->n);
	if (pts->v[i].ts_ns != ts || pts->v[i].value != v)
		fail_msg("point %zu is (%lld, %g), want (%lld, %g)", i, (long long)pts->v[i].ts_ns,
			 pts->v[i].value, (long long)ts, v);
}

/* Grid times are start + k*step, whatever start's alignment on step; each
 * takes the newest sample at or before it. */
static void test_grid_aligned_on_start_not_on_step(void **state)
{
	const int64_t start = BASE + 3 * S + 123; /* on no multiple of the step */
	const struct sample s[] = {
	    {BASE, 1}, {BASE + 12 * S, 2}, {BASE + 14 * S, 3}, {BASE + 31 * S, 4}};
	struct series_points pts = grid_of(s, 4, start, start + 40 * S, 10 * S);

	assert_int_equal(pts.n, 5);
	assert_point(&pts, 0, start, 1);	  /* BASE+3s: the sample at BASE */
	assert_point(&pts, 1, start + 10 * S, 2); /* BASE+13s: 14s is after it */
	assert_point(&pts, 2, start + 20 * S, 3);
	assert_point(&pts, 3, start + 30 * S, 4); /* BASE+33s: 31s is before it */
	assert_point(&pts, 4, start + 40 * S, 4);
	free(pts.v);
}

/* A sample exactly on a grid time is that point's value, not the next one's. */
static void test_grid_sample_on_grid_time_counts_there(void **state)
{
	const struct sample s[] = {{BASE, 1}, {BASE + 10 * S, 2}, {BASE + 20 * S, 3}};
	struct series_points pts = grid_of(s, 3, BASE, BASE + 20 * S, 10 * S);

	assert_int_equal(pts.n, 3);
	assert_point(&pts, 0, BASE, 1);
	assert_point(&pts, 1, BASE + 10 * S, 2);
	assert_point(&pts, 2, BASE + 20 * S, 3);
	free(pts.v);
}

/* Several samples between two grid times: only the newest shows; a sample 1 ns
 * after a grid time waits for the next one. */
static void test_grid_samples_between_grid_times(void **state)
{
	const struct sample s[] = {
	    {BASE + 1, 1}, {BASE + 3 * S, 2}, {BASE + 9 * S, 3}, {BASE + 10 * S + 1, 4}};
	struct series_points pts = grid_of(s, 4, BASE, BASE + 20 * S, 10 * S);

	assert_int_equal(pts.n, 2); /* none at BASE: the first sample is 1 ns later */
	assert_point(&pts, 0, BASE + 10 * S, 3);
	assert_point(&pts, 1, BASE + 20 * S, 4);
	free(pts.v);
}

/* A sample reaches grid times less than 5 minutes after it (exactly 5 minutes
 * is too old, as in Prometheus 3); past that there is no point until the next
 * sample, and a sample before start within the lookback fills the first. */
static void test_grid_lookback_is_five_minutes(void **state)
{
	const struct sample s[] = {{BASE - 5 * MIN + 1, 1}, {BASE + 10 * MIN, 2}};
	struct series_points pts = grid_of(s, 2, BASE, BASE + 20 * MIN, MIN);

	/* BASE only (4m59.999999999s old); BASE+1m is 6 minutes after it. */
	assert_point(&pts, 0, BASE, 1);
	/* BASE+10m .. BASE+14m; BASE+15m is exactly 5 minutes after. */
	assert_int_equal(pts.n, 6);
	assert_point(&pts, 1, BASE + 10 * MIN, 2);
	assert_point(&pts, 5, BASE + 14 * MIN, 2);
	free(pts.v);

	const struct sample old[] = {{BASE - 5 * MIN, 1}};

	pts = grid_of(old, 1, BASE, BASE + 20 * MIN, MIN);
	assert_int_equal(pts.n, 0);
	free(pts.v);
}

/* end is a grid time when start + k*step lands on it, and then has a point;
 * 1 ns less and it is not one. */
static void test_grid_end_inclusive(void **state)
{
	const struct sample s[] = {{BASE, 1}, {BASE + 30 * S, 2}};
	struct series_points pts = grid_of(s, 2, BASE, BASE + 30 * S, 10 * S);

	assert_int_equal(pts.n, 4);
	assert_point(&pts, 3, BASE + 30 * S, 2);
	free(pts.v);

	pts = grid_of(s, 2, BASE, BASE + 30 * S - 1, 10 * S);
	assert_int_equal(pts.n, 3);
	assert_point(&pts, 2, BASE + 20 * S, 1);
	free(pts.v);

	/* start == end: one grid time. */
	pts = grid_of(s, 2, BASE + 30 * S, BASE + 30 * S, 10 * S);
	assert_int_equal(pts.n, 1);
	assert_point(&pts, 0, BASE + 30 * S, 2);
	free(pts.v);

	assert_int_equal(series_grid_count(BASE, BASE + 30 * S, 10 * S), 4);
	assert_int_equal(series_grid_count(BASE, BASE + 30 * S - 1, 10 * S), 3);
	assert_int_equal(series_grid_count(BASE + 1, BASE, 10 * S), 0);
	assert_true(series_grid_count(INT64_MIN, INT64_MAX, 1) == UINT64_MAX);
}

/* No samples, or samples only after end: no points. A grid near the end of
 * int64 time stops without wrapping round. */
static void test_grid_edges(void **state)
{
	const struct sample late[] = {{BASE + 100 * S, 1}};
	struct series_points pts = grid_of(NULL, 0, BASE, BASE + 60 * S, 10 * S);

	assert_int_equal(pts.n, 0);
	free(pts.v);
	pts = grid_of(late, 1, BASE, BASE + 60 * S, 10 * S);
	assert_int_equal(pts.n, 0);
	free(pts.v);

	const struct sample top[] = {{INT64_MAX - 25, 1}};

	pts = grid_of(top, 1, INT64_MAX - 30, INT64_MAX, 10);
	assert_int_equal(pts.n, 3);
	assert_point(&pts, 0, INT64_MAX - 20, 1);
	assert_point(&pts, 2, INT64_MAX, 1);
	free(pts.v);
}

/* ---- selectors (moved from storage) ---- */

static char err[512];

static void test_matcher_parse(void **state)
{
	struct series_matcher m[4];
	char name[64];
	size_t n = 0;

	assert_int_equal(series_matcher_parse("reason=\"NO_SOCKET\"", name, sizeof(name), m, 4, &n,
					      err, sizeof(err)),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(name, "");
	assert_string_equal(m[0].label, "reason");
	assert_string_equal(m[0].value, "NO_SOCKET");
	assert_int_equal(m[0].op, SERIES_MATCH_EQ);

	n = 0;
	assert_int_equal(
	    series_matcher_parse(" sysobs_x_total { a = \"1\" , b!=\"q\\\"\\\\\\n\", } ", name,
				 sizeof(name), m, 4, &n, err, sizeof(err)),
	    0);
	assert_string_equal(name, "sysobs_x_total");
	assert_int_equal(n, 2);
	assert_string_equal(m[1].label, "b");
	assert_int_equal(m[1].op, SERIES_MATCH_NE);
	assert_string_equal(m[1].value, "q\"\\\n");

	n = 0;
	assert_int_equal(series_matcher_parse("{}", name, sizeof(name), m, 4, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(series_matcher_parse("up", name, sizeof(name), m, 4, &n, err, sizeof(err)),
			 0);
	assert_string_equal(name, "up");

	static const char *const bad[] = {
	    "",		  "{",		 "{a=\"b\"",	    "a=b",	    "a=\"b",
	    "{a=~\"b\"}", "a!~\"b\"",	 "{1a=\"b\"}",	    "m{a=\"b\"} x", "{a \"b\"}",
	    "m x",	  "{a=\"\\q\"}", "a=\"b\" c=\"d\"", "{,}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 0;
		err[0] = '\0';
		if (series_matcher_parse(bad[i], name, sizeof(name), m, 4, &n, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("accepted bad selector '%s'", bad[i]);
		assert_true(strlen(err) > 0);
	}
	n = 0;
	assert_int_equal(series_matcher_parse("{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\"}", name,
					      sizeof(name), m, 4, &n, err, sizeof(err)),
			 -E2BIG);
}

/* ---- label text ---- */

struct visited {
	char labels[8][256];
	size_t n;
};

static void visit(const char *name, const char *labels, double value,
		  const struct metric_buckets *b, void *arg)
{
	struct visited *v = arg;

	if (v->n < 8)
		snprintf(v->labels[v->n++], sizeof(v->labels[0]), "%s", labels);
}

/* What the registry renders (and the store keeps) reads back as the label
 * values it was given: quotes, backslashes, newlines, empty values, UTF-8. */
static void test_label_text_round_trip(void **state)
{
	static const char *const names[] = {"path", "note", "empty", NULL};
	static const char *const values[][3] = {
	    {"a\"b", "c\\d", ""},
	    {"line1\nline2", "\\\"\\n", "x"},
	    {"caf\xc3\xa9 \xe2\x9c\x93", "} , {=\"", "\\"},
	};
	struct metrics *m = metrics_new();
	struct visited v = {0};
	struct metric *f;

	assert_non_null(m);
	f = metrics_gauge(m, "test_round_trip", "h", names);
	assert_non_null(f);
	for (size_t i = 0; i < 3; i++)
		assert_non_null(metric_series(f, values[i]));
	metrics_visit_buckets(m, visit, &v);
	assert_int_equal(v.n, 3);
	for (size_t i = 0; i < v.n; i++) {
		struct series_labels *l;
		size_t k;

		assert_int_equal(series_labels_parse(v.labels[i], &l), 0);
		assert_int_equal(l->n, 3);
		for (k = 0; k < 3; k++) {
			assert_string_equal(l->v[k].name, names[k]);
			/* the registry keeps its own order of series */
			if (strcmp(l->v[0].value, values[k][0]) == 0)
				break;
		}
		if (k == 3)
			fail_msg("label text %s read back as an unknown value set", v.labels[i]);
		for (size_t j = 0; j < 3; j++)
			assert_string_equal(l->v[j].value, values[k][j]);
		free(l);
	}
	metrics_free(m);
}

/* No labels is "" (or {}); text the registry never writes is refused. */
static void test_label_text_empty_and_refused(void **state)
{
	static const char *const bad[] = {
	    "{",	   "{a=b}",   "{a=\"b\"",	   "{a=\"b\"}x", "{=\"b\"}",
	    "{a=\"\\q\"}", "a=\"b\"", "{a=\"b\" c=\"d\"}", "{a!=\"b\"}", " {a=\"b\"}",
	};
	struct series_labels *l;

	assert_int_equal(series_labels_parse("", &l), 0);
	assert_int_equal(l->n, 0);
	free(l);
	assert_int_equal(series_labels_parse("{}", &l), 0);
	assert_int_equal(l->n, 0);
	free(l);
	assert_int_equal(series_labels_parse("{a=\"\"}", &l), 0);
	assert_int_equal(l->n, 1);
	assert_string_equal(l->v[0].value, "");
	free(l);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		l = (struct series_labels *)1;
		if (series_labels_parse(bad[i], &l) != -EINVAL)
			fail_msg("accepted label text '%s'", bad[i]);
		assert_null(l);
	}
}

/* ---- GET /api/v1/series over a real store ---- */

static char tmpdir[256], dbpath[512];
static struct store *store;

static int db_setup(void **state)
{
	struct store_config cfg = {
	    .queue_rows = 1024,
	    .batch_rows = 100,
	    .batch_ms = 20,
	    .busy_timeout_ms = 2000,
	    .readers = 2,
	};

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_series.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/sysobs.db", tmpdir);
	cfg.path = dbpath;
	store = store_open(&cfg, NULL, err, sizeof(err));
	if (!store) {
		print_error("store_open: %s\n", err);
		return -1;
	}
	return 0;
}

static int db_teardown(void **state)
{
	char cmd[400];

	store_close(store);
	store = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void db_exec(const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	assert_int_equal(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

/* Three series of drops_total (one with an escaped label value), one of
 * other_total without labels, and one whose label text the agent did not
 * write. Samples every 10 s from BASE to BASE + 590 s, value id*1000 + i; the
 * udp series stops after BASE + 100 s. */
static void fixture(void)
{
	db_exec(
	    "INSERT INTO metric_series(id, name, labels) VALUES"
	    " (1, 'drops_total', '{reason=\"NO_SOCKET\",proto=\"tcp\"}'),"
	    " (2, 'drops_total', '{reason=\"TCP_CSUM\",proto=\"tcp\",path=\"a\\\"b\\\\c\\nd\"}'),"
	    " (3, 'drops_total', '{reason=\"NO_SOCKET\",proto=\"udp\"}'),"
	    " (4, 'other_total', ''),"
	    " (5, 'drops_total', 'garbage');"
	    "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 59)"
	    " INSERT INTO metric_samples(series_id, ts, value)"
	    " SELECT s.id, 1700000000000000000 + i * 10000000000, s.id * 1000 + i"
	    " FROM c, (SELECT id FROM metric_series) s"
	    " WHERE s.id != 3 OR i <= 10;");
}

#define Q(...) ((const char *const[]){__VA_ARGS__, NULL})

/* GET /api/v1/series with query arguments args (key, value, ..., NULL) at
 * now = BASE + 600 s, in protobuf (pb) or JSON. */
static struct http_response series_get(const char *const *args, bool pb)
{
	struct http_response res = {0};
	struct http_request req = {
	    .method = "GET",
	    .path = "/api/v1/series",
	    .accept = pb ? "application/x-protobuf" : NULL,
	    .args = args,
	};

	while (args[2 * req.n_args])
		req.n_args++;
	api_series_at(&req, &res, store, BASE + 600 * S);
	return res;
}

/* The SeriesList of a 200, in protobuf. */
static Sysobs__V1__SeriesList *series_ok(const char *const *args)
{
	struct http_response res = series_get(args, true);
	Sysobs__V1__SeriesList *l;

	if (res.status != 200)
		fail_msg("status %d: %.*s", res.status, (int)res.len, res.body);
	assert_string_equal(res.content_type, "application/x-protobuf");
	l = sysobs__v1__series_list__unpack(NULL, res.len, (const uint8_t *)res.body);
	assert_non_null(l);
	assert_string_equal(l->next_cursor, "");
	free(res.body);
	return l;
}

/* A 400 whose message contains part. */
static void series_refused(const char *const *args, const char *part)
{
	struct http_response res = series_get(args, true);
	Sysobs__V1__ErrorResponse *e;

	if (res.status != 400)
		fail_msg("status %d, want 400 (%s)", res.status, part);
	e = sysobs__v1__error_response__unpack(NULL, res.len, (const uint8_t *)res.body);
	assert_non_null(e);
	assert_string_equal(e->error->code, "bad_request");
	if (!strstr(e->error->message, part))
		fail_msg("message \"%s\" does not say \"%s\"", e->error->message, part);
	sysobs__v1__error_response__free_unpacked(e, NULL);
	free(res.body);
}

static const char *label_of(const Sysobs__V1__Series *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++) {
		if (!strcmp(s->labels[i]->key, key))
			return s->labels[i]->value;
	}
	return NULL;
}

static int64_t time_of(const Sysobs__V1__Point *p)
{
	return p->time->seconds * S + p->time->nanos;
}

/* metric and match[] (= and !=, ANDed), a selector naming the metric, or
 * {__name__=...}: the series they select, with their labels and __name__;
 * label text that is not the agent's is skipped. */
static void test_api_selection(void **state)
{
	Sysobs__V1__SeriesList *l;

	fixture();
	l = series_ok(Q("metric", "drops_total", "start", "1700000000", "end", "1700000600"));
	assert_int_equal(l->n_data, 3);
	assert_string_equal(l->data[0]->labels[0]->key, "__name__");
	assert_string_equal(l->data[0]->labels[0]->value, "drops_total");
	assert_string_equal(label_of(l->data[0], "reason"), "NO_SOCKET");
	assert_string_equal(label_of(l->data[0], "proto"), "tcp");
	/* The escaped value comes back as it was given to the registry. */
	assert_string_equal(label_of(l->data[1], "path"), "a\"b\\c\nd");
	assert_int_equal(l->data[1]->n_labels, 4);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	l = series_ok(Q("metric", "drops_total", "match[]", "{reason=\"NO_SOCKET\"}", "match[]",
			"proto!=\"tcp\"", "start", "1700000000", "end", "1700000600"));
	assert_int_equal(l->n_data, 1);
	assert_string_equal(label_of(l->data[0], "proto"), "udp");
	sysobs__v1__series_list__free_unpacked(l, NULL);

	l = series_ok(Q("match[]", "drops_total{reason!=\"NO_SOCKET\"}", "start", "1700000000"));
	assert_int_equal(l->n_data, 1);
	assert_string_equal(label_of(l->data[0], "reason"), "TCP_CSUM");
	sysobs__v1__series_list__free_unpacked(l, NULL);

	/* An absent label equals "" (Prometheus), and __name__ names the metric. */
	l = series_ok(Q("match[]", "{__name__=\"drops_total\",zone=\"\"}", "start", "1700000000"));
	assert_int_equal(l->n_data, 3);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	l = series_ok(Q("metric", "other_total", "start", "1700000000"));
	assert_int_equal(l->n_data, 1);
	assert_int_equal(l->data[0]->n_labels, 1);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	l = series_ok(Q("metric", "no_such_total"));
	assert_int_equal(l->n_data, 0);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	series_refused(Q("metric", "drops_total", "match[]", "{a=~\"b\"}"), "regex");
	series_refused(Q("metric", "drops_total", "match[]", "other_total{a=\"b\"}"),
		       "names metric other_total");
	series_refused(Q("match[]", "{reason=\"NO_SOCKET\"}"), "metric name is required");
	series_refused(Q("metric", "9bad"), "not a metric name");
	series_refused(Q("metric", "drops_total", "limit", "5"), "limit");
}

/* Without step: every sample with start <= ts <= end, at its own time. */
static void test_api_raw_samples(void **state)
{
	Sysobs__V1__SeriesList *l;

	fixture();
	l = series_ok(Q("metric", "drops_total", "match[]", "{reason=\"TCP_CSUM\"}", "start",
			"1700000100", "end", "1700000200"));
	assert_int_equal(l->n_data, 1);
	assert_int_equal(l->data[0]->n_points, 11);
	assert_int_equal(time_of(l->data[0]->points[0]), BASE + 100 * S);
	assert_true(l->data[0]->points[0]->value == 2010);
	assert_int_equal(time_of(l->data[0]->points[10]), BASE + 200 * S);
	sysobs__v1__series_list__free_unpacked(l, NULL);
}

/* With step: points at start + k*step up to end, each the newest sample at or
 * before it within 5 minutes; the udp series, silent since BASE + 100 s,
 * fades out 5 minutes later; a series without any point is left out. */
static void test_api_step_grid(void **state)
{
	Sysobs__V1__SeriesList *l;
	const Sysobs__V1__Series *udp;

	fixture();
	l = series_ok(Q("metric", "drops_total", "start", "1700000005.5", "end", "1700000600",
			"step", "60s"));
	assert_int_equal(l->n_data, 3);
	for (size_t i = 0; i < l->n_data; i++) {
		for (size_t k = 0; k < l->data[i]->n_points; k++) {
			int64_t t = time_of(l->data[i]->points[k]);

			if ((t - (BASE + 5 * S + S / 2)) % (60 * S) != 0)
				fail_msg("point at %lld is off the grid", (long long)t);
		}
	}
	/* tcp: BASE+5.5s takes the sample at BASE (1000), then every minute the
	 * sample 5.5 s before; 10 grid times in all (BASE+545.5s the last). */
	assert_int_equal(l->data[0]->n_points, 10);
	assert_true(l->data[0]->points[0]->value == 1000);
	assert_true(l->data[0]->points[1]->value == 1006);
	assert_true(l->data[0]->points[9]->value == 1054);
	udp = l->data[2];
	assert_string_equal(label_of(udp, "proto"), "udp");
	/* BASE+5.5 .. BASE+365.5 s: the last within 5 minutes of BASE+100 s is
	 * BASE+365.5 s (265.5 s); BASE+425.5 s is 325.5 s after. */
	assert_int_equal(udp->n_points, 7);
	assert_int_equal(time_of(udp->points[6]), BASE + 365 * S + S / 2);
	assert_true(udp->points[6]->value == 3010);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	/* A window after the udp series went quiet: left out. */
	l = series_ok(
	    Q("metric", "drops_total", "start", "1700000500", "end", "1700000600", "step", "10s"));
	assert_int_equal(l->n_data, 2);
	assert_int_equal(l->data[0]->n_points, 11);
	sysobs__v1__series_list__free_unpacked(l, NULL);
}

/* end defaults to now (BASE + 600 s here), start to an hour before end. */
static void test_api_default_window(void **state)
{
	Sysobs__V1__SeriesList *l;

	fixture();
	db_exec("INSERT INTO metric_samples(series_id, ts, value)"
		" VALUES (4, 1700000000000000000 - 3601000000000, -1),"
		" (4, 1700000000000000000 - 3000000000000, -2),"
		" (4, 1700000000000000000 + 601000000000, -3);");
	l = series_ok(Q("metric", "other_total"));
	assert_int_equal(l->n_data, 1);
	/* BASE-3000s and the 60 samples to BASE+590s; not BASE-3601s (before
	 * now - 1h = BASE-3000s) nor BASE+601s (after now). */
	assert_int_equal(l->data[0]->n_points, 61);
	assert_true(l->data[0]->points[0]->value == -2);
	sysobs__v1__series_list__free_unpacked(l, NULL);

	l = series_ok(Q("metric", "other_total", "end", "1700000100"));
	assert_int_equal(time_of(l->data[0]->points[0]), BASE - 3000 * S); /* from BASE-3500s */
	sysobs__v1__series_list__free_unpacked(l, NULL);

	series_refused(Q("metric", "other_total", "start", "1700000700"), "after end");
}

/* More than 11000 raw samples or grid times in one series, 250000 points in
 * all, or 1000 matching series: a 400 that says what to narrow. */
static void test_api_caps(void **state)
{
	Sysobs__V1__SeriesList *l;
	char sql[1024];

	fixture();
	/* 11001 samples one per ms in series 4 from BASE + 1000 s. */
	db_exec("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 11000)"
		" INSERT INTO metric_samples(series_id, ts, value)"
		" SELECT 4, 1700001000000000000 + i * 1000000, i"
		" FROM c;");
	series_refused(Q("metric", "other_total", "start", "1700001000", "end", "1700001011"),
		       "more than 11000 points in one series");
	/* 11000 of them are fine. */
	l = series_ok(Q("metric", "other_total", "start", "1700001000", "end", "1700001010.999"));
	assert_int_equal(l->data[0]->n_points, 11000);
	sysobs__v1__series_list__free_unpacked(l, NULL);
	/* With a step, the grid counts, not the samples. */
	l = series_ok(
	    Q("metric", "other_total", "start", "1700001000", "end", "1700001011", "step", "1s"));
	assert_int_equal(l->data[0]->n_points, 12);
	sysobs__v1__series_list__free_unpacked(l, NULL);
	series_refused(
	    Q("metric", "other_total", "start", "1700001000", "end", "1700012000", "step", "1s"),
	    "more than 11000 points per series");

	/* 23 series of 11000 points: 253000 in all. */
	for (int id = 100; id < 123; id++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO metric_series VALUES (%d, 'big_total', '{n=\"%d\"}');"
			 "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE"
			 " i < 10999) INSERT INTO metric_samples(series_id, ts, value) SELECT %d,"
			 " 1700000000000000000 + i * 1000000000, i FROM c;",
			 id, id, id);
		db_exec(sql);
	}
	series_refused(Q("metric", "big_total", "start", "1700000000", "end", "1700011000"),
		       "more than 250000 points in one answer");
	l = series_ok(Q("metric", "big_total", "match[]", "n!=\"100\"", "start", "1700000000",
			"end", "1700011000"));
	assert_int_equal(l->n_data, 22); /* 242000 points */
	sysobs__v1__series_list__free_unpacked(l, NULL);

	db_exec("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)"
		" INSERT INTO metric_series SELECT 1000 + i, 'wide_total', '{n=\"' || i || '\"}'"
		" FROM c;");
	series_refused(Q("metric", "wide_total"), "more than 1000 series match");
	l = series_ok(Q("metric", "wide_total", "match[]", "n!=\"7\""));
	assert_int_equal(l->n_data, 0); /* 1000 series, none with samples */
	sysobs__v1__series_list__free_unpacked(l, NULL);
}

/* The default encoding is the proto3 JSON mapping: labels as an object, times
 * as RFC 3339 strings with nanoseconds. */
static void test_api_json(void **state)
{
	struct http_response res;
	json_error_t je;
	json_t *j, *s0, *p0;

	fixture();
	res = series_get(Q("metric", "drops_total", "match[]", "{reason=\"TCP_CSUM\"}", "start",
			   "1700000010", "end", "1700000020", "step", "5s"),
			 false);
	assert_int_equal(res.status, 200);
	assert_string_equal(res.content_type, "application/json");
	j = json_loadb(res.body, res.len, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "next_cursor")), "");
	s0 = json_array_get(json_object_get(j, "data"), 0);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(s0, "labels"), "__name__")),
	    "drops_total");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(s0, "labels"), "path")),
	    "a\"b\\c\nd");
	assert_int_equal(json_array_size(json_object_get(s0, "points")), 3);
	p0 = json_array_get(json_object_get(s0, "points"), 1);
	assert_string_equal(json_string_value(json_object_get(p0, "time")),
			    "2023-11-14T22:13:35.000000000Z");
	assert_true(json_number_value(json_object_get(p0, "value")) == 2001);
	json_decref(j);
	free(res.body);

	/* No store: 503, in JSON. */
	struct http_request req = {
	    .method = "GET", .path = "/api/v1/series", .args = Q("metric", "x"), .n_args = 1};

	res = (struct http_response){0};
	api_series(&req, &res, NULL);
	assert_int_equal(res.status, 503);
	assert_non_null(strstr(res.body, "\"unavailable\""));
	free(res.body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grid_aligned_on_start_not_on_step),
	    cmocka_unit_test(test_grid_sample_on_grid_time_counts_there),
	    cmocka_unit_test(test_grid_samples_between_grid_times),
	    cmocka_unit_test(test_grid_lookback_is_five_minutes),
	    cmocka_unit_test(test_grid_end_inclusive),
	    cmocka_unit_test(test_grid_edges),
	    cmocka_unit_test(test_matcher_parse),
	    cmocka_unit_test(test_label_text_round_trip),
	    cmocka_unit_test(test_label_text_empty_and_refused),
	    cmocka_unit_test_setup_teardown(test_api_selection, db_setup, db_teardown),
	    cmocka_unit_test_setup_teardown(test_api_raw_samples, db_setup, db_teardown),
	    cmocka_unit_test_setup_teardown(test_api_step_grid, db_setup, db_teardown),
	    cmocka_unit_test_setup_teardown(test_api_default_window, db_setup, db_teardown),
	    cmocka_unit_test_setup_teardown(test_api_caps, db_setup, db_teardown),
	    cmocka_unit_test_setup_teardown(test_api_json, db_setup, db_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
