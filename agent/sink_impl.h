/* SPDX-License-Identifier: MIT */
/*
 * The agent's implementation of collectors/sink.h (agent/sink.c).
 */
#ifndef SYSOBS_SINK_IMPL_H
#define SYSOBS_SINK_IMPL_H

#include "collectors/sink.h"

struct metrics;
struct store;

/* A sink for the collector named collector (a string that outlives it). */
struct sink *agent_sink_new(const char *collector, struct metrics *m, struct store *store);
void agent_sink_free(struct sink *k); /* accepts NULL */

#endif
