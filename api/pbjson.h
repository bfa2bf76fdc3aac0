/* SPDX-License-Identifier: MIT */
/*
 * The proto3 JSON mapping of any protobuf-c message, by reflection on its
 * descriptor: the one JSON encoder of /api/v1 (DESIGN.md, "The API
 * contract"), and the decoder of request bodies.
 *
 * Written by hand because protobuf-c has no JSON support and jansson would
 * need a json_t tree per row (measured in bench/bench_pbjson.c).
 *
 * The mapping (https://protobuf.dev/programming-guides/json/), with the
 * choices the spec leaves open:
 *  - Field names are the .proto names (`next_cursor`), not the lowerCamel
 *    json_name: the spec lets a printer use either, and ours match the SQL
 *    columns. The decoder accepts the .proto names only.
 *  - Every non-optional scalar, string, bytes and enum field is always
 *    emitted, zero and empty included, so each message has one stable shape
 *    for jq users. A proto3 `optional` field (a one-member oneof as protoc-c
 *    sees it, see api/proto/CMakeLists.txt) and every oneof member is emitted
 *    only when set, zero included. A message field that is NULL is omitted.
 *    Repeated fields are always emitted, [] when empty; maps as objects.
 *  - int64, uint64, sint64, fixed64, sfixed64: JSON strings
 *    ("9007199254740993"); 32-bit integers: numbers.
 *  - double, float: the shortest text of 15 to 17 significant digits (6 to
 *    9 for float) that reads back as the same value, so 0.1 is 0.1 and 1e300
 *    is 1e+300; integral values below 2^53 without exponent or fraction
 *    (3.0 is 3); NaN, Infinity, -Infinity as strings.
 *  - Enums by value name; a number the enum does not name as that number.
 *  - bytes: standard base64 with padding.
 *  - strings: escaped as JSON needs; bytes that are not UTF-8 become U+FFFD.
 *  - google.protobuf.Timestamp: RFC 3339 in UTC with exactly 9 fractional
 *    digits, "2026-12-03T10:00:00.000000001Z"; years 0001..9999, outside
 *    is -EINVAL. Other well-known types are encoded as plain messages.
 *  - Compact: no whitespace.
 */
#ifndef SYSOBS_PBJSON_H
#define SYSOBS_PBJSON_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/*
 * Encodes m as JSON into a new NUL-terminated buffer *out (free() it) of
 * *len bytes (NUL not counted). Returns 0, -ENOMEM, or -EINVAL (a Timestamp
 * out of range, or a descriptor this encoder does not know); *out is NULL
 * on error.
 */
int pbjson_encode(const ProtobufCMessage *m, char **out, size_t *len);

/*
 * Decodes the JSON object json (len bytes, need not be NUL-terminated) into
 * a new message of type d, allocated with protobuf-c's default allocator:
 * free it with protobuf_c_message_free_unpacked(*out, NULL). Accepts what
 * the proto3 JSON mapping allows: integers as numbers or decimal strings,
 * floats as numbers or "NaN"/"Infinity"/"-Infinity", enums by name or
 * number, bytes in base64, Timestamps in RFC 3339, null as "not set".
 * Returns 0, -ENOMEM, or -EINVAL with a message in err (errlen bytes)
 * naming the field and what it expected: unknown field, wrong type, out of
 * range, not JSON, not an object.
 */
int pbjson_decode(const ProtobufCMessageDescriptor *d, const char *json, size_t len,
		  ProtobufCMessage **out, char *err, size_t errlen);

/*
 * Field presence, whichever way protoc-c spells it: the has_ flag of a proto2
 * or protobuf-c >= 1.5 optional, the case of a oneof (proto3 optional with
 * protoc-c 1.4), a non-NULL message or string pointer. Fields without
 * presence (plain proto3 scalars, repeated) are always present. For code
 * that fills a message by reflection, e.g. from a SQL row.
 */
bool pbjson_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
void pbjson_field_set_present(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);

#endif
