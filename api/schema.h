/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/schema: every list route the agent serves, with the message it
 * answers and the columns a reader shows by default, each with its kind and
 * unit. Readers (the CLI, the status page) render any list from it, so a
 * field added to a row message and named in its route's default columns
 * needs no edit in them.
 *
 * The routes are added where they are registered (api/routes.c,
 * api/history.c, agent/collector_routes.c); the kinds come from the
 * protobuf-c descriptors, plus the table descriptor's filters (a TOKEN
 * column is a token). Added before http_start(), read-only after.
 */
#ifndef SYSOBS_SCHEMA_H
#define SYSOBS_SCHEMA_H

#include <stdbool.h>

#include <protobuf-c/protobuf-c.h>

#include "api/proto/sysobs.pb-c.h"
#include "storage/table.h"

struct arena;
struct http_server;

struct schema_route {
	const char *path;
	const char *collector;			/* NULL: the agent's own */
	const ProtobufCMessageDescriptor *list; /* {repeated Row data = 1; ...} */
	/* Default columns, fields of Row, NULL-terminated; NULL: every field
	 * but lists, messages other than times, and ports of an endpoint. */
	const char *const *columns;
	const struct event_table *table; /* a history route's table, or NULL */
};

/* Copies r (not the strings and descriptors it points to). -EINVAL, logged,
 * when the list has no repeated message field data or a column is no field
 * of its row; -ENOMEM. */
int schema_add(const struct schema_route *r);
/* The list, in ar (NULL when out of memory). */
Sysobs__V1__SchemaRouteList *schema_list(struct arena *ar);
/* Adds and registers GET /api/v1/schema itself: call after every other list
 * route. 0 or -errno. */
int schema_routes_register(struct http_server *h);
void schema_free(void);

#endif
