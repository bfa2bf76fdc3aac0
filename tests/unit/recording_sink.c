// SPDX-License-Identifier: MIT
/* recording_sink: see recording_sink.h. */
#include "recording_sink.h"

#include "base/config.h"
#include "collectors/collector.h"
#include "storage/store_filter.h"
#include "storage/table_value.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RS(k) ((struct recording_sink *)(k)->impl)

static int rs_event_id(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row,
		       int64_t *id)
{
	struct recording_sink *rs = RS(k);
	struct rs_row *r;

	if (rs->n_rows == RS_MAX_ROWS || t->row_size > RS_ROW_MAX)
		return -EAGAIN;
	r = &rs->rows[rs->n_rows++];
	r->t = t;
	r->id = (int64_t)rs->n_rows;
	r->ts_ns = ts_ns;
	memcpy(r->row, row, t->row_size);
	if (id)
		*id = r->id;
	return 0;
}

static int rs_event(struct sink *k, const struct event_table *t, int64_t ts_ns, const void *row)
{
	return rs_event_id(k, t, ts_ns, row, NULL);
}

static struct sink_family *rs_family(struct sink *k, const struct metric_desc *d)
{
	struct recording_sink *rs = RS(k);

	for (size_t i = 0; i < rs->n_families; i++)
		if (rs->families[i] == d)
			return (struct sink_family *)d;
	if (rs->n_families == sizeof(rs->families) / sizeof(rs->families[0])) {
		errno = ENOSPC;
		return NULL;
	}
	rs->families[rs->n_families++] = d;
	return (struct sink_family *)d;
}

static struct sink_series *rs_series(struct sink *k, struct sink_family *f,
				     const char *const *values)
{
	struct recording_sink *rs = RS(k);
	const struct metric_desc *d = (const struct metric_desc *)f;
	char labels[256] = "";
	size_t n = 0;

	for (size_t i = 0; d->labels && d->labels[i]; i++) {
		if (!values || !values[i]) {
			errno = EINVAL;
			return NULL;
		}
		n += (size_t)snprintf(labels + n, sizeof(labels) - n, "%s%s", i ? "," : "",
				      values[i]);
		if (n >= sizeof(labels)) {
			errno = E2BIG;
			return NULL;
		}
	}
	for (size_t i = 0; i < rs->n_series; i++) {
		if (rs->series[i].d == d && !strcmp(rs->series[i].labels, labels)) {
			rs->series[i].gone = false; /* as the registry: found again */
			return (struct sink_series *)&rs->series[i];
		}
	}
	if (rs->n_series == RS_MAX_SERIES) {
		errno = ENOSPC;
		return NULL;
	}
	rs->series[rs->n_series].d = d;
	snprintf(rs->series[rs->n_series].labels, sizeof(labels), "%s", labels);
	return (struct sink_series *)&rs->series[rs->n_series++];
}

static void rs_series_gone(struct sink *k, struct sink_family *f, struct sink_series *s)
{
	(void)k, (void)f;
	((struct rs_series *)s)->gone = true;
}

static void rs_family_clear(struct sink *k, struct sink_family *f)
{
	struct recording_sink *rs = RS(k);

	for (size_t i = 0; i < rs->n_series; i++)
		if (rs->series[i].d == (const struct metric_desc *)f)
			rs->series[i].gone = true;
}

static void rs_add(struct sink_series *s, double v)
{
	((struct rs_series *)s)->value += v;
}

static void rs_set(struct sink_series *s, double v)
{
	((struct rs_series *)s)->value = v;
}

static void rs_observe(struct sink_series *s, double v)
{
	((struct rs_series *)s)->value += v;
	((struct rs_series *)s)->observations++;
}

static void rs_histogram_set(struct sink_series *s, const uint64_t *counts, double sum)
{
	(void)counts;
	((struct rs_series *)s)->value = sum;
}

static double rs_value(const struct sink_series *s)
{
	return ((const struct rs_series *)s)->value;
}

/* Gives every row put in for t, oldest first (where and group_by are SQL
 * the test has already applied in choosing them). */
/* What the store's query gives, from the rows the test put in: the newest
 * row of each group among those that meet the filter, in id order. */
static int rs_latest(struct sink *k, const struct event_table *t, const char *const *group_by,
		     const struct row_cond *where, sink_row_fn fn, void *arg)
{
	struct recording_sink *rs = RS(k);
	char err[256];

	if (store_filter_check(t, where, err, sizeof(err)))
		return -EINVAL;
	rs->n_latest_queries++;
	for (size_t i = 0; i < rs->n_latest; i++) {
		const struct rs_row *r = &rs->latest[i];
		bool newer = false;

		if (r->t != t || !table_filter_match(t, where, r->row))
			continue;
		for (size_t j = i + 1; j < rs->n_latest && !newer; j++)
			newer = rs->latest[j].t == t &&
				table_filter_match(t, where, rs->latest[j].row) &&
				table_group_equal(t, group_by, r->row, rs->latest[j].row);
		if (!newer)
			fn(r->id, r->ts_ns, r->row, arg);
	}
	return 0;
}

static size_t rs_queue_depth(struct sink *k)
{
	return RS(k)->n_rows;
}

static void rs_exemplar(struct sink_series *s, const char *name, const char *value, double v,
			int64_t ts_ns)
{
	(void)v, (void)ts_ns;
	snprintf(((struct rs_series *)s)->exemplar, sizeof(((struct rs_series *)s)->exemplar),
		 "%s=%s", name, value);
}

/* By network namespace only, as the name service answers for a sandbox. */
static int rs_pod(struct sink *k, const char *container_id, const char *cgroup, uint32_t netns,
		  struct sink_pod *out)
{
	struct recording_sink *rs = RS(k);

	(void)container_id, (void)cgroup;
	rs->pod_lookups++;
	for (size_t i = 0; i < rs->n_pods; i++)
		if (rs->pods[i].netns == netns) {
			*out = rs->pods[i].p;
			return 0;
		}
	return -ENOENT;
}

void rs_pod_add(struct recording_sink *rs, uint32_t netns, const char *name, const char *ns,
		const char *uid)
{
	struct sink_pod *p;

	if (rs->n_pods >= sizeof(rs->pods) / sizeof(rs->pods[0]))
		return;
	rs->pods[rs->n_pods].netns = netns;
	p = &rs->pods[rs->n_pods++].p;
	snprintf(p->pod, sizeof(p->pod), "%s", name);
	snprintf(p->pod_namespace, sizeof(p->pod_namespace), "%s", ns);
	snprintf(p->pod_uid, sizeof(p->pod_uid), "%s", uid);
}

static const struct sink_ops rs_ops = {
    .event = rs_event,
    .family = rs_family,
    .series = rs_series,
    .series_gone = rs_series_gone,
    .family_clear = rs_family_clear,
    .add = rs_add,
    .set = rs_set,
    .observe = rs_observe,
    .histogram_set = rs_histogram_set,
    .value = rs_value,
    .latest = rs_latest,
    .queue_depth = rs_queue_depth,
    .event_id = rs_event_id,
    .exemplar = rs_exemplar,
    .pod = rs_pod,
};

void rs_init(struct recording_sink *rs, const char *collector)
{
	memset(rs, 0, sizeof(*rs));
	rs->sink.ops = &rs_ops;
	rs->sink.impl = rs;
	rs->sink.collector = collector;
}

void rs_collector_attach(struct recording_sink *rs, struct collector *c)
{
	c->sink = &rs->sink;
	c->families = rs->handles;
	for (size_t i = 0; c->ops->metrics && c->ops->metrics[i].name; i++)
		rs->handles[i] = sink_family(&rs->sink, &c->ops->metrics[i]);
}

int rs_collector_defaults(struct collector *c, struct config *cfg)
{
	void *out = calloc(1, c->ops->cfg_size ? c->ops->cfg_size : 1);

	snprintf(c->section, sizeof(c->section), "collector.%s", c->ops->name);
	c->cfg = out;
	if (!out || cfg_declare(cfg, c->section, c->ops->keys) ||
	    cfg_section_parse(cfg, c->section, out))
		return -1;
	return 0;
}

struct rs_series *rs_find(struct recording_sink *rs, const char *name, const char *labels)
{
	for (size_t i = 0; i < rs->n_series; i++)
		if (!strcmp(rs->series[i].d->name, name) && !strcmp(rs->series[i].labels, labels))
			return &rs->series[i];
	return NULL;
}

void rs_latest_add(struct recording_sink *rs, const struct event_table *t, int64_t ts_ns,
		   const void *row)
{
	struct rs_row *r;

	if (rs->n_latest == RS_MAX_ROWS)
		return;
	r = &rs->latest[rs->n_latest++];
	r->t = t;
	r->id = (int64_t)rs->n_latest;
	r->ts_ns = ts_ns;
	memcpy(r->row, row, t->row_size);
}
