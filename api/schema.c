// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/schema (api/schema.h): the list routes, their messages and
 * their default columns, derived from the protobuf-c descriptors and the
 * event table descriptors.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/log.h"
#include "api/http.h"
#include "api/proto/pbmsg.h"
#include "api/query.h"
#include "api/reply.h"
#include "api/schema.h"
#include "google/protobuf/timestamp.pb-c.h"

static struct {
	struct schema_route *routes;
	size_t n;
} schema;

/* The row message: that of the list's `repeated ... data` field. */
static const ProtobufCMessageDescriptor *schema_row(const ProtobufCMessageDescriptor *list)
{
	const ProtobufCFieldDescriptor *f =
	    list ? protobuf_c_message_descriptor_get_field_by_name(list, "data") : NULL;

	if (!f || f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
		return NULL;
	return f->descriptor;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* "saddr" -> the field "sport" of row, if there is one. */
static const ProtobufCFieldDescriptor *port_of(const ProtobufCMessageDescriptor *row,
					       const ProtobufCFieldDescriptor *f)
{
	char name[64];
	size_t n = strlen(f->name);

	if (f->type != PROTOBUF_C_TYPE_STRING || !ends_with(f->name, "addr") || n >= sizeof(name))
		return NULL;
	memcpy(name, f->name, n - 4);
	strcpy(name + n - 4, "port");
	return protobuf_c_message_descriptor_get_field_by_name(row, name);
}

/* "netns" -> the string field "netns_name" of row that names its value, if
 * there is one. */
static const ProtobufCFieldDescriptor *name_of(const ProtobufCMessageDescriptor *row,
					       const ProtobufCFieldDescriptor *f)
{
	const ProtobufCFieldDescriptor *n;
	char name[64];

	if (f->type == PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED ||
	    (size_t)snprintf(name, sizeof(name), "%s_name", f->name) >= sizeof(name))
		return NULL;
	n = protobuf_c_message_descriptor_get_field_by_name(row, name);
	return n && n->type == PROTOBUF_C_TYPE_STRING ? n : NULL;
}

static bool is_token(const struct event_table *t, const char *name)
{
	for (const struct event_column *c = t ? t->cols : NULL; c && c->name; c++)
		if (!strcmp(c->name, name))
			return c->filter == COL_FILTER_TOKEN;
	return false;
}

static const char *field_kind(const ProtobufCMessageDescriptor *row,
			      const ProtobufCFieldDescriptor *f, const struct event_table *t)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return "list";
	switch (f->type) {
	case PROTOBUF_C_TYPE_MESSAGE:
		return f->descriptor == &google__protobuf__timestamp__descriptor ? "time"
										 : "message";
	case PROTOBUF_C_TYPE_STRING:
		return port_of(row, f) || ends_with(f->name, "addr") ? "endpoint" : "string";
	case PROTOBUF_C_TYPE_BYTES:
		return "bytes";
	case PROTOBUF_C_TYPE_BOOL:
		return "bool";
	case PROTOBUF_C_TYPE_ENUM:
		return "enum";
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return "float";
	default:
		return is_token(t, f->name) ? "token" : "integer";
	}
}

/* The unit a field's name ends with, by the Prometheus naming rule. */
static const char *field_unit(const ProtobufCFieldDescriptor *f)
{
	static const struct {
		const char *suffix, *unit;
	} units[] = {
	    {"_seconds", "seconds"}, {"_ms", "milliseconds"}, {"_ns", "nanoseconds"},
	    {"_bytes", "bytes"},     {"len", "bytes"},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ends_with(f->name, units[i].suffix))
			return units[i].unit;
	return "";
}

/* Shown when a route names no columns: scalars and times, ports apart. */
static bool field_default(const ProtobufCMessageDescriptor *row, const ProtobufCFieldDescriptor *f)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return false;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return f->descriptor == &google__protobuf__timestamp__descriptor;
	for (unsigned i = 0; i < row->n_fields; i++)
		if (port_of(row, &row->fields[i]) == f)
			return false;
	return true;
}

int schema_add(const struct schema_route *r)
{
	const ProtobufCMessageDescriptor *row = schema_row(r->list);
	struct schema_route *p;

	if (!row) {
		log_err("http", "schema of %s: %s has no repeated message field data", r->path,
			r->list ? r->list->name : "(no list message)");
		return -EINVAL;
	}
	for (const char *const *c = r->columns; c && *c; c++)
		if (!protobuf_c_message_descriptor_get_field_by_name(row, *c)) {
			log_err("http", "schema of %s: column %s is no field of %s", r->path, *c,
				row->name);
			return -EINVAL;
		}
	p = realloc(schema.routes, (schema.n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	schema.routes = p;
	schema.routes[schema.n++] = *r;
	return 0;
}

static Sysobs__V1__SchemaColumn *column_new(struct arena *ar, const ProtobufCMessageDescriptor *row,
					    const ProtobufCFieldDescriptor *f,
					    const struct event_table *t)
{
	Sysobs__V1__SchemaColumn *c =
	    PBMSG_NEW(ar, Sysobs__V1__SchemaColumn, sysobs__v1__schema_column__descriptor);
	const ProtobufCFieldDescriptor *port, *name;

	if (!c)
		return NULL;
	port = port_of(row, f);
	name = name_of(row, f);
	c->field = (char *)f->name;
	c->kind = (char *)field_kind(row, f, t);
	c->unit = (char *)field_unit(f);
	c->port_field = port ? (char *)port->name : "";
	c->name_field = name ? (char *)name->name : "";
	return c;
}

static Sysobs__V1__SchemaRoute *route_new(struct arena *ar, const struct schema_route *r)
{
	Sysobs__V1__SchemaRoute *m =
	    PBMSG_NEW(ar, Sysobs__V1__SchemaRoute, sysobs__v1__schema_route__descriptor);
	const ProtobufCMessageDescriptor *row = schema_row(r->list);
	size_t n = 0;

	if (!m)
		return NULL;
	m->path = (char *)r->path;
	m->collector = (char *)(r->collector ? r->collector : "");
	m->list_message = (char *)r->list->name;
	m->row_message = (char *)row->name;
	m->history = r->table != NULL;
	m->columns = arena_alloc(ar, (row->n_fields + 1) * sizeof(*m->columns));
	if (!m->columns)
		return NULL;
	if (r->columns) {
		for (const char *const *c = r->columns; *c; c++)
			m->columns[n++] = column_new(
			    ar, row, protobuf_c_message_descriptor_get_field_by_name(row, *c),
			    r->table);
	} else {
		for (unsigned i = 0; i < row->n_fields; i++)
			if (field_default(row, &row->fields[i]))
				m->columns[n++] = column_new(ar, row, &row->fields[i], r->table);
	}
	for (size_t i = 0; i < n; i++)
		if (!m->columns[i])
			return NULL;
	m->n_columns = n;
	return m;
}

Sysobs__V1__SchemaRouteList *schema_list(struct arena *ar)
{
	Sysobs__V1__SchemaRouteList *l =
	    PBMSG_NEW(ar, Sysobs__V1__SchemaRouteList, sysobs__v1__schema_route_list__descriptor);

	if (!l)
		return NULL;
	l->data = arena_alloc(ar, (schema.n + 1) * sizeof(*l->data));
	if (!l->data)
		return NULL;
	for (size_t i = 0; i < schema.n; i++)
		if (!(l->data[l->n_data++] = route_new(ar, &schema.routes[i])))
			return NULL;
	return l;
}

static void route_schema(const struct http_request *req, struct http_response *res, void *arg)
{
	Sysobs__V1__SchemaRouteList *l;
	struct arena ar = {0};
	int enc = api_encoding(req, res);

	(void)arg;
	if (enc < 0 || query_params_check(req, NULL, res))
		return;
	l = schema_list(&ar);
	if (l && !ar.oom)
		api_reply(res, 200, enc, &l->base);
	else
		api_error(res, enc, 500, "internal", "out of memory");
	arena_free(&ar);
}

int schema_routes_register(struct http_server *h)
{
	static const char *const columns[] = {"path", "collector", "list_message", NULL};
	const struct schema_route self = {
	    .path = "/api/v1/schema",
	    .list = &sysobs__v1__schema_route_list__descriptor,
	    .columns = columns,
	};
	int err = schema_add(&self);

	if (err)
		return err;
	err = http_route(h, "GET", self.path, false, route_schema, NULL);
	if (err)
		log_err("http", "cannot register GET %s: %s", self.path, strerror(-err));
	return err;
}

void schema_free(void)
{
	free(schema.routes);
	schema.routes = NULL;
	schema.n = 0;
}
