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

#include "base/arena.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "api/http.h"
#include "metrics/metrics.h"
#include "api/negotiate.h"
#include "api/query.h"
#include "api/reply.h"
#include "api/routes.h"
#include "api/schema.h"
#include "api/series.h"
#include "api/status_page.h"
#include "storage/store.h"
#include "storage/store_query.h"

#define CT_HTML "text/html; charset=utf-8"

/* A writer with rows queued and no commit for this long is stuck. */
#define HEALTH_STUCK_NS (30LL * 1000000000)

struct api_ctx {
	struct api_host host;
	struct metric_series *scrape;
	struct metric_series *scrapes[3]; /* by enum metrics_format */

	pthread_mutex_t health_lock;
	uint64_t health_rows;	    /* rows_written at the last sign of progress */
	uint64_t health_errors;	    /* write_errors then */
	int64_t health_progress_ns; /* monotonic time of that */
};

/* One agent per process: the context lives as long as the program. */
static struct api_ctx api_ctx = {.health_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- status page ---- */

/* The page is static: the browser fills it from the JSON API. */
static void route_index(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	const char *host = ctx->host.hostname && *ctx->host.hostname ? ctx->host.hostname : "-";
	struct buf b = {0};

	if (query_params_check(req, NULL, res))
		return;
	status_page_render(&b, SYSOBS_VERSION, host);
	if (b.oom) {
		buf_free(&b);
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	http_reply_text(res, 200, CT_HTML, b.p, b.len);
}

/* docs/runbooks.md as HTML (scripts/runbooks_html.py at build time), the
 * page every shipped rule's runbook_url opens. */
extern const char runbooks_html[];
extern const size_t runbooks_html_len;

static void route_runbooks(const struct http_request *req, struct http_response *res, void *arg)
{
	char *body;

	(void)arg;
	if (query_params_check(req, NULL, res))
		return;
	body = malloc(runbooks_html_len);
	if (!body) {
		http_reply_error(res, 500, "internal", "out of memory");
		return;
	}
	memcpy(body, runbooks_html, runbooks_html_len);
	http_reply_text(res, 200, CT_HTML, body, runbooks_html_len);
}

/* ---- /metrics ---- */

/*
 * Negotiated like the Go client does it: text 0.0.4 when the client states
 * no preference, the format with the highest q otherwise, and text again for
 * an Accept that allows none of the three (a scrape should not fail on a
 * header). collect[]=NAME (repeatable) keeps the families of those
 * collectors, as node_exporter's does; the agent's own families always stay.
 * An unknown collector is a 400 naming it. Other parameters are ignored:
 * scrape configs add their own.
 */
static void route_metrics(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const offers[] = {
	    [METRICS_FMT_TEXT] = "text/plain;version=0.0.4",
	    [METRICS_FMT_OPENMETRICS] = "application/openmetrics-text;version=1.0.0",
	    [METRICS_FMT_PROTOBUF] = ("application/vnd.google.protobuf;"
				      "proto=io.prometheus.client.MetricFamily;encoding=delimited"),
	};
	static const char *const ctypes[] = {
	    [METRICS_FMT_TEXT] = METRICS_CT_TEXT,
	    [METRICS_FMT_OPENMETRICS] = METRICS_CT_OPENMETRICS,
	    [METRICS_FMT_PROTOBUF] = METRICS_CT_PROTOBUF,
	};
	struct api_ctx *ctx = arg;
	int64_t t0 = clock_mono_ns();
	const char *collect[HTTP_ARGS_MAX + 1];
	size_t n_collect, len;
	int fmt;
	char *buf;
	int err;

	fmt = http_negotiate(req->accept, offers, 3);
	if (fmt < 0)
		fmt = METRICS_FMT_TEXT;
	/* collect[] is the one parameter (node_exporter's); anything else,
	 * "collect" without the brackets included, is a mistake that would
	 * otherwise serve every collector silently. */
	for (size_t i = 0; i < req->n_args; i++)
		if (strcmp(req->args[2 * i], "collect[]")) {
			http_reply_error(
			    res, 400, "bad_request",
			    "unknown parameter \"%.64s\" (the one parameter is collect[], "
			    "once per collector)",
			    req->args[2 * i]);
			return;
		}
	n_collect = http_query_all(req, "collect[]", collect, HTTP_ARGS_MAX);
	for (size_t i = 0; i < n_collect; i++) {
		size_t j = 0;

		while (ctx->host.collector_names && ctx->host.collector_names[j] &&
		       strcmp(ctx->host.collector_names[j], collect[i]))
			j++;
		if (!ctx->host.collector_names || !ctx->host.collector_names[j]) {
			http_reply_error(res, 400, "bad_request",
					 "collect[]: unknown collector \"%.64s\"", collect[i]);
			return;
		}
	}
	collect[n_collect] = NULL;
	err = metrics_render(ctx->host.metrics, (enum metrics_format)fmt,
			     n_collect ? collect : NULL, &buf, &len);
	if (err) {
		http_reply_error(res, 500, "internal", "cannot render metrics: %s", strerror(-err));
		return;
	}
	/* After the render: the registry lock is free again. The value shows in
	 * the next scrape, like every "last scrape" metric. */
	series_set(ctx->scrape, (double)(clock_mono_ns() - t0) / 1e9);
	series_add(ctx->scrapes[fmt], 1);
	http_reply_text(res, 200, ctypes[fmt], buf, len);
}

/* ---- /healthz ---- */

/*
 * Unhealthy when the storage writer has rows queued and has committed none
 * for HEALTH_STUCK_NS (e.g. every commit failing on a full disk). Progress is
 * sampled on each call; an idle store (empty queue) is healthy.
 */
static void route_healthz(const struct http_request *req, struct http_response *res, void *arg)
{
	Sysobs__V1__Health h = SYSOBS__V1__HEALTH__INIT;
	struct api_ctx *ctx = arg;
	struct store_stats st;
	int64_t now = clock_mono_ns(), stalled;
	uint64_t errors;
	char reason[256];
	int enc = api_encoding(req, res);

	if (enc < 0 || query_params_check(req, NULL, res))
		return;
	h.status = "ok";
	if (!ctx->host.store) {
		api_reply(res, 200, enc, &h.base);
		return;
	}
	store_get_stats(ctx->host.store, &st);
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
		api_reply(res, 200, enc, &h.base);
		return;
	}
	snprintf(reason, sizeof(reason),
		 "storage writer committed nothing for %lld s with %zu rows queued "
		 "(%llu failed commits meanwhile)",
		 (long long)(stalled / 1000000000), st.queue_depth, (unsigned long long)errors);
	h.status = "unhealthy";
	h.reason = reason;
	h._reason_case = SYSOBS__V1__HEALTH___REASON_REASON;
	api_reply(res, 503, enc, &h.base);
}

/* ---- /api/v1/collectors ---- */

static void route_collectors(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	Sysobs__V1__CollectorList *cl;
	struct arena ar = {0};
	int enc = api_encoding(req, res);

	if (enc < 0 || query_params_check(req, NULL, res))
		return;
	cl = ctx->host.collectors(ctx->host.arg, &ar);
	if (cl)
		api_reply(res, 200, enc, &cl->base);
	else
		api_error(res, enc, 500, "internal", "out of memory");
	arena_free(&ar);
}

/* ---- /api/v1/export ---- */

static void route_export(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;
	Sysobs__V1__ExportList empty = SYSOBS__V1__EXPORT_LIST__INIT, *el = &empty;
	struct arena ar = {0};
	int enc = api_encoding(req, res);

	if (enc < 0 || query_params_check(req, NULL, res))
		return;
	if (ctx->host.exports)
		el = ctx->host.exports(ctx->host.arg, &ar);
	if (el)
		api_reply(res, 200, enc, &el->base);
	else
		api_error(res, enc, 500, "internal", "out of memory");
	arena_free(&ar);
}

/* ---- /readyz ---- */

static double ts_seconds(const Google__Protobuf__Timestamp *t)
{
	return (double)t->seconds + t->nanos / 1e9;
}

/*
 * Why destination d is not ready at now (unix s) into why, or false when it
 * is: rows pending whose oldest is older than stuck_after (an outage, a
 * receiver too slow), or a row lost for good in the last stuck_after
 * (refused, too old, deleted unsent). Pure: tests/unit/test_export_health.c.
 */
bool export_problem(const Sysobs__V1__ExportDestination *d, double now, double stuck_after,
		    char *why, size_t len)
{
	double ok_ago = d->last_success ? now - ts_seconds(d->last_success) : -1;
	double loss_ago = d->last_loss ? now - ts_seconds(d->last_loss) : -1;
	char ago[48] = "none since the start";

	if (ok_ago >= 0)
		snprintf(ago, sizeof(ago), "%.0f s ago", ok_ago);
	if (d->pending_rows && d->lag_seconds > stuck_after) {
		/* the Alertmanager push holds alerts, the others rows */
		bool alerts = d->format && !strcmp(d->format, "alertmanager");

		snprintf(why, len,
			 "stuck: %llu %s pending, the oldest %.0f s old; last success %s%s%s",
			 (unsigned long long)d->pending_rows, alerts ? "alerts" : "rows",
			 d->lag_seconds, ago, *d->last_error ? "; " : "", d->last_error);
		return true;
	}
	if (loss_ago >= 0 && loss_ago < stuck_after) {
		snprintf(why, len,
			 "losing rows: %llu lost since the start, the last %.0f s ago%s%s",
			 (unsigned long long)d->rows_lost, loss_ago, *d->last_error ? "; " : "",
			 d->last_error);
		return true;
	}
	return false;
}

/*
 * Readiness, apart from /healthz's liveness: 503 when any export
 * destination or remote_write is stuck or losing rows (export_problem()),
 * each named in reasons. ?stuck_after=DURATION overrides the default
 * (READY_STUCK_AFTER_S): `sysobs status --stuck-after`, a probe's own.
 */
static void route_readyz(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const params[] = {"stuck_after", NULL};
	Sysobs__V1__Readiness r = SYSOBS__V1__READINESS__INIT;
	Sysobs__V1__ExportList empty = SYSOBS__V1__EXPORT_LIST__INIT, *el = &empty;
	struct api_ctx *ctx = arg;
	const char *v = http_query(req, "stuck_after");
	double now = (double)clock_wall_ns() / 1e9;
	struct arena ar = {0};
	int64_t ns = (int64_t)READY_STUCK_AFTER_S * 1000000000;
	int enc = api_encoding(req, res);
	char why[512];

	if (enc < 0 || query_params_check(req, params, res))
		return;
	if (v && (duration_parse_ns(v, &ns) || ns <= 0)) {
		api_error(res, enc, 400, "bad_request",
			  "stuck_after: '%.64s' is not a positive duration (e.g. 30s, 5m)", v);
		return;
	}
	if (ctx->host.exports)
		el = ctx->host.exports(ctx->host.arg, &ar);
	r.reasons = el ? arena_alloc(&ar, (el->n_data + 1) * sizeof(*r.reasons)) : NULL;
	if (!r.reasons) {
		api_error(res, enc, 500, "internal", "out of memory");
		arena_free(&ar);
		return;
	}
	r.stuck_after_seconds = (double)ns / 1e9;
	for (size_t i = 0; i < el->n_data; i++) {
		Sysobs__V1__ExportDestination *d = el->data[i];

		if (!export_problem(d, now, r.stuck_after_seconds, why, sizeof(why)))
			continue;
		d->problem = arena_strdup(&ar, why);
		r.reasons[r.n_reasons++] = arena_printf(&ar, "%s: %s", d->name, why);
	}
	r.exports = el->data;
	r.n_exports = el->n_data;
	r.status = r.n_reasons ? "not ready" : "ready";
	if (ar.oom)
		api_error(res, enc, 500, "internal", "out of memory");
	else
		api_reply(res, r.n_reasons ? 503 : 200, enc, &r.base);
	arena_free(&ar);
}

/* ---- /api/v1/series ---- */

static void route_series(const struct http_request *req, struct http_response *res, void *arg)
{
	struct api_ctx *ctx = arg;

	api_series(req, res, ctx->host.store);
}

/* ---- registration ---- */

/* /metrics's own metrics: the previous render's time, and the renders by
 * the format the client negotiated. 0, or -errno. */
static int scrape_metrics_register(struct metrics *m)
{
	static const char *const fmt_labels[] = {"format", NULL};
	static const char *const fmt_names[] = {"text", "openmetrics", "protobuf"};
	struct metric *scrapes;

	api_ctx.scrape = metrics_gauge1(m, "sysobs_scrape_duration_seconds",
					"Time the previous /metrics scrape took to render.");
	if (!api_ctx.scrape)
		return -errno;
	scrapes = metrics_counter(
	    m, "sysobs_scrapes_total",
	    "Successful /metrics renders by the format the client negotiated.", fmt_labels);
	for (size_t i = 0; i < 3; i++) {
		const char *v[] = {fmt_names[i]};

		api_ctx.scrapes[i] = metric_series(scrapes, v);
	}
	return 0;
}

int api_routes_register(struct http_server *h, const struct api_host *host)
{
	static const char *const collector_columns[] = {
	    "name", "state", "errors", "last_activity", "reason", NULL,
	};
	static const char *const export_columns[] = {
	    "name",	    "format",	    "pending_rows", "lag_seconds", "rows_sent",
	    "rows_refused", "rows_retried", "last_success", "rows_lost",   "last_loss",
	    "url",	    "last_error",   NULL,
	};
	static const char *const series_columns[] = {"labels", "points", NULL};
	/* the list routes also say their message and columns (api/schema.h) */
	static const struct {
		const char *path;
		http_handler fn;
		const ProtobufCMessageDescriptor *list;
		const char *const *columns;
	} own[] = {
	    {"/", route_index, NULL, NULL},
	    {"/runbooks", route_runbooks, NULL, NULL},
	    {"/metrics", route_metrics, NULL, NULL},
	    {"/healthz", route_healthz, NULL, NULL},
	    {"/readyz", route_readyz, NULL, NULL},
	    {"/api/v1/collectors", route_collectors, &sysobs__v1__collector_list__descriptor,
	     collector_columns},
	    {"/api/v1/export", route_export, &sysobs__v1__export_list__descriptor, export_columns},
	    {"/api/v1/series", route_series, &sysobs__v1__series_list__descriptor, series_columns},
	};
	struct store_stats st = {0};
	int err;

	if (!h || !host || !host->metrics || !host->collectors)
		return -EINVAL;
	api_ctx.host = *host;
	err = scrape_metrics_register(host->metrics);
	if (err)
		return err;
	if (host->store)
		store_get_stats(host->store, &st);
	api_ctx.health_rows = st.rows_written;
	api_ctx.health_errors = st.write_errors;
	api_ctx.health_progress_ns = clock_mono_ns();

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		const struct schema_route sr = {
		    .path = own[i].path, .list = own[i].list, .columns = own[i].columns};

		err = own[i].list ? schema_add(&sr) : 0;
		if (!err)
			err = http_route(h, "GET", own[i].path, false, own[i].fn, &api_ctx);
		if (err) {
			log_err("http", "cannot register GET %s: %s", own[i].path, strerror(-err));
			return err;
		}
	}
	return 0;
}
