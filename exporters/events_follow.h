/* SPDX-License-Identifier: MIT */
/*
 * An event export's cursor follows its config (issue 31), for
 * exporters/events.c: notes beside the cursor (store_meta) keep the
 * destination and the tables of the last start; a table taken out is
 * passed by and its position noted; when it comes back its rows written
 * meanwhile are a backfill, read from that position up to the cursor and
 * sent before the rows after it; a changed url or database starts where
 * start_from says. docs/fleet.md, "When the config changes".
 */
#ifndef SYSOBS_EVENTS_FOLLOW_H
#define SYSOBS_EVENTS_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

struct store;
struct store_cursor;

/* [export.NAME] start_from: where a changed url or database starts. */
enum exp_start_from { EXP_FROM_OLDEST, EXP_FROM_NOW, EXP_FROM_KEEP };

struct exp_follow {
	struct store_cursor *cursor;
	const struct event_table *const *tables;
	size_t n_tables;
	const char *section; /* for the log */
	unsigned start_from; /* enum exp_start_from */
	int64_t pos;	     /* the cursor: in, and out as the change leaves it */
	uint64_t skipped;    /* out: rows passed by (start_from = now) */
};

/* At start: dest names the destination ("FORMAT URL [database D]"). */
void exp_follow_config(struct exp_follow *f, struct store *s, const char *dest);

/*
 * A table exported again: its rows with ids in (from, to] go before the rows
 * after the cursor; left of them not yet read (what retention deletes
 * meanwhile is counted deleted at the end). Kept in the note
 * backfill.TABLE, so a restart goes on with it.
 */
struct exp_backfill {
	int table; /* index in the destination's tables; -1: none */
	int64_t from, to;
	uint64_t left;
};

/* The first of tables[0..n) with a backfill into *bf (bf->table -1: none). */
void exp_backfill_next(struct store_cursor *c, const struct event_table *const *tables, size_t n,
		       struct exp_backfill *bf);
/* Rows read up to id pos, n of them, were delivered: the note moves on. */
void exp_backfill_save(struct store_cursor *c, const struct event_table *const *tables,
		       struct exp_backfill *bf, int64_t pos, size_t n);
/* The backfill is over: its note goes. */
void exp_backfill_end(struct store_cursor *c, const struct event_table *const *tables,
		      const struct exp_backfill *bf);

#endif
