/* SPDX-License-Identifier: MIT */
/*
 * The agent's own routes. Handlers run on libmicrohttpd's threads: they read
 * the metrics registry (under its lock), the store (through read-only
 * connections) and the collectors' status fields, which the main thread
 * writes without a lock; those are copied field by field with relaxed atomic
 * loads, so a response may mix an old and a new value but never reads a
 * half-written integer, and a reason string is always NUL-terminated.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "api/http.h"
#include "api/metrics.h"
#include "api/query.h"
#include "api/routes.h"
#include "collectors/collector.h"
#include "storage/store_query.h"

#define CT_HTML "text/html; charset=utf-8"

/* A writer with rows queued and no commit for this long is stuck. */
#define HEALTH_STUCK_NS (30LL * 1000000000)

/* /api/v1/series: window when start is not given, and the most points one
 * answer may carry (about 30 bytes of JSON each). */
#define API_SERIES_DEFAULT_RANGE_NS (3600LL * 1000000000)
#define API_SERIES_POINTS_TOTAL_MAX 250000

struct api_ctx {
	struct agent *a;
	struct metric_series *scrape;

	pthread_mutex_t health_lock;
	uint64_t health_rows;	    /* rows_written at the last sign of progress */
	uint64_t health_errors;	    /* write_errors then */
	int64_t health_progress_ns; /* monotonic time of that */
};

/* One agent per process: the context lives as long as the program. */
static struct api_ctx api_ctx = {.health_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- collector status snapshot ---- */

struct collector_snap {
	const char *name;
	const char *help;
	enum collector_state state;
	char why[sizeof(((struct collector *)0)->why)];
	int64_t last_activity_ns;
	uint64_t errors;
};

static void collector_snapshot(const struct collector *c, struct collector_snap *s)
{
	size_t i;

	s->name = c->ops->name;
	s->help = c->ops->help ? c->ops->help : "";
	s->state = (enum collector_state)__atomic_load_n((const int *)&c->state, __ATOMIC_RELAXED);
	for (i = 0; i < sizeof(s->why) - 1; i++) {
		s->why[i] = __atomic_load_n(&c->why[i], __ATOMIC_RELAXED);
		if (!s->why[i])
			break;
	}
	s->why[i] = '\0';
	s->last_activity_ns = __atomic_load_n(&c->last_activity_ns, __ATOMIC_RELAXED);
	s->errors = __atomic_load_n(&c->errors, __ATOMIC_RELAXED);
}

/* json_string() for text that may hold invalid UTF-8 (a torn or kernel-made
 * reason): non-ASCII bytes become '?' when the whole is not valid. */
static json_t *json_string_lossy(const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++) {
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	}
	j = json_string(copy);
	free(copy);
	return j;
}

static json_t *json_time_or_null(int64_t ns)
{
	char buf[48];

	if (ns <= 0 || time_format_rfc3339(ns, buf, sizeof(buf)) < 0)
		return json_null();
	return json_string(buf);
}

/* ---- HTML landing page ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->len + n < b->cap) {
			b->len += n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + n;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/* HTML-escapes s into buf (truncating). */
static const char *html_esc(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 7 < len; s++) {
		switch (*s) {
		case '<':
			n += snprintf(buf + n, len - n, "&lt;");
			break;
		case '>':
			n += snprintf(buf + n, len - n, "&gt;");
			break;
		case '&':
			n += snprintf(buf + n, len - n, "&amp;");
			break;
		case '"':
			n += snprintf(buf + n, len - n, "&quot;");
			break;
		default:
			buf[n++] = *s;
		}
	}
	buf[n] = '\0';
	return buf;
}

static void html_route(struct sbuf *b, const char *method, const char *path, const char *what)
{
	char p[512], w[512];

	html_esc(path, p, sizeof(p));
	html_esc(what, w, sizeof(w));
	if (!strcmp(method, "GET"))
		sbuf_printf(b, "<li><a href=\"%s\">%s</a> &mdash; %s</li>\n", p, p, w);
	else
		sbuf_printf(b, "<li>%s %s &mdash; %s</li>\n", method, p, w);
}

static void route_index(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	struct agent *a = ctx->a;
	struct sbuf b = {0};
	char e1[512], e2[512], e3[64];

	if (query_params_check(req, NULL, res))
		return;
	sbuf_printf(&b,
		    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sysobs</title>"
		    "</head>\n<body>\n<h1>sysobs %s</h1>\n",
		    SYSOBS_VERSION);
	if (a->hostname && *a->hostname)
		sbuf_printf(&b, "<p>host: %s</p>\n", html_esc(a->hostname, e1, sizeof(e1)));
	sbuf_printf(&b, "<h2>Endpoints</h2>\n<ul>\n");
	html_route(&b, "GET", "/metrics", "Prometheus metrics (text format 0.0.4)");
	html_route(&b, "GET", "/healthz", "health check");
	html_route(&b, "GET", "/api/v1/collectors", "collectors and their state");
	html_route(&b, "GET", "/api/v1/events",
		   "event history: ?collector=&start=&end=&limit=&cursor=");
	html_route(&b, "GET", "/api/v1/series",
		   "metric history: ?metric=&match[]=&start=&end=&step= (default: the last hour)");
	for (size_t i = 0; i < a->n_collectors; i++) {
		const struct collector *c = &a->collectors[i];
		char what[128];

		if (__atomic_load_n((const int *)&c->state, __ATOMIC_RELAXED) ==
			COLLECTOR_DISABLED ||
		    !c->ops->routes)
			continue;
		snprintf(what, sizeof(what), "collector %s", c->ops->name);
		for (const struct collector_route *r = c->ops->routes; r->path; r++)
			html_route(&b, r->method, r->path, what);
	}
	sbuf_printf(&b, "</ul>\n<h2>Collectors</h2>\n<table border=\"1\" cellpadding=\"4\">\n"
			"<tr><th>name</th><th>state</th><th>reason</th><th>last activity</th>"
			"<th>errors</th><th>what it does</th></tr>\n");
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector_snap s;

		collector_snapshot(&a->collectors[i], &s);
		if (s.last_activity_ns <= 0 ||
		    time_format_rfc3339(s.last_activity_ns, e3, sizeof(e3)) < 0)
			strcpy(e3, "-");
		sbuf_printf(&b, "<tr><td>%s</td><td>%s</td><td>", s.name,
			    collector_state_name(s.state));
		sbuf_printf(&b, "%s</td><td>%s</td><td>%llu</td><td>%s</td></tr>\n",
			    html_esc(s.why, e1, sizeof(e1)), e3, (unsigned long long)s.errors,
			    html_esc(s.help, e2, sizeof(e2)));
	}
	sbuf_printf(&b, "</table>\n</body></html>\n");
	if (b.oom) {
		free(b.p);
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_reply_text(res, 200, CT_HTML, b.p, b.len);
}

/* ---- /metrics ---- */

static void route_metrics(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	int64_t t0 = clock_mono_ns();
	size_t len;
	char *buf;
	int err;

	/* Prometheus sends no parameters; refuse typos rather than ignore them. */
	if (query_params_check(req, NULL, res))
		return;
	err = metrics_render_text(ctx->a->metrics, &buf, &len);
	if (err) {
		http_reply_error(res, 500, "internal", "cannot render metrics: %s", strerror(-err));
		return;
	}
	/* After the render: the registry lock is free again. The value shows in
	 * the next scrape, like every "last scrape" metric. */
	series_set(ctx->scrape, (double)(clock_mono_ns() - t0) / 1e9);
	http_reply_text(res, 200, API_METRICS_CONTENT_TYPE, buf, len);
}

/* ---- /healthz ---- */

/*
 * Unhealthy when the storage writer has rows queued and has committed none
 * for HEALTH_STUCK_NS (e.g. every commit failing on a full disk). Progress is
 * sampled on each call; an idle store (empty queue) is healthy.
 */
static void route_healthz(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	struct store_stats st;
	int64_t now = clock_mono_ns(), stalled;
	uint64_t errors;
	json_t *j;

	if (query_params_check(req, NULL, res))
		return;
	if (!ctx->a->store) {
		http_reply_json(res, 200, json_pack("{s:s}", "status", "ok"));
		return;
	}
	store_get_stats(ctx->a->store, &st);
	pthread_mutex_lock(&ctx->health_lock);
	if (st.rows_written != ctx->health_rows || st.queue_depth == 0) {
		ctx->health_rows = st.rows_written;
		ctx->health_errors = st.write_errors;
		ctx->health_progress_ns = now;
	}
	stalled = now - ctx->health_progress_ns;
	errors = st.write_errors - ctx->health_errors;
	pthread_mutex_unlock(&ctx->health_lock);

	if (stalled < HEALTH_STUCK_NS) {
		http_reply_json(res, 200, json_pack("{s:s}", "status", "ok"));
		return;
	}
	char reason[256];

	snprintf(reason, sizeof(reason),
		 "storage writer committed nothing for %lld s with %zu rows queued "
		 "(%llu failed commits meanwhile)",
		 (long long)(stalled / 1000000000), st.queue_depth, (unsigned long long)errors);
	j = json_pack("{s:s,s:s}", "status", "unhealthy", "reason", reason);
	http_reply_json(res, 503, j);
}

/* ---- /api/v1/collectors ---- */

static void route_collectors(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	struct agent *a = ctx->a;
	json_t *arr;

	if (query_params_check(req, NULL, res))
		return;
	arr = json_array();
	for (size_t i = 0; arr && i < a->n_collectors; i++) {
		struct collector_snap s;
		json_t *o;

		collector_snapshot(&a->collectors[i], &s);
		o = json_pack("{s:s,s:o,s:s,s:o,s:o,s:I}", "name", s.name, "help",
			      json_string_lossy(s.help), "state", collector_state_name(s.state),
			      "reason", s.why[0] ? json_string_lossy(s.why) : json_null(),
			      "last_activity", json_time_or_null(s.last_activity_ns), "errors",
			      (json_int_t)s.errors);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (!arr) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_reply_json(res, 200, json_pack("{s:o}", "data", arr));
}

/* ---- /api/v1/events ---- */

/* The collectors that own event tables, ", "-separated, into buf. */
static void known_collectors(struct agent *a, char *buf, size_t len)
{
	const struct event_table *const *t = store_tables(a->store);
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; t && t[i]; i++) {
		bool dup = false;

		for (size_t j = 0; j < i; j++)
			dup |= !strcmp(t[j]->collector, t[i]->collector);
		if (dup || n >= len)
			continue;
		n += snprintf(buf + n, len - n, "%s%s", n ? ", " : "", t[i]->collector);
	}
	if (!n)
		snprintf(buf, len, "none");
}

static void reply_store_error(struct http_response *res, int err, const char *msg)
{
	if (err == -EINVAL || err == -E2BIG)
		http_reply_error(res, 400, "bad_request", "%s", msg);
	else if (err == -EBUSY)
		http_reply_error(res, 503, "unavailable", "%s", msg[0] ? msg : "store busy");
	else
		http_reply_error(res, 500, "internal", "%s", msg[0] ? msg : strerror(-err));
}

static void route_events(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const allowed[] = {"collector", QUERY_WINDOW_PARAMS, NULL};
	struct api_ctx *ctx = arg;
	struct agent *a = ctx->a;
	struct query_window w;
	const char *collector;
	int64_t next = -1;
	json_t *rows = NULL;
	char err[512] = "", known[512];
	int rc;

	if (query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	if (!a->store) {
		http_reply_error(res, 503, "unavailable", "no storage");
		return;
	}
	collector = http_query(req, "collector");
	if (collector && !*collector)
		collector = NULL;
	rc = store_query_events(a->store, collector, w.start_ns, w.end_ns, w.cursor, w.limit, &rows,
				&next, err, sizeof(err));
	if (rc == -ENOENT) {
		char q[80];

		known_collectors(a, known, sizeof(known));
		snprintf(q, sizeof(q), "%.64s", collector ? collector : "");
		for (size_t i = 0; i < a->n_collectors; i++) {
			if (!strcmp(a->collectors[i].ops->name, q)) {
				http_reply_error(res, 400, "bad_request",
						 "collector: \"%s\" keeps no event history "
						 "(collectors with events: %s)",
						 q, known);
				return;
			}
		}
		http_reply_error(res, 400, "bad_request",
				 "collector: unknown collector \"%s\" (known: %s)", q, known);
		return;
	}
	if (rc) {
		reply_store_error(res, rc, err);
		return;
	}
	json_t *cur = json_null();

	if (next > 0) {
		char buf[24];

		snprintf(buf, sizeof(buf), "%lld", (long long)next);
		cur = json_string(buf);
	}
	http_reply_json(res, 200, json_pack("{s:o,s:o}", "data", rows, "next_cursor", cur));
}

/* ---- /api/v1/series ---- */

static void route_series(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const allowed[] = {"metric", "match[]", "start", "end", "step", NULL};
	const char *matchers[STORE_MATCHERS_MAX + 1];
	struct api_ctx *ctx = arg;
	struct agent *a = ctx->a;
	struct query_window w;
	const char *metric;
	int64_t step = 0;
	json_t *out = NULL;
	char err[512] = "";
	size_t n;
	int rc;

	if (query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	metric = http_query(req, "metric");
	if (metric && !*metric)
		metric = NULL;
	if (metric && !metrics_name_valid(metric)) {
		http_reply_error(res, 400, "bad_request", "metric: not a metric name: \"%.64s\"",
				 metric);
		return;
	}
	n = http_query_all(req, "match[]", matchers, STORE_MATCHERS_MAX + 1);
	if (n > STORE_MATCHERS_MAX) {
		http_reply_error(res, 400, "bad_request", "match[]: at most %d selectors",
				 STORE_MATCHERS_MAX);
		return;
	}
	if (!metric && !n) {
		http_reply_error(res, 400, "bad_request",
				 "metric or match[] is required, e.g. "
				 "?metric=sysobs_events_written_total");
		return;
	}
	if (query_step_parse(req, &step, res))
		return;
	if (!a->store) {
		http_reply_error(res, 503, "unavailable", "no storage");
		return;
	}
	/* History without a start would grow with uptime until it passes the
	 * point caps; the default is the hour before end (or now). */
	if (!w.start_set) {
		int64_t end = w.end_set ? w.end_ns : clock_wall_ns();

		w.start_ns = end > INT64_MIN + API_SERIES_DEFAULT_RANGE_NS
				 ? end - API_SERIES_DEFAULT_RANGE_NS
				 : INT64_MIN;
	}
	rc = store_query_series(a->store, metric, matchers, n, w.start_ns, w.end_ns, step, &out,
				err, sizeof(err));
	if (rc) {
		reply_store_error(res, rc, err);
		return;
	}
	/* The store caps points per series and series per query; cap the
	 * product too, so one answer stays a few MB. */
	size_t i, points = 0;
	json_t *sj;

	json_array_foreach(out, i, sj) points += json_array_size(json_object_get(sj, "values"));
	if (points > API_SERIES_POINTS_TOTAL_MAX) {
		size_t n_series = json_array_size(out);

		json_decref(out);
		http_reply_error(res, 400, "bad_request",
				 "%zu points in %zu series, more than %d in one answer: narrow "
				 "start/end, add match[] selectors or raise step",
				 points, n_series, API_SERIES_POINTS_TOTAL_MAX);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:o}", "data", out));
}

/* ---- registration ---- */

int api_routes_register(struct agent *a)
{
	static const struct {
		const char *path;
		http_handler fn;
	} own[] = {
	    {"/", route_index},
	    {"/metrics", route_metrics},
	    {"/healthz", route_healthz},
	    {"/api/v1/collectors", route_collectors},
	    {"/api/v1/events", route_events},
	    {"/api/v1/series", route_series},
	};
	struct store_stats st = {0};
	int err;

	if (!a || !a->http || !a->metrics)
		return -EINVAL;
	api_ctx.a = a;
	api_ctx.scrape = metrics_gauge1(a->metrics, "sysobs_scrape_duration_seconds",
					"Time the previous /metrics scrape took to render.");
	if (!api_ctx.scrape)
		return -errno;
	if (a->store)
		store_get_stats(a->store, &st);
	api_ctx.health_rows = st.rows_written;
	api_ctx.health_errors = st.write_errors;
	api_ctx.health_progress_ns = clock_mono_ns();

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		err = http_route(a->http, "GET", own[i].path, false, own[i].fn, &api_ctx);
		if (err) {
			log_err("http", "cannot register GET %s: %s", own[i].path, strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];

		if (c->state == COLLECTOR_DISABLED || !c->ops->routes)
			continue;
		for (const struct collector_route *r = c->ops->routes; r->path; r++) {
			err = http_route(a->http, r->method ? r->method : "GET", r->path, r->prefix,
					 r->fn, c);
			if (err) {
				log_err(c->ops->name, "cannot register %s %s: %s",
					r->method ? r->method : "GET", r->path, strerror(-err));
				return err;
			}
		}
	}
	return 0;
}
