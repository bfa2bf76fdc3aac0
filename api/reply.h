/* SPDX-License-Identifier: MIT */
/*
 * How every /api/v1 route answers (DESIGN.md, "The API contract"): one
 * protobuf-c message, sent as its proto3 JSON mapping (the default) or as
 * protobuf (Accept: application/x-protobuf), chosen once per request by
 * api_encoding(); errors are an ErrorResponse message in the same encoding.
 */
#ifndef SYSOBS_API_REPLY_H
#define SYSOBS_API_REPLY_H

#include <protobuf-c/protobuf-c.h>

struct http_request;
struct http_response;

#define API_CT_JSON	"application/json"
#define API_CT_PROTOBUF "application/x-protobuf"

enum api_encoding { API_JSON, API_PROTOBUF };

/* The encoding the request's Accept header prefers (q-values honoured,
 * JSON when it allows both equally or sends none). -1 after writing a 406
 * (as JSON, naming the two types offered) when it accepts neither. */
int api_encoding(const struct http_request *req, struct http_response *res);

/* Encodes m in enc into res with status. Out of memory or an unencodable
 * message becomes a 500. */
void api_reply(struct http_response *res, int status, enum api_encoding enc,
	       const ProtobufCMessage *m);

/* {"error": {"code", "message"}} (an ErrorResponse) with status. */
void api_error(struct http_response *res, enum api_encoding enc, int status, const char *code,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Decodes a request body (Content-Type application/json or
 * application/x-protobuf, JSON when absent) into a new message of type d
 * (free with protobuf_c_message_free_unpacked). NULL after writing a 400 or
 * 415 into res. */
ProtobufCMessage *api_request_body(const struct http_request *req, struct http_response *res,
				   enum api_encoding enc, const ProtobufCMessageDescriptor *d);

#endif
