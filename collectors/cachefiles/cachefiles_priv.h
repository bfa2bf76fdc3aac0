/* SPDX-License-Identifier: MIT */
/*
 * Private to the cachefiles collector: the seam unit tests drive it through
 * (tests/unit/test_collector_cachefiles.c). The collector measures through
 * a backend (backend.h); a test hands it a fake one that delivers recorded
 * ring-buffer records and map totals, and then calls the ops as the agent
 * does (start, on_ready, collect, stop).
 */
#ifndef SYSOBS_CACHEFILES_PRIV_H
#define SYSOBS_CACHEFILES_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/cachefiles/backend.h"
#include "collectors/collector.h"

/* One row of cachefiles_slow (fixed size for the store queue). */
struct cachefiles_slow_row {
	double latency_seconds;
	int64_t offset;
	int64_t length;
	int32_t result;
	uint32_t object_debug_id;
	int32_t object_id;
	uint32_t pid;
	bool kworker;
	char op[8];
	char comm[CF_COMM_LEN + 1];
	char volume[CF_VOLUME_NAME_LEN + 1];
};

/* One row of cachefiles_daemon. */
struct cachefiles_daemon_row {
	int64_t inflight;
	uint32_t pid;
	char event[8];
	char comm[CF_COMM_LEN + 1];
};

extern const struct event_table cachefiles_slow_table, cachefiles_daemon_table;

/* ops->init with backend be instead of the configured one. */
int cachefiles_init_backend(struct collector *c, const struct cachefiles_backend_ops *be);

#endif
