/* SPDX-License-Identifier: MIT */
/*
 * Shared by the files of the proto3 JSON mapping, not for use outside
 * api/pbjson*.c: pbjson.c (reflection on descriptors and the calendar,
 * which both directions need), pbjson_encode.c and pbjson_decode.c. The
 * encoder and the decoder call pbjson.c and never each other.
 */
#ifndef SYSOBS_PBJSON_INTERNAL_H
#define SYSOBS_PBJSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "api/proto/pbmsg.h"

#define PBJ_TS_MIN  (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define PBJ_TS_MAX  253402300799LL   /* 9999-12-31T23:59:59Z */
#define PBJ_NS_MAX  999999999
#define PBJ_DEPTH   64		       /* nesting bound, encoder and decoder */
#define PBJ_EXACT53 9007199254740992.0 /* 2^53: doubles below are exact integers */

static inline const void *pbj_member(const ProtobufCMessage *m, size_t offset)
{
	return (const char *)m + offset;
}

/* Whether the presence of f lives in a has_ flag (proto2/1.5 optional scalar). */
static inline bool pbj_has_flag(const ProtobufCFieldDescriptor *f)
{
	return f->label == PROTOBUF_C_LABEL_OPTIONAL && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
	       f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE;
}

/* Whether d is google.protobuf.Timestamp (by identity or by name). */
bool pbj_is_timestamp(const ProtobufCMessageDescriptor *d);
/* Whether repeated field f of parent is a map<K, V>. */
bool pbj_is_map(const ProtobufCMessageDescriptor *parent, const ProtobufCFieldDescriptor *f);
/* Day number since 1970-01-01 of a proleptic Gregorian date. */

#endif
