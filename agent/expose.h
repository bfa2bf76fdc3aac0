/* SPDX-License-Identifier: MIT */
/*
 * Prometheus exposition settings of the agent: the [metrics] section (native
 * histogram schema, zero threshold and bucket limit; the grace period of
 * series whose object is gone), sysobs_build_info{version,revision,libbpf,
 * kernel}, the standard process_* metrics, and a timer that removes gone
 * series once their grace is over, counting them in
 * sysobs_series_removed_total{collector}.
 */
#ifndef SYSOBS_EXPOSE_H
#define SYSOBS_EXPOSE_H

#include <stdint.h>

#include "base/config.h"
#include "agent/loop.h"
#include "metrics/metrics.h"

struct expose {
	struct metrics *m;
	uint64_t grace_ms;
	struct metric *removed;
};

int expose_config_declare(struct config *cfg);
/* What expose_start() checks of [metrics], every bad value recorded, and
 * nothing started. 0, or -EINVAL. */
int expose_config_check(struct config *cfg);
/* Before the collectors register their metrics (native settings apply to
 * histograms from then on). 0, or -EINVAL with cfg->err set. */
int expose_start(struct expose *x, struct config *cfg, struct metrics *m, struct loop *loop);

#endif
