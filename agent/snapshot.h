/* SPDX-License-Identifier: MIT */
/*
 * Metric-history snapshots and the store's statistics as metrics, run from
 * the agent's timers (agent/snapshot.c).
 */
#ifndef SYSOBS_SNAPSHOT_H
#define SYSOBS_SNAPSHOT_H

#include <stdint.h>

struct metrics;
struct store;
struct store_series;

/* Queues every counter and gauge series (histograms: _count with the
 * classic buckets in a blob, and _sum) as a
 * metric history sample stamped ts_ns, all of them or none (the queue's
 * slots reserved first). 0, or -EAGAIN when some were lost (counted by the
 * store by reason, logged here at most once a minute). ss (may be NULL) is
 * published before the samples are taken, so the snapshot holds its own
 * count in sysobs_history_snapshots_total. */
int agent_snapshot(struct metrics *m, struct store *s, struct store_series *ss, int64_t ts_ns);

/* The store's statistics as sysobs_events_written_total,
 * sysobs_storage_*, ... (registered once, then set from store_get_stats). */
struct store_series *agent_store_metrics_new(struct metrics *m);
void agent_store_metrics_publish(struct store_series *ss, struct store *s);
void agent_store_metrics_free(struct store_series *ss); /* accepts NULL */

#endif
