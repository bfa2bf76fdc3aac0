/* SPDX-License-Identifier: MIT */
/*
 * /metrics render time with 10,000 series: 100 families x 100 label values
 * (60 counters with integer values, one in ten with an exemplar, 30 gauges
 * with fractional values, 10 histograms with 10 classic buckets and native
 * buckets beside them), rendered N times (default 2,000) with a few hundred
 * values changed between renders, as collectors would, in each of the three
 * formats side by side: text 0.0.4, OpenMetrics 1.0.0, delimited protobuf.
 * Prints p50/p99/max in ms and the size of one exposition.
 *
 * For reference, the same samples rendered by a plain snprintf() loop over
 * the same data (what a minimal hand-rolled exporter does: "%s{%s=\"%s\"}
 * %.17g\n" per line, no escaping, no sorting, no lock) go through the same
 * timing.
 *
 * Before the renders, the cost of finding a series by its label values
 * (metric_series(), what every sink update of a collector pays): each of
 * the 10,000 series looked up 100 times; then 10,000 series made in one
 * family (the table grows) and each looked up 100 times.
 *
 * Last, the whole scrape: GET /metrics from a libmicrohttpd server on a
 * loopback port (libcurl, one kept-alive connection), N/4 times.
 *
 *	bench_metrics [renders]
 */
#include <curl/curl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/http.h"
#include "metrics/metrics.h"
#include "api/routes.h"

#define FAMILIES 100
#define VALUES	 100
#define BUCKETS	 10

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of this thread: the render's own cost, without the time the
 * scheduler gave to other processes on a busy machine. */
static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, double *c, size_t n, size_t bytes)
{
	qsort(t, n, sizeof(*t), cmp_double);
	qsort(c, n, sizeof(*c), cmp_double);
	printf("%s: %zu bytes, %zu runs\n", what, bytes, n);
	printf("  wall p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", t[n / 2], t[(size_t)(n * 0.99)],
	       t[n - 1]);
	printf("  cpu  p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", c[n / 2], c[(size_t)(n * 0.99)],
	       c[n - 1]);
}

static enum metric_type family_type(int f)
{
	return f < 60 ? METRIC_COUNTER : f < 90 ? METRIC_GAUGE : METRIC_HISTOGRAM;
}

/* The baseline's view of the same data. */
struct plain_series {
	char value[16];
	double v, sum;
	uint64_t counts[BUCKETS + 1];
};

static struct plain_series plain[FAMILIES][VALUES];
static char fam_names[FAMILIES][48];
static const double bounds[BUCKETS] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};

static size_t render_plain(char *buf, size_t cap)
{
	size_t off = 0;

	for (int f = 0; f < FAMILIES; f++) {
		enum metric_type t = family_type(f);

		off +=
		    snprintf(buf + off, cap - off, "# HELP %s Benchmark family %d.\n# TYPE %s %s\n",
			     fam_names[f], f, fam_names[f],
			     t == METRIC_COUNTER ? "counter"
			     : t == METRIC_GAUGE ? "gauge"
						 : "histogram");
		for (int v = 0; v < VALUES; v++) {
			struct plain_series *p = &plain[f][v];
			uint64_t cum = 0;

			if (t != METRIC_HISTOGRAM) {
				off += snprintf(buf + off, cap - off, "%s{id=\"%s\"} %.17g\n",
						fam_names[f], p->value, p->v);
				continue;
			}
			for (int b = 0; b <= BUCKETS; b++) {
				cum += p->counts[b];
				if (b < BUCKETS)
					off += snprintf(buf + off, cap - off,
							"%s_bucket{id=\"%s\",le=\"%g\"} %llu\n",
							fam_names[f], p->value, bounds[b],
							(unsigned long long)cum);
				else
					off += snprintf(buf + off, cap - off,
							"%s_bucket{id=\"%s\",le=\"+Inf\"} %llu\n",
							fam_names[f], p->value,
							(unsigned long long)cum);
			}
			off += snprintf(buf + off, cap - off, "%s_sum{id=\"%s\"} %.17g\n",
					fam_names[f], p->value, p->sum);
			off += snprintf(buf + off, cap - off, "%s_count{id=\"%s\"} %llu\n",
					fam_names[f], p->value, (unsigned long long)cum);
		}
	}
	return off;
}

static void h_metrics(const struct http_request *req, struct http_response *res, void *arg)
{
	char *buf;
	size_t len;

	if (metrics_render_text(arg, &buf, &len)) {
		http_reply_error(res, 500, "internal", "render failed");
		return;
	}
	http_reply_text(res, 200, METRICS_CT_TEXT, buf, len);
}

static size_t count_body(char *p, size_t sz, size_t n, void *arg)
{
	*(size_t *)arg += sz * n;
	return sz * n;
}

/* GET /metrics over loopback, plain or asking for gzip (as Prometheus
 * does); returns 0 or -1. */
static int bench_scrape(struct metrics *m, size_t n, double *t, double *c, bool gzip)
{
	struct http_config cfg = {.listen = "127.0.0.1:0",
				  .threads = 1,
				  .gzip = gzip ? HTTP_GZIP_ALWAYS : HTTP_GZIP_AUTO};
	struct http_server *h = http_new(&cfg, NULL);
	size_t bytes = 0;
	char url[64];
	CURL *cu;

	if (!h || http_route(h, "GET", "/metrics", false, h_metrics, m) || http_start(h))
		return -1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", http_port(h));
	cu = curl_easy_init();
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, count_body);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, &bytes);
	curl_easy_setopt(cu, CURLOPT_NOPROXY, "*");
	if (gzip) /* curl decompresses; bytes counts the decompressed body */
		curl_easy_setopt(cu, CURLOPT_ACCEPT_ENCODING, "gzip");
	for (size_t i = 0; i < n; i++) {
		double t0 = now_ms(), c0 = cpu_ms();
		long code = 0;

		bytes = 0;
		if (curl_easy_perform(cu) != CURLE_OK)
			return -1;
		curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200)
			return -1;
		c[i] = cpu_ms() - c0;
		t[i] = now_ms() - t0;
	}
	curl_easy_cleanup(cu);
	http_free(h);
	report(gzip ? "GET /metrics over loopback, gzip = always (client cpu only)"
		    : "GET /metrics over loopback (client cpu only)",
	       t, c, n, bytes);
	return 0;
}

/* The gzip step the server adds when asked, on one rendered body. */
static void bench_gzip(struct metrics *m, size_t n, double *t, double *c)
{
	size_t len, zlen = 0;
	char *buf, *z;

	if (metrics_render_text(m, &buf, &len))
		return;
	for (size_t i = 0; i < n; i++) {
		double t0 = now_ms(), c0 = cpu_ms();

		if (http_gzip(buf, len, &z, &zlen))
			break;
		c[i] = cpu_ms() - c0;
		t[i] = now_ms() - t0;
		free(z);
	}
	printf("gzip level 1: %zu -> %zu bytes (%.1fx)\n", len, zlen, (double)len / (double)zlen);
	report("http_gzip of the 10,000-series body", t, c, n, zlen);
	free(buf);
}

/* CPU ns per metric_series() of an existing series, over rounds x n
 * lookups (CPU time: the figure holds on a busy machine). */
static double lookup_ns(struct metric *const *fams, char (*vals)[16], size_t n, int rounds)
{
	double t0 = cpu_ms();

	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < n; i++) {
			const char *v[] = {vals[i]};

			if (!metric_series(fams[i], v))
				return -1;
		}
	}
	return (cpu_ms() - t0) * 1e6 / ((double)n * rounds);
}

/* Series lookups in the 100 x 100 registry, then in one family of 10,000. */
static void bench_lookup(struct metric *const *by_family)
{
	static const char *const labels[] = {"id", NULL};
	static struct metric *fams[FAMILIES * VALUES];
	static char vals[FAMILIES * VALUES][16];
	struct metrics *one = metrics_new();
	struct metric *big;
	double t0;

	for (size_t i = 0; i < FAMILIES * VALUES; i++) {
		fams[i] = by_family[i / VALUES];
		snprintf(vals[i], sizeof(vals[i]), "value_%02zu", i % VALUES);
	}
	printf("series lookup, 100 families x 100 series: %.1f ns CPU each\n",
	       lookup_ns(fams, vals, FAMILIES * VALUES, 100));
	big = one ? metrics_gauge(one, "sysobs_bench_one_family", "One big family.", labels) : NULL;
	if (!big)
		return;
	for (size_t i = 0; i < FAMILIES * VALUES; i++) {
		fams[i] = big;
		snprintf(vals[i], sizeof(vals[i]), "v%zu", i);
	}
	t0 = cpu_ms();
	lookup_ns(fams, vals, FAMILIES * VALUES, 1);
	printf("series creation, 10,000 in one family: %.2f ms CPU; ", cpu_ms() - t0);
	printf("lookup: %.1f ns CPU each\n", lookup_ns(fams, vals, FAMILIES * VALUES, 100));
	metrics_free(one);
}

int main(int argc, char **argv)
{
	static const char *const labels[] = {"id", NULL};
	static struct metric_series *series[FAMILIES][VALUES];
	static struct metric *fams[FAMILIES];
	size_t renders = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	struct metrics *m = metrics_new();
	double *t = calloc(renders ? renders : 1, sizeof(*t));
	double *c = calloc(renders ? renders : 1, sizeof(*c));
	size_t bytes = 0;
	unsigned rnd = 1;

	if (!m || !t || !c || !renders)
		return 1;
	for (int f = 0; f < FAMILIES; f++) {
		enum metric_type type = family_type(f);
		char help[64];
		struct metric *fam;

		snprintf(fam_names[f], sizeof(fam_names[f]), "sysobs_bench_family_%03d%s", f,
			 type == METRIC_COUNTER ? "_total"
			 : type == METRIC_GAUGE ? "_ratio"
						: "_seconds");
		snprintf(help, sizeof(help), "Benchmark family %d.", f);
		if (type == METRIC_COUNTER)
			fam = metrics_counter(m, fam_names[f], help, labels);
		else if (type == METRIC_GAUGE)
			fam = metrics_gauge(m, fam_names[f], help, labels);
		else
			fam = metrics_histogram(m, fam_names[f], help, labels, bounds, BUCKETS);
		fams[f] = fam;
		for (int v = 0; v < VALUES; v++) {
			const char *vals[] = {plain[f][v].value};

			snprintf(plain[f][v].value, sizeof(plain[f][v].value), "value_%02d", v);
			series[f][v] = metric_series(fam, vals);
			if (!series[f][v])
				return 1;
			for (int k = 0; type == METRIC_HISTOGRAM && k < 20; k++) {
				double x = (k * 37 % 100) / 13.0 * 0.01;

				series_observe(series[f][v], x);
				plain[f][v].sum += x;
			}
			for (int b = 0; b <= BUCKETS; b++)
				plain[f][v].counts[b] = b * 3 + 1;
			if (type == METRIC_COUNTER) {
				char id[16];

				series_add(series[f][v], plain[f][v].v = f * 1000 + v);
				snprintf(id, sizeof(id), "%d", f * 100 + v);
				if (v % 10 == 0)
					series_exemplar(series[f][v], "sample_id", id, 1,
							1733230000.25);
			} else if (type == METRIC_GAUGE)
				series_set(series[f][v], plain[f][v].v = (f * 100 + v) * 0.37);
		}
	}
	printf("registry: %zu series in %d families (60 counters, 30 gauges, 10 histograms of "
	       "%d buckets)\n",
	       metrics_series_count(m), FAMILIES, BUCKETS);
	bench_lookup(fams);

	static const char *const fmt_names[] = {"text 0.0.4", "OpenMetrics 1.0.0",
						"protobuf (delimited, classic + native buckets)"};
	for (int fmt = METRICS_FMT_TEXT; fmt <= METRICS_FMT_PROTOBUF; fmt++) {
		char what[128];

		for (size_t i = 0; i < renders; i++) {
			char *buf;
			size_t len;
			double t0, c0;

			/* collectors keep updating between scrapes */
			for (int k = 0; k < 300; k++) {
				rnd = rnd * 1103515245 + 12345;
				int f = (rnd >> 8) % FAMILIES, v = (rnd >> 16) % VALUES;

				if (family_type(f) == METRIC_HISTOGRAM)
					series_observe(series[f][v], (rnd % 1000) / 1e4);
				else if (family_type(f) == METRIC_COUNTER)
					series_add(series[f][v], 1);
				else
					series_set(series[f][v], (rnd % 100000) / 7.0);
			}
			t0 = now_ms();
			c0 = cpu_ms();
			if (metrics_render(m, (enum metrics_format)fmt, NULL, &buf, &len))
				return 1;
			c[i] = cpu_ms() - c0;
			t[i] = now_ms() - t0;
			bytes = len;
			free(buf);
		}
		snprintf(what, sizeof(what), "metrics_render %s, 10,000 series", fmt_names[fmt]);
		report(what, t, c, renders, bytes);
	}

	size_t cap = bytes * 2 + 65536;
	char *pb = malloc(cap);
	for (size_t i = 0; i < renders; i++) {
		double t0 = now_ms(), c0 = cpu_ms();

		bytes = render_plain(pb, cap);
		c[i] = cpu_ms() - c0;
		t[i] = now_ms() - t0;
	}
	report("baseline: plain snprintf loop, same samples", t, c, renders, bytes);
	free(pb);

	bench_gzip(m, renders / 4 ? renders / 4 : 1, t, c);
	if (bench_scrape(m, renders / 4 ? renders / 4 : 1, t, c, false) ||
	    bench_scrape(m, renders / 4 ? renders / 4 : 1, t, c, true))
		fprintf(stderr, "scrape over HTTP failed\n");
	free(t);
	free(c);
	metrics_free(m);
	return 0;
}
