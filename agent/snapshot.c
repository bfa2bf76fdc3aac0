// SPDX-License-Identifier: MIT
/*
 * What the agent's timers feed: metric-history snapshots (every counter and
 * gauge series, histograms by their _count, with their classic and native
 * buckets in a blob beside it (metrics/hist_blob.h), and _sum, into the
 * store's queue as samples, so they take the same path as event rows), and
 * the store's own statistics published as metrics. The store knows nothing
 * of the metrics registry; this file is where the two meet.
 */
#include <errno.h>
#include <stdlib.h>

#include "metrics/hist_blob.h"
#include "base/log.h"
#include "agent/snapshot.h"
#include "metrics/metrics.h"
#include "storage/store.h"

struct snapshot_ctx {
	struct store *store;
	int64_t ts_ns;
	size_t queued, dropped, no_buckets, no_native;
};

/* The blob of one histogram sample, its native buckets in it when the
 * registry keeps them and native is set. */
static size_t snapshot_blob(const struct metric_buckets *b, bool native, uint8_t *blob, size_t cap)
{
	struct hist_blob_native nh;

	if (!native || !b->native)
		return hist_blob_encode(b->le, b->counts, b->n, blob, cap);
	nh = (struct hist_blob_native){
	    .schema = b->native->schema,
	    .zero_threshold = b->zero_threshold,
	    .sum = b->sum,
	    .zero_count = b->native->zero_count,
	    .pos = b->native->pos,
	    .neg = b->native->neg,
	};
	return hist_blob_encode_native(b->le, b->counts, b->n, &nh, blob, cap);
}

/* Under the registry lock: only copies into the queue, never waits. A
 * histogram's blob goes with its native buckets if it fits a queue slot,
 * else with its classic ones alone, else the count goes alone. */
static void snapshot_visit(const char *name, const char *labels, double value,
			   const struct metric_buckets *b, void *arg)
{
	struct snapshot_ctx *x = arg;
	uint8_t blob[512]; /* no queue slot holds more */
	size_t len = b ? snapshot_blob(b, true, blob, sizeof(blob)) : 0;
	int err = -E2BIG;

	if (len)
		err = store_submit_sample_blob(x->store, x->ts_ns, name, labels, value, blob, len);
	if (b && b->native && err == -E2BIG) {
		x->no_native++;
		len = snapshot_blob(b, false, blob, sizeof(blob));
		if (len)
			err = store_submit_sample_blob(x->store, x->ts_ns, name, labels, value,
						       blob, len);
	}
	if (b && err == -E2BIG) {
		/* Too many buckets for a queue slot: the count at least. */
		x->no_buckets++;
		err = store_submit_sample(x->store, x->ts_ns, name, labels, value);
	} else if (!b) {
		err = store_submit_sample(x->store, x->ts_ns, name, labels, value);
	}
	if (err)
		x->dropped++;
	else
		x->queued++;
}

static void snapshot_count(const char *name, const char *labels, double value,
			   const struct metric_buckets *b, void *arg)
{
	(void)name, (void)labels, (void)value, (void)b;
	++*(size_t *)arg;
}

/*
 * One snapshot, whole or not at all: its samples' queue slots are reserved
 * first (the series counted in a pass of their own), so that a queue filling
 * up (a full disk, a locked database) loses whole snapshots, each counted in
 * sysobs_history_snapshots_dropped_total{reason} and its samples in
 * sysobs_history_samples_dropped_total{reason}: a timestamp missing from the
 * history is a snapshot counted, never a partial one. The snapshot carries
 * the counters as they are with itself counted, so the history alone says
 * how many snapshots are missing up to each one it holds.
 */
int agent_snapshot(struct metrics *m, struct store *s, struct store_series *ss, int64_t ts_ns)
{
	static struct log_ratelimit rl, rl_buckets, rl_native, rl_full;
	struct snapshot_ctx x = {.store = s, .ts_ns = ts_ns};
	enum store_drop_reason why;
	size_t n = 0;
	int err;

	metrics_visit_buckets(m, snapshot_count, &n);
	err = store_snapshot_begin(s, n, &why);
	/* The counters as of this snapshot, in it: the history says itself
	 * how many snapshots there were and how many are missing. */
	agent_store_metrics_publish(ss, s);
	if (err) {
		log_ratelimited(&rl_full, 60000, LOG_LVL_WARN, "agent",
				"metric history: snapshot of %zu samples dropped (%s; "
				"sysobs_history_snapshots_dropped_total)",
				n, store_drop_reason_name(why));
		return -EAGAIN;
	}
	metrics_visit_buckets(m, snapshot_visit, &x);
	store_snapshot_end(s);
	if (x.no_native)
		log_ratelimited(&rl_native, 3600000, LOG_LVL_WARN, "agent",
				"metric history: %zu histogram series kept without their "
				"native buckets (too many to fit a queue slot)",
				x.no_native);
	if (x.no_buckets)
		log_ratelimited(&rl_buckets, 3600000, LOG_LVL_WARN, "agent",
				"metric history: %zu histogram series kept without their "
				"buckets (too many to fit a queue slot)",
				x.no_buckets);
	if (x.dropped)
		log_ratelimited(&rl, 60000, LOG_LVL_WARN, "agent",
				"metric history: %zu of %zu samples not queued (queue full or "
				"label set too long)",
				x.dropped, x.dropped + x.queued);
	return x.dropped ? -EAGAIN : 0;
}

struct store_series {
	struct metric_series *written, *dropped_error, *samples, *depth, *bytes, *batches, *del_age,
	    *del_size, *err[STORE_ERROR_OPS];
	struct metric_series *samples_dropped[STORE_DROP_REASONS], *snapshots,
	    *snapshots_dropped[STORE_DROP_REASONS];
};

struct store_series *agent_store_metrics_new(struct metrics *m)
{
	static const char *const reason[] = {"reason", NULL};
	static const char *const op[] = {"op", NULL};
	static const char *const dropped_labels[] = {"collector", "reason", NULL};
	struct store_series *ss = calloc(1, sizeof(*ss));
	struct metric *f;

	if (!ss)
		return NULL;
	ss->written = metrics_counter1(m, "sysobs_events_written_total",
				       "Event rows committed to the database.");
	f = metrics_counter(m, "sysobs_events_dropped_total",
			    "Event rows dropped before reaching the database.", dropped_labels);
	if (f)
		ss->dropped_error = metric_series(f, (const char *const[]){"", "insert_error"});
	ss->samples = metrics_counter1(m, "sysobs_history_samples_written_total",
				       "Metric history samples committed to the database.");
	f = metrics_counter(m, "sysobs_history_samples_dropped_total",
			    "Metric history samples lost, by reason: queue_full, disk_full, locked "
			    "(the queue was full, and why), too_long (label set longer than a "
			    "queue slot), insert_error (refused by the database).",
			    reason);
	for (int i = 0; f && i < STORE_DROP_REASONS; i++)
		ss->samples_dropped[i] =
		    metric_series(f, (const char *const[]){store_drop_reason_name(i)});
	ss->snapshots = metrics_counter1(m, "sysobs_history_snapshots_total",
					 "Metric history snapshots taken (each queued whole, or "
					 "dropped and counted).");
	f = metrics_counter(m, "sysobs_history_snapshots_dropped_total",
			    "Metric history snapshots not queued at all, by reason: queue_full, "
			    "disk_full, locked.",
			    reason);
	for (int i = 0; f && i <= STORE_DROP_LOCKED; i++)
		ss->snapshots_dropped[i] =
		    metric_series(f, (const char *const[]){store_drop_reason_name(i)});
	f = metrics_counter(m, "sysobs_storage_errors_total",
			    "Storage operations that failed (commits are retried).", op);
	for (int i = 0; f && i < STORE_ERROR_OPS; i++)
		ss->err[i] = metric_series(f, (const char *const[]){store_error_op_name(i)});
	f = metrics_counter(m, "sysobs_storage_rows_deleted_total", "Rows deleted by retention.",
			    reason);
	if (f) {
		ss->del_age = metric_series(f, (const char *const[]){"age"});
		ss->del_size = metric_series(f, (const char *const[]){"size"});
	}
	ss->depth =
	    metrics_gauge1(m, "sysobs_storage_queue_depth", "Rows waiting in the storage queue.");
	ss->bytes = metrics_gauge1(m, "sysobs_storage_db_bytes",
				   "Size of the database file (page_count * page_size).");
	ss->batches = metrics_counter1(m, "sysobs_storage_batches_total",
				       "Transactions committed by the storage writer.");
	return ss;
}

static void set_u64(struct metric_series *ms, uint64_t v)
{
	if (ms)
		series_set(ms, (double)v);
}

void agent_store_metrics_publish(struct store_series *ss, struct store *s)
{
	struct store_stats st;

	if (!ss)
		return;
	store_get_stats(s, &st);
	set_u64(ss->written, st.rows_written);
	set_u64(ss->dropped_error, st.rows_dropped_error);
	set_u64(ss->samples, st.samples_written);
	set_u64(ss->snapshots, st.snapshots);
	for (int i = 0; i < STORE_DROP_REASONS; i++) {
		set_u64(ss->samples_dropped[i], st.samples_dropped_by[i]);
		set_u64(ss->snapshots_dropped[i], st.snapshots_dropped_by[i]);
	}
	set_u64(ss->batches, st.batches);
	set_u64(ss->depth, st.queue_depth);
	set_u64(ss->bytes, st.db_bytes);
	set_u64(ss->del_age, st.rows_deleted_age);
	set_u64(ss->del_size, st.rows_deleted_size);
	for (int i = 0; i < STORE_ERROR_OPS; i++)
		set_u64(ss->err[i], st.errors[i]);
}

void agent_store_metrics_free(struct store_series *ss)
{
	free(ss);
}
