/* SPDX-License-Identifier: MIT */
/*
 * The API's own routes: landing page, /metrics, /healthz, /api/v1/collectors,
 * /api/v1/export and /api/v1/series (the history routes are api/history.c's). What they
 * need of the rest of the agent comes through struct api_host, so the api
 * layer depends on the metrics registry and the store's read API only.
 * Called once, after the collectors' init and before http_start().
 */
#ifndef SYSOBS_ROUTES_H
#define SYSOBS_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "api/proto/sysobs.pb-c.h"
#include "storage/table.h"

struct arena;
struct http_server;
struct metrics;
struct store;

struct api_host {
	struct metrics *metrics;
	struct store *store; /* may be NULL: history routes answer 503 */
	const char *hostname;
	/* Every event table (history routes on the landing page). */
	const struct event_table *const *tables;
	/* The collectors and their state, allocated in ar; called on HTTP
	 * threads. NULL when out of memory. */
	Sysobs__V1__CollectorList *(*collectors)(void *arg, struct arena *ar);
	/* The event exporters' destinations, the same way; may be NULL (no
	 * exporters: an empty list). */
	Sysobs__V1__ExportList *(*exports)(void *arg, struct arena *ar);
	void *arg;
	/* Names /metrics?collect[]= accepts: every collector of this build,
	 * NULL-terminated. */
	const char *const *collector_names;
};

/* GET /readyz's default: a destination with rows pending longer than this,
 * or that lost rows this recently, is not ready (docs/api.md). */
#define READY_STUCK_AFTER_S 300

/* Why export destination d is not ready at now (unix s), into why[len]:
 * false when it is ready (api/routes.c, for GET /readyz). */
bool export_problem(const Sysobs__V1__ExportDestination *d, double now, double stuck_after,
		    char *why, size_t len);

/* host is copied. Returns 0 or -errno. */
int api_routes_register(struct http_server *h, const struct api_host *host);

#endif
