/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the first-request header check (api/http_header.c): the
 * input is the bytes a client sent. The check answers a status it may send
 * or accepts; an accepted complete header ends with its blank line within
 * the input and the size limit. Early refusal must never refuse a valid
 * header: every prefix of an accepted one is accepted as incomplete, and
 * a refused prefix means the whole input is refused. An accepted header's
 * fields pass the check of requests libmicrohttpd parsed
 * (http_fields_check).
 */
#include "api/http_internal.h"
#include "tests/fuzz/fuzz_common.h"

static int check(const uint8_t *data, size_t size, size_t *hdr_len, const char **code)
{
	uint64_t body_len;
	char msg[128];
	int st;

	msg[0] = '\0';
	st =
	    http_header_check((const char *)data, size, hdr_len, &body_len, msg, sizeof(msg), code);
	FUZZ_CHECK(st == 0 || st == 400 || st == 411 || st == 413 || st == 414 || st == 431 ||
		       st == 505,
		   "status %d", st);
	FUZZ_CHECK(!st || (msg[0] && *code), "status %d without a message", st);
	FUZZ_CHECK(!st || !*hdr_len, "status %d with a header length", st);
	FUZZ_CHECK(*hdr_len <= size && *hdr_len <= HTTP_HEADER_MAX, "header length %zu of %zu",
		   *hdr_len, size);
	FUZZ_CHECK(!*hdr_len || data[*hdr_len - 1] == '\n', "header not ending a line");
	FUZZ_CHECK(body_len <= HTTP_BODY_MAX && (*hdr_len || !body_len), "body of %llu bytes",
		   (unsigned long long)body_len);
	return st;
}

/*
 * An accepted header, split into fields as libmicrohttpd would hand them
 * over, is accepted by http_fields_check too: a kept-alive connection's
 * next request (or one over TLS) is never refused for what a first request
 * is accepted with.
 */
static void fields_agree(const char *h, size_t len)
{
	struct http_field f[HTTP_HEADER_FIELDS];
	char method[32] = "", version[16] = "", msg[128];
	const char *p, *end = h + len, *sp, *code;
	size_t n = 0, m;
	int st;

	while (h < end && (*h == '\r' || *h == '\n')) /* empty lines before it */
		h++;
	p = memchr(h, '\n', (size_t)(end - h));
	sp = memchr(h, ' ', (size_t)(end - h));
	m = sp ? (size_t)(sp - h) : 0;
	if (m < sizeof(method)) {
		memcpy(method, h, m);
		method[m] = '\0';
	}
	if (p && p - h >= 10) { /* "... HTTP/1.x\r\n" */
		memcpy(version, p - 9, 8);
		version[8] = '\0';
	}
	while (p && ++p < end && *p != '\r' && n < HTTP_HEADER_FIELDS) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		const char *colon = memchr(p, ':', (size_t)(lf - p));

		f[n++] = (struct http_field){.name = p,
					     .name_len = (size_t)(colon - p),
					     .value = colon + 1,
					     .value_len = (size_t)(lf - 1 - colon - 1)};
		p = lf;
	}
	st = http_fields_check(f, n, method, version, msg, sizeof(msg), &code);
	FUZZ_CHECK(!st, "accepted header refused as fields: %d %s", st, msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *code;
	size_t hdr_len, n;
	int st;

	if (size > 2 * HTTP_HEADER_MAX)
		return 0;
	st = check(data, size, &hdr_len, &code);
	if (!st && hdr_len) {
		size_t whole = hdr_len;

		for (unsigned i = 1; i <= 16; i++) {
			n = whole * i / 17;
			FUZZ_CHECK(!check(data, n, &hdr_len, &code) && !hdr_len,
				   "prefix %zu of an accepted header %zu refused or complete", n,
				   whole);
		}
		FUZZ_CHECK(!check(data, whole, &hdr_len, &code) && hdr_len == whole,
			   "the header alone is not the same header");
		fields_agree((const char *)data, whole);
	}
	n = size / 2;
	if (check(data, n, &hdr_len, &code) && !hdr_len)
		FUZZ_CHECK(st, "prefix %zu refused, the whole %zu accepted", n, size);
	return 0;
}
