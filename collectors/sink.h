/* SPDX-License-Identifier: MIT */
/*
 * A collector's only way out (see docs/DESIGN.md, "Data flow").
 *
 * The agent gives every collector a sink (c->sink). Through it, and nothing
 * else, a collector
 *   - submits event rows for the tables it declared (storage/table.h),
 *   - registers its metrics from descriptors and updates their series,
 *   - declares a series gone when its object is (a netns deleted, ...),
 *   - reads back the newest stored rows of its own tables (start-up state).
 * It never sees the agent, the store, the metrics registry or the HTTP
 * server. What happens when the event queue is full (drop, count in
 * sysobs_events_dropped_total{collector,reason} (queue_full, disk_full, locked), rate-limited
 * warning) is decided here, once, for every collector.
 *
 * The sink is a table of operations the agent fills in (agent/sink.c), so
 * collectors link against nothing of the agent, and a test can hand a
 * collector a recording sink of its own.
 *
 * Main thread only, except sink_event(), which any thread may call (the IFS
 * worker does).
 */
#ifndef SYSOBS_SINK_H
#define SYSOBS_SINK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "storage/table.h"

enum metric_kind {
	METRIC_KIND_COUNTER,
	METRIC_KIND_GAUGE,
	METRIC_KIND_HISTOGRAM,
};

/* A metric family as a collector declares it. */
struct metric_desc {
	const char *name; /* sysobs_..., base units, _total for counters */
	const char *help;
	enum metric_kind kind;
	const char *const *labels; /* NULL-terminated, or NULL for none */
	const double *bounds;	   /* histogram upper bounds, ascending (+Inf implied) */
	size_t n_bounds;
};

struct sink;
struct sink_family; /* a registered metric family */

/* One label or annotation of an alert. */
struct sink_alert_pair {
	const char *name, *value;
};

/*
 * The state of one alert a collector raises (IFS: a failed core), for the
 * agent's alert exporter (exporters/alertmanager.h). key names it among the
 * collector's alerts ("scan/0/3"); ends_ns 0: firing since starts_ns (unix
 * ns), else resolved at ends_ns. Everything is copied.
 */
struct sink_alert {
	const char *key;
	const struct sink_alert_pair *labels, *annotations;
	size_t n_labels, n_annotations;
	int64_t starts_ns, ends_ns;
};
struct sink_series; /* one label set of a family */

/* The Kubernetes names of a container or a pod's network namespace, from
 * the agent's attribution service (agent/names.h); "" for what is unknown. */
struct sink_pod {
	char pod[254]; /* a DNS subdomain: 253 characters at most */
	char pod_namespace[64];
	char pod_uid[40];
	char container[64]; /* the container's name in its pod */
	char qos[12];	    /* guaranteed, burstable, besteffort (from the cgroup) */
};

/* The pod fields of a history row (its columns: COL_POD in storage/table.h),
 * and their copy from a struct sink_pod. */
#define SINK_POD_ROW_FIELDS                                                                        \
	char pod[sizeof(((struct sink_pod *)0)->pod)];                                             \
	char pod_namespace[sizeof(((struct sink_pod *)0)->pod_namespace)];                         \
	char pod_uid[sizeof(((struct sink_pod *)0)->pod_uid)]
#define SINK_POD_ROW_SET(r, p)                                                                     \
	do {                                                                                       \
		snprintf((r)->pod, sizeof((r)->pod), "%s", (p)->pod);                              \
		snprintf((r)->pod_namespace, sizeof((r)->pod_namespace), "%s",                     \
			 (p)->pod_namespace);                                                      \
		snprintf((r)->pod_uid, sizeof((r)->pod_uid), "%s", (p)->pod_uid);                  \
	} while (0)

/* Called for each row sink_latest() finds: row is the table's row struct
 * filled from the database (NULL columns as their sentinel). */
typedef void (*sink_row_fn)(int64_t id, int64_t ts_ns, const void *row, void *arg);

struct sink_ops {
	int (*event)(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row);
	struct sink_family *(*family)(struct sink *k, const struct metric_desc *d);
	struct sink_series *(*series)(struct sink *k, struct sink_family *f,
				      const char *const *values);
	void (*series_gone)(struct sink *k, struct sink_family *f, struct sink_series *s);
	void (*family_clear)(struct sink *k, struct sink_family *f);
	void (*add)(struct sink_series *s, double v);
	void (*set)(struct sink_series *s, double v);
	void (*observe)(struct sink_series *s, double v);
	void (*histogram_set)(struct sink_series *s, const uint64_t *counts, double sum);
	double (*value)(const struct sink_series *s);
	int (*latest)(struct sink *k, const struct event_table *t, const char *const *group_by,
		      const struct row_cond *where, sink_row_fn fn, void *arg);
	size_t (*queue_depth)(struct sink *k);
	/* Added with exemplars; a sink may leave them NULL (sink_event_id()
	 * then reports no id, sink_exemplar() does nothing). */
	int (*event_id)(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row,
			int64_t *id);
	void (*exemplar)(struct sink_series *s, const char *name, const char *value, double v,
			 int64_t ts_ns);
	/* Added with series_remove; NULL: sink_series_remove() declares the
	 * series gone instead. */
	void (*series_remove)(struct sink *k, struct sink_family *f, struct sink_series *s);
	/* Added with Kubernetes names; NULL: none (sink_pod() says -ENOENT). */
	int (*pod)(struct sink *k, const char *container_id, const char *cgroup, uint32_t netns,
		   struct sink_pod *out);
	/* Added with the alert push as an exporter; NULL: no destination
	 * (sink_alert() says -ENOENT). */
	int (*alert)(struct sink *k, const struct sink_alert *a);
};

struct sink {
	const struct sink_ops *ops;
	void *impl;	       /* the agent's */
	const char *collector; /* owner's name */
};

/*
 * Queues one row of table t (which the collector declared) stamped ts_ns
 * (unix ns). Never blocks. 0, or -EAGAIN when the queue was full: the row is
 * dropped, counted and logged by the sink; the caller need do nothing more.
 */
static inline int sink_event(struct sink *k, const struct event_table *t, int64_t ts_ns,
			     const void *row)
{
	return k->ops->event(k, t, ts_ns, row);
}

/*
 * sink_event(), and *id is the id the row gets in its table and in
 * /api/v1/events (for an exemplar that points at it); 0 when the sink gives
 * no ids. The id holds unless SQLite refuses the row or the agent dies
 * before the commit.
 */
static inline int sink_event_id(struct sink *k, const struct event_table *t, int64_t ts_ns,
				const void *row, int64_t *id)
{
	*id = 0;
	if (!k->ops->event_id)
		return k->ops->event(k, t, ts_ns, row);
	return k->ops->event_id(k, t, ts_ns, row, id);
}

/* Registers (or finds) the family of d. NULL + errno on a conflicting
 * declaration or out of memory; the sink has logged it. */
static inline struct sink_family *sink_family(struct sink *k, const struct metric_desc *d)
{
	return k->ops->family(k, d);
}

/* Finds or creates the series with these label values (as many as the
 * family has labels; NULL for none). NULL + errno past the cardinality
 * guard or out of memory; updates through NULL do nothing. */
static inline struct sink_series *sink_series(struct sink *k, struct sink_family *f,
					      const char *const *values)
{
	return f ? k->ops->series(k, f, values) : NULL;
}

/* Family and its only series in one call, for families without labels. */
static inline struct sink_series *sink_series1(struct sink *k, const struct metric_desc *d)
{
	return sink_series(k, sink_family(k, d), NULL);
}

/* The object behind s is gone: the series leaves /metrics after the
 * agent's grace period ([metrics] stale_series_grace), so its last
 * increments are still scraped; finding it again with sink_series() makes it
 * live again. Do not use s after this call. */
static inline void sink_series_gone(struct sink *k, struct sink_family *f, struct sink_series *s)
{
	if (f && s)
		k->ops->series_gone(k, f, s);
}

/* The series is wrong now, not just ended (its label names another object
 * than the one it counted): out of /metrics at once, without the grace.
 * Do not use s after this call. */
static inline void sink_series_remove(struct sink *k, struct sink_family *f, struct sink_series *s)
{
	if (!f || !s)
		return;
	if (k->ops->series_remove)
		k->ops->series_remove(k, f, s);
	else
		k->ops->series_gone(k, f, s);
}

/* Every series of f is gone (before re-publishing a full snapshot). */
static inline void sink_family_clear(struct sink *k, struct sink_family *f)
{
	if (f)
		k->ops->family_clear(k, f);
}

static inline void sink_add(struct sink *k, struct sink_series *s, double v)
{
	if (s)
		k->ops->add(s, v);
}

static inline void sink_set(struct sink *k, struct sink_series *s, double v)
{
	if (s)
		k->ops->set(s, v);
}

static inline void sink_observe(struct sink *k, struct sink_series *s, double v)
{
	if (s)
		k->ops->observe(s, v);
}

/* A histogram's whole state at once: counts[n_bounds + 1] per bucket (not
 * cumulative; the last is +Inf) and the sum. For kernel-side histograms. */
static inline void sink_histogram_set(struct sink *k, struct sink_series *s, const uint64_t *counts,
				      double sum)
{
	if (s)
		k->ops->histogram_set(s, counts, sum);
}

/*
 * Exemplar on a counter series or, for a histogram, on the bucket of v: one
 * label (name="value", e.g. sample_id="1234" from sink_event_id()), the
 * observed value and its time. Replaces the previous one there; shown in
 * OpenMetrics and protobuf scrapes, so a user goes from a graph to the
 * stored record.
 */
static inline void sink_exemplar(struct sink *k, struct sink_series *s, const char *name,
				 const char *value, double v, int64_t ts_ns)
{
	if (s && k->ops->exemplar)
		k->ops->exemplar(s, name, value, v, ts_ns);
}

/*
 * The pod of a container (its 64-hex-digit id, "" none), else of a network
 * namespace (its inode, 0 none), else what the cgroup path tells (pod UID
 * and QoS class): from the agent's cache, never a call to the runtime. 0 with
 * out filled, -ENOENT when nothing is known (out zeroed).
 */
static inline int sink_pod(struct sink *k, const char *container_id, const char *cgroup,
			   uint32_t netns, struct sink_pod *out)
{
	*out = (struct sink_pod){0};
	if (!k->ops->pod)
		return -ENOENT;
	return k->ops->pod(k, container_id, cgroup, netns, out);
}

/*
 * Publishes an alert's state: the agent pushes it to Alertmanager when one
 * is configured. Never blocks on the network. 0, -ENOENT (no destination:
 * nothing to do), -ENOMEM.
 */
static inline int sink_alert(struct sink *k, const struct sink_alert *a)
{
	if (!k->ops->alert)
		return -ENOENT;
	return k->ops->alert(k, a);
}

static inline double sink_value(struct sink *k, const struct sink_series *s)
{
	return s ? k->ops->value(s) : 0;
}

/*
 * The newest row of each group (group_by: NULL-terminated names of t's
 * columns) of the collector's own table t among the rows matching where
 * (typed conditions, {0}-terminated: column, eq/in/not_null, values; see
 * storage/table.h; NULL: every row), oldest group first. For state a
 * collector restores at start. The store compiles the filter (and uses a
 * partial index the filter implies); the unit tests' recording sink
 * evaluates the same filter in memory. 0, -EINVAL (a column or value t
 * cannot take), -EBUSY (no reader free), -EIO.
 */
static inline int sink_latest(struct sink *k, const struct event_table *t,
			      const char *const *group_by, const struct row_cond *where,
			      sink_row_fn fn, void *arg)
{
	return k->ops->latest(k, t, group_by, where, fn, arg);
}

/* Rows waiting in the agent's event queue (the self collector reports it). */
static inline size_t sink_queue_depth(struct sink *k)
{
	return k->ops->queue_depth(k);
}

#endif
