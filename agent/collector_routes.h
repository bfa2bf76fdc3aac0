/* SPDX-License-Identifier: MIT */
/*
 * Collectors' own routes served through the agent (agent/collector_routes.c).
 */
#ifndef SYSOBS_COLLECTOR_ROUTES_H
#define SYSOBS_COLLECTOR_ROUTES_H

struct agent;

/* Registers the routes of every enabled collector on a->http. 0 or -errno. */
int collector_routes_register(struct agent *a);

#endif
