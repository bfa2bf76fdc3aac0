/* SPDX-License-Identifier: MIT */
/*
 * Every message of api/proto/sysobs.proto, by its protoc-c descriptor:
 * generated at build time (api/proto/messages.cmake), so a message added to
 * the .proto is here with no edit. Readers of GET /api/v1/schema find a
 * route's list message by its full name.
 */
#ifndef SYSOBS_PROTO_MESSAGES_H
#define SYSOBS_PROTO_MESSAGES_H

#include <protobuf-c/protobuf-c.h>

/* NULL-terminated. */
extern const ProtobufCMessageDescriptor *const sysobs_messages[];

/* The message of that full name ("sysobs.v1.DropSampleList"), or NULL. */
const ProtobufCMessageDescriptor *sysobs_message_find(const char *full_name);

#endif
