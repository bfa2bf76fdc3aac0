/* SPDX-License-Identifier: MIT */
/*
 * Metric history as a log: the samples the agent's snapshots wrote, read in
 * the order they were committed (metric_samples rowid), after a cursor that a
 * consumer (the remote-write sender) keeps durably in the same database.
 *
 * Why rowid: metric_samples has no id column of its own, and its implicit
 * rowid is what SQLite hands out as max(rowid) + 1 on insert, so it grows
 * with every committed sample. Retention deletes the oldest rows only; the
 * store never runs a full VACUUM (which may renumber rowids of such a
 * table), only incremental_vacuum. The one way the numbering goes back is a
 * table emptied entirely (next rowid 1 again) or a new database file: a
 * consumer sees max(rowid) below its cursor and starts over.
 */
#ifndef SYSOBS_STORE_SAMPLES_H
#define SYSOBS_STORE_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* One committed sample. name and labels (the registry's rendered label set,
 * `{a="b"}` or "") are valid during the callback only. */
struct store_sample {
	int64_t rowid;
	int64_t series_id;
	int64_t ts_ns;
	double value; /* NaN for a NULL value */
	const char *name, *labels;
	const void *blob; /* metric_samples.buckets (NULL: none), blob_len bytes */
	size_t blob_len;
};

/* fn returns 0 to go on; anything else stops the walk and is returned. */
typedef int (*store_sample_row_fn)(const struct store_sample *smp, void *arg);

/*
 * Up to limit samples with rowid > after, in rowid order. Takes one reader
 * from the pool for the call; fn must not call back into the store.
 * 0, fn's value, -EBUSY (no reader within 2 s) or -EIO.
 */
int store_samples_after(struct store *s, int64_t after, size_t limit, store_sample_row_fn fn,
			void *arg);

/* The newest sample's rowid (0 for none) in *out. 0, -EBUSY or -EIO. */
int store_samples_last(struct store *s, int64_t *out);
/* The oldest sample's rowid (0 for none): retention deletes from that end,
 * so the rowids between a cursor and it were deleted. 0, -EBUSY or -EIO. */
int store_samples_first(struct store *s, int64_t *out);

/*
 * A named durable cursor: one row of store_meta ("cursor.<name>"), written
 * through a read-write connection of the cursor's own (the writer thread's
 * connection is private to it; going through its queue would make the write
 * asynchronous and lose it exactly when the queue is full). A write waits
 * for the store's writer through busy_timeout; in WAL mode with
 * synchronous=NORMAL a commit costs no fsync. One thread per cursor.
 */
struct store_cursor;

/* NULL with a message in err (unopenable file, name too long). */
struct store_cursor *store_cursor_open(struct store *s, const char *name, char *err, size_t errlen);
/* The stored value, 0 when never set. 0 or -EIO. */
int store_cursor_get(struct store_cursor *c, int64_t *out);
/* Same, and whether it was ever set. */
int store_cursor_find(struct store_cursor *c, int64_t *out, bool *found);
/* Stores v (committed when this returns 0). 0, -EBUSY or -EIO. */
int store_cursor_set(struct store_cursor *c, int64_t v);
void store_cursor_close(struct store_cursor *c); /* accepts NULL */
/* A note kept beside the cursor (store_meta "cursor.<name>/<what>"): what
 * its owner needs to know of the run that moved it (the destination, the
 * tables it covered). get: "" when none; set: text NULL deletes it. 0 or
 * -EIO (-EBUSY when locked, for set). */
int store_cursor_note_get(struct store_cursor *c, const char *what, char *buf, size_t len);
int store_cursor_note_set(struct store_cursor *c, const char *what, const char *text);
/* Every note whose what starts with prefix, in key order: fn(what, text,
 * arg) for each (a non-zero return stops the read and is returned). 0, fn's
 * value, -EIO. */
int store_cursor_notes(struct store_cursor *c, const char *prefix,
		       int (*fn)(const char *what, const char *text, void *arg), void *arg);

#endif
