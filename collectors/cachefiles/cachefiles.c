// SPDX-License-Identifier: MIT
/*
 * The "cachefiles" collector: latency of cachefiles on-demand requests (EROFS
 * over fscache, e.g. Nydus images), per fscache volume and op.
 *
 * A backend (backend.h) measures; this file publishes: Prometheus histograms
 * and counters refreshed from the backend's totals every interval, and slow
 * requests as rows of the cachefiles_slow table, served by
 * GET /api/v1/cachefiles/slow and /api/v1/events.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "api/query.h"
#include "collectors/cachefiles/backend.h"
#include "collectors/cachefiles/cachefiles_decode.h"
#include "collectors/collector.h"
#include "storage/store_query.h"

/* One row of cachefiles_slow (fixed size for the store queue). */
struct cachefiles_slow_row {
	int64_t latency_ns;
	int64_t offset;
	int64_t len;
	int32_t ret;
	uint32_t op;
	uint32_t object_debug_id;
	int32_t object_id;
	uint32_t pid;
	char comm[CF_COMM_LEN + 1];
	char volume[CF_VOLUME_NAME_LEN + 1];
};

struct cachefiles_state {
	const struct cachefiles_backend_ops *be_ops;
	struct cachefiles_backend *be;
	struct cachefiles_backend_cfg cfg;
	double bounds[CF_HIST_FINITE];
	struct metric *duration, *requests, *inflight, *read_bytes, *pickup, *daemon_events;
	struct metric_series *written_bytes, *lost_ring, *lost_start, *null_objects, *slow_total;
	struct metric_series *hist_full, *pending_full, *start_full;
	uint64_t slow_seen;
	/* One collect's histograms summed by (volume name, op): the kernel keys
	 * them by volume id, and the same fsid mounted again is a new id with
	 * the same name. */
	struct cf_agg *agg;
	size_t n_agg, cap_agg;
};

struct cf_agg {
	char volume[CF_VOLUME_NAME_LEN + 16];
	enum cf_op op;
	uint64_t buckets[CF_HIST_BUCKETS];
	uint64_t sum_ns, ok, errors, bytes;
	int64_t inflight;
};

static const char *const cachefiles_migrations[] = {
    "CREATE TABLE cachefiles_slow(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,"
    " op TEXT NOT NULL, volume TEXT NOT NULL, object_id INTEGER, object_debug_id INTEGER,"
    " offset INTEGER, length INTEGER, latency_seconds REAL NOT NULL, result INTEGER,"
    " pid INTEGER, comm TEXT);"
    "CREATE INDEX cachefiles_slow_ts ON cachefiles_slow(ts);",
    NULL,
};

static int cachefiles_slow_bind(sqlite3_stmt *st, const void *row)
{
	const struct cachefiles_slow_row *r = row;
	int rc;

	if ((rc = sqlite3_bind_text(st, 3, cachefiles_op_name(r->op), -1, SQLITE_STATIC)) ||
	    (rc = sqlite3_bind_text(st, 4, r->volume, -1, SQLITE_TRANSIENT)) ||
	    (rc = sqlite3_bind_int64(st, 5, r->object_id)) ||
	    (rc = sqlite3_bind_int64(st, 6, r->object_debug_id)) ||
	    (rc = sqlite3_bind_int64(st, 7, r->offset)) ||
	    (rc = sqlite3_bind_int64(st, 8, r->len)) ||
	    (rc = sqlite3_bind_double(st, 9, (double)r->latency_ns / 1e9)) ||
	    (rc = sqlite3_bind_int64(st, 10, r->ret)) || (rc = sqlite3_bind_int64(st, 11, r->pid)))
		return rc;
	return sqlite3_bind_text(st, 12, r->comm, -1, SQLITE_TRANSIENT);
}

const struct store_table cachefiles_slow_table = {
    .name = "cachefiles_slow",
    .collector = "cachefiles",
    .migrations = cachefiles_migrations,
    .insert_sql = "INSERT INTO cachefiles_slow(id, ts, op, volume, object_id, object_debug_id,"
		  " offset, length, latency_seconds, result, pid, comm)"
		  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    .bind = cachefiles_slow_bind,
    .row_size = sizeof(struct cachefiles_slow_row),
};

static const struct store_table *const cachefiles_tables[] = {&cachefiles_slow_table, NULL};

static const struct cfg_key cachefiles_keys[] = {
    {"slow_threshold", "100ms",
     "requests at least this long are stored one by one in cachefiles_slow (0: all)"},
    {"interval", "5s", "how often histograms and counters are read from the kernel"},
    {"backend", "bpf", "measurement backend: bpf (fentry/fexit on fs/cachefiles/ondemand.c)"},
    {0},
};

static const char *const cf_stat_events[CF_STAT_MAX] = {
    [CF_STAT_READ_ENQUEUED] = "read_enqueued",
    [CF_STAT_CREAD] = "read_complete",
    [CF_STAT_OPEN_PICKED] = "open_picked",
    [CF_STAT_COPEN] = "copen",
    [CF_STAT_CLOSE] = "close",
    [CF_STAT_FD_WRITE] = "fd_write",
    [CF_STAT_FD_RELEASE] = "fd_release",
};

static const struct cachefiles_backend_ops *cachefiles_backend_find(const char *name)
{
#ifdef SYSOBS_CACHEFILES_BPF
	if (name && !strcmp(name, cachefiles_backend_bpf.name))
		return &cachefiles_backend_bpf;
#endif
	return NULL;
}

static int cachefiles_init(struct collector *c)
{
	struct cachefiles_state *st;
	const struct cachefiles_backend_ops *be;
	uint64_t slow_ms, interval;
	int err;

	err =
	    cfg_get_duration_ms(&c->agent->cfg, c->section, "slow_threshold", 0, 3600000, &slow_ms);
	if (err)
		return err;
	err = cfg_get_duration_ms(&c->agent->cfg, c->section, "interval", 100, 3600000, &interval);
	if (err)
		return err;
	be = cachefiles_backend_find(collector_cfg(c, "backend"));
#ifndef SYSOBS_CACHEFILES_BPF
	if (!be)
		return collector_unavailable(c, -EOPNOTSUPP, "built without BPF (SYSOBS_BPF=OFF)");
#endif
	if (!be)
		return cfg_error(&c->agent->cfg, c->section, "backend",
				 "unknown backend '%s' (bpf)", collector_cfg(c, "backend"));
	err = be->probe(c->why, sizeof(c->why));
	if (err)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->be_ops = be;
	st->cfg.slow_ns = slow_ms * 1000000ULL;
	cachefiles_hist_bounds(st->bounds);
	c->priv = st;
	c->interval_ms = interval;
	return 0;
}

static int cachefiles_metrics_register(struct collector *c, struct cachefiles_state *st)
{
	static const char *const op_vol[] = {"op", "volume", NULL};
	static const char *const op_vol_res[] = {"op", "volume", "result", NULL};
	static const char *const vol[] = {"volume", NULL};
	static const char *const op[] = {"op", NULL};
	static const char *const event[] = {"event", NULL};
	struct metrics *m = c->agent->metrics;

	st->duration = metrics_histogram(
	    m, "sysobs_cachefiles_request_duration_seconds",
	    "End-to-end latency of cachefiles on-demand requests (the reader waits for the "
	    "user daemon), by op and fscache volume.",
	    op_vol, st->bounds, CF_HIST_FINITE);
	st->requests = metrics_counter(m, "sysobs_cachefiles_requests_total",
				       "On-demand requests completed, by op, volume and result "
				       "(ok or error).",
				       op_vol_res);
	st->inflight = metrics_gauge(m, "sysobs_cachefiles_inflight_requests",
				     "On-demand requests waiting for the user daemon.", op_vol);
	st->read_bytes = metrics_counter(m, "sysobs_cachefiles_read_bytes_total",
					 "Bytes requested by on-demand READ requests.", vol);
	st->pickup = metrics_histogram(m, "sysobs_cachefiles_daemon_pickup_seconds",
				       "Time from an on-demand request being issued to the user "
				       "daemon reading it from /dev/cachefiles.",
				       op, st->bounds, CF_HIST_FINITE);
	st->daemon_events =
	    metrics_counter(m, "sysobs_cachefiles_daemon_events_total",
			    "cachefiles_ondemand_* tracepoint hits, by event.", event);
	st->written_bytes = metrics_counter1(m, "sysobs_cachefiles_daemon_written_bytes_total",
					     "Bytes the user daemon wrote into anonymous fds.");
	st->null_objects =
	    metrics_counter1(m, "sysobs_cachefiles_null_objects_total",
			     "Requests or events seen with a NULL cachefiles object.");
	st->lost_ring = metrics_counter1(m, "sysobs_cachefiles_slow_lost_total",
					 "Slow requests lost because the ring buffer was full.");
	st->lost_start = metrics_counter1(m, "sysobs_cachefiles_unmatched_total",
					  "Request returns without a recorded start (map full).");
	st->slow_total =
	    metrics_counter1(m, "sysobs_cachefiles_slow_requests_total",
			     "Requests over slow_threshold, stored in cachefiles_slow.");
	st->hist_full = metrics_counter1(m, "sysobs_cachefiles_hist_full_total",
					 "Requests in no histogram: the kernel's per-(volume, op) "
					 "map was full.");
	st->start_full = metrics_counter1(m, "sysobs_cachefiles_untimed_total",
					  "Requests not timed at all: the in-flight map was full "
					  "when they were issued.");
	st->pending_full =
	    metrics_counter1(m, "sysobs_cachefiles_pickup_untimed_total",
			     "Requests whose daemon pick-up was not timed: the pending map "
			     "was full.");
	if (!st->duration || !st->requests || !st->inflight || !st->read_bytes || !st->pickup ||
	    !st->daemon_events || !st->written_bytes || !st->null_objects || !st->lost_ring ||
	    !st->lost_start || !st->slow_total || !st->hist_full || !st->pending_full ||
	    !st->start_full)
		return -ENOMEM;
	return 0;
}

static int cachefiles_start(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	int err;

	err = cachefiles_metrics_register(c, st);
	if (err)
		return err;
	err = st->be_ops->open(&st->cfg, &st->be, c->why, sizeof(c->why));
	if (err)
		return err;
	c->fd = st->be_ops->fd(st->be);
	clog_info(c, "measuring on-demand requests with the %s backend (slow >= %.3f s)",
		  st->be_ops->name, (double)st->cfg.slow_ns / 1e9);
	return 0;
}

static void cachefiles_on_slow(const struct cachefiles_slow *s, void *arg)
{
	struct collector *c = arg;
	struct cachefiles_state *st = c->priv;
	struct cachefiles_slow_row row = {0};

	row.latency_ns = (int64_t)s->latency_ns;
	row.offset = (int64_t)s->offset;
	row.len = (int64_t)s->len;
	row.ret = s->ret;
	row.op = s->op;
	row.object_debug_id = s->object_debug_id;
	row.object_id = s->object_id;
	row.pid = s->pid;
	memcpy(row.comm, s->comm, sizeof(row.comm));
	memcpy(row.volume, s->volume, sizeof(row.volume));
	st->slow_seen++;
	series_add(st->slow_total, 1);
	/* A full queue is counted by the store. */
	store_submit(c->agent->store, &cachefiles_slow_table, s->ts_ns, &row);
}

static int cachefiles_on_ready(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	int n = st->be_ops->drain_slow(st->be, cachefiles_on_slow, c);

	return n < 0 ? n : 0;
}

/* Adds one kernel histogram to its (volume name, op) sum. */
static void cachefiles_on_hist(const struct cachefiles_hist_snapshot *h, void *arg)
{
	struct cachefiles_state *st = arg;
	struct cf_agg *a = NULL;

	for (size_t i = 0; i < st->n_agg && !a; i++)
		if (st->agg[i].op == h->op && !strcmp(st->agg[i].volume, h->volume))
			a = &st->agg[i];
	if (!a) {
		if (st->n_agg == st->cap_agg) {
			size_t cap = st->cap_agg ? st->cap_agg * 2 : 8;
			struct cf_agg *v = realloc(st->agg, cap * sizeof(*v));

			if (!v)
				return; /* this pass misses it; the next one retries */
			st->agg = v;
			st->cap_agg = cap;
		}
		a = &st->agg[st->n_agg++];
		memset(a, 0, sizeof(*a));
		snprintf(a->volume, sizeof(a->volume), "%s", h->volume);
		a->op = h->op;
	}
	for (size_t b = 0; b < CF_HIST_BUCKETS; b++)
		a->buckets[b] += h->buckets[b];
	a->sum_ns += h->sum_ns;
	a->ok += h->ok;
	a->errors += h->errors;
	a->bytes += h->bytes;
	a->inflight += h->inflight;
}

static void cachefiles_publish(struct cachefiles_state *st, const struct cf_agg *h)
{
	const char *op = cachefiles_op_name(h->op);
	const char *lv[] = {op, h->volume, NULL};
	const char *ok[] = {op, h->volume, "ok", NULL};
	const char *er[] = {op, h->volume, "error", NULL};
	const char *vol[] = {h->volume, NULL};
	struct metric_series *s;

	if ((s = metric_series(st->duration, lv)))
		series_histogram_set(s, h->buckets, (double)h->sum_ns / 1e9);
	if ((s = metric_series(st->requests, ok)))
		series_set(s, (double)h->ok);
	if (h->errors && (s = metric_series(st->requests, er)))
		series_set(s, (double)h->errors);
	if ((s = metric_series(st->inflight, lv)))
		series_set(s, h->inflight > 0 ? (double)h->inflight : 0);
	if (h->op == CF_OP_READ && (s = metric_series(st->read_bytes, vol)))
		series_set(s, (double)h->bytes);
}

static int cachefiles_collect(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	uint64_t stats[CF_STAT_MAX];
	struct cf_pickup *p;
	struct metric_series *s;
	int err;

	/* Slow requests first, so a scrape after a burst sees them counted. */
	cachefiles_on_ready(c);
	st->n_agg = 0;
	err = st->be_ops->read_hists(st->be, cachefiles_on_hist, st);
	if (err)
		return err;
	for (size_t i = 0; i < st->n_agg; i++)
		cachefiles_publish(st, &st->agg[i]);
	err = st->be_ops->read_stats(st->be, stats);
	if (err)
		return err;
	for (unsigned i = 0; i < CF_STAT_MAX; i++) {
		const char *ev[] = {cf_stat_events[i], NULL};

		if (cf_stat_events[i] && (s = metric_series(st->daemon_events, ev)))
			series_set(s, (double)stats[i]);
	}
	series_set(st->written_bytes, (double)stats[CF_STAT_FD_WRITE_BYTES]);
	series_set(st->null_objects, (double)stats[CF_STAT_NULL_OBJECT]);
	series_set(st->lost_ring, (double)stats[CF_STAT_RINGBUF_FULL]);
	series_set(st->lost_start, (double)stats[CF_STAT_START_LOST]);
	series_set(st->hist_full, (double)stats[CF_STAT_HIST_FULL]);
	series_set(st->pending_full, (double)stats[CF_STAT_PENDING_FULL]);
	series_set(st->start_full, (double)stats[CF_STAT_START_FULL]);

	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (unsigned op = 0; op < CF_OP_MAX; op++) {
		const char *lv[] = {cachefiles_op_name(op), NULL};

		if (st->be_ops->read_pickup(st->be, op, p) || !p->count)
			continue;
		if ((s = metric_series(st->pickup, lv)))
			series_histogram_set(s, (const uint64_t *)p->buckets,
					     (double)p->sum_ns / 1e9);
	}
	free(p);
	return 0;
}

static void cachefiles_stop(struct collector *c)
{
	struct cachefiles_state *st = c->priv;

	if (!st)
		return;
	if (st->be_ops && st->be)
		st->be_ops->close(st->be);
	free(st->agg);
	free(st);
	c->priv = NULL;
	c->fd = -1;
}

/*
 * GET /api/v1/cachefiles/slow?since=&until=&limit=&cursor=[&volume=&op=]
 * Slow requests newest first: {"data": [...], "next_cursor": "<id>" | null}
 * (one row more than limit is fetched to know whether a next page exists).
 */
static void cachefiles_route_slow(const struct http_request *req, struct http_response *res,
				  void *arg)
{
	static const char *const allowed[] = {"since",	"until", "limit", "cursor",
					      "volume", "op",	 NULL};
	struct collector *c = arg;
	const char *volume = http_query(req, "volume");
	const char *op = http_query(req, "op");
	struct query_window w;
	sqlite3_stmt *st = NULL;
	json_t *out;
	sqlite3 *db;
	int rc;

	if (query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	if (op && strcmp(op, "open") && strcmp(op, "read")) {
		http_reply_error(res, 400, "bad_request", "op must be open or read");
		return;
	}
	db = store_reader_get(c->agent->store);
	if (!db) {
		http_reply_error(res, 503, "unavailable", "no database reader free");
		return;
	}
	rc = sqlite3_prepare_v2(
	    db,
	    "SELECT id, ts, op, volume, object_id, object_debug_id, offset, length,"
	    " latency_seconds, result, pid, comm FROM cachefiles_slow"
	    " WHERE ts >= ?1 AND ts < ?2 AND id < ?3"
	    " AND (?4 IS NULL OR volume = ?4) AND (?5 IS NULL OR op = ?5)"
	    " ORDER BY id DESC LIMIT ?6",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_db_error;
	sqlite3_bind_int64(st, 1, w.since_ns);
	sqlite3_bind_int64(st, 2, w.until_ns);
	sqlite3_bind_int64(st, 3, w.cursor);
	if (volume)
		sqlite3_bind_text(st, 4, volume, -1, SQLITE_TRANSIENT);
	if (op)
		sqlite3_bind_text(st, 5, op, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 6, (int64_t)w.limit + 1);
	out = store_page_json(st, w.limit, "data", NULL, &rc);
	if (!out && rc != -ENOMEM)
		goto out_db_error;
	sqlite3_finalize(st);
	store_reader_put(c->agent->store, db);
	if (!out)
		http_reply_error(res, 500, "internal", "out of memory building the page");
	else
		http_reply_json(res, 200, out);
	return;

out_db_error:
	http_reply_error(res, 500, "internal", "query failed: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	store_reader_put(c->agent->store, db);
}

static const struct collector_route cachefiles_routes[] = {
    {"GET", "/api/v1/cachefiles/slow", false, cachefiles_route_slow},
    {0},
};

const struct collector_ops cachefiles_collector = {
    .name = "cachefiles",
    .help = "latency of cachefiles on-demand requests (EROFS over fscache) via BPF",
    .keys = cachefiles_keys,
    .tables = cachefiles_tables,
    .routes = cachefiles_routes,
    .init = cachefiles_init,
    .start = cachefiles_start,
    .on_ready = cachefiles_on_ready,
    .collect = cachefiles_collect,
    .stop = cachefiles_stop,
};
