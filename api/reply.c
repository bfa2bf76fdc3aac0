// SPDX-License-Identifier: MIT
/*
 * One way to answer an /api/v1 request, in JSON or protobuf (see reply.h),
 * and the response setters every route handler calls (http_reply_*,
 * declared in http.h). Calls negotiate.c and pbjson.c, no file of the
 * server itself.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/http.h"
#include "api/negotiate.h"
#include "api/pbjson.h"
#include "api/proto/sysobs.pb-c.h"
#include "api/reply.h"

int api_encoding(const struct http_request *req, struct http_response *res)
{
	static const char *const offers[] = {API_CT_JSON, API_CT_PROTOBUF};
	int i = http_negotiate(req->accept, offers, 2);

	if (i < 0) {
		api_error(res, API_JSON, 406, "not_acceptable", "Accept allows neither %s nor %s",
			  API_CT_JSON, API_CT_PROTOBUF);
		return -1;
	}
	res->protobuf = i == 1;
	return i == 1 ? API_PROTOBUF : API_JSON;
}

void api_reply(struct http_response *res, int status, enum api_encoding enc,
	       const ProtobufCMessage *m)
{
	size_t len;
	char *out;

	if (enc == API_PROTOBUF) {
		len = protobuf_c_message_get_packed_size(m);
		out = malloc(len ? len : 1);
		if (out) {
			protobuf_c_message_pack(m, (uint8_t *)out);
			http_reply_text(res, status, API_CT_PROTOBUF, out, len);
			return;
		}
	} else if (pbjson_encode(m, &out, &len) == 0) {
		http_reply_text(res, status, API_CT_JSON, out, len);
		return;
	}
	if (m->descriptor == &sysobs__v1__error_response__descriptor) {
		/* Even the error did not encode: say so in plain words. */
		static const char msg[] = "{\"error\":{\"code\":\"internal\","
					  "\"message\":\"out of memory\"}}";

		out = strdup(msg);
		if (out)
			http_reply_text(res, 500, API_CT_JSON, out, sizeof(msg) - 1);
		return;
	}
	api_error(res, enc, 500, "internal", "cannot encode the response");
}

void api_error(struct http_response *res, enum api_encoding enc, int status, const char *code,
	       const char *fmt, ...)
{
	Sysobs__V1__ErrorResponse er = SYSOBS__V1__ERROR_RESPONSE__INIT;
	Sysobs__V1__Error e = SYSOBS__V1__ERROR__INIT;
	char small[512], *msg = NULL;
	va_list ap;

	/* Whole, however long (a list of allowed values can be kilobytes);
	 * a bounded copy only when out of memory. */
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg) {
		va_start(ap, fmt);
		vsnprintf(small, sizeof(small), fmt, ap);
		va_end(ap);
	}
	e.code = (char *)code;
	e.message = msg ? msg : small;
	er.error = &e;
	api_reply(res, status, enc, &er.base);
	free(msg);
}

/* "application/json; charset=utf-8" is application/json. */
static bool media_type_is(const char *ct, const char *type)
{
	size_t n = strlen(type);

	while (*ct == ' ')
		ct++;
	return !strncasecmp(ct, type, n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

ProtobufCMessage *api_request_body(const struct http_request *req, struct http_response *res,
				   enum api_encoding enc, const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = NULL;
	char err[256];

	if (!req->body || !req->body_len) {
		api_error(res, enc, 400, "bad_request", "a %s body is required", d->short_name);
		return NULL;
	}
	if (req->content_type && media_type_is(req->content_type, API_CT_PROTOBUF)) {
		m = protobuf_c_message_unpack(d, NULL, req->body_len, (const uint8_t *)req->body);
		if (!m)
			api_error(res, enc, 400, "bad_request", "body: not a valid %s message",
				  d->name);
		return m;
	}
	if (req->content_type && !media_type_is(req->content_type, API_CT_JSON)) {
		api_error(res, enc, 415, "unsupported_media_type", "Content-Type must be %s or %s",
			  API_CT_JSON, API_CT_PROTOBUF);
		return NULL;
	}
	if (pbjson_decode(d, req->body, req->body_len, &m, err, sizeof(err))) {
		api_error(res, enc, 400, "bad_request", "body: %s", err);
		return NULL;
	}
	return m;
}

void http_reply_text(struct http_response *res, int status, const char *ctype, char *body,
		     size_t len)
{
	free(res->body);
	res->status = status;
	res->content_type = ctype;
	res->body = body;
	res->len = body ? len : 0;
}

/* Errors are ErrorResponse messages, in the encoding the route negotiated
 * (res->protobuf), through the one encoder (api/reply.c). */
void http_reply_error(struct http_response *res, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_error(res, res->protobuf ? API_PROTOBUF : API_JSON, status, code, "%s", msg);
}
