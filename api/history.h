/* SPDX-License-Identifier: MIT */
/*
 * The generic history routes (api/history.c): GET <table route> for every
 * event table and GET /api/v1/events merging them, in JSON and protobuf,
 * all from the tables' descriptors.
 */
#ifndef SYSOBS_API_HISTORY_H
#define SYSOBS_API_HISTORY_H

#include <stddef.h>

#include "storage/table.h"

struct http_server;
struct store;

/*
 * Checks that every column of t has a field of the same name and a
 * compatible type in t->message (optional where the column can be NULL),
 * that the message has id and time, and that t->list_message is the list
 * envelope of it. 0, or -EINVAL with the reason in err. Pure.
 */
int history_check_table(const struct event_table *t, char *err, size_t errlen);

/* Registers the routes of tables (NULL-terminated) and /api/v1/events. A
 * table whose descriptor and message disagree is an error (logged). */
int history_routes_register(struct http_server *http, struct store *s,
			    const struct event_table *const *tables);
void history_routes_free(void);

#endif
