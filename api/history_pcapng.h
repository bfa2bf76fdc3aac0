/* SPDX-License-Identifier: MIT */
/*
 * A page of an event table with a packet capture (a COL_BLOB column named
 * "capture" holding Linux cooked v2 frames, and "orig_len"), as a pcapng
 * file: GET /api/v1/drops/samples with Accept: application/x-pcapng.
 */
#ifndef SYSOBS_API_HISTORY_PCAPNG_H
#define SYSOBS_API_HISTORY_PCAPNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "storage/table.h"

#define API_CT_PCAPNG "application/x-pcapng"

/* The table has a "capture" blob to serve as pcapng. */
bool history_pcapng_able(const struct event_table *t);

/*
 * rows[i] (row structs of t, their ids and unix ns times), newest first as
 * the page has them, written oldest first as one pcapng section: an
 * Interface Description Block per (netns, ifindex) the page has, named
 * after the device with the namespace in its description; an Enhanced
 * Packet Block per row with its time, captured and original length and a
 * comment (id, reason, location, netns, container when known). next > 0:
 * the page's next_cursor, in the section's comment. 0, or -ENOMEM.
 */
int history_pcapng_page(const struct event_table *t, void *const *rows, const int64_t *ids,
			const int64_t *ts_ns, size_t n, int64_t next, struct buf *out);

#endif
