// SPDX-License-Identifier: MIT
/*
 * Prometheus remote-write 1.0 sender: metric history (SQLite) -> WriteRequest
 * (protobuf-c) -> snappy block -> libcurl POST, on a thread of its own. See
 * remote_write.h for the design and docs/remote_write.md for the user's view.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/hist_blob.h"
#include "base/lazylib.h"
#include "base/log.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"
#include "exporters/remote_write_meta.h"
#include "exporters/remote_write_probe.h"
#include "metrics/metrics.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store.h"
#include "storage/store_samples.h"

#define RW_COMPONENT "remote_write"

#define RWK(f, t, d, lo, hi, h) CFG_KEY(struct remote_write_config, f, t, d, lo, hi, h)

const struct cfg_key remote_write_keys[] = {
    SENDER_KEYS(struct remote_write_config, http,
		"receiver endpoint, http:// or https://, e.g. http://127.0.0.1:9090/api/v1/write "
		"(empty = remote_write off)"),
    RWK(max_age, CFG_DURATION, "1h", 1000, 31ull * 86400000,
	"history older than this when its turn comes is dropped and counted (receivers "
	"such as Prometheus refuse samples much older than their newest)"),
    RWK(batch_samples, CFG_U64, "2000", 1, 100000,
	"samples per request; one batch is held in memory at a time"),
    RWK(send_interval, CFG_DURATION, "1s", 100, 60000,
	"how often to look for new history once everything was sent"),
    RWK(external_labels, CFG_STRING, "", 0, 0,
	"labels added to every series unless it has them, e.g. cluster=eu1, replica=a; "
	"also on every exported event row ([export.NAME])"),
    RWK(cursor, CFG_STRING, "remote_write", 0, 0,
	"name of the durable cursor in the database (store_meta cursor.NAME): a second agent "
	"sending the same history elsewhere needs a name of its own"),
    RWK(metadata_interval, CFG_DURATION, "1h", 0, 86400000,
	"how often to send every family's type, help and unit (also at start and when they "
	"change; 0 = never); Prometheus and VictoriaMetrics keep none of it, Mimir-like "
	"receivers that do may want 1m"),
    RWK(job, CFG_STRING, "sysobs", 0, 0,
	"job label of every series unless it has one (empty = none); the same as the "
	"documented scrape job's name; also on every exported event row"),
    RWK(instance, CFG_STRING, "", 0, 0,
	"instance label of every series unless it has one (empty = [agent] hostname, else the "
	"host name, as the documented scrape config relabels it); also the host of every "
	"exported event row"),
    RWK(native_histograms, CFG_BOOL, "false", 0, 0,
	"send histograms as native histograms (the receiver must keep them, e.g. Prometheus "
	"with --enable-feature=native-histograms; not VictoriaMetrics 1.79) instead of "
	"NAME_bucket, _count and _sum"),
    RWK(native_histograms_check, CFG_DURATION, "15s", 0, 3600000,
	"with native_histograms: this long after the first one accepted, ask the receiver's "
	"query API whether it stored it; if not, log an error and send classic buckets from "
	"then on (0 = trust the receiver)"),
    RWK(query_url, CFG_STRING, "", 0, 0,
	"the receiver's Prometheus query API for native_histograms_check, e.g. "
	"http://vmselect:8481/select/0/prometheus (empty = url without /api/v1/write)"),
    {0},
};

/* ---- the sender ---- */

struct rw_metrics {
	struct metric_series *sent, *failed, *retried, *pending, *last_send, *highest, *duration,
	    *bytes, *cpu, *meta_sent;
	struct metric_series *drop_old, *drop_deleted, *drop_invalid;
	struct metric_series *native_form, *unstored;
};

struct remote_write {
	struct remote_write_config cfg; /* strings point into the agent's config */
	/* The identity's labels, added to every series (exporters/identity.h);
	 * the strings are the agent's. */
	struct rw_label ext[RW_MAX_LABELS];
	size_t n_ext;

	struct store *store;
	struct store_cursor *cursor;
	int64_t pos; /* rowid of the last sample accepted or given up */
	struct sender snd;
	struct rw_batch batch;
	struct rw_metrics m;
	struct metrics *metrics;
	struct rw_meta meta;
	struct log_ratelimit rl_fail, rl_store;
	bool native;	       /* histograms go native: the config, until the check says no */
	struct rw_probe probe; /* native_histograms_check */
};

static int rw_cursor_name_check(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 40)
		return -EINVAL;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return -EINVAL;
	return 0;
}

static void rw_free_settings(struct remote_write *rw)
{
	sender_free(&rw->snd);
	free(rw);
}

/* Every check of remote_write_new(), past a failed one: each error is
 * recorded (cfg_fail()); the secret files are read only with read_files. */
static int rw_settings(struct config *cfg, const struct export_identity_buf *id,
		       struct remote_write *rw, bool read_files)
{
	struct remote_write_config *c = &rw->cfg;
	const char *why = NULL;
	int bad = 0, err;

	if (rw_cursor_name_check(c->cursor))
		bad |= cfg_error(cfg, "remote_write", "cursor",
				 "1 to 40 of [a-zA-Z0-9_.-], e.g. remote_write or vm");
	if (id->key)
		bad |= cfg_error(cfg, "remote_write", id->key, "%s", id->why);
	memcpy(rw->ext, id->labels, id->n_labels * sizeof(rw->ext[0]));
	rw->n_ext = id->n_labels;
	/* snappy is loaded here, as libcurl by sender_check(): only for a
	 * configured remote_write (base/lazylib.h). */
	if (!lazylib_snappy(&why))
		bad |= cfg_error(cfg, "remote_write", "url", "remote_write needs snappy: %s", why);
	err = sender_check(&rw->snd, cfg, "remote_write", &c->http, read_files);
	if (err == -ENOMEM)
		return err;
	return bad || err ? -EINVAL : 0;
}

int remote_write_check(struct config *cfg, const struct export_identity_buf *id, bool read_files,
		       struct remote_write **out)
{
	struct remote_write *rw;
	int err;

	*out = NULL;
	rw = calloc(1, sizeof(*rw));
	if (!rw)
		return -ENOMEM;
	err = cfg_section_parse(cfg, "remote_write", &rw->cfg);
	if (!*rw->cfg.http.url) { /* off: nothing more to check */
		rw_free_settings(rw);
		return err;
	}
	if (rw_settings(cfg, id, rw, read_files) || err) {
		rw_free_settings(rw);
		return -EINVAL;
	}
	*out = rw;
	return 0;
}

int remote_write_new(struct config *cfg, const struct export_identity_buf *id,
		     struct remote_write **out)
{
	return remote_write_check(cfg, id, true, out);
}

/* One batch read from the history. */
struct rw_read {
	struct remote_write *rw;
	int64_t cutoff_ns;
	int64_t first, last; /* rowids read */
	int64_t newest_ms;   /* newest timestamp in the batch */
	int64_t oldest_ns;   /* timestamp of its first row: the oldest pending */
	uint64_t too_old;
	int err;
};

/* rw_read_row's "the batch is full": the walk stops before this row. */
#define RW_READ_FULL 1

static int rw_read_row(const struct store_sample *smp, void *arg)
{
	struct rw_read *x = arg;
	int64_t ms = smp->ts_ns / 1000000;
	int err;

	/* A row with buckets adds up to HIST_BLOB_MAX_BUCKETS samples more:
	 * the batch has that much room past batch_samples. */
	if (x->rw->batch.n_rows >= x->rw->cfg.batch_samples)
		return RW_READ_FULL;
	if (!x->first) {
		x->first = smp->rowid;
		x->oldest_ns = smp->ts_ns;
	}
	x->last = smp->rowid;
	if (smp->ts_ns < x->cutoff_ns) {
		x->too_old++;
		return 0;
	}
	err = rw_batch_add_history(&x->rw->batch, x->rw->native, smp, ms);
	if (err == -ENOMEM || err == -ENOSPC)
		return -ENOMEM;
	if (!err && ms > x->newest_ms)
		x->newest_ms = ms;
	return 0;
}

/* The cursor moves past the batch: count what it leaves unsent (rows
 * retention deleted since this turn's rw_count_deleted() included). */
static void rw_advance(struct remote_write *rw, const struct rw_read *x)
{
	if (x->first > rw->pos + 1)
		sender_lost(&rw->snd, rw->m.drop_deleted, (uint64_t)(x->first - rw->pos - 1));
	sender_lost(&rw->snd, rw->m.drop_old, x->too_old);
	sender_lost(&rw->snd, rw->m.drop_invalid, rw->batch.invalid);
	rw->pos = x->last;
	sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
}

/* Every turn, whatever the receiver's state: samples retention deleted
 * after the cursor (the rowids between it and the oldest left) are counted
 * at once, and the cursor moves past them, so an outage that outlasts the
 * retention shows in sysobs_remote_write_samples_dropped_total{reason=
 * "deleted"} while it lasts, not once the receiver is back. */
static void rw_count_deleted(struct remote_write *rw)
{
	int64_t first;

	if (store_samples_first(rw->store, &first) || first <= rw->pos + 1)
		return;
	sender_lost(&rw->snd, rw->m.drop_deleted, (uint64_t)(first - rw->pos - 1));
	rw->pos = first - 1;
	sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
}

/* An accepted request carried the first native histograms: the check of
 * native_histograms_check is armed for one of them. */
static void rw_probe_after_send(struct remote_write *rw)
{
	char name[sizeof(rw->batch.native_sum_name)];
	size_t n = strlen(rw->batch.native_sum_name);

	if (!rw->batch.n_native || rw->probe.done || rw->probe.due_ns || n < 5)
		return;
	snprintf(name, sizeof(name), "%.*s", (int)(n - 4), rw->batch.native_sum_name);
	if (rw_probe_arm(&rw->probe, name, rw->ext, rw->n_ext,
			 clock_mono_ns() + (int64_t)rw->cfg.native_histograms_check * 1000000)) {
		log_warn(RW_COMPONENT, "cannot check that the receiver stores native histograms "
				       "(out of memory, or labels too long)");
		rw->probe.done = true;
	}
}

/* When the check is due: the receiver either has the histogram (native it
 * stays) or not (an error, counted, and classic buckets from now on). */
static void rw_probe_turn(struct remote_write *rw)
{
	int rc;

	if (rw->probe.done || !rw->probe.due_ns || clock_mono_ns() < rw->probe.due_ns)
		return;
	rc = rw_probe_run(&rw->probe, &rw->snd);
	if (rc == -EAGAIN && rw->probe.tries < RW_PROBE_TRIES) {
		/* the receiver shows nothing of the batch yet: later */
		rw->probe.due_ns =
		    clock_mono_ns() + (int64_t)rw->cfg.native_histograms_check * 1000000;
		return;
	}
	rw->probe.done = true;
	if (rc == -EAGAIN) {
		log_warn(RW_COMPONENT,
			 "cannot check whether %s stores native histograms: its query API showed "
			 "no %s of this agent in %u tries",
			 rw->probe.base_public, RW_PROBE_CONTROL, rw->probe.tries);
		return;
	}
	if (rc == 1) {
		log_info(RW_COMPONENT, "%s stores the native histograms it accepts (%s found)",
			 rw->probe.base_public, rw->probe.selector);
		return;
	}
	if (rc < 0) {
		log_warn(RW_COMPONENT,
			 "cannot check whether %s stores native histograms: %s%.*s (set "
			 "query_url, or native_histograms_check = 0)",
			 rw->probe.base_public, rw->snd.status ? "its query API answered " : "",
			 rw->snd.status ? 160 : (int)sizeof(rw->snd.errbuf),
			 rw->snd.status ? rw->snd.resp : rw->snd.errbuf);
		return;
	}
	log_err(RW_COMPONENT,
		"the receiver accepted native histograms and stored none (%s absent from %s, "
		"which shows the %s sent with it): sending classic _bucket series from now on; "
		"set native_histograms = false for it (docs/remote_write.md)",
		rw->probe.selector, rw->probe.base_public, RW_PROBE_CONTROL);
	rw->native = false;
	sender_count(rw->m.unstored, 1);
	if (rw->m.native_form)
		series_set(rw->m.native_form, 0);
}

/* One turn of the sender: reads a batch after the cursor, sends it, and
 * returns how long to wait before the next turn (ms). */
static uint64_t rw_turn(struct remote_write *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	struct rw_read x = {.rw = rw};
	int64_t last, t0, first;
	size_t n;
	enum sender_verdict verdict;
	int err;

	err = store_samples_last(rw->store, &last);
	if (err) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, RW_COMPONENT,
				"cannot read the metric history: %s", strerror(-err));
		return c->send_interval;
	}
	if (last < rw->pos) {
		log_warn(RW_COMPONENT,
			 "the metric history was renumbered (emptied or a new database): "
			 "sending it from its start");
		/* from its oldest sample: nothing of it was deleted unsent */
		if (store_samples_first(rw->store, &first))
			first = 0;
		rw->pos = first > 0 ? first - 1 : 0;
		sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
	}
	rw_count_deleted(rw);
	if (rw->m.pending)
		series_set(rw->m.pending, (double)(last > rw->pos ? last - rw->pos : 0));
	if (last <= rw->pos) {
		sender_status_backlog(&rw->snd, 0, 0);
		return c->send_interval;
	}

	rw_batch_reset(&rw->batch);
	x.cutoff_ns = clock_wall_ns() - (int64_t)c->max_age * 1000000;
	err = store_samples_after(rw->store, rw->pos, c->batch_samples, rw_read_row, &x);
	if (err == RW_READ_FULL)
		err = 0;
	if (err || rw->batch.arena.oom) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, RW_COMPONENT,
				"cannot read the metric history: %s",
				strerror(err ? -err : ENOMEM));
		return c->send_interval;
	}
	if (!x.last)
		return c->send_interval;
	sender_status_backlog(&rw->snd, (uint64_t)(last - rw->pos),
			      (double)(clock_wall_ns() - x.oldest_ns) / 1e9);
	if (!rw->batch.n_rows) { /* all too old or invalid: nothing to send */
		rw_advance(rw, &x);
		return 0;
	}
	if (rw_batch_encode(&rw->batch, rw->ext, rw->n_ext, &n)) {
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
				"out of memory encoding %zu samples", rw->batch.n_rows);
		return c->http.max_backoff;
	}

	t0 = clock_mono_ns();
	verdict = sender_post(&rw->snd, rw->batch.body, rw->batch.body_len, false);
	if (verdict == SENDER_STOPPED)
		return 0; /* aborted by the stop: nothing to count */
	if (rw->m.duration)
		series_observe(rw->m.duration, (double)(clock_mono_ns() - t0) / 1e9);

	switch (verdict) {
	case SENDER_SENT:
		sender_count(rw->m.sent, n);
		sender_count(rw->m.bytes, rw->batch.body_len);
		if (rw->m.last_send)
			series_set(rw->m.last_send, (double)clock_wall_ns() / 1e9);
		if (rw->m.highest)
			series_set(rw->m.highest, (double)x.newest_ms / 1e3);
		sender_recovered(&rw->snd);
		sender_status_sent(&rw->snd, n, true);
		rw_probe_after_send(rw);
		rw_advance(rw, &x);
		if (x.last >= last)
			sender_status_backlog(&rw->snd, 0, 0);
		return x.last < last ? 0 : c->send_interval;
	case SENDER_RETRY: {
		uint64_t wait = sender_retry_wait(&rw->snd);

		sender_count(rw->m.retried, n);
		sender_status_retried(&rw->snd, n);
		if (rw->snd.status) {
			sender_status_error(&rw->snd, "answered %ld: %.200s", rw->snd.status,
					    rw->snd.resp);
			log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
					"%s answered %ld (%.120s); retrying %zu samples in %" PRIu64
					" ms",
					rw->snd.url_public, rw->snd.status, rw->snd.resp, n, wait);
		} else {
			sender_status_error(&rw->snd, "%s", rw->snd.errbuf);
			log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
					"%s: %s; retrying %zu samples in %" PRIu64 " ms",
					rw->snd.url_public, rw->snd.errbuf, n, wait);
		}
		return wait;
	}
	default:
		/* 400, 422: a verdict on the data, it would refuse it again. */
		sender_lost(&rw->snd, rw->m.failed, n);
		sender_status_failed(&rw->snd, n);
		sender_status_error(&rw->snd, "refused with %ld: %.200s", rw->snd.status,
				    rw->snd.resp);
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
				"%s refused %zu samples with %ld (%.160s); dropped, not retried",
				rw->snd.url_public, n, rw->snd.status, rw->snd.resp);
		rw->snd.backoff_ms = 0;
		rw_advance(rw, &x);
		return 0;
	}
}

/* Metadata, in a request of its own when due (remote_write_meta.h). A
 * receiver that refuses it (any 4xx: many receivers take no metadata) gets
 * it again after metadata_interval, a failing one after max_backoff;
 * samples never wait for it. */
static void rw_meta_turn(struct remote_write *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	int64_t now = clock_mono_ns();
	enum sender_verdict verdict;
	long status;

	if (!c->metadata_interval || !rw_meta_due(&rw->meta, rw->metrics, now))
		return;
	verdict = sender_post(&rw->snd, rw->meta.body, rw->meta.body_len, false);
	status = rw->snd.status;
	if (verdict == SENDER_SENT) {
		sender_count(rw->m.meta_sent, rw->meta.n);
		rw_meta_sent(&rw->meta, now, (int64_t)c->metadata_interval * 1000000);
		return;
	}
	if (status)
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, RW_COMPONENT,
				"%s answered %ld (%.120s) to the metadata of %zu families",
				rw->snd.url_public, status, rw->snd.resp, rw->meta.n);
	rw_meta_failed(&rw->meta, now,
		       (int64_t)(status >= 400 && status < 500 && status != 429
				     ? c->metadata_interval
				     : c->http.max_backoff) *
			   1000000);
}

static void *rw_main(void *arg)
{
	struct remote_write *rw = arg;
	uint64_t wait;

	do {
		rw_meta_turn(rw);
		rw_probe_turn(rw);
		wait = rw_turn(rw);
		sender_publish_cpu(rw->m.cpu);
	} while (!sender_stopping(&rw->snd) && (!wait || sender_sleep(&rw->snd, wait)));
	return NULL;
}

static void rw_metrics_register(struct remote_write *rw, struct metrics *m)
{
	static const char *const reason[] = {"reason", NULL};
	static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
					0.25,  0.5,    1,     2.5,  5,	   10,	 30};
	struct metric *f;

	rw->m.sent = metrics_counter1(m, "sysobs_remote_write_samples_sent_total",
				      "Samples the remote-write receiver accepted (2xx).");
	rw->m.failed = metrics_counter1(
	    m, "sysobs_remote_write_samples_failed_total",
	    "Samples in requests the receiver refused as data (400, 422; not retried).");
	rw->m.retried =
	    metrics_counter1(m, "sysobs_remote_write_samples_retried_total",
			     "Samples in requests sent again: the receiver's state (401, 403, "
			     "404, 408, 429, 5xx, any answer not about the data) or a transport "
			     "error.");
	f = metrics_counter(m, "sysobs_remote_write_samples_dropped_total",
			    "Metric history samples never sent: too_old (older than max_age), "
			    "deleted (by retention before their turn), invalid (label set).",
			    reason);
	if (f) {
		rw->m.drop_old = metric_series(f, (const char *const[]){"too_old"});
		rw->m.drop_deleted = metric_series(f, (const char *const[]){"deleted"});
		rw->m.drop_invalid = metric_series(f, (const char *const[]){"invalid"});
	}
	rw->m.pending = metrics_gauge1(
	    m, "sysobs_remote_write_pending_samples",
	    "Metric history samples after the sender's cursor (committed, not yet sent).");
	rw->m.last_send = metrics_gauge1(m, "sysobs_remote_write_last_send_timestamp_seconds",
					 "Unix time of the last request the receiver accepted.");
	rw->m.highest = metrics_gauge1(m, "sysobs_remote_write_highest_sent_timestamp_seconds",
				       "Timestamp of the newest sample the receiver accepted.");
	rw->m.bytes = metrics_counter1(m, "sysobs_remote_write_bytes_sent_total",
				       "Request bytes (snappy-compressed) the receiver accepted.");
	rw->m.meta_sent =
	    metrics_counter1(m, "sysobs_remote_write_metadata_sent_total",
			     "Metric family metadata (type, help, unit) the receiver accepted.");
	rw->m.native_form = metrics_gauge1(
	    m, "sysobs_remote_write_native_histograms",
	    "1 while histograms are sent as native histograms, 0 as classic _bucket series "
	    "(native_histograms off, or the receiver found not to store them).");
	rw->m.unstored = metrics_counter1(
	    m, "sysobs_remote_write_native_histograms_unstored_total",
	    "Checks that found the receiver had not stored a native histogram it accepted "
	    "(the sender then sends classic buckets).");
	if (rw->m.native_form)
		series_set(rw->m.native_form, rw->native);
	rw->m.cpu = metrics_counter1(m, "sysobs_remote_write_cpu_seconds_total",
				     "CPU time (user + system) of the sender thread.");
	f = metrics_histogram(m, "sysobs_remote_write_batch_duration_seconds",
			      "Duration of each request of a batch, retries included.", NULL,
			      bounds, sizeof(bounds) / sizeof(bounds[0]));
	rw->m.duration = f ? metric_series(f, NULL) : NULL;
}

int remote_write_start(struct remote_write *rw, struct store *s, struct metrics *m)
{
	static const char *const headers[] = {"Content-Encoding: snappy",
					      "Content-Type: application/x-protobuf",
					      "X-Prometheus-Remote-Write-Version: 0.1.0", NULL};
	char err[256];
	int64_t first = 0;
	bool found;
	int rc;

	if (!rw)
		return 0;
	rw->store = s;
	rw->metrics = m;
	rw->cursor = store_cursor_open(s, rw->cfg.cursor, err, sizeof(err));
	if (!rw->cursor) {
		log_err(RW_COMPONENT, "cannot open its cursor: %s", err);
		return -EIO;
	}
	if (store_cursor_find(rw->cursor, &rw->pos, &found) ||
	    (!found && store_samples_first(s, &first))) {
		log_err(RW_COMPONENT, "cannot read its cursor");
		return -EIO;
	}
	if (!found) {
		/* The cursor exists from the first start: what retention deletes
		 * from now on is counted even if nothing was ever sent. History
		 * deleted before remote_write was configured is not its loss. */
		rw->pos = first ? first - 1 : 0;
		if (store_cursor_set(rw->cursor, rw->pos))
			log_warn(RW_COMPONENT,
				 "cannot store its first cursor yet (%" PRId64
				 "); kept in memory, stored with the first batch",
				 rw->pos);
	}
	if (rw_batch_init(&rw->batch, rw->cfg.batch_samples + HIST_BLOB_MAX_BUCKETS) ||
	    sender_setup(&rw->snd, headers)) {
		log_err(RW_COMPONENT, "out of memory (or libcurl failed to start)");
		return -ENOMEM;
	}
	rw->native = rw->cfg.native_histograms;
	rw->probe.done = true;
	if (rw->native && rw->cfg.native_histograms_check) {
		rc = rw_probe_init(&rw->probe, rw->cfg.http.url, rw->cfg.query_url);
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			log_warn(RW_COMPONENT,
				 "native_histograms: %s is no .../api/v1/write URL, so whether it "
				 "stores them cannot be checked; set query_url",
				 rw->snd.url_public);
			rw->probe.done = true;
		}
	}
	rw_metrics_register(rw, m);
	rc = sender_start(&rw->snd, rw_main, rw, "sysobs-rw");
	if (rc) {
		log_err(RW_COMPONENT, "cannot start its thread: %s", strerror(-rc));
		return rc;
	}
	log_info(RW_COMPONENT, "sending metric history to %s from sample %" PRId64 "%s%s",
		 rw->snd.url_public, rw->pos,
		 strcmp(rw->cfg.cursor, "remote_write") ? " of cursor " : "",
		 strcmp(rw->cfg.cursor, "remote_write") ? rw->cfg.cursor : "");
	return 0;
}

void remote_write_status(struct remote_write *rw, struct export_status *st)
{
	sender_status_get(&rw->snd, st);
	st->name = "remote_write";
	st->format = "remote_write";
	st->url = rw->snd.url_public;
}

void remote_write_free(struct remote_write *rw)
{
	if (!rw)
		return;
	sender_free(&rw->snd); /* the thread first: it uses the rest */
	store_cursor_close(rw->cursor);
	rw_batch_free(&rw->batch);
	rw_meta_free(&rw->meta);
	rw_probe_free(&rw->probe);
	rw_free_settings(rw);
}
