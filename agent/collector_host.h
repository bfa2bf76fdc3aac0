/* SPDX-License-Identifier: MIT */
#ifndef SYSOBS_COLLECTOR_HOST_H
#define SYSOBS_COLLECTOR_HOST_H

#include <stdbool.h>

struct agent;

/* Sets up every registered collector: its typed config and sink, then init
 * for the enabled ones (none before every section parsed). 2 on a config
 * error (logged), 1 out of memory, else 0: a collector that cannot run is
 * left UNAVAILABLE with its reason. */
int collectors_init(struct agent *a);
/* Every enabled collector's typed keys and its check_config, no init: each
 * error recorded in a->cfg. 0, or -EINVAL. */
int collectors_config_check(struct agent *a);
/* Starts the RUNNING ones and adds their fd and timer to the loop; the
 * UNAVAILABLE ones with a recheck op get its timer instead. */
void collectors_start(struct agent *a);
/* Does a running collector write through priv_write_number()? */
bool collectors_need_priv_writes(const struct agent *a);
/* Stops every started collector and frees their config and sinks. */
void collectors_stop(struct agent *a);

#endif
