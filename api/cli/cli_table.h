/* SPDX-License-Identifier: MIT */
/*
 * The sysobs CLI's one table printer: any list route, by its entry in GET
 * /api/v1/schema (the columns, each with a kind) and the list message's
 * protobuf-c descriptor. One formatter per kind: times ISO-8601 UTC with
 * ms, enums as lower-case names, endpoints as addr:port ([v6]:port),
 * tokens in 8 hex digits, lists comma-separated (of messages: their count),
 * absent or empty as "-".
 */
#ifndef SYSOBS_CLI_TABLE_H
#define SYSOBS_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "api/proto/sysobs.pb-c.h"

#define TABLE_COLS_MAX 32

/* Column widths, kept across the polls of --follow so rows stay aligned. */
struct table_view {
	size_t width[TABLE_COLS_MAX];
};

/*
 * Unpacks data (len bytes) as the route's list message and prints its rows
 * to out, the header first if asked. History rows (route->history) come
 * newest first and are printed oldest first, only those with id > after_id;
 * *max_id is raised to the newest id printed. Returns the rows printed, or
 * (size_t)-1 when the list does not decode (one line on stderr).
 */
size_t table_print(FILE *out, const Sysobs__V1__SchemaRoute *route,
		   const ProtobufCMessageDescriptor *list, const void *data, size_t len,
		   struct table_view *v, bool header, int64_t after_id, int64_t *max_id);

/* The formats of the kinds time and endpoint, for the CLI's other printers. */
void table_fmt_time(const Google__Protobuf__Timestamp *t, char *out, size_t size);
void table_fmt_endpoint(const char *addr, bool has_port, uint32_t port, char *out, size_t size);

#endif
