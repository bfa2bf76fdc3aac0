/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the request-body path (api/reply.c api_request_body():
 * protobuf-c unpack, or api/pbjson.c's JSON decoder) into the one request
 * message there is (IfsScanRequest) and into richer messages that exercise
 * every field kind the decoder knows (repeated, nested, oneof/optional,
 * 64-bit, enums, Timestamps, maps). The first byte picks the message and the
 * Content-Type. What decodes must encode (pbjson_encode) unless a Timestamp
 * is out of range, and that JSON must decode again.
 */
#include <errno.h>

#include "api/http.h"
#include "api/pbjson.h"
#include "api/proto/sysobs.pb-c.h"
#include "api/reply.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const ProtobufCMessageDescriptor *const types[] = {
	    &sysobs__v1__ifs_scan_request__descriptor,
	    &sysobs__v1__event_list__descriptor,
	    &sysobs__v1__ifs_scan_list__descriptor,
	    &sysobs__v1__mptcp_connection_list__descriptor,
	    &sysobs__v1__series_list__descriptor,
	    &sysobs__v1__drop_sample_list__descriptor,
	    &sysobs__v1__error_response__descriptor,
	    &sysobs__v1__collector_list__descriptor,
	};
	static const char *const ctypes[] = {"application/json", "application/x-protobuf", NULL,
					     "application/json; charset=utf-8"};
	const size_t n_types = sizeof(types) / sizeof(types[0]);
	struct http_request req = {.method = "POST", .path = "/api/v1/fuzz"};
	struct http_response res = {0};
	ProtobufCMessage *m, *m2 = NULL;
	char err[256], *json = NULL, *body;
	size_t len;
	int rc;

	if (size < 1 || size > 64 * 1024)
		return 0;
	/* The server hands a body NUL-terminated. */
	body = malloc(size);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';
	req.body = body;
	req.body_len = size - 1;
	req.content_type = ctypes[(data[0] >> 4) % 4];
	m = api_request_body(&req, &res, API_JSON, types[(data[0] & 0x0f) % n_types]);
	if (!m) {
		FUZZ_CHECK(res.status >= 400 && res.status < 500 && res.body,
			   "refused without a 4xx body (%d)", res.status);
		goto out;
	}
	rc = pbjson_encode(m, &json, &len);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL, "pbjson_encode: %d", rc);
	if (rc == 0) {
		rc = pbjson_decode(m->descriptor, json, len, &m2, err, sizeof(err));
		FUZZ_CHECK(rc == 0, "own JSON does not decode: %s: %s", err, json);
		protobuf_c_message_free_unpacked(m2, NULL);
	}
	free(json);
	protobuf_c_message_free_unpacked(m, NULL);
out:
	free(res.body);
	free(body);
	return 0;
}
