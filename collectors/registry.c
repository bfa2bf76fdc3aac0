/* SPDX-License-Identifier: MIT */
/* The explicit list of collectors, in start order. */
#include "collectors/collector.h"

extern const struct collector_ops self_collector;
extern const struct collector_ops cachefiles_collector;
extern const struct collector_ops drops_collector;
extern const struct collector_ops mptcp_collector;
extern const struct collector_ops ifs_collector;

const struct collector_ops *const collector_registry[] = {
    &self_collector,  &cachefiles_collector, &drops_collector,
    &mptcp_collector, &ifs_collector,	     NULL,
};
