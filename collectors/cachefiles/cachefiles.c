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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "collectors/cachefiles/backend.h"
#include "collectors/cachefiles/cachefiles_priv.h"
#include "collectors/cachefiles/cachefiles_decode.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"

/* [collector.cachefiles], parsed by the agent from cachefiles_keys. */
struct cachefiles_cfg {
	uint64_t slow_threshold; /* ms */
	uint64_t interval;	 /* ms */
	unsigned backend;	 /* index in cachefiles_backend_names */
};

enum { CF_BACKEND_BPF };
static const char *const cachefiles_backend_names[] = {[CF_BACKEND_BPF] = "bpf", NULL};
/* The backend of each name, NULL where this build lacks it. */
static const struct cachefiles_backend_ops *const cachefiles_backends[] = {
#ifdef SYSOBS_CACHEFILES_BPF
    [CF_BACKEND_BPF] = &cachefiles_backend_bpf,
#else
    [CF_BACKEND_BPF] = NULL,
#endif
};

struct cachefiles_state {
	const struct cachefiles_backend_ops *be_ops;
	struct cachefiles_backend *be;
	struct cachefiles_backend_cfg cfg;
	const struct collector *c;
	struct sink_series *written_bytes, *lost_ring, *lost_start, *null_objects, *slow_total;
	struct sink_series *hist_full, *pending_full, *start_full;
	uint64_t slow_seen;
	/* One collect's histograms summed by (volume name, op): the kernel keys
	 * them by volume id, and the same fsid mounted again is a new id with
	 * the same name. */
	struct cf_agg *agg;
	size_t n_agg, cap_agg;
	/* Totals of released volumes, by (volume name, op): the kernel's
	 * entries are deleted when a volume goes, the counters go on. */
	struct cf_agg *retired;
	size_t n_retired, cap_retired;
	/* EROFS domains seen in the mount table: their shared volume and the
	 * images mounted in it at the last collect */
	struct cf_domain *domains;
	size_t n_domains, cap_domains;
};

struct cf_domain {
	char volume[CF_VOLUME_NAME_LEN + 1];
	unsigned images;
};

struct cf_agg {
	char volume[CF_VOLUME_NAME_LEN + 16];
	enum cf_op op;
	uint64_t buckets[CF_HIST_BUCKETS];
	uint64_t sum_ns, ok, errors, bytes;
	/* waiting now, from the in-flight map: [0] not read by the daemon yet,
	 * [1] read and not answered; and the age of the oldest of each */
	uint64_t waiting[2], oldest_ns[2];
	bool live; /* the kernel still has this (volume, op): not only retired totals */
	bool gone; /* retired entries: its series were declared gone */
};

static const char *const cf_wait_states[2] = {"unread", "read"};

static const char *const cachefiles_ops[] = {"open", "read", "close", NULL};
static const struct col_domain cachefiles_op_domain = {.values = cachefiles_ops};

#define CF_COL(f, t, n, ...) COL(struct cachefiles_slow_row, f, t, n, __VA_ARGS__)
static const struct event_column cachefiles_slow_cols[] = {
    CF_COL(op, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ENUM, .domain = &cachefiles_op_domain),
    CF_COL(volume, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_EQ),
    CF_COL(object_id, COL_INT, COL_NOT_NULL),
    CF_COL(object_debug_id, COL_UINT, COL_NOT_NULL),
    CF_COL(offset, COL_INT, COL_NOT_NULL),
    CF_COL(length, COL_INT, COL_NOT_NULL),
    CF_COL(latency_seconds, COL_REAL, COL_NOT_NULL),
    CF_COL(result, COL_INT, COL_NOT_NULL),
    CF_COL(pid, COL_UINT, COL_NOT_NULL),
    CF_COL(comm, COL_TEXT, COL_NOT_NULL),
    CF_COL(kworker, COL_BOOL, COL_NOT_NULL),
    {0},
};

static const char *const cachefiles_slow_show[] = {
    "time", "op", "volume", "latency_seconds", "offset", "length", "result", "comm", "pid", NULL,
};

const struct event_table cachefiles_slow_table = {
    .name = "cachefiles_slow",
    .collector = "cachefiles",
    .route = "/api/v1/cachefiles/slow",
    .help = "on-demand requests slower than slow_threshold",
    .cols = cachefiles_slow_cols,
    .row_size = sizeof(struct cachefiles_slow_row),
    .message = &sysobs__v1__cachefiles_slow_request__descriptor,
    .list_message = &sysobs__v1__cachefiles_slow_request_list__descriptor,
    .show = cachefiles_slow_show,
};

static const char *const cachefiles_daemon_events[] = {"death", "restore", "flush", NULL};
static const struct col_domain cachefiles_daemon_domain = {.values = cachefiles_daemon_events};

#define CF_DCOL(f, t, n, ...) COL(struct cachefiles_daemon_row, f, t, n, __VA_ARGS__)
static const struct event_column cachefiles_daemon_cols[] = {
    CF_DCOL(event, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ENUM,
	    .domain = &cachefiles_daemon_domain),
    CF_DCOL(pid, COL_UINT, COL_NOT_NULL),
    CF_DCOL(comm, COL_TEXT, COL_NOT_NULL),
    CF_DCOL(inflight, COL_INT, COL_NOT_NULL),
    {0},
};

/*
 * How grave a daemon event is for the event exporters. A death or a flush
 * is WARN (the daemon went away or the cache was closed; a supervised
 * daemon is restarted and restores), ERROR when requests were in flight
 * then: after a death they wait for a restore that may never come (an
 * image's reads hang), a flush fails them with EIO. A restore is the
 * recovery: INFO.
 */
static int cachefiles_daemon_severity(const void *row)
{
	const struct cachefiles_daemon_row *r = row;

	if (!strcmp(r->event, "restore"))
		return EVENT_SEVERITY_INFO;
	return r->inflight > 0 ? EVENT_SEVERITY_ERROR : EVENT_SEVERITY_WARN;
}

const struct event_table cachefiles_daemon_table = {
    .name = "cachefiles_daemon",
    .collector = "cachefiles",
    .route = "/api/v1/cachefiles/daemon",
    .help = "on-demand daemon deaths, restores (failover) and cache flushes",
    .cols = cachefiles_daemon_cols,
    .row_size = sizeof(struct cachefiles_daemon_row),
    .message = &sysobs__v1__cachefiles_daemon_event__descriptor,
    .list_message = &sysobs__v1__cachefiles_daemon_event_list__descriptor,
    .severity = cachefiles_daemon_severity,
};

static const struct event_table *const cachefiles_tables[] = {&cachefiles_slow_table,
							      &cachefiles_daemon_table, NULL};

static const struct cfg_key cachefiles_keys[] = {
    CFG_KEY(struct cachefiles_cfg, slow_threshold, CFG_DURATION, "100ms", 0, 3600000,
	    "requests at least this long are stored one by one in cachefiles_slow (0: all)"),
    CFG_KEY(struct cachefiles_cfg, interval, CFG_DURATION, "5s", 100, 3600000,
	    "how often histograms and counters are read from the kernel"),
    CFG_KEY_CHOICE(struct cachefiles_cfg, backend, "bpf", cachefiles_backend_names,
		   "measurement backend: bpf (fentry/fexit on fs/cachefiles/ondemand.c)"),
    {0},
};

enum {
	CF_M_DURATION,
	CF_M_REQUESTS,
	CF_M_INFLIGHT,
	CF_M_INFLIGHT_OLDEST,
	CF_M_READ_BYTES,
	CF_M_PICKUP,
	CF_M_DAEMON_EVENTS,
	CF_M_WRITTEN_BYTES,
	CF_M_NULL_OBJECTS,
	CF_M_SLOW_LOST,
	CF_M_UNMATCHED,
	CF_M_SLOW,
	CF_M_HIST_FULL,
	CF_M_UNTIMED,
	CF_M_PICKUP_UNTIMED,
	CF_M_DOMAIN_IMAGES,
};

static const char *const cf_op_vol[] = {"op", "volume", NULL};
static const char *const cf_op_vol_res[] = {"op", "volume", "result", NULL};
static const char *const cf_op_vol_state[] = {"op", "volume", "state", NULL};
static const char *const cf_vol[] = {"volume", NULL};
static const char *const cf_op[] = {"op", NULL};
static const char *const cf_event[] = {"event", NULL};

static const struct metric_desc cachefiles_metrics[] = {
    [CF_M_DURATION] = {"sysobs_cachefiles_request_duration_seconds",
		       "End-to-end latency of cachefiles on-demand requests (the reader waits for "
		       "the user daemon), by op and fscache volume.",
		       METRIC_KIND_HISTOGRAM, cf_op_vol, cachefiles_hist_bounds, CF_HIST_FINITE},
    [CF_M_REQUESTS] = {"sysobs_cachefiles_requests_total",
		       "On-demand requests completed, by op, volume and result (ok or error).",
		       METRIC_KIND_COUNTER, cf_op_vol_res},
    [CF_M_INFLIGHT] = {"sysobs_cachefiles_inflight_requests",
		       "On-demand requests waiting for the user daemon, by state: unread (the "
		       "daemon has not read it) or read (read, not answered).",
		       METRIC_KIND_GAUGE, cf_op_vol_state},
    [CF_M_INFLIGHT_OLDEST] = {"sysobs_cachefiles_inflight_oldest_seconds",
			      "Age of the oldest on-demand request waiting for the user daemon, "
			      "by state (0: none waiting). A hung daemon shows here.",
			      METRIC_KIND_GAUGE, cf_op_vol_state},
    [CF_M_READ_BYTES] = {"sysobs_cachefiles_read_bytes_total",
			 "Bytes requested by on-demand READ requests.", METRIC_KIND_COUNTER,
			 cf_vol},
    [CF_M_PICKUP] = {"sysobs_cachefiles_daemon_pickup_seconds",
		     "Time from an on-demand request being issued to the user daemon reading it "
		     "from /dev/cachefiles.",
		     METRIC_KIND_HISTOGRAM, cf_op, cachefiles_hist_bounds, CF_HIST_FINITE},
    [CF_M_DAEMON_EVENTS] = {"sysobs_cachefiles_daemon_events_total",
			    "cachefiles_ondemand_* tracepoint hits, by event.", METRIC_KIND_COUNTER,
			    cf_event},
    [CF_M_WRITTEN_BYTES] = {"sysobs_cachefiles_daemon_written_bytes_total",
			    "Bytes the user daemon wrote into anonymous fds.", METRIC_KIND_COUNTER},
    [CF_M_NULL_OBJECTS] = {"sysobs_cachefiles_null_objects_total",
			   "Requests or events seen with a NULL cachefiles object.",
			   METRIC_KIND_COUNTER},
    [CF_M_SLOW_LOST] = {"sysobs_cachefiles_slow_lost_total",
			"Slow requests lost because the ring buffer was full.",
			METRIC_KIND_COUNTER},
    [CF_M_UNMATCHED] = {"sysobs_cachefiles_unmatched_total",
			"Request returns without a recorded start (map full).",
			METRIC_KIND_COUNTER},
    [CF_M_SLOW] = {"sysobs_cachefiles_slow_requests_total",
		   "Requests over slow_threshold, stored in cachefiles_slow.", METRIC_KIND_COUNTER},
    [CF_M_HIST_FULL] = {"sysobs_cachefiles_hist_full_total",
			"Requests in no histogram: the kernel's per-(volume, op) map was full.",
			METRIC_KIND_COUNTER},
    [CF_M_UNTIMED] = {"sysobs_cachefiles_untimed_total",
		      "Requests not timed at all: the in-flight map was full when they were "
		      "issued.",
		      METRIC_KIND_COUNTER},
    [CF_M_PICKUP_UNTIMED] = {"sysobs_cachefiles_pickup_untimed_total",
			     "Requests whose daemon pick-up was not timed: the pending map was "
			     "full.",
			     METRIC_KIND_COUNTER},
    [CF_M_DOMAIN_IMAGES] =
	{"sysobs_cachefiles_domain_images",
	 "EROFS images mounted now in a shared domain (mount option domain_id=): "
	 "they share the fscache volume erofs,<domain_id>, whose latency and "
	 "counts cover them all (0: none mounted now).",
	 METRIC_KIND_GAUGE, cf_vol},
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
    [CF_STAT_READ_PICKED] = "read_picked",
    [CF_STAT_REPICKED] = "repicked",
    [CF_STAT_PICK_UNMATCHED] = "pick_unmatched",
    [CF_STAT_DAEMON_DEATH] = "daemon_death",
    [CF_STAT_DEATH_FDS] = "death_fd_release",
    [CF_STAT_RESTORE] = "restore",
    [CF_STAT_FLUSH] = "flush",
    [CF_STAT_DAEMON_LOST] = "daemon_record_lost",
    [CF_STAT_READ_NO_DATA] = "read_no_data",
    [CF_STAT_VOLUME_RELEASE] = "volume_release",
    [CF_STAT_RELEASE_LOST] = "volume_release_lost",
    [CF_STAT_COPEN_ERROR] = "copen_error",
    [CF_STAT_COPEN_INVALID] = "copen_invalid",
    [CF_STAT_COPEN_CLOSED] = "copen_closed",
};

/* init with backend be (cachefiles_priv.h): what init does once it has
 * the configured one, and how a test gives it a fake. */
int cachefiles_init_backend(struct collector *c, const struct cachefiles_backend_ops *be)
{
	const struct cachefiles_cfg *cfg = c->cfg;
	struct cachefiles_state *st;
	int err;

	err = be->probe(c->why, sizeof(c->why));
	if (err)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->be_ops = be;
	st->c = c;
	st->cfg.slow_ns = cfg->slow_threshold * 1000000ULL;
	c->priv = st;
	c->interval_ms = cfg->interval;
	return 0;
}

static int cachefiles_init(struct collector *c)
{
	const struct cachefiles_cfg *cfg = c->cfg;
	const struct cachefiles_backend_ops *be = cachefiles_backends[cfg->backend];

	if (!be)
		return collector_unavailable(c, -EOPNOTSUPP, "built without BPF (SYSOBS_BPF=OFF)");
	return cachefiles_init_backend(c, be);
}

/* The series of the label-less families the agent registered. */
static void cachefiles_series_get(struct collector *c, struct cachefiles_state *st)
{
	st->written_bytes = collector_series1(c, CF_M_WRITTEN_BYTES);
	st->null_objects = collector_series1(c, CF_M_NULL_OBJECTS);
	st->lost_ring = collector_series1(c, CF_M_SLOW_LOST);
	st->lost_start = collector_series1(c, CF_M_UNMATCHED);
	st->slow_total = collector_series1(c, CF_M_SLOW);
	st->hist_full = collector_series1(c, CF_M_HIST_FULL);
	st->start_full = collector_series1(c, CF_M_UNTIMED);
	st->pending_full = collector_series1(c, CF_M_PICKUP_UNTIMED);
}

static int cachefiles_start(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	int err;

	cachefiles_series_get(c, st);
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
	int64_t id;

	row.latency_seconds = (double)s->latency_ns / 1e9;
	row.offset = (int64_t)s->offset;
	row.length = (int64_t)s->len;
	row.result = s->ret;
	snprintf(row.op, sizeof(row.op), "%s", cachefiles_op_name(s->op));
	row.object_debug_id = s->object_debug_id;
	row.object_id = s->object_id;
	row.pid = s->pid;
	row.kworker = s->kworker;
	memcpy(row.comm, s->comm, sizeof(row.comm));
	memcpy(row.volume, s->volume, sizeof(row.volume));
	st->slow_seen++;
	sink_add(c->sink, st->slow_total, 1);
	/* The stored row's id, as an exemplar on the latency bucket this
	 * request counted in: from a graph to GET /api/v1/cachefiles/slow. */
	if (!sink_event_id(c->sink, &cachefiles_slow_table, s->ts_ns, &row, &id) && id > 0) {
		const char *lv[] = {row.op, row.volume, NULL};
		char ids[24];

		snprintf(ids, sizeof(ids), "%lld", (long long)id);
		sink_exemplar(c->sink, collector_series(st->c, CF_M_DURATION, lv), "request_id",
			      ids, row.latency_seconds, s->ts_ns);
	}
}

static void cachefiles_on_daemon(const struct cachefiles_daemon_event *e, void *arg)
{
	struct collector *c = arg;
	struct cachefiles_daemon_row row = {0};

	snprintf(row.event, sizeof(row.event), "%s", cachefiles_daemon_event_name(e->event));
	row.pid = e->pid;
	row.inflight = e->inflight;
	memcpy(row.comm, e->comm, sizeof(row.comm));
	clog_info(c, "daemon %s: pid %u (%s), %lld requests in flight", row.event, row.pid,
		  row.comm, (long long)row.inflight);
	sink_event(c->sink, &cachefiles_daemon_table, e->ts_ns, &row);
}

static int cachefiles_on_ready(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	const struct cachefiles_drain d = {cachefiles_on_slow, cachefiles_on_daemon, c};
	int n = st->be_ops->drain(st->be, &d);

	return n < 0 ? n : 0;
}

/* The entry for (volume name, op) in a growable array, created empty; NULL
 * without memory. */
static struct cf_agg *cf_agg_find(struct cf_agg **arr, size_t *n, size_t *cap, const char *volume,
				  enum cf_op op)
{
	struct cf_agg *a;

	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i].op == op && !strcmp((*arr)[i].volume, volume))
			return &(*arr)[i];
	a = array_grow(*arr, cap, *n, sizeof(**arr), 8);
	if (!a)
		return NULL;
	*arr = a;
	a = &(*arr)[(*n)++];
	memset(a, 0, sizeof(*a));
	snprintf(a->volume, sizeof(a->volume), "%s", volume);
	a->op = op;
	return a;
}

/* The entry of (volume, op) in arr, or NULL. */
static struct cf_agg *cf_agg_lookup(struct cf_agg *arr, size_t n, const char *volume, enum cf_op op)
{
	for (size_t i = 0; i < n; i++)
		if (arr[i].op == op && !strcmp(arr[i].volume, volume))
			return &arr[i];
	return NULL;
}

/* This collect's sum for (volume name, op); NULL without memory (this pass
 * misses it, the next one retries). */
static struct cf_agg *cachefiles_agg(struct cachefiles_state *st, const char *volume, enum cf_op op)
{
	return cf_agg_find(&st->agg, &st->n_agg, &st->cap_agg, volume, op);
}

static void cf_agg_add(struct cf_agg *a, const __u64 *buckets, uint64_t sum_ns, uint64_t ok,
		       uint64_t errors, uint64_t bytes)
{
	for (size_t b = 0; b < CF_HIST_BUCKETS; b++)
		a->buckets[b] += buckets[b];
	a->sum_ns += sum_ns;
	a->ok += ok;
	a->errors += errors;
	a->bytes += bytes;
}

/* Adds one kernel histogram to its (volume name, op) sum. */
static void cachefiles_on_hist(const struct cachefiles_hist_snapshot *h, void *arg)
{
	struct cf_agg *a = cachefiles_agg(arg, h->volume, h->op);

	if (a) {
		cf_agg_add(a, h->buckets, h->sum_ns, h->ok, h->errors, h->bytes);
		a->live = true;
	}
}

/* Keeps the totals of a released volume's histogram, deleted in the kernel. */
static void cachefiles_on_retired(const struct cachefiles_hist_snapshot *h, void *arg)
{
	struct cachefiles_state *st = arg;
	struct cf_agg *a =
	    cf_agg_find(&st->retired, &st->n_retired, &st->cap_retired, h->volume, h->op);

	if (a) {
		cf_agg_add(a, h->buckets, h->sum_ns, h->ok, h->errors, h->bytes);
		a->gone = false; /* new totals: published once more, then gone again */
	} else {
		log_warn("cachefiles", "out of memory: the counts of released volume %s are lost",
			 h->volume);
	}
}

/* Counts one waiting request in its (volume name, op, state). */
static void cachefiles_on_inflight(const struct cachefiles_inflight *r, void *arg)
{
	struct cf_agg *a = cachefiles_agg(arg, r->volume, r->op);
	unsigned i = r->picked;

	if (!a)
		return;
	a->live = true;
	a->waiting[i]++;
	if (r->age_ns > a->oldest_ns[i])
		a->oldest_ns[i] = r->age_ns;
}

/* The series of cachefiles_metrics[m] with labels lv is gone. */
static void cf_series_gone(const struct cachefiles_state *st, size_t m, const char *const *lv)
{
	sink_series_gone(st->c->sink, collector_family(st->c, m), collector_series(st->c, m, lv));
}

/*
 * A released volume (unmounted) keeps its totals in st->retired, so a
 * remount of the same name counts on from them; its series are declared
 * gone once (they leave /metrics after [metrics] stale_series_grace) and
 * are not published again until the name is live again.
 */
static void cachefiles_series_gone(struct sink *k, struct cachefiles_state *st,
				   const struct cf_agg *h)
{
	const char *op = cachefiles_op_name(h->op);
	const char *lv[] = {op, h->volume, NULL};
	const char *vol[] = {h->volume, NULL};

	cf_series_gone(st, CF_M_DURATION, lv);
	for (unsigned i = 0; i < 2; i++) {
		const char *res[] = {op, h->volume, i ? "error" : "ok", NULL};
		const char *ls[] = {op, h->volume, cf_wait_states[i], NULL};

		if (!i || h->errors)
			cf_series_gone(st, CF_M_REQUESTS, res);
		cf_series_gone(st, CF_M_INFLIGHT, ls);
		cf_series_gone(st, CF_M_INFLIGHT_OLDEST, ls);
	}
	if (h->op == CF_OP_READ)
		cf_series_gone(st, CF_M_READ_BYTES, vol);
}

static void cachefiles_publish(struct sink *k, struct cachefiles_state *st, const struct cf_agg *h)
{
	const char *op = cachefiles_op_name(h->op);
	const char *lv[] = {op, h->volume, NULL};
	const char *ok[] = {op, h->volume, "ok", NULL};
	const char *er[] = {op, h->volume, "error", NULL};
	const char *vol[] = {h->volume, NULL};

	sink_histogram_set(k, collector_series(st->c, CF_M_DURATION, lv), h->buckets,
			   (double)h->sum_ns / 1e9);
	sink_set(k, collector_series(st->c, CF_M_REQUESTS, ok), (double)h->ok);
	if (h->errors)
		sink_set(k, collector_series(st->c, CF_M_REQUESTS, er), (double)h->errors);
	for (unsigned i = 0; i < 2; i++) {
		const char *ls[] = {op, h->volume, cf_wait_states[i], NULL};

		sink_set(k, collector_series(st->c, CF_M_INFLIGHT, ls), (double)h->waiting[i]);
		sink_set(k, collector_series(st->c, CF_M_INFLIGHT_OLDEST, ls),
			 (double)h->oldest_ns[i] / 1e9);
	}
	if (h->op == CF_OP_READ)
		sink_set(k, collector_series(st->c, CF_M_READ_BYTES, vol), (double)h->bytes);
}

/*
 * Shared EROFS domains, from the mount table: every image mounted with
 * domain_id=D reads through the one volume erofs,D, so that volume's series
 * are the domain's, not one image's. The kernel's volume key does not say
 * it; erofs_show_options does. An image is a superblock: its bind mounts
 * and propagated copies are more mountinfo lines with the same device
 * number. Mounts outside the agent's mount namespace are not seen.
 */
static void cachefiles_domains(struct sink *k, struct cachefiles_state *st)
{
	struct cachefiles_domain_tally t = {0};
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	for (size_t i = 0; i < st->n_domains; i++)
		st->domains[i].images = 0;
	while (f && fgets(line, sizeof(line), f))
		if (cachefiles_domain_tally_line(&t, line) < 0)
			break;
	if (f)
		fclose(f);
	for (size_t j = 0; j < t.n_domains; j++) {
		struct cf_domain *d = NULL;

		for (size_t i = 0; i < st->n_domains && !d; i++)
			if (!strcmp(st->domains[i].volume, t.domains[j].volume))
				d = &st->domains[i];
		if (!d) {
			void *p = array_grow(st->domains, &st->cap_domains, st->n_domains,
					     sizeof(*st->domains), 4);

			if (!p)
				break;
			st->domains = p;
			d = &st->domains[st->n_domains++];
			snprintf(d->volume, sizeof(d->volume), "%s", t.domains[j].volume);
		}
		d->images = t.domains[j].images;
	}
	cachefiles_domain_tally_free(&t);
	for (size_t i = 0; i < st->n_domains; i++) {
		const char *lv[] = {st->domains[i].volume, NULL};

		sink_set(k, collector_series(st->c, CF_M_DOMAIN_IMAGES, lv), st->domains[i].images);
	}
}

/* Released volumes' totals, kept in st->retired, added to this collect's
 * sums. */
static void cachefiles_sum_retired(struct cachefiles_state *st)
{
	for (size_t i = 0; i < st->n_retired; i++) {
		const struct cf_agg *r = &st->retired[i];
		struct cf_agg *a = cachefiles_agg(st, r->volume, r->op);

		if (!a)
			continue;
		for (size_t b = 0; b < CF_HIST_BUCKETS; b++)
			a->buckets[b] += r->buckets[b];
		a->sum_ns += r->sum_ns;
		a->ok += r->ok;
		a->errors += r->errors;
		a->bytes += r->bytes;
	}
}

/* Publishes every sum the kernel still has; one whose volume was released
 * is published once more with its last totals, then its series go. */
static void cachefiles_publish_sums(struct sink *k, struct cachefiles_state *st)
{
	for (size_t i = 0; i < st->n_agg; i++) {
		struct cf_agg *a = &st->agg[i];
		struct cf_agg *ret = cf_agg_lookup(st->retired, st->n_retired, a->volume, a->op);

		if (a->live) {
			/* live (again): publish; its retired totals may go again */
			if (ret)
				ret->gone = false;
			cachefiles_publish(k, st, a);
		} else if (ret && !ret->gone) {
			cachefiles_publish(k, st, a); /* the last totals, once */
			cachefiles_series_gone(k, st, a);
			ret->gone = true;
		}
	}
}

/* The BPF program's own counters: daemon events and what it lost. */
static void cachefiles_publish_stats(struct sink *k, struct cachefiles_state *st,
				     const uint64_t stats[CF_STAT_MAX])
{
	for (unsigned i = 0; i < CF_STAT_MAX; i++) {
		const char *ev[] = {cf_stat_events[i], NULL};

		if (cf_stat_events[i])
			sink_set(k, collector_series(st->c, CF_M_DAEMON_EVENTS, ev),
				 (double)stats[i]);
	}
	sink_set(k, st->written_bytes, (double)stats[CF_STAT_FD_WRITE_BYTES]);
	sink_set(k, st->null_objects, (double)stats[CF_STAT_NULL_OBJECT]);
	sink_set(k, st->lost_ring, (double)stats[CF_STAT_RINGBUF_FULL]);
	sink_set(k, st->lost_start, (double)stats[CF_STAT_START_LOST]);
	sink_set(k, st->hist_full, (double)stats[CF_STAT_HIST_FULL]);
	sink_set(k, st->pending_full, (double)stats[CF_STAT_PENDING_FULL]);
	sink_set(k, st->start_full, (double)stats[CF_STAT_START_FULL]);
}

/* The daemon's pick-up time of each op's requests, for ops it picked up. */
static int cachefiles_publish_pickup(struct sink *k, struct cachefiles_state *st)
{
	struct cf_pickup *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (unsigned op = 0; op < CF_OP_MAX; op++) {
		const char *lv[] = {cachefiles_op_name(op), NULL};

		if (st->be_ops->read_pickup(st->be, op, p) || !p->count)
			continue;
		sink_histogram_set(k, collector_series(st->c, CF_M_PICKUP, lv),
				   (const uint64_t *)p->buckets, (double)p->sum_ns / 1e9);
	}
	free(p);
	return 0;
}

static int cachefiles_collect(struct collector *c)
{
	struct cachefiles_state *st = c->priv;
	struct sink *k = c->sink;
	uint64_t stats[CF_STAT_MAX];
	int err;

	/* Slow requests first, so a scrape after a burst sees them counted. */
	cachefiles_on_ready(c);
	st->n_agg = 0;
	/* Released volumes' totals move from the kernel's maps to st->retired
	 * before the live entries are read: each count is seen once. */
	err = st->be_ops->retire_volumes(st->be, cachefiles_on_retired, st);
	if (err < 0)
		return err;
	cachefiles_sum_retired(st);
	err = st->be_ops->read_hists(st->be, cachefiles_on_hist, st);
	if (!err)
		err = st->be_ops->read_inflight(st->be, cachefiles_on_inflight, st);
	if (err)
		return err;
	cachefiles_publish_sums(k, st);
	err = st->be_ops->read_stats(st->be, stats);
	if (err)
		return err;
	cachefiles_publish_stats(k, st, stats);
	cachefiles_domains(k, st);
	return cachefiles_publish_pickup(k, st);
}

static void cachefiles_stop(struct collector *c)
{
	struct cachefiles_state *st = c->priv;

	if (!st)
		return;
	if (st->be_ops && st->be)
		st->be_ops->close(st->be);
	free(st->agg);
	free(st->retired);
	free(st->domains);
	free(st);
	c->priv = NULL;
	c->fd = -1;
}

const struct collector_ops cachefiles_collector = {
    .name = "cachefiles",
    .help = "latency of cachefiles on-demand requests (EROFS over fscache) via BPF",
    .keys = cachefiles_keys,
    .cfg_size = sizeof(struct cachefiles_cfg),
    .metrics = cachefiles_metrics,
    .tables = cachefiles_tables,
    .init = cachefiles_init,
    .start = cachefiles_start,
    .on_ready = cachefiles_on_ready,
    .collect = cachefiles_collect,
    .stop = cachefiles_stop,
};
