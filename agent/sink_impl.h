/* SPDX-License-Identifier: MIT */
/*
 * The agent's implementation of collectors/sink.h (agent/sink.c).
 */
#ifndef SYSOBS_SINK_IMPL_H
#define SYSOBS_SINK_IMPL_H

#include "collectors/sink.h"

struct metrics;
struct store;

/* A sink for the collector named collector (a string that outlives it).
 * *store is read at each use: the agent opens its store after the
 * collectors' init (whose BPF loads are start-up's peak) and before their
 * start, the first that may write or read rows. */
struct sink *agent_sink_new(const char *collector, struct metrics *m, struct store *const *store);
void agent_sink_free(struct sink *k); /* accepts NULL */
/* The name service every sink's sink_pod() asks (NULL: none). */
struct names;
void agent_sink_names_set(struct names *n);
/* The alert exporter every sink's sink_alert() feeds (NULL: none). */
struct am_export;
void agent_sink_alerts_set(struct am_export *am);

#endif
