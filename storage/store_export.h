/* SPDX-License-Identifier: MIT */
/*
 * Event tables read as a log, for the event exporters (exporters/events.c):
 * rows of several tables after an id, in one snapshot, and what retention
 * deletes before a consumer got to it.
 *
 * Why one id is enough: every event table takes its ids from one sequence
 * given out when a row is queued (store.c), and the writer commits the queue
 * in order, so the committed ids only grow; a consumer that has delivered
 * every row up to id N needs nothing but N. The tables are read in one read
 * transaction, so a row committed between two tables' reads cannot be
 * skipped.
 */
#ifndef SYSOBS_STORE_EXPORT_H
#define SYSOBS_STORE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

struct store;

/* Called per row, table by table, each in id order; non-zero stops the
 * read and is returned. row is valid during the call only. */
typedef int (*store_export_fn)(size_t table, int64_t id, int64_t ts_ns, const void *row, void *arg);

/*
 * Up to limit rows of each of tables[0..n) with id > after, read in one
 * snapshot. 0, fn's value, -EBUSY (no reader free), -ETIMEDOUT, -EIO.
 */
int store_export_read(struct store *s, const struct event_table *const *tables, size_t n,
		      int64_t after, unsigned limit, store_export_fn fn, void *arg);

/* Rows of tables[0..n) with id > after, and the ts of the oldest of them
 * (0 when none). 0, -EBUSY, -EIO. */
int store_export_pending(struct store *s, const struct event_table *const *tables, size_t n,
			 int64_t after, uint64_t *rows, int64_t *oldest_ns);

/* Rows of tables[0..n) with after < id <= upto and the highest such id
 * (after when none), read in one snapshot: what a cursor moved from after
 * to *last passes by, or what a table's rows in a range are. 0, -EBUSY,
 * -EIO. */
int store_export_span(struct store *s, const struct event_table *const *tables, size_t n,
		      int64_t after, int64_t upto, uint64_t *rows, int64_t *last);

/*
 * This database's id, a random 64-bit number stored at first use (store_meta
 * db_id): it changes only with a new database file, whose ids start over, so
 * (db_id, id) names a row for ever. 0 or -EIO.
 */
int store_db_id(struct store *s, uint64_t *out);

/*
 * A watch: a consumer's position over some tables, so that retention counts
 * the rows it deletes before the consumer delivered them. At most 8.
 */
struct store_watch;

/* NULL when all are taken or a table is unknown to the store. */
struct store_watch *store_watch_add(struct store *s, const struct event_table *const *tables,
				    size_t n);
/* Rows up to acked are delivered; (acked, read] are in flight. */
void store_watch_set(struct store_watch *w, int64_t acked, int64_t read);
/* Rows deleted since the last take: past read (never read: lost), and in
 * flight (lost only if that delivery fails). */
void store_watch_take(struct store_watch *w, uint64_t *deleted, uint64_t *inflight);
void store_watch_remove(struct store_watch *w); /* accepts NULL */

#endif
