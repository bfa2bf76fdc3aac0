/* SPDX-License-Identifier: MIT */
/*
 * Building response messages in a request arena (base/arena.h): the one
 * place that allocates and initialises a protobuf-c message there, and makes
 * a google.protobuf.Timestamp of a wall clock, and the size of an element
 * of a repeated field (for readers by reflection). Used by the API, the agent
 * and the collectors' own routes alike.
 */
#ifndef SYSOBS_PBMSG_H
#define SYSOBS_PBMSG_H

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "google/protobuf/timestamp.pb-c.h"

struct arena;

/* A new, initialised message of type d in ar; NULL when out of memory. */
void *pbmsg_new(struct arena *ar, const ProtobufCMessageDescriptor *d);
/* PBMSG_NEW(ar, Sysobs__V1__IfsCore, sysobs__v1__ifs_core__descriptor) */
#define PBMSG_NEW(ar, T, d) ((T *)pbmsg_new((ar), &(d)))

/* The Timestamp of unix_ns (negative times included); NULL for 0 (never)
 * or out of memory. */
Google__Protobuf__Timestamp *pbmsg_time(struct arena *ar, int64_t unix_ns);

/* Bytes one element of a repeated field of type t takes in its array. */
static inline size_t pbmsg_elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	}
	return 0;
}

#endif
