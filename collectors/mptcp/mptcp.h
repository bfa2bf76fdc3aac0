/* SPDX-License-Identifier: MIT */
/*
 * The mptcp collector's history table, shared with its benchmark: one row per
 * event, the decoded event as is (text formatting happens in bind, on the
 * storage writer thread).
 */
#ifndef SYSOBS_MPTCP_H
#define SYSOBS_MPTCP_H

#include <stdint.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "storage/store.h"

struct mptcp_row {
	uint64_t netns; /* netns inode */
	struct mptcp_event ev;
};

extern const struct store_table mptcp_events_table;

#endif
