/* SPDX-License-Identifier: MIT */
/*
 * The agent: what a collector may reach through c->agent.
 */
#ifndef SYSOBS_AGENT_H
#define SYSOBS_AGENT_H

#include <stddef.h>

#include "agent/config.h"
#include "agent/loop.h"
#include "api/http.h"
#include "api/metrics.h"
#include "storage/store.h"

struct collector;

struct agent {
	struct config cfg;
	struct loop *loop;
	struct metrics *metrics;
	struct store *store;
	struct http_server *http;
	struct collector *collectors;
	size_t n_collectors;
	const char *sysfs_root;		/* "/sys" unless --sysfs-root (IFS fake) */
	const char *hostname;
};

#endif
