/* SPDX-License-Identifier: MIT */
/*
 * The agent's own HTTP routes: landing page, /metrics, /healthz,
 * /api/v1/collectors, /api/v1/events, /api/v1/series, then the routes of every
 * collector that is not disabled (their handler arg is the struct collector *).
 * Called once, after the collectors' init and before http_start().
 */
#ifndef SYSOBS_ROUTES_H
#define SYSOBS_ROUTES_H

struct agent;

/* Needs a->http, a->metrics and a->collectors; a->store may be NULL (the
 * history routes then answer 503). Returns 0 or -errno. */
int api_routes_register(struct agent *a);

/* Content-Type of /metrics. */
#define API_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
