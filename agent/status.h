/* SPDX-License-Identifier: MIT */
/*
 * The collectors' and the event exporters' state for the API
 * (agent/status.c).
 */
#ifndef SYSOBS_STATUS_H
#define SYSOBS_STATUS_H

#include "api/proto/sysobs.pb-c.h"

struct arena;

/* arg is the struct agent *; the list lives in ar. NULL when out of memory.
 * Safe on HTTP threads. */
Sysobs__V1__CollectorList *agent_collectors_status(void *arg, struct arena *ar);
/* The [export.NAME] destinations (an empty list without any), the same way. */
Sysobs__V1__ExportList *agent_exports_status(void *arg, struct arena *ar);

#endif
