// SPDX-License-Identifier: MIT
/*
 * An event export's cursor follows its config (issue 31): see
 * events_follow.h. Calls storage's cursor notes and export reads; called by
 * events.c at start (exp_follow_config) and on every backfill batch.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exporters/events_follow.h"
#include "storage/store_export.h"
#include "storage/store_samples.h"

static void exp_backfill_note(char *note, size_t len, const struct event_table *t)
{
	snprintf(note, len, "backfill.%s", t->name);
}

void exp_backfill_next(struct store_cursor *c, const struct event_table *const *tables, size_t n,
		       struct exp_backfill *bf)
{
	char note[80], val[80];

	bf->table = -1;
	for (size_t i = 0; i < n; i++) {
		exp_backfill_note(note, sizeof(note), tables[i]);
		if (store_cursor_note_get(c, note, val, sizeof(val)) || !*val ||
		    sscanf(val, "%" SCNd64 " %" SCNd64 " %" SCNu64, &bf->from, &bf->to,
			   &bf->left) != 3)
			continue;
		bf->table = (int)i;
		return;
	}
}

static void exp_backfill_set(struct store_cursor *c, const struct event_table *t, int64_t from,
			     int64_t to, uint64_t left)
{
	char note[80], val[80];

	exp_backfill_note(note, sizeof(note), t);
	snprintf(val, sizeof(val), "%" PRId64 " %" PRId64 " %" PRIu64, from, to, left);
	store_cursor_note_set(c, note, val);
}

void exp_backfill_save(struct store_cursor *c, const struct event_table *const *tables,
		       struct exp_backfill *bf, int64_t pos, size_t n)
{
	bf->from = pos;
	bf->left -= n < bf->left ? n : bf->left;
	exp_backfill_set(c, tables[bf->table], bf->from, bf->to, bf->left);
}

void exp_backfill_end(struct store_cursor *c, const struct event_table *const *tables,
		      const struct exp_backfill *bf)
{
	char note[80];

	exp_backfill_note(note, sizeof(note), tables[bf->table]);
	store_cursor_note_set(c, note, NULL);
}

static bool exp_has_table(const struct exp_follow *d, const char *name)
{
	for (size_t i = 0; i < d->n_tables; i++)
		if (!strcmp(d->tables[i]->name, name))
			return true;
	return false;
}

/* Forgets the notes of tables taken out and of backfills: the cursor
 * starts over from the oldest retained row, which covers them. */
static void exp_notes_clear(struct exp_follow *d, const char *prev_tables)
{
	char copy[1024], note[80];

	snprintf(copy, sizeof(copy), "%s", prev_tables);
	for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		snprintf(note, sizeof(note), "excluded.%s", t);
		store_cursor_note_set(d->cursor, note, NULL);
		snprintf(note, sizeof(note), "backfill.%s", t);
		store_cursor_note_set(d->cursor, note, NULL);
	}
	for (size_t i = 0; i < d->n_tables; i++) {
		exp_backfill_note(note, sizeof(note), d->tables[i]);
		store_cursor_note_set(d->cursor, note, NULL);
	}
}

/*
 * A changed url or database: start_from says where its cursor starts:
 * oldest (0: every retained row; the receiver deduplicates what it had
 * under the old name), now (the newest row: the rows in between are
 * counted skipped) or keep. Returns true when the cursor went to 0.
 */
static bool exp_follow_destination(struct exp_follow *d, struct store *s, const char *prev)
{
	uint64_t rows = 0;
	int64_t last = d->pos;

	if (d->start_from == EXP_FROM_KEEP) {
		log_warn(d->section,
			 "the destination changed (was: %s): the cursor stays at row %" PRId64
			 " (start_from = keep), so it gets the rows after it only",
			 prev, d->pos);
		return false;
	}
	if (d->start_from == EXP_FROM_NOW &&
	    store_export_span(s, d->tables, d->n_tables, d->pos, INT64_MAX, &rows, &last))
		log_warn(d->section, "cannot read the history: the cursor stays at row %" PRId64,
			 d->pos);
	if (d->start_from == EXP_FROM_NOW) {
		d->skipped = rows;
		log_warn(d->section,
			 "the destination changed (was: %s): the cursor moves from row %" PRId64
			 " to row %" PRId64 " (start_from = now); %" PRIu64
			 " rows are skipped (sysobs_export_rows_dropped_total{reason=\"skipped\"})",
			 prev, d->pos, last, rows);
	} else {
		last = 0;
		log_warn(d->section,
			 "the destination changed (was: %s): the cursor moves from row %" PRId64
			 " to the oldest retained row (start_from = oldest): it gets the whole "
			 "retained history",
			 prev, d->pos);
	}
	d->pos = last;
	store_cursor_set(d->cursor, last);
	return last == 0;
}

/* Tables taken out since the last start: the cursor when they were. */
static void exp_follow_narrowed(struct exp_follow *d, const char *prev_tables)
{
	char copy[1024], note[80], val[32];

	snprintf(copy, sizeof(copy), "%s", prev_tables);
	for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (exp_has_table(d, t))
			continue;
		snprintf(note, sizeof(note), "excluded.%s", t);
		if (!store_cursor_note_get(d->cursor, note, val, sizeof(val)) && *val)
			continue;
		snprintf(val, sizeof(val), "%" PRId64, d->pos);
		store_cursor_note_set(d->cursor, note, val);
		log_warn(d->section,
			 "table %s is no longer exported: its rows after row %" PRId64
			 " are passed by (sent if it is exported again)",
			 t, d->pos);
	}
}

/* Tables back since they were taken out: their rows written meanwhile
 * (still retained) become a backfill, sent before the rows after the
 * cursor. */
static void exp_follow_widened(struct exp_follow *d, struct store *s)
{
	char note[80], val[80];

	for (size_t i = 0; i < d->n_tables; i++) {
		uint64_t rows;
		int64_t from, last;

		snprintf(note, sizeof(note), "excluded.%s", d->tables[i]->name);
		if (store_cursor_note_get(d->cursor, note, val, sizeof(val)) || !*val)
			continue;
		from = strtoll(val, NULL, 10);
		if (from < d->pos &&
		    !store_export_span(s, &d->tables[i], 1, from, d->pos, &rows, &last) && rows) {
			exp_backfill_set(d->cursor, d->tables[i], from, d->pos, rows);
			log_warn(d->section,
				 "table %s is exported again: %" PRIu64
				 " of its rows written while it was not (rows %" PRId64
				 " to %" PRId64 ") are sent first",
				 d->tables[i]->name, rows, from, d->pos);
		}
		snprintf(note, sizeof(note), "excluded.%s", d->tables[i]->name);
		store_cursor_note_set(d->cursor, note, NULL);
	}
}

/*
 * The cursor follows the config (issue 31): one cursor per destination
 * over its tables, and beside it notes (store_meta) of the destination
 * and the tables of the last start. A table taken out is passed by, its
 * cursor then noted; when it comes back, its rows written meanwhile are a
 * backfill: read from that point up to the cursor, sent before the rows
 * after it (a cursor of its own for that table until it caught up). A
 * changed url or database starts as start_from says. docs/fleet.md.
 */
void exp_follow_config(struct exp_follow *d, struct store *s, const char *dest)
{
	char prev[1024], now[1024] = "";
	size_t off = 0;
	bool restart = false;

	if (!store_cursor_note_get(d->cursor, "destination", prev, sizeof(prev)) && *prev &&
	    strcmp(prev, dest))
		restart = exp_follow_destination(d, s, prev);
	store_cursor_note_set(d->cursor, "destination", dest);

	for (size_t i = 0; i < d->n_tables; i++)
		off += (size_t)snprintf(now + off, off < sizeof(now) ? sizeof(now) - off : 0,
					"%s%s", i ? "," : "", d->tables[i]->name);
	if (store_cursor_note_get(d->cursor, "tables", prev, sizeof(prev)))
		prev[0] = '\0';
	if (restart) {
		exp_notes_clear(d, prev);
	} else {
		exp_follow_narrowed(d, prev);
		exp_follow_widened(d, s);
	}
	store_cursor_note_set(d->cursor, "tables", now);
}
