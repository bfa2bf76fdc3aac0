/* SPDX-License-Identifier: MIT */
/*
 * What the event exporters hand their encoders: rows of the event tables
 * (storage/table.h descriptors) in id order, and the host's identity, the
 * same one every pushed series carries (remote_write's job, instance and
 * external labels).
 */
#ifndef SYSOBS_EXPORT_ROW_H
#define SYSOBS_EXPORT_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "storage/table.h"
#include "storage/table_value.h"

struct export_row {
	const struct event_table *table;
	int64_t id;	 /* the agent-wide row id: (host, table, id) is the row's key */
	int64_t ts_ns;	 /* unix ns */
	const void *row; /* the table's row struct (t->row_size bytes) */
};

struct export_label {
	const char *name, *value;
};

#define EXPORT_MAX_LABELS 16

struct export_identity {
	const char *job;			       /* "" = none */
	const char *instance;			       /* never empty: the host name by default */
	struct export_label labels[EXPORT_MAX_LABELS]; /* external labels, sorted by name */
	size_t n_labels;
	const char *version; /* sysobsd's: SYSOBS_VERSION */
	/* This database's id (store_meta db_id), which changes when the
	 * history starts over, so ids never collide: the OTLP resource's
	 * sysobs.db_id (service.instance.id is the instance, for a join with
	 * the metrics: exporters/otlp_logs.c). */
	const char *db_id;
};

/* What a destination is sent beyond the rows' values (its [export.NAME]
 * keys): the encoders' flags. */
#define EXPORT_F_BLOBS 1u /* COL_BLOB columns too (packet captures: capture = true) */

/* An integer column named "netns" (a network namespace's inode) is
 * followed in every export by netns_name, the name the host gives that
 * namespace (ip netns; base/netns_name.h) when the row is sent, as the
 * history API names it when asked. */
#define EXPORT_NETNS_NAME "netns_name"

static inline bool export_is_netns(const struct event_column *c)
{
	return !strcmp(c->name, "netns") && c->type != COL_TEXT && c->type != COL_REAL &&
	       c->type != COL_BLOB;
}

/* The name of the namespace in v (column c of a row) into buf: true, or
 * false when c is no netns column, its value is NULL, or the host names
 * that namespace nowhere. */
bool export_netns_name(const struct event_column *c, const struct col_value *v, char *buf,
		       size_t len);

#endif
