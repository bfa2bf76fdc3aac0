/* SPDX-License-Identifier: MIT */
/*
 * proto3 JSON for protobuf-c messages (the mapping is described in
 * pbjson.h): a streaming encoder that walks the message descriptor and
 * appends to one growable buffer (pbjson_encode.c), and a decoder that maps
 * a jansson tree onto a message by the same reflection (pbjson_decode.c).
 * This file holds what both need: field presence, timestamps and maps
 * recognised by their descriptors, the calendar. It calls neither.
 *
 * No library fits: protobuf-c has no JSON support, and building a jansson
 * tree per row only to serialise it costs 15 to 20 times more on the hot path
 * (a history page is 1000 rows; bench/bench_pbjson.c).
 */
#include <stdint.h>
#include <string.h>

#include "api/pbjson.h"
#include "api/pbjson_internal.h"
#include "google/protobuf/timestamp.pb-c.h"

bool pbjson_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const void *ptr;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)pbj_member(m, f->quantifier_offset) == f->id;
	if (pbj_has_flag(f))
		return *(const protobuf_c_boolean *)pbj_member(m, f->quantifier_offset);
	if (f->label == PROTOBUF_C_LABEL_REPEATED || f->label == PROTOBUF_C_LABEL_REQUIRED)
		return true;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(const void *const *)pbj_member(m, f->offset) != NULL;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type == PROTOBUF_C_TYPE_STRING) {
		/* proto2 optional string: protobuf-c packs it unless NULL or the default */
		ptr = *(const void *const *)pbj_member(m, f->offset);
		return ptr && ptr != f->default_value;
	}
	return true;
}

void pbjson_field_set_present(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
	else if (pbj_has_flag(f))
		*(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
}

bool pbj_is_timestamp(const ProtobufCMessageDescriptor *d)
{
	return d == &google__protobuf__timestamp__descriptor ||
	       !strcmp(d->name, "google.protobuf.Timestamp");
}

/*
 * Whether repeated field f of parent is a map: protoc compiles map<K, V> x
 * into `repeated XEntry x` where XEntry is nested in parent and has exactly
 * key = 1 and value = 2 (protobuf-c keeps no map_entry option to look at).
 */
bool pbj_is_map(const ProtobufCMessageDescriptor *parent, const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	size_t pn, n;

	if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE ||
	    d->n_fields != 2 || d->fields[0].id != 1 || d->fields[1].id != 2 ||
	    strcmp(d->fields[0].name, "key") || strcmp(d->fields[1].name, "value"))
		return false;
	pn = strlen(parent->name);
	n = strlen(d->name);
	return n > pn + 6 && !strncmp(d->name, parent->name, pn) && d->name[pn] == '.' &&
	       !strcmp(d->name + n - 5, "Entry");
}
