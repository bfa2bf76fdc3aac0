/* SPDX-License-Identifier: MIT */
/*
 * Metrics registry and Prometheus text encoder: registration rules, series
 * identity, removal, histogram accounting, exact text output (escaping,
 * special values, ordering), and promtool's verdict on a rendered registry.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics/metrics.h"

/* noinline: inlined, gcc 12 takes &buf for a dangling pointer (-Wdangling-pointer). */
static __attribute__((noinline)) char *render(struct metrics *m)
{
	char *buf = NULL;
	size_t len = 0;

	assert_int_equal(metrics_render_text(m, &buf, &len), 0);
	assert_non_null(buf);
	assert_int_equal(strlen(buf), len);
	return buf;
}

static void test_register_types(void **state)
{
	static const char *const l1[] = {"reason", NULL};
	static const char *const l2[] = {"reason", "proto", NULL};
	static const double b[] = {1, 2};
	struct metrics *m = metrics_new();
	struct metric *c, *g, *h;

	c = metrics_counter(m, "sysobs_x_total", "x", l1);
	g = metrics_gauge(m, "sysobs_y", "y", NULL);
	h = metrics_histogram(m, "sysobs_z_seconds", "z", l1, b, 2);
	assert_non_null(c);
	assert_non_null(g);
	assert_non_null(h);

	/* same definition: the same family back */
	assert_ptr_equal(metrics_counter(m, "sysobs_x_total", "other help", l1), c);
	assert_ptr_equal(metrics_histogram(m, "sysobs_z_seconds", "z", l1, b, 2), h);

	/* another type or label set under the same name is refused */
	errno = 0;
	assert_null(metrics_gauge(m, "sysobs_x_total", "x", l1));
	assert_int_equal(errno, EEXIST);
	errno = 0;
	assert_null(metrics_counter(m, "sysobs_x_total", "x", l2));
	assert_int_equal(errno, EEXIST);
	errno = 0;
	assert_null(metrics_counter(m, "sysobs_x_total", "x", NULL));
	assert_int_equal(errno, EEXIST);
	static const double b2[] = {1, 3};
	errno = 0;
	assert_null(metrics_histogram(m, "sysobs_z_seconds", "z", l1, b2, 2));
	assert_int_equal(errno, EEXIST);

	metrics_free(m);
}

static void test_register_invalid_names(void **state)
{
	static const char *const bad_label[] = {"1abc", NULL};
	static const char *const colon_label[] = {"a:b", NULL};
	static const char *const reserved[] = {"__name", NULL};
	static const char *const dup[] = {"a", "a", NULL};
	static const char *const le[] = {"le", NULL};
	static const char *const nine[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", NULL};
	static const double unsorted[] = {2, 1};
	static const double nan_bound[] = {NAN};
	static const double inf_last[] = {1, INFINITY};
	struct metrics *m = metrics_new();
	struct metric *f;

	assert_true(metrics_name_valid("abc_DEF:ghi_1"));
	assert_true(metrics_name_valid(":x"));
	assert_false(metrics_name_valid("1abc"));
	assert_false(metrics_name_valid("a-b"));
	assert_false(metrics_name_valid(""));
	assert_false(metrics_name_valid("a b"));
	assert_true(metrics_label_name_valid("_x1"));
	assert_false(metrics_label_name_valid("a:b"));
	assert_false(metrics_label_name_valid("__x"));

	const char *bad_names[] = {"", "0abc", "a-b", "a.b", "é", "a b"};
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		errno = 0;
		assert_null(metrics_counter(m, bad_names[i], "", NULL));
		assert_int_equal(errno, EINVAL);
	}
	assert_null(metrics_counter(m, NULL, "", NULL));
	assert_null(metrics_counter(m, "ok_total", "bad \xff help", NULL));
	assert_null(metrics_gauge(m, "ok", "", bad_label));
	assert_null(metrics_gauge(m, "ok", "", colon_label));
	assert_null(metrics_gauge(m, "ok", "", reserved));
	assert_null(metrics_gauge(m, "ok", "", dup));
	assert_null(metrics_gauge(m, "ok", "", nine));
	assert_null(metrics_histogram(m, "ok", "", le, NULL, 0));
	assert_null(metrics_histogram(m, "ok", "", NULL, unsorted, 2));
	assert_null(metrics_histogram(m, "ok", "", NULL, nan_bound, 1));
	assert_int_equal(errno, EINVAL);
	/* "le" is an ordinary label outside histograms */
	assert_non_null(metrics_gauge(m, "ok_gauge", "", le));
	/* a trailing +Inf bound is implied and accepted */
	f = metrics_histogram(m, "ok_hist", "", NULL, inf_last, 2);
	assert_non_null(f);
	assert_ptr_equal(metrics_histogram(m, "ok_hist", "", NULL, inf_last, 1), f);
	metrics_free(m);
}

static void test_series_identity(void **state)
{
	static const char *const labels[] = {"reason", "proto", NULL};
	struct metrics *m = metrics_new();
	struct metric *f = metrics_counter(m, "sysobs_drops_total", "d", labels);
	const char *v1[] = {"NO_SOCKET", "tcp"};
	const char *v2[] = {"NO_SOCKET", "udp"};
	const char *v1_copy[] = {strdup("NO_SOCKET"), strdup("tcp")};
	const char *with_null[] = {"NO_SOCKET", NULL};
	const char *bad_utf8[] = {"\xff\xfe", "tcp"};
	const char *overlong[] = {"\xc0\xaf", "tcp"};
	const char *surrogate[] = {"\xed\xa0\x80", "tcp"};
	const char *past_max[] = {"\xf4\x90\x80\x80", "tcp"};
	const char *truncated[] = {"\xe2\x82", "tcp"};
	const char *utf8[] = {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "tcp"};
	struct metric_series *a, *b, *c;

	a = metric_series(f, v1);
	b = metric_series(f, v2);
	c = metric_series(f, v1_copy);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	/* found by value, not by pointer: label values are copied */
	assert_ptr_equal(a, c);
	assert_int_equal(metrics_series_count(m), 2);

	series_add(a, 2);
	series_add(c, 3);
	series_add(a, -1); /* counters never go down */
	assert_true(series_value(a) == 5);
	series_set(a, 7); /* a kernel total */
	assert_true(series_value(a) == 7);

	errno = 0;
	assert_null(metric_series(f, NULL));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(metric_series(f, with_null));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(metric_series(f, bad_utf8));
	assert_int_equal(errno, EINVAL);
	assert_null(metric_series(f, overlong));
	assert_null(metric_series(f, surrogate));
	assert_null(metric_series(f, past_max));
	assert_null(metric_series(f, truncated));
	assert_non_null(metric_series(f, utf8));
	assert_int_equal(metrics_series_count(m), 3);

	/* families without labels: one series, NULL values */
	struct metric_series *g1 = metrics_gauge1(m, "sysobs_queue_depth", "q");
	assert_non_null(g1);
	assert_ptr_equal(metrics_gauge1(m, "sysobs_queue_depth", "q"), g1);
	series_add(g1, 2);
	series_add(g1, -5);
	assert_true(series_value(g1) == -3);

	free((void *)v1_copy[0]);
	free((void *)v1_copy[1]);
	metrics_free(m);
}

static void test_series_remove_and_clear(void **state)
{
	static const char *const labels[] = {"core", NULL};
	struct metrics *m = metrics_new();
	struct metric *f = metrics_gauge(m, "sysobs_core_temp_celsius", "t", labels);
	struct metric_series *s[3];
	char *out;

	for (int i = 0; i < 3; i++) {
		char v[16];
		const char *vals[] = {v};

		snprintf(v, sizeof(v), "%d", i);
		s[i] = metric_series(f, vals);
		series_set(s[i], 40 + i);
	}
	metric_series_remove(f, s[1]);
	assert_int_equal(metrics_series_count(m), 2);
	out = render(m);
	assert_non_null(strstr(out, "sysobs_core_temp_celsius{core=\"0\"} 40\n"));
	assert_null(strstr(out, "core=\"1\""));
	assert_non_null(strstr(out, "sysobs_core_temp_celsius{core=\"2\"} 42\n"));
	free(out);

	/* re-created after removal: a fresh series */
	const char *one[] = {"1"};
	s[1] = metric_series(f, one);
	assert_true(series_value(s[1]) == 0);

	metric_clear(f);
	assert_int_equal(metrics_series_count(m), 0);
	out = render(m);
	/* a family without series renders nothing, not even metadata */
	assert_string_equal(out, "");
	free(out);
	s[0] = metric_series(f, one);
	assert_non_null(s[0]);
	assert_int_equal(metrics_series_count(m), 1);
	metrics_free(m);
}

static void test_histogram_cumulative(void **state)
{
	static const double bounds[] = {0.01, 0.1, 1};
	struct metrics *m = metrics_new();
	struct metric *f = metrics_histogram(m, "sysobs_req_seconds", "r", NULL, bounds, 3);
	struct metric_series *s = metric_series(f, NULL);
	char *out;

	series_observe(s, 0.01); /* le is inclusive */
	series_observe(s, 0.5);
	series_observe(s, 0.5);
	series_observe(s, 5);
	series_observe(s, -1);
	assert_true(series_value(s) == 5);
	out = render(m);
	assert_string_equal(out, "# HELP sysobs_req_seconds r\n"
				 "# TYPE sysobs_req_seconds histogram\n"
				 "sysobs_req_seconds_bucket{le=\"0.01\"} 2\n"
				 "sysobs_req_seconds_bucket{le=\"0.1\"} 2\n"
				 "sysobs_req_seconds_bucket{le=\"1\"} 4\n"
				 "sysobs_req_seconds_bucket{le=\"+Inf\"} 5\n"
				 "sysobs_req_seconds_sum 5.01\n"
				 "sysobs_req_seconds_count 5\n");
	free(out);

	/* kernel-side histogram replaced at once; counts are per bucket */
	const uint64_t counts[] = {1, 0, 3, 2};
	series_histogram_set(s, counts, 12.5);
	out = render(m);
	assert_non_null(strstr(out, "sysobs_req_seconds_bucket{le=\"0.01\"} 1\n"
				    "sysobs_req_seconds_bucket{le=\"0.1\"} 1\n"
				    "sysobs_req_seconds_bucket{le=\"1\"} 4\n"
				    "sysobs_req_seconds_bucket{le=\"+Inf\"} 6\n"
				    "sysobs_req_seconds_sum 12.5\n"
				    "sysobs_req_seconds_count 6\n"));
	free(out);
	/* add/set do not apply to histograms, observe not to gauges */
	series_add(s, 100);
	assert_true(series_value(s) == 6);
	metrics_free(m);
}

/* The exact exposition of a small registry. */
static void test_render_exact(void **state)
{
	static const char *const reason[] = {"reason", NULL};
	static const char *const op[] = {"op", NULL};
	static const double bounds[] = {0.005, 0.1, 1};
	struct metrics *m = metrics_new();
	struct metric *c, *h;
	struct metric_series *s;
	char *out;

	/* registered out of order: output is sorted by family name */
	s = metrics_gauge1(m, "sysobs_test_temperature_celsius", "Temperature.");
	series_set(s, INFINITY);
	h = metrics_histogram(m, "sysobs_test_latency_seconds", "Latency.", op, bounds, 3);
	const char *rd[] = {"read"};
	s = metric_series(h, rd);
	series_observe(s, 0.00390625);
	series_observe(s, 0.0625);
	series_observe(s, 0.0625);
	series_observe(s, 2);
	c = metrics_counter(m, "sysobs_test_events_total",
			    "Events seen.\nSecond line with \\ backslash and \"quotes\".", reason);
	/* created out of order: series are sorted by label values */
	const char *plain[] = {"plain"};
	const char *nasty[] = {"a\"b\\c\nd"};
	series_add(metric_series(c, plain), 1.5);
	series_add(metric_series(c, nasty), 3);
	s = metrics_gauge1(m, "sysobs_test_zero", "");
	series_set(s, NAN);

	out = render(m);
	assert_string_equal(
	    out,
	    "# HELP sysobs_test_events_total Events seen.\\nSecond line with \\\\ backslash and "
	    "\"quotes\".\n"
	    "# TYPE sysobs_test_events_total counter\n"
	    "sysobs_test_events_total{reason=\"a\\\"b\\\\c\\nd\"} 3\n"
	    "sysobs_test_events_total{reason=\"plain\"} 1.5\n"
	    "# HELP sysobs_test_latency_seconds Latency.\n"
	    "# TYPE sysobs_test_latency_seconds histogram\n"
	    "sysobs_test_latency_seconds_bucket{op=\"read\",le=\"0.005\"} 1\n"
	    "sysobs_test_latency_seconds_bucket{op=\"read\",le=\"0.1\"} 3\n"
	    "sysobs_test_latency_seconds_bucket{op=\"read\",le=\"1\"} 3\n"
	    "sysobs_test_latency_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"
	    "sysobs_test_latency_seconds_sum{op=\"read\"} 2.12890625\n"
	    "sysobs_test_latency_seconds_count{op=\"read\"} 4\n"
	    "# HELP sysobs_test_temperature_celsius Temperature.\n"
	    "# TYPE sysobs_test_temperature_celsius gauge\n"
	    "sysobs_test_temperature_celsius +Inf\n"
	    "# TYPE sysobs_test_zero gauge\n"
	    "sysobs_test_zero NaN\n");
	free(out);
	metrics_free(m);
}

static void test_format_value(void **state)
{
	static const struct {
		double v;
		const char *s;
	} cases[] = {
	    {0, "0"},
	    {1, "1"},
	    {-1, "-1"},
	    {1e6, "1000000"},
	    {123456789012345, "123456789012345"},
	    {9007199254740992.0, "9007199254740992"},
	    {1e300, "1e+300"},
	    {0.1, "0.1"},
	    {1.5, "1.5"},
	    {-2.25, "-2.25"},
	    {1.0 / 3, "0.3333333333333333"},
	    {0.1 + 0.2, "0.30000000000000004"},
	    {1e-9, "1e-09"},
	    {INFINITY, "+Inf"},
	    {-INFINITY, "-Inf"},
	    {NAN, "NaN"},
	};
	char buf[METRICS_VALUE_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = metrics_format_value(cases[i].v, buf);

		assert_string_equal(buf, cases[i].s);
		assert_int_equal(n, strlen(cases[i].s));
		if (isfinite(cases[i].v))
			assert_true(strtod(buf, NULL) == cases[i].v);
	}
}

struct visit_log {
	char lines[16][128];
	size_t n;
};

static void visit_cb(const char *name, const char *labels, double value,
		     const struct metric_buckets *b, void *arg)
{
	struct visit_log *l = arg;

	if (l->n < 16)
		snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s%s=%g", name, labels, value);
}

static void test_visit(void **state)
{
	static const char *const labels[] = {"a", NULL};
	static const double bounds[] = {1};
	struct metrics *m = metrics_new();
	struct visit_log l = {0};
	const char *x[] = {"x"};

	series_add(metrics_counter1(m, "sysobs_b_total", "b"), 4);
	series_observe(
	    metric_series(metrics_histogram(m, "sysobs_a_seconds", "a", labels, bounds, 1), x),
	    0.5);
	series_set(metric_series(metrics_gauge(m, "sysobs_c", "c", labels), x), -2);
	metrics_visit_buckets(m, visit_cb, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.lines[0], "sysobs_a_seconds_count{a=\"x\"}=1");
	assert_string_equal(l.lines[1], "sysobs_a_seconds_sum{a=\"x\"}=0.5");
	assert_string_equal(l.lines[2], "sysobs_b_total=4");
	assert_string_equal(l.lines[3], "sysobs_c{a=\"x\"}=-2");
	metrics_free(m);
}

/* Many series: lookups stay correct through table growth, and the
 * cardinality guard holds. */
static void test_many_series(void **state)
{
	static const char *const labels[] = {"id", "kind", NULL};
	struct metrics *m = metrics_new();
	struct metric *f = metrics_counter(m, "sysobs_many_total", "many", labels);
	static struct metric_series *s[20000];
	char v[16];
	const char *vals[] = {v, "k"};
	char *out;

	for (int i = 0; i < 20000; i++) {
		snprintf(v, sizeof(v), "%d", i);
		s[i] = metric_series(f, vals);
		assert_non_null(s[i]);
		series_add(s[i], i);
	}
	assert_int_equal(metrics_series_count(m), 20000);
	for (int i = 0; i < 20000; i += 7) {
		snprintf(v, sizeof(v), "%d", i);
		assert_ptr_equal(metric_series(f, vals), s[i]);
	}
	for (int i = 0; i < 20000; i += 2)
		metric_series_remove(f, s[i]);
	assert_int_equal(metrics_series_count(m), 10000);
	snprintf(v, sizeof(v), "%d", 19999);
	assert_ptr_equal(metric_series(f, vals), s[19999]);
	out = render(m);
	assert_non_null(strstr(out, "sysobs_many_total{id=\"19999\",kind=\"k\"} 19999\n"));
	assert_null(strstr(out, "id=\"19998\""));
	free(out);

	struct metric *g = metrics_gauge(m, "sysobs_guard", "g", labels);
	for (int i = 0; i < METRIC_MAX_SERIES; i++) {
		snprintf(v, sizeof(v), "%d", i);
		assert_non_null(metric_series(g, vals));
	}
	snprintf(v, sizeof(v), "x");
	errno = 0;
	assert_null(metric_series(g, vals));
	assert_int_equal(errno, ENOSPC);
	metrics_free(m);
}

/* A scrape while another thread updates, creates and removes series. */
struct churn {
	struct metrics *m;
	struct metric *f;
	int stop;
};

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	char v[16];
	const char *vals[] = {v};

	for (unsigned i = 0; !__atomic_load_n(&c->stop, __ATOMIC_RELAXED); i++) {
		snprintf(v, sizeof(v), "%u", i % 500);
		struct metric_series *s = metric_series(c->f, vals);

		series_add(s, 1);
		if (i % 3 == 0)
			metric_series_remove(c->f, s);
	}
	return NULL;
}

static void test_concurrent_render(void **state)
{
	static const char *const labels[] = {"k", NULL};
	struct churn c = {0};
	pthread_t t;

	c.m = metrics_new();
	c.f = metrics_counter(c.m, "sysobs_churn_total", "churn", labels);
	assert_int_equal(pthread_create(&t, NULL, churn_thread, &c), 0);
	for (int i = 0; i < 300; i++) {
		char *out = render(c.m);

		/* every line is whole */
		for (char *p = strstr(out, "sysobs_churn_total{"); p;
		     p = strstr(p + 1, "\nsysobs_churn_total{"))
			assert_non_null(strchr(p + 1, '\n'));
		free(out);
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	metrics_free(c.m);
}

/* promtool (Debian package prometheus) must accept what we render. */
static void test_promtool(void **state)
{
	static const char *const l2[] = {"reason", "proto", NULL};
	static const char *const op[] = {"op", NULL};
	static const double bounds[] = {0.0001, 0.001, 0.01, 0.1, 1, 10};
	char path[] = "/tmp/sysobs-metrics-XXXXXX";
	char cmd[256];
	struct metrics *m;
	char *out;
	int fd, rc;

	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		print_message("SKIP: promtool not installed (apt-get install prometheus)\n");
		skip();
	}
	m = metrics_new();
	struct metric *c = metrics_counter(m, "sysobs_drops_total",
					   "Packets dropped, by reason.\nFrom \\kfree_skb.", l2);
	const char *v1[] = {"NO_SOCKET", "tcp"};
	const char *v2[] = {"weird \"value\"\\\nline", "udp"};
	const char *v3[] = {"caf\xc3\xa9", ""};
	series_add(metric_series(c, v1), 12);
	series_add(metric_series(c, v2), 0.5);
	series_add(metric_series(c, v3), 1e21);
	series_set(metrics_gauge1(m, "sysobs_queue_depth", "Rows queued."), -INFINITY);
	series_set(metrics_gauge1(m, "sysobs_ratio", "A ratio."), NAN);
	struct metric *h =
	    metrics_histogram(m, "sysobs_op_duration_seconds", "Op latency.", op, bounds, 6);
	const char *o1[] = {"open"};
	const char *o2[] = {"read"};
	for (int i = 0; i < 100; i++)
		series_observe(metric_series(h, o1), i * 0.013);
	series_observe(metric_series(h, o2), 3);
	struct metric *h2 =
	    metrics_histogram(m, "sysobs_plain_seconds", "No labels.", NULL, bounds, 6);
	series_observe(metric_series(h2, NULL), 0.5);

	out = render(m);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "promtool refused:\n%s\n", out);
	unlink(path);
	free(out);
	metrics_free(m);
	assert_true(WIFEXITED(rc));
	assert_int_equal(WEXITSTATUS(rc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_register_types),
	    cmocka_unit_test(test_register_invalid_names),
	    cmocka_unit_test(test_series_identity),
	    cmocka_unit_test(test_series_remove_and_clear),
	    cmocka_unit_test(test_histogram_cumulative),
	    cmocka_unit_test(test_render_exact),
	    cmocka_unit_test(test_format_value),
	    cmocka_unit_test(test_visit),
	    cmocka_unit_test(test_many_series),
	    cmocka_unit_test(test_concurrent_render),
	    cmocka_unit_test(test_promtool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
