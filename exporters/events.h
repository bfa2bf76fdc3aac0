/* SPDX-License-Identifier: MIT */
/*
 * Event exporters: every [export.NAME] section is one destination that gets
 * the rows of the event tables (drop samples, MPTCP events, IFS scans,
 * cachefiles slow requests and daemon events; which ones is configurable)
 * in a format of its own: ClickHouse (JSONEachRow over its HTTP interface,
 * exporters/clickhouse.c) or OTLP/HTTP logs (exporters/otlp_logs.c).
 *
 * The history is the buffer, as for remote_write: each destination has a
 * thread that reads committed rows after its durable cursor (store_meta
 * cursor.NAME, one id: storage/store_export.h), sends a batch, and moves
 * the cursor only once the receiver accepted it (2xx) or refused the data
 * itself (400, 422, ClickHouse's codes of data it cannot take: counted,
 * then the next batch). Every other answer (401, 403, 404, 408, 429, 5xx...)
 * and transport errors are retried after a backoff or the receiver's
 * Retry-After (sender_verdict_of()). At least once: a crash resends at most the batch in flight,
 * and every row carries its key (host, database id, table, id) so the
 * receiver deduplicates. Rows retention deletes before they were sent, and
 * rows older than max_age when their turn comes, are counted, never silent.
 * The readers are the store's read-only connections: collection and the
 * HTTP API never wait for an export.
 */
#ifndef SYSOBS_EVENTS_EXPORT_H
#define SYSOBS_EVENTS_EXPORT_H

#include <stdbool.h>

#include "base/config.h"
#include "exporters/export_row.h"
#include "exporters/sender.h"

struct store;
struct metrics;
struct events_export;

/* Declares the [export.NAME] family of sections (before cfg_load). */
int events_export_declare(struct config *cfg);

/*
 * Parses and checks every [export.NAME] of cfg against the event tables
 * the agent has (tables, NULL-terminated), each error recorded (cfg_error).
 * identity: the host's, as remote_write pushes it (copied). read_files:
 * read password and token files (not in a reload's check). *out is NULL
 * when no destination is configured. 0 or -EINVAL, -ENOMEM.
 */
int events_export_new(struct config *cfg, const struct event_table *const *tables,
		      const struct export_identity *identity, bool read_files,
		      struct events_export **out);
/* Opens each destination's cursor and registers its position with the
 * store's retention: after store_open(), before store_start() (whose first
 * retention runs at once), so no row is deleted uncounted. 0 when e is
 * NULL; -errno logged. */
int events_export_attach(struct events_export *e, struct store *s);
/* Starts one thread per destination; 0 when e is NULL. -errno logged. */
int events_export_start(struct events_export *e, struct metrics *m);
/* Stops the threads (a request in flight gets 2 s) and frees; NULL ok. */
void events_export_free(struct events_export *e);

/* ---- for the status API and page ---- */

size_t events_export_count(const struct events_export *e);
/* Destination i's status into *st, safe on any thread: name, format and url
 * (without user:password@) live as long as e, last_error is a copy. */
void events_export_status(struct events_export *e, size_t i, struct export_status *st);

#endif
