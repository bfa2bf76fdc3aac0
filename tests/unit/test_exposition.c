/* SPDX-License-Identifier: MIT */
/*
 * The registry's three encoders and native histogram math:
 *   - native bucket indexes against reference values computed with exact
 *     rational arithmetic (v^(2^s) <= 2^i, Python fractions), bounds included;
 *   - schema reduction equals bucketing at the lower schema directly;
 *   - spans and deltas as the wire format defines them;
 *   - text 0.0.4, OpenMetrics and protobuf (decoded back with protobuf-c) of
 *     one registry agree sample by sample; OpenMetrics specifics (family
 *     names, UNIT, _created, exemplars, # EOF); protobuf native buckets
 *     rebuilt from spans/deltas equal the observations;
 *   - gone series stay until their grace is over, then are removed and
 *     counted; collect[] owners filter families.
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
#include <math.h>

#include "metrics/metrics.h"
#include "metrics/nhist.h"
#include "api/proto/prometheus/metrics.pb-c.h"

/* ---- native bucket math ---- */

static void test_nhist_reference(void **state)
{
	static const double vals[] = {1.0,
				      2.0,
				      0.5,
				      1.5,
				      3.0,
				      1e-3,
				      0.0123,
				      7.5,
				      100,
				      1e9,
				      4.2e-7,
				      1.0000001,
				      1.4142135623730951,
				      0.99};
	static const struct {
		int schema;
		int32_t idx[14];
	} ref[] = {
	    {-4, {0, 1, 0, 1, 1, 0, 0, 1, 1, 2, -1, 1, 1, 0}},
	    {-1, {0, 1, 0, 1, 1, -4, -3, 2, 4, 15, -10, 1, 1, 0}},
	    {0, {0, 1, -1, 1, 2, -9, -6, 3, 7, 30, -21, 1, 1, 0}},
	    {1, {0, 2, -2, 2, 4, -19, -12, 6, 14, 60, -42, 1, 2, 0}},
	    {3, {0, 8, -8, 5, 13, -79, -50, 24, 54, 240, -169, 1, 5, 0}},
	    {8, {0, 256, -256, 150, 406, -2551, -1624, 745, 1701, 7654, -5422, 1, 129, -3}},
	};

	for (size_t r = 0; r < sizeof(ref) / sizeof(ref[0]); r++)
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			int32_t got = nhist_index(vals[i], ref[r].schema);

			if (got != ref[r].idx[i])
				fail_msg("schema %d v=%.17g: index %d, want %d", ref[r].schema,
					 vals[i], got, ref[r].idx[i]);
		}
	/* Each value lies in (upper(i-1), upper(i)]. */
	for (int s = NHIST_SCHEMA_MIN; s <= NHIST_SCHEMA_MAX; s++)
		for (double v = 1e-6; v < 1e6; v *= 1.37) {
			int32_t i = nhist_index(v, s);

			assert_true(v <= nhist_upper(i, s) * (1 + 1e-12));
			assert_true(v > nhist_upper(i - 1, s) * (1 - 1e-12));
		}
}

static void test_nhist_reduce(void **state)
{
	struct nhist small = {.schema = 8}, direct = {0};
	uint64_t total = 0;
	size_t n = 0;

	for (double v = 1e-6; v < 1e3; v *= 1.05, n++)
		assert_int_equal(nhist_add(&small, v, 1, 1e-9, 20), 0);
	assert_true(small.schema < 8);
	assert_true(small.pos.len <= 20);
	direct.schema = small.schema;
	for (double v = 1e-6; v < 1e3; v *= 1.05)
		assert_int_equal(nhist_add(&direct, v, 1, 1e-9, 0), 0);
	/* Merging down equals bucketing at the lower schema. */
	assert_int_equal(small.pos.offset, direct.pos.offset);
	assert_int_equal(small.pos.len, direct.pos.len);
	for (uint32_t i = 0; i < small.pos.len; i++) {
		assert_int_equal(small.pos.counts[i], direct.pos.counts[i]);
		total += small.pos.counts[i];
	}
	assert_int_equal(total, n);
	/* Zero bucket and negative side. */
	assert_int_equal(nhist_add(&small, 0, 2, 1e-9, 20), 0);
	assert_int_equal(nhist_add(&small, -3, 1, 1e-9, 20), 0);
	assert_int_equal(small.zero_count, 2);
	assert_int_equal(small.neg.len, 1);
	nhist_free(&small);
	nhist_free(&direct);
}

static void test_nhist_spans(void **state)
{
	uint64_t c[] = {1, 2, 0, 0, 0, 3, 0, 1};
	struct nhist_side side = {.offset = -2, .len = 8, .counts = c};
	int32_t off[8];
	uint32_t len[8];
	int64_t d[8];
	size_t nd, ns;

	ns = nhist_spans(&side, off, len, d, &nd);
	/* [-2,-1] then 3 empty buckets (a new span), then 3, (one empty
	 * bucket kept inside the span), 1. */
	assert_int_equal(ns, 2);
	assert_int_equal(off[0], -2);
	assert_int_equal(len[0], 2);
	assert_int_equal(off[1], 3);
	assert_int_equal(len[1], 3);
	assert_int_equal(nd, 5);
	int64_t want[] = {1, 1, 1, -3, 1};
	for (size_t i = 0; i < nd; i++)
		assert_int_equal(d[i], want[i]);
}

/* ---- the encoders on one registry ---- */

struct sample {
	char key[256];
	double v;
};

struct samples {
	struct sample s[512];
	size_t n;
};

static void add(struct samples *ss, const char *key, double v)
{
	assert_true(ss->n < 512);
	snprintf(ss->s[ss->n].key, sizeof(ss->s[0].key), "%s", key);
	ss->s[ss->n++].v = v;
}

static double find(const struct samples *ss, const char *key)
{
	for (size_t i = 0; i < ss->n; i++)
		if (!strcmp(ss->s[i].key, key))
			return ss->s[i].v;
	fail_msg("no sample %s", key);
	return NAN;
}

/* Text or OpenMetrics lines "key value[ # exemplar]"; OpenMetrics
 * "le" values lose their ".0" so keys compare with text 0.0.4 ones;
 * _created samples are skipped. */
static void parse_text(const char *body, struct samples *ss, bool om)
{
	char *dup = strdup(body), *save = NULL;

	for (char *l = strtok_r(dup, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp, key[256];

		if (l[0] == '#')
			continue;
		sp = strchr(l, '}') ? strchr(strchr(l, '}'), ' ') : strchr(l, ' ');
		assert_non_null(sp);
		snprintf(key, sizeof(key), "%.*s", (int)(sp - l), l);
		if (strstr(key, "_created"))
			continue;
		if (om) {
			char *le = strstr(key, "le=\"");
			char *dot = le ? strstr(le, ".0\"") : NULL;

			if (dot)
				memmove(dot, dot + 2, strlen(dot + 2) + 1);
		}
		add(ss, key, strtod(sp + 1, NULL));
	}
	free(dup);
}

static void label_key(char *out, size_t size, const char *name,
		      const Io__Prometheus__Client__Metric *m, const char *le)
{
	size_t n = (size_t)snprintf(out, size, "%s", name);

	if (!m->n_label && !le)
		return;
	n += (size_t)snprintf(out + n, size - n, "{");
	for (size_t i = 0; i < m->n_label; i++) {
		n +=
		    (size_t)snprintf(out + n, size - n, "%s%s=\"", i ? "," : "", m->label[i]->name);
		/* escaped as the text format escapes it */
		for (const char *c = m->label[i]->value; *c && n + 3 < size; c++) {
			if (*c == '\\' || *c == '"' || *c == '\n')
				out[n++] = '\\';
			out[n++] = *c == '\n' ? 'n' : *c;
		}
		n += (size_t)snprintf(out + n, size - n, "\"");
	}
	if (le)
		n += (size_t)snprintf(out + n, size - n, "%sle=\"%s\"", m->n_label ? "," : "", le);
	snprintf(out + n, size - n, "}");
}

/* Decodes the delimited stream; fams[] (caller frees) and samples. */
static size_t parse_pb(const uint8_t *p, size_t len, Io__Prometheus__Client__MetricFamily **fams,
		       struct samples *ss)
{
	size_t nf = 0;

	while (len) {
		uint64_t n = 0;
		int shift = 0;
		Io__Prometheus__Client__MetricFamily *f;

		do {
			assert_true(len > 0);
			n |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
			len--;
		} while (*p++ & 0x80);
		assert_true(n <= len);
		f = io__prometheus__client__metric_family__unpack(NULL, n, p);
		assert_non_null(f);
		p += n;
		len -= n;
		fams[nf++] = f;
		for (size_t i = 0; i < f->n_metric; i++) {
			const Io__Prometheus__Client__Metric *m = f->metric[i];
			char key[256], le[64], name[128];

			if (m->counter || m->gauge) {
				label_key(key, sizeof(key), f->name, m, NULL);
				add(ss, key, m->counter ? m->counter->value : m->gauge->value);
				continue;
			}
			assert_non_null(m->histogram);
			for (size_t b = 0; b < m->histogram->n_bucket; b++) {
				char v[METRICS_VALUE_MAX];

				metrics_format_value(m->histogram->bucket[b]->upper_bound, v);
				snprintf(le, sizeof(le), "%s", v);
				snprintf(name, sizeof(name), "%s_bucket", f->name);
				label_key(key, sizeof(key), name, m, le);
				add(ss, key, (double)m->histogram->bucket[b]->cumulative_count);
			}
			/* +Inf is implied by the count. */
			snprintf(name, sizeof(name), "%s_bucket", f->name);
			label_key(key, sizeof(key), name, m, "+Inf");
			add(ss, key, (double)m->histogram->sample_count);
			snprintf(name, sizeof(name), "%s_sum", f->name);
			label_key(key, sizeof(key), name, m, NULL);
			add(ss, key, m->histogram->sample_sum);
			snprintf(name, sizeof(name), "%s_count", f->name);
			label_key(key, sizeof(key), name, m, NULL);
			add(ss, key, (double)m->histogram->sample_count);
		}
	}
	return nf;
}

static struct metrics *fixture(struct metric_series **lat_out)
{
	static const char *const rl[] = {"reason", NULL};
	static const double bounds[] = {0.001, 0.01, 0.1, 1};
	static const double klog[] = {1, 2, 4, 8};
	struct metrics *m = metrics_new();
	struct metric *drops, *lat, *kern;
	struct metric_series *s;
	const char *v1[] = {"NO_SOCKET"}, *v2[] = {"a \"quoted\"\\ value\n"};

	drops = metrics_counter(m, "t_drops_total", "Drops by reason.", rl);
	metric_set_owner(drops, "drops");
	s = metric_series(drops, v1);
	series_add(s, 41);
	series_add(s, 1);
	assert_int_equal(series_exemplar(s, "sample_id", "1234", 1, 1733230000.5), 0);
	series_set(metric_series(drops, v2), 7); /* mirrored total: no _created */
	series_set(metrics_gauge1(m, "t_queue_depth", "Queue \"depth\".\nSecond line."), 2.5);
	lat = metrics_histogram(m, "t_latency_seconds", "Latency.", NULL, bounds, 4);
	metric_set_owner(lat, "cachefiles");
	s = metric_series(lat, NULL);
	for (double v = 0.0002; v < 5; v *= 1.9)
		series_observe(s, v);
	assert_int_equal(series_exemplar(s, "request_id", "77", 0.05, 1733230001), 0);
	kern = metrics_histogram(m, "t_kernel_seconds", "", NULL, klog, 4);
	uint64_t kc[] = {1, 2, 3, 4, 5};
	series_histogram_set(metric_series(kern, NULL), kc, 40);
	*lat_out = s;
	return m;
}

static void test_encoders_agree(void **state)
{
	struct metric_series *lat;
	struct metrics *m = fixture(&lat);
	Io__Prometheus__Client__MetricFamily *fams[32];
	struct samples *text = calloc(1, sizeof(*text)), *om = calloc(1, sizeof(*om)),
		       *pb = calloc(1, sizeof(*pb));
	char *t, *o, *p;
	size_t tl, ol, pl, nf;

	assert_int_equal(metrics_render(m, METRICS_FMT_TEXT, NULL, &t, &tl), 0);
	assert_int_equal(metrics_render(m, METRICS_FMT_OPENMETRICS, NULL, &o, &ol), 0);
	assert_int_equal(metrics_render(m, METRICS_FMT_PROTOBUF, NULL, &p, &pl), 0);
	parse_text(t, text, false);
	parse_text(o, om, true);
	nf = parse_pb((const uint8_t *)p, pl, fams, pb);
	assert_int_equal(nf, 4);
	assert_true(text->n > 10);
	assert_int_equal(text->n, om->n);
	assert_int_equal(text->n, pb->n);
	for (size_t i = 0; i < text->n; i++) {
		double a = text->s[i].v;

		assert_true(find(om, text->s[i].key) == a);
		assert_true(find(pb, text->s[i].key) == a);
	}
	assert_true(find(text, "t_drops_total{reason=\"NO_SOCKET\"}") == 42);

	/* Protobuf: the counter's exemplar and created time; the native
	 * buckets of the observed histogram hold every observation. */
	for (size_t i = 0; i < nf; i++) {
		Io__Prometheus__Client__MetricFamily *f = fams[i];

		if (!strcmp(f->name, "t_drops_total")) {
			const Io__Prometheus__Client__Counter *c = f->metric[0]->counter;

			assert_int_equal(f->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER);
			assert_non_null(c->exemplar);
			assert_string_equal(c->exemplar->label[0]->name, "sample_id");
			assert_string_equal(c->exemplar->label[0]->value, "1234");
			assert_int_equal(c->exemplar->timestamp->seconds, 1733230000);
			assert_int_equal(c->exemplar->timestamp->nanos, 500000000);
			assert_non_null(c->created_timestamp);
			assert_null(f->metric[1]->counter->created_timestamp);
		}
		if (!strcmp(f->name, "t_latency_seconds")) {
			const Io__Prometheus__Client__Histogram *h = f->metric[0]->histogram;
			uint64_t total = h->zero_count;
			int64_t c = 0;
			size_t d = 0;
			int32_t idx = 0;

			assert_string_equal(f->unit, "seconds");
			assert_true(h->has_schema);
			assert_int_equal(h->schema, 3);
			assert_true(h->zero_threshold > 0);
			/* Rebuild the buckets: every observation in its own. */
			for (size_t sp = 0; sp < h->n_positive_span; sp++) {
				idx += h->positive_span[sp]->offset;
				for (uint32_t k = 0; k < h->positive_span[sp]->length; k++, idx++) {
					c += h->positive_delta[d++];
					total += (uint64_t)c;
					if (!c)
						continue;
					/* exactly one observation per bucket here */
					int found = 0;
					for (double v = 0.0002; v < 5; v *= 1.9)
						found += nhist_index(v, 3) == idx;
					assert_int_equal(found, c);
				}
			}
			assert_int_equal(total, h->sample_count);
			assert_int_equal(d, h->n_positive_delta);
			/* The exemplar sits on the 0.1 bucket (0.05 <= 0.1). */
			assert_null(h->bucket[1]->exemplar);
			assert_non_null(h->bucket[2]->exemplar);
			assert_string_equal(h->bucket[2]->exemplar->label[0]->value, "77");
		}
		if (!strcmp(f->name, "t_kernel_seconds")) {
			const Io__Prometheus__Client__Histogram *h = f->metric[0]->histogram;
			uint64_t total = h->zero_count;
			int64_t c = 0;

			/* Re-binned from the kernel buckets: the counts are kept. */
			for (size_t d = 0; d < h->n_positive_delta; d++) {
				c += h->positive_delta[d];
				total += (uint64_t)c;
			}
			assert_int_equal(total, 15);
			assert_null(h->created_timestamp);
		}
	}
	for (size_t i = 0; i < nf; i++)
		io__prometheus__client__metric_family__free_unpacked(fams[i], NULL);
	free(t);
	free(o);
	free(p);
	free(text);
	free(om);
	free(pb);
	metrics_free(m);
}

static void test_openmetrics_format(void **state)
{
	struct metric_series *lat;
	struct metrics *m = fixture(&lat);
	char *o;
	size_t ol;

	assert_int_equal(metrics_render(m, METRICS_FMT_OPENMETRICS, NULL, &o, &ol), 0);
	/* Ends with # EOF, exactly once. */
	assert_true(ol > 6 && !strcmp(o + ol - 6, "# EOF\n"));
	assert_true(strstr(o, "# EOF") == o + ol - 6);
	/* Counter family without _total; its samples keep it. */
	assert_non_null(strstr(o, "# TYPE t_drops counter\n"));
	assert_null(strstr(o, "# TYPE t_drops_total"));
	assert_non_null(
	    strstr(o, "t_drops_total{reason=\"NO_SOCKET\"} 42.0 # {sample_id=\"1234\"} 1.0 "
		      "1733230000.500\n"));
	/* _created for the counter that counted from zero, not for the mirror. */
	assert_non_null(strstr(o, "t_drops_created{reason=\"NO_SOCKET\"} "));
	assert_null(strstr(o, "t_drops_created{reason=\"a"));
	/* Unit, escaped HELP, float bounds, bucket exemplar. */
	assert_non_null(strstr(o, "# UNIT t_latency_seconds seconds\n"));
	assert_non_null(strstr(o, "# HELP t_queue_depth Queue \\\"depth\\\".\\nSecond line.\n"));
	assert_non_null(strstr(o, "t_latency_seconds_bucket{le=\"1.0\"} "));
	assert_non_null(strstr(o, "t_latency_seconds_bucket{le=\"0.1\"} 10 # {request_id=\"77\"} "
				  "0.05 1733230001.000\n"));
	assert_non_null(strstr(o, "t_latency_seconds_created "));
	assert_null(strstr(o, "t_kernel_seconds_created"));
	/* Text 0.0.4 has none of it. */
	char *t;
	size_t tl;
	assert_int_equal(metrics_render(m, METRICS_FMT_TEXT, NULL, &t, &tl), 0);
	assert_null(strstr(t, "# EOF"));
	assert_null(strstr(t, "_created"));
	assert_null(strstr(t, "sample_id"));
	assert_non_null(strstr(t, "# TYPE t_drops_total counter\n"));
	free(t);
	free(o);
	metrics_free(m);
}

static size_t removed_n;
static char removed_owner[32];

static void on_removed(const char *owner, size_t n, void *arg)
{
	removed_n += n;
	snprintf(removed_owner, sizeof(removed_owner), "%s", owner ? owner : "(agent)");
}

static void test_gone_and_owners(void **state)
{
	static const char *const nl[] = {"netns", NULL};
	struct metrics *m = metrics_new();
	struct metric *f = metrics_counter(m, "t_x_total", "", nl);
	const char *a[] = {"4026531840"}, *b[] = {"4026532000"};
	struct metric_series *sa = metric_series(f, a), *sb = metric_series(f, b);
	const char *only_drops[] = {"drops", NULL}, *only_mptcp[] = {"mptcp", NULL};
	char *t;
	size_t tl;

	metric_set_owner(f, "drops");
	series_add(sa, 1);
	series_add(sb, 2);
	metric_series_gone(f, sb, 1000);
	/* Still rendered during the grace. */
	assert_int_equal(metrics_expire(m, 1000 + 59, 60, on_removed, NULL), 0);
	assert_int_equal(metrics_render_text(m, &t, &tl), 0);
	assert_non_null(strstr(t, "4026532000"));
	free(t);
	/* Then removed and counted for its owner. */
	assert_int_equal(metrics_expire(m, 1000 + 60, 60, on_removed, NULL), 1);
	assert_int_equal(removed_n, 1);
	assert_string_equal(removed_owner, "drops");
	assert_int_equal(metrics_series_count(m), 1);
	/* Found again before expiry: live again. */
	metric_series_gone(f, sa, 2000);
	assert_ptr_equal(metric_series(f, a), sa);
	assert_int_equal(metrics_expire(m, 9000, 60, on_removed, NULL), 0);
	/* A whole collector gone. */
	metrics_owner_gone(m, "drops", 3000);
	assert_int_equal(metrics_expire(m, 3000, 0, on_removed, NULL), 1);
	assert_int_equal(metrics_series_count(m), 0);

	/* collect[]: a family of another collector is left out, the agent's
	 * own (no owner) stays. */
	series_add(metric_series(f, a), 1);
	series_set(metrics_gauge1(m, "t_agent_gauge", ""), 1);
	assert_int_equal(metrics_render(m, METRICS_FMT_TEXT, only_mptcp, &t, &tl), 0);
	assert_null(strstr(t, "t_x_total"));
	assert_non_null(strstr(t, "t_agent_gauge"));
	free(t);
	assert_int_equal(metrics_render(m, METRICS_FMT_TEXT, only_drops, &t, &tl), 0);
	assert_non_null(strstr(t, "t_x_total"));
	free(t);
	metrics_free(m);
}

static void test_openmetrics_name_clash(void **state)
{
	struct metrics *m = metrics_new();

	/* Counter x_total is family x in OpenMetrics: a second x is refused. */
	assert_non_null(metrics_counter(m, "t_mib_total", "", NULL));
	errno = 0;
	assert_null(metrics_gauge(m, "t_mib", "", NULL));
	assert_int_equal(errno, EEXIST);
	/* The other order too. */
	assert_non_null(metrics_gauge(m, "t_other", "", NULL));
	assert_null(metrics_counter(m, "t_other_total", "", NULL));
	/* A gauge named ..._total is no counter family: no clash. */
	assert_non_null(metrics_gauge(m, "t_g_total", "", NULL));
	assert_non_null(metrics_gauge(m, "t_g", "", NULL));
	metrics_free(m);
}

static void test_exemplar_validation(void **state)
{
	struct metrics *m = metrics_new();
	struct metric_series *c = metrics_counter1(m, "t_c_total", "");
	struct metric_series *g = metrics_gauge1(m, "t_g", "");
	char big[80];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(series_exemplar(c, "__bad", "1", 1, 1), -EINVAL);
	assert_int_equal(series_exemplar(c, "id", "\xff\xfe", 1, 1), -EINVAL);
	assert_int_equal(series_exemplar(c, "id", big, 1, 1), -EINVAL);
	assert_int_equal(series_exemplar(g, "id", "1", 1, 1), -EINVAL);
	assert_int_equal(series_exemplar(c, "id", "1", 1, 1), 0);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nhist_reference),
	    cmocka_unit_test(test_nhist_reduce),
	    cmocka_unit_test(test_nhist_spans),
	    cmocka_unit_test(test_encoders_agree),
	    cmocka_unit_test(test_openmetrics_format),
	    cmocka_unit_test(test_gone_and_owners),
	    cmocka_unit_test(test_exemplar_validation),
	    cmocka_unit_test(test_openmetrics_name_clash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
