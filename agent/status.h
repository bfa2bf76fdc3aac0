/* SPDX-License-Identifier: MIT */
/*
 * The collectors' state for the API (agent/status.c).
 */
#ifndef SYSOBS_STATUS_H
#define SYSOBS_STATUS_H

#include "api/proto/sysobs.pb-c.h"

struct arena;

/* arg is the struct agent *; the list lives in ar. NULL when out of memory.
 * Safe on HTTP threads. */
Sysobs__V1__CollectorList *agent_collectors_status(void *arg, struct arena *ar);

#endif
