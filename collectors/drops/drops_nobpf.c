// SPDX-License-Identifier: MIT
/*
 * The drops collector in a build without BPF (cmake -DSYSOBS_BPF=OFF): it
 * is listed like any collector and always reports why it cannot run.
 */
#include <errno.h>

#include "collectors/collector.h"
#include "collectors/drops/drops.h"

static int drops_nobpf_init(struct collector *c)
{
	return collector_unavailable(c, -EOPNOTSUPP,
				     "sysobsd was built without BPF support (SYSOBS_BPF=OFF)");
}

const struct collector_ops drops_collector = {
    .name = "drops",
    .help = "packet drops by kernel drop reason (needs a build with BPF)",
    .keys = drops_cfg_keys,
    .cfg_size = sizeof(struct drops_cfg),
    .check_config = drops_check_config,
    .init = drops_nobpf_init,
};
