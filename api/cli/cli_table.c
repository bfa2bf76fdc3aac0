// SPDX-License-Identifier: MIT
/*
 * The generic table of the sysobs CLI (cli_table.h): the cells of a row by
 * reflection on its protobuf-c descriptor, formatted by the column's kind.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_table.h"
#include "api/proto/pbmsg.h"
#include "google/protobuf/timestamp.pb-c.h"

#define CELL_MAX 256

void table_fmt_time(const Google__Protobuf__Timestamp *t, char *out, size_t size)
{
	struct tm tm;
	time_t sec;

	if (!t || (!t->seconds && !t->nanos)) {
		snprintf(out, size, "-");
		return;
	}
	sec = (time_t)t->seconds;
	gmtime_r(&sec, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t->nanos / 1000000);
}

void table_fmt_endpoint(const char *addr, bool has_port, uint32_t port, char *out, size_t size)
{
	if (!addr || !addr[0])
		snprintf(out, size, "-");
	else if (!has_port)
		snprintf(out, size, "%s", addr);
	else if (strchr(addr, ':'))
		snprintf(out, size, "[%s]:%u", addr, port);
	else
		snprintf(out, size, "%s:%u", addr, port);
}

static const void *field_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	return (const char *)m + f->offset;
}

/* Set: a oneof member that is the case, an optional with its has_ flag, a
 * string or message that is there; other scalars always are. */
static bool field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *q = (const char *)m + f->quantifier_offset;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)q == f->id;
	if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(const void *const *)field_ptr(m, f) != NULL;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
		return *(const protobuf_c_boolean *)q;
	return true;
}

/* RUNNING -> "running"; COLLECTOR_STATE_UNSPECIFIED of CollectorState ->
 * "unspecified": the enum's name as a prefix goes. */
static void fmt_enum(const ProtobufCEnumDescriptor *e, int value, char *out, size_t size)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(e, value);
	char prefix[128];
	const char *name;
	size_t n = 0;

	if (!v) {
		snprintf(out, size, "%d", value);
		return;
	}
	for (const char *s = e->short_name; *s && n < sizeof(prefix) - 2; s++) {
		if (isupper((unsigned char)*s) && s != e->short_name)
			prefix[n++] = '_';
		prefix[n++] = (char)toupper((unsigned char)*s);
	}
	prefix[n++] = '_';
	name = strncmp(v->name, prefix, n) ? v->name : v->name + n;
	for (n = 0; name[n] && n < size - 1; n++)
		out[n] = (char)tolower((unsigned char)name[n]);
	out[n] = '\0';
}

/* One scalar at p, of field f, by kind. */
static void fmt_scalar(const ProtobufCFieldDescriptor *f, const void *p, const char *kind,
		       char *out, size_t size)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		snprintf(out, size, "%" PRId32, *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		snprintf(out, size, strcmp(kind, "token") ? "%" PRIu32 : "%08" PRIx32,
			 *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		snprintf(out, size, "%" PRId64, *(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		snprintf(out, size, "%" PRIu64, *(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		snprintf(out, size, "%g", (double)*(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		snprintf(out, size, "%g", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		snprintf(out, size, "%s", *(const protobuf_c_boolean *)p ? "yes" : "no");
		break;
	case PROTOBUF_C_TYPE_ENUM:
		fmt_enum(f->descriptor, *(const int *)p, out, size);
		break;
	case PROTOBUF_C_TYPE_STRING:
		snprintf(out, size, "%s",
			 *(const char *const *)p && **(const char *const *)p
			     ? *(const char *const *)p
			     : "-");
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (f->descriptor == &google__protobuf__timestamp__descriptor)
			table_fmt_time(*(const Google__Protobuf__Timestamp *const *)p, out, size);
		else
			snprintf(out, size, "%s", *(const void *const *)p ? "+" : "-");
		break;
	default:
		snprintf(out, size, "?");
	}
}

/* A repeated field: its values, comma-separated; of messages, their count. */
static void fmt_list(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, char *out,
		     size_t size)
{
	size_t n = *(const size_t *)((const char *)m + f->quantifier_offset), len = 0;
	const char *arr = *(const char *const *)field_ptr(m, f);

	if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_BYTES) {
		snprintf(out, size, "%zu", n);
		return;
	}
	snprintf(out, size, "-");
	for (size_t i = 0; i < n && len < size - 1; i++) {
		char one[64];

		fmt_scalar(f, arr + i * pbmsg_elem_size(f->type), "list", one, sizeof(one));
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? "," : "", one);
	}
}

/* The cell of column c in row m. */
static void cell_format(const ProtobufCMessage *m, const Sysobs__V1__SchemaColumn *c, char *out,
			size_t size)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(m->descriptor, c->field);
	const ProtobufCFieldDescriptor *port, *name = NULL;

	if (c->name_field && *c->name_field)
		name =
		    protobuf_c_message_descriptor_get_field_by_name(m->descriptor, c->name_field);
	if (name && name->type == PROTOBUF_C_TYPE_STRING && field_present(m, name) &&
	    **(const char *const *)field_ptr(m, name)) {
		snprintf(out, size, "%s", *(const char *const *)field_ptr(m, name));
	} else if (!f) {
		snprintf(out, size, "-");
	} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		fmt_list(m, f, out, size);
	} else if (!field_present(m, f)) {
		snprintf(out, size, "-");
	} else if (!strcmp(c->kind, "endpoint") && f->type == PROTOBUF_C_TYPE_STRING) {
		port = c->port_field && *c->port_field
			   ? protobuf_c_message_descriptor_get_field_by_name(m->descriptor,
									     c->port_field)
			   : NULL;
		table_fmt_endpoint(*(const char *const *)field_ptr(m, f),
				   port && field_present(m, port),
				   port ? *(const uint32_t *)field_ptr(m, port) : 0, out, size);
	} else {
		fmt_scalar(f, field_ptr(m, f), c->kind, out, size);
	}
}

static int64_t row_id(const ProtobufCMessage *m)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(m->descriptor, "id");

	return f && f->type == PROTOBUF_C_TYPE_INT64 ? *(const int64_t *)field_ptr(m, f) : 0;
}

static void print_line(FILE *out, char (*cells)[CELL_MAX], size_t n, const struct table_view *v)
{
	for (size_t i = 0; i < n; i++)
		if (i + 1 < n)
			fprintf(out, "%-*s  ", (int)v->width[i], cells[i]);
		else
			fprintf(out, "%s\n", cells[i]);
}

size_t table_print(FILE *out, const Sysobs__V1__SchemaRoute *route,
		   const ProtobufCMessageDescriptor *list, const void *data, size_t len,
		   struct table_view *v, bool header, int64_t after_id, int64_t *max_id)
{
	ProtobufCMessage *m = protobuf_c_message_unpack(list, NULL, len, data);
	const ProtobufCFieldDescriptor *fd =
	    m ? protobuf_c_message_descriptor_get_field_by_name(list, "data") : NULL;
	size_t nc = route->n_columns < TABLE_COLS_MAX ? route->n_columns : TABLE_COLS_MAX;
	size_t n, rows = 0;
	const ProtobufCMessage *const *row;
	char(*cells)[CELL_MAX];

	if (!fd || fd->label != PROTOBUF_C_LABEL_REPEATED) {
		fprintf(stderr, "sysobs: cannot decode the agent's answer as %s\n", list->name);
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		return (size_t)-1;
	}
	n = *(const size_t *)((const char *)m + fd->quantifier_offset);
	row = *(const ProtobufCMessage *const *const *)field_ptr(m, fd);
	cells = calloc((n + 1) * (nc ? nc : 1), sizeof(*cells));
	if (!cells) {
		protobuf_c_message_free_unpacked(m, NULL);
		return (size_t)-1;
	}
	for (size_t c = 0; c < nc; c++) {
		size_t k;

		for (k = 0; route->columns[c]->field[k] && k < CELL_MAX - 1; k++)
			cells[c][k] = (char)toupper((unsigned char)route->columns[c]->field[k]);
	}
	/* history: oldest first, only what is newer than after_id */
	for (size_t i = 0; i < n; i++) {
		const ProtobufCMessage *r = row[route->history ? n - 1 - i : i];
		char(*line)[CELL_MAX] = cells + (rows + 1) * nc;

		if (route->history) {
			if (row_id(r) <= after_id)
				continue;
			if (row_id(r) > *max_id)
				*max_id = row_id(r);
		}
		for (size_t c = 0; c < nc; c++)
			cell_format(r, route->columns[c], line[c], CELL_MAX);
		rows++;
	}
	for (size_t i = 0; i <= rows; i++)
		for (size_t c = 0; c < nc; c++)
			if (strlen(cells[i * nc + c]) > v->width[c])
				v->width[c] = strlen(cells[i * nc + c]);
	for (size_t i = header ? 0 : 1; i <= rows; i++)
		print_line(out, cells + i * nc, nc, v);
	free(cells);
	protobuf_c_message_free_unpacked(m, NULL);
	return rows;
}
