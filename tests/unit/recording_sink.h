/* SPDX-License-Identifier: MIT */
/*
 * A recording sink for unit tests of collectors through their ops
 * (collectors/sink.h promises one): every row submitted, every family and
 * series with its value, gone flag and last exemplar, kept in memory for
 * the test to assert on. sink_latest() answers from rows the test puts in
 * (rs_latest_add), not from SQL: a test states what "the history" holds,
 * and the recording sink evaluates the collector's typed filter and groups
 * on them in memory (table_filter_match(), table_group_equal()).
 */
#ifndef SYSOBS_RECORDING_SINK_H
#define SYSOBS_RECORDING_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/sink.h"

#define RS_MAX_ROWS   256
#define RS_MAX_SERIES 256
#define RS_ROW_MAX    EVENT_ROW_MAX

struct rs_row {
	const struct event_table *t;
	int64_t id, ts_ns;
	unsigned char row[RS_ROW_MAX];
};

struct rs_series {
	const struct metric_desc *d;
	char labels[256]; /* values joined with ',' ("" for none) */
	double value;
	uint64_t observations;
	bool gone;
	char exemplar[64]; /* "name=value" of the last exemplar */
};

struct recording_sink {
	struct sink sink;
	struct rs_row rows[RS_MAX_ROWS];
	size_t n_rows;
	struct rs_series series[RS_MAX_SERIES];
	size_t n_series;
	const struct metric_desc *families[64];
	size_t n_families;
	struct sink_family *handles[64];   /* a collector's c->families */
	struct rs_row latest[RS_MAX_ROWS]; /* what sink_latest() returns */
	size_t n_latest;
	size_t n_latest_queries; /* sink_latest() calls answered */
	/* what sink_pod() answers for a network namespace (rs_pod_add) */
	struct {
		uint32_t netns;
		struct sink_pod p;
	} pods[8];
	size_t n_pods;
	size_t pod_lookups; /* sink_pod() calls */
};

struct collector;

void rs_init(struct recording_sink *rs, const char *collector);
/* What the agent does for a collector before init: c->sink is rs, and
 * c->families the families of c->ops->metrics registered in it. */
void rs_collector_attach(struct recording_sink *rs, struct collector *c);
/* c->cfg with the defaults of c->ops->keys, parsed as the agent parses an
 * empty [collector.NAME] into cfg (declared here). 0, or -1. Free c->cfg
 * and cfg_free(cfg) after stop. */
struct config;
int rs_collector_defaults(struct collector *c, struct config *cfg);
/* The series of the family named name with these labels ("a,b"), or NULL. */
struct rs_series *rs_find(struct recording_sink *rs, const char *name, const char *labels);
/* A row sink_latest() gives for table t. */
void rs_latest_add(struct recording_sink *rs, const struct event_table *t, int64_t ts_ns,
		   const void *row);

/* sink_pod() names netns as the pod name in namespace ns with uid. */
void rs_pod_add(struct recording_sink *rs, uint32_t netns, const char *name, const char *ns,
		const char *uid);

#endif
