/* SPDX-License-Identifier: MIT */
/*
 * Building response messages in a request arena (base/arena.h): the one
 * place that allocates and initialises a protobuf-c message there, and makes
 * a google.protobuf.Timestamp of a wall clock. Used by the API, the agent
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

#endif
