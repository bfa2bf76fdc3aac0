// SPDX-License-Identifier: MIT
/*
 * The agent's side of collectors/sink.h: one sink per collector, wired to the
 * metrics registry and the store. Queue-full policy lives here, once: the row
 * is dropped, counted in sysobs_events_dropped_total{collector, reason}
 * (queue_full, or disk_full/locked when the writer's commits fail for
 * that: store_full_reason()), and a warning is logged at most every 10 s per
 * collector.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "agent/names.h"
#include "agent/sink_impl.h"
#include "exporters/alertmanager.h"
#include "metrics/metrics.h"
#include "storage/store.h"
#include "storage/store_query.h"

struct agent_sink {
	struct sink sink;
	struct metrics *m;
	struct store *const *store; /* the agent's, opened after the collectors' init */
	/* {collector, reason}: queue_full, disk_full, locked (store_full_reason()) */
	struct metric_series *dropped[STORE_DROP_LOCKED + 1];
	struct log_ratelimit rl;
};

static int as_event_id(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row,
		       int64_t *id)
{
	struct agent_sink *as = k->impl;
	int err;

	err = store_submit_id(*as->store, t, ts_ns, row, id);
	if (err == -EAGAIN) {
		enum store_drop_reason why = store_full_reason(*as->store);

		series_add(as->dropped[why], 1);
		log_ratelimited(&as->rl, 10000, LOG_LVL_WARN, k->collector,
				"event queue full (%s): %s rows dropped "
				"(sysobs_events_dropped_total)",
				store_drop_reason_name(why), t->name);
	} else if (err) {
		log_ratelimited(&as->rl, 10000, LOG_LVL_WARN, k->collector,
				"cannot queue a %s row: %s", t->name, strerror(-err));
	}
	return err;
}

static int as_event(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row)
{
	int64_t id;

	return as_event_id(k, t, ts_ns, row, &id);
}

static struct sink_family *as_family(struct sink *k, const struct metric_desc *d)
{
	struct agent_sink *as = k->impl;
	struct metric *f = NULL;

	switch (d->kind) {
	case METRIC_KIND_COUNTER:
		f = metrics_counter(as->m, d->name, d->help, d->labels);
		break;
	case METRIC_KIND_GAUGE:
		f = metrics_gauge(as->m, d->name, d->help, d->labels);
		break;
	case METRIC_KIND_HISTOGRAM:
		f = metrics_histogram(as->m, d->name, d->help, d->labels, d->bounds, d->n_bounds);
		break;
	}
	if (!f)
		log_warn(k->collector, "metric %s: %s", d->name, strerror(errno));
	else
		metric_set_owner(f, k->collector);
	return (struct sink_family *)f;
}

static struct sink_series *as_series(struct sink *k, struct sink_family *f,
				     const char *const *values)
{
	return (struct sink_series *)metric_series((struct metric *)f, values);
}

static void as_series_gone(struct sink *k, struct sink_family *f, struct sink_series *s)
{
	metric_series_gone((struct metric *)f, (struct metric_series *)s, clock_mono_ns());
}

static void as_series_remove(struct sink *k, struct sink_family *f, struct sink_series *s)
{
	metric_series_remove((struct metric *)f, (struct metric_series *)s);
}

static void as_family_clear(struct sink *k, struct sink_family *f)
{
	metric_clear((struct metric *)f);
}

static void as_add(struct sink_series *s, double v)
{
	series_add((struct metric_series *)s, v);
}

static void as_set(struct sink_series *s, double v)
{
	series_set((struct metric_series *)s, v);
}

static void as_observe(struct sink_series *s, double v)
{
	series_observe((struct metric_series *)s, v);
}

static void as_histogram_set(struct sink_series *s, const uint64_t *counts, double sum)
{
	series_histogram_set((struct metric_series *)s, counts, sum);
}

static void as_exemplar(struct sink_series *s, const char *name, const char *value, double v,
			int64_t ts_ns)
{
	series_exemplar((struct metric_series *)s, name, value, v, (double)ts_ns / 1e9);
}

static double as_value(const struct sink_series *s)
{
	return series_value((const struct metric_series *)s);
}

static int as_latest(struct sink *k, const struct event_table *t, const char *const *group_by,
		     const struct row_cond *where, sink_row_fn fn, void *arg)
{
	struct agent_sink *as = k->impl;

	return store_latest(*as->store, t, group_by, where, fn, arg);
}

static size_t as_queue_depth(struct sink *k)
{
	struct agent_sink *as = k->impl;

	return store_queue_depth(*as->store);
}

static struct names *sink_names;

void agent_sink_names_set(struct names *n)
{
	__atomic_store_n(&sink_names, n, __ATOMIC_RELEASE);
}

static int as_pod(struct sink *k, const char *container_id, const char *cgroup, uint32_t netns,
		  struct sink_pod *out)
{
	(void)k;
	return names_lookup(__atomic_load_n(&sink_names, __ATOMIC_ACQUIRE), container_id, cgroup,
			    netns, out);
}

static struct am_export *sink_am;

void agent_sink_alerts_set(struct am_export *am)
{
	__atomic_store_n(&sink_am, am, __ATOMIC_RELEASE);
}

/* struct am_pair and struct sink_alert_pair are one layout: the exporter
 * may not see collectors/sink.h, nor a collector the exporter. */
_Static_assert(sizeof(struct am_pair) == sizeof(struct sink_alert_pair) &&
		   offsetof(struct am_pair, value) == offsetof(struct sink_alert_pair, value),
	       "am_pair and sink_alert_pair differ");

static int as_alert(struct sink *k, const struct sink_alert *a)
{
	struct am_export *am = __atomic_load_n(&sink_am, __ATOMIC_ACQUIRE);

	(void)k;
	if (!am)
		return -ENOENT;
	if (a->ends_ns) {
		am_export_resolve(am, a->key, a->ends_ns);
		return 0;
	}
	return am_export_fire(am, a->key, (const struct am_pair *)a->labels, a->n_labels,
			      (const struct am_pair *)a->annotations, a->n_annotations,
			      a->starts_ns);
}

static const struct sink_ops agent_sink_ops = {
    .alert = as_alert,
    .pod = as_pod,
    .event = as_event,
    .event_id = as_event_id,
    .family = as_family,
    .series = as_series,
    .series_gone = as_series_gone,
    .series_remove = as_series_remove,
    .family_clear = as_family_clear,
    .add = as_add,
    .set = as_set,
    .observe = as_observe,
    .histogram_set = as_histogram_set,
    .value = as_value,
    .exemplar = as_exemplar,
    .latest = as_latest,
    .queue_depth = as_queue_depth,
};

struct sink *agent_sink_new(const char *collector, struct metrics *m, struct store *const *store)
{
	static const char *const labels[] = {"collector", "reason", NULL};
	struct agent_sink *as = calloc(1, sizeof(*as));
	struct metric *dropped;

	if (!as)
		return NULL;
	as->sink.ops = &agent_sink_ops;
	as->sink.impl = as;
	as->sink.collector = collector;
	as->m = m;
	as->store = store;
	dropped = metrics_counter(m, "sysobs_events_dropped_total",
				  "Event rows dropped before reaching the database.", labels);
	for (int i = 0; dropped && i <= STORE_DROP_LOCKED; i++)
		as->dropped[i] = metric_series(
		    dropped, (const char *const[]){collector, store_drop_reason_name(i)});
	return &as->sink;
}

void agent_sink_free(struct sink *k)
{
	if (k)
		free(k->impl);
}
