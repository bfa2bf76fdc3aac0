/* SPDX-License-Identifier: MIT */
/*
 * Read side of event tables for the API's generic history route
 * (storage/store_history.c): one page newest first, filtered, rows as the
 * table's row struct.
 */
#ifndef SYSOBS_STORE_HISTORY_H
#define SYSOBS_STORE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/table.h"

struct store;

#define STORE_FILTERS_MAX     16
#define STORE_FILTER_COLS_MAX 4

/* Rows where any of cols equals the value (text when text != NULL). */
struct store_filter {
	const struct event_column *cols[STORE_FILTER_COLS_MAX];
	size_t n_cols;
	const char *text;
	int64_t value;
};

struct store_page_query {
	int64_t cursor;		  /* rows with id < cursor (INT64_MAX: from the newest) */
	int64_t start_ns, end_ns; /* start <= ts < end (0 and INT64_MAX: all) */
	unsigned limit;		  /* rows at most */
	const struct store_filter *filters;
	size_t n_filters;
};

/* Called per row, newest first, with the row struct (NULL columns as their
 * sentinel). Non-zero stops the query (-ENOMEM). */
typedef int (*store_page_fn)(int64_t id, int64_t ts_ns, const void *row, void *arg);

/* Returns the number of rows passed to fn, or -EINVAL (too many filters),
 * -EBUSY (no reader free), -ENOMEM (fn failed), -EIO. */
int store_history_page(struct store *s, const struct event_table *t,
		       const struct store_page_query *q, store_page_fn fn, void *arg);

#endif
