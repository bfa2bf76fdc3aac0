/* SPDX-License-Identifier: MIT */
/*
 * The check of a plain-HTTP connection's first request header, before
 * libmicrohttpd sees it (http_accept.c peeks the bytes and calls this).
 *
 * Written by hand, not taken from a library: the point is to be stricter
 * than libmicrohttpd 0.9.75, which answers what it cannot parse in HTML
 * (some of it with its header block twice) and waits out the header
 * deadline on bytes that can never become a request. So the bytes are
 * judged as a strict HTTP/1.1 parser would (RFC 9112), and as soon as they
 * come: the request line and every field line when complete, the line
 * still arriving as far as it goes. A TLS ClientHello (0x16), binary
 * garbage or an HTTP/0.9 line ("GET /" and its end of line) is refused at
 * its first bytes, not after header_timeout.
 *
 * What is refused: a method that is not a token; a target with a byte
 * outside 0x21-0x7e, longer than HTTP_URL_MAX, with %00 or more than
 * HTTP_ARGS_MAX arguments (http_target_check); a version other than
 * HTTP/1.x (400 when malformed or missing, 505 for another major); a CR
 * not ending a line, a line ended by a bare LF; a field name that is not a
 * token (a NUL, a CTL, a space before the colon, no colon at all); a
 * control byte in a value; obs-fold (a line starting with white space); an
 * HTTP/1.1 request without exactly one Host; a Content-Length that is not
 * digits alone, beyond HTTP_BODY_MAX (413) or repeated, or above 0 on a GET
 * or HEAD; any Transfer-Encoding (411: the one route
 * with a body takes small JSON with a Content-Length; 400 with a
 * Content-Length too: the framing is ambiguous); more than
 * HTTP_HEADER_MAX bytes, HTTP_HEADER_FIELDS fields or HTTP_COOKIES_MAX
 * cookies (431: libmicrohttpd keeps one record per cookie in its 32 KiB
 * per-connection memory and answers a 431 of its own when they do not fit).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/http.h"
#include "api/http_internal.h"

/* tchar of RFC 9110 5.6.2: the bytes of a method or a field name. */
static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

struct hdr_state {
	unsigned fields, hosts, cookies, lengths;
	unsigned long long body; /* Content-Length */
	bool te;
	bool http11;   /* HTTP/1.1 or a later 1.x: Host is required */
	bool bodyless; /* GET or HEAD: no route takes a body */
};

static int bad(char *msg, size_t msglen, const char *what)
{
	snprintf(msg, msglen, "%s", what);
	return 400;
}

/*
 * The request line, or as much of it as has come (complete: its end of
 * line has come; n excludes it and a CR before it).
 */
static int request_line_check(const char *l, size_t n, bool complete, struct hdr_state *st,
			      char *msg, size_t msglen, const char **code)
{
	static const char ver[] = "HTTP/d.d";
	const char *sp1, *sp2, *target, *v;
	size_t i, tlen, vlen;
	int status;

	/* A TLS record starts 0x16 0x03 (handshake, version 3.x): answered
	 * in plain text, as Go's and nginx's plain servers do; the client's
	 * TLS library reports a protocol error. */
	if (n && l[0] == 0x16)
		return bad(msg, msglen, "a TLS handshake on a plain-HTTP port (use http://)");
	for (i = 0; i < n && is_tchar((unsigned char)l[i]); i++)
		;
	if (i < n && l[i] != ' ')
		return bad(msg, msglen, "not an HTTP request (the method is not a token)");
	if (i == n)
		return complete ? bad(msg, msglen, "no request target and no HTTP version") : 0;
	if (!i)
		return bad(msg, msglen, "no method before the request target");
	st->bodyless = (i == 3 && !memcmp(l, "GET", 3)) || (i == 4 && !memcmp(l, "HEAD", 4));
	sp1 = l + i;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', n - (size_t)(target - l));
	tlen = sp2 ? (size_t)(sp2 - target) : n - (size_t)(target - l);
	for (i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] >= 0x7f)
			return bad(msg, msglen, "a control, space or non-ASCII byte in the target");
	if (tlen > HTTP_URL_MAX || sp2 || complete) {
		status = http_target_check(target, tlen, msg, msglen, code);
		if (status)
			return status;
	}
	if (sp2 && !tlen)
		return bad(msg, msglen, "an empty request target");
	if (!sp2) {
		if (complete)
			return bad(msg, msglen,
				   "no HTTP version after the target (HTTP/0.9 is not served)");
		return 0;
	}
	/* "HTTP/" DIGIT "." DIGIT and nothing else, as far as it has come */
	v = sp2 + 1;
	vlen = n - (size_t)(v - l);
	if (vlen > sizeof(ver) - 1)
		return bad(msg, msglen, "not an HTTP version after the target");
	for (i = 0; i < vlen; i++) {
		bool ok = ver[i] == 'd' ? v[i] >= '0' && v[i] <= '9' : v[i] == ver[i];

		if (!ok)
			return bad(msg, msglen, "not an HTTP version after the target");
	}
	if (vlen < sizeof(ver) - 1)
		return complete ? bad(msg, msglen, "not an HTTP version after the target") : 0;
	if (v[5] != '1') {
		*code = "http_version_not_supported";
		snprintf(msg, msglen, "HTTP/%c.%c is not supported (HTTP/1.x only)", v[5], v[7]);
		return 505;
	}
	st->http11 = v[7] >= '1';
	return 0;
}

/* "Content-Length:" value: digits alone (libmicrohttpd takes no other), at
 * most HTTP_BODY_MAX (413 before a byte of the body is waited for). */
static int content_length_check(const char *v, size_t n, struct hdr_state *st, char *msg,
				size_t msglen, const char **code)
{
	unsigned long long cl = 0;

	if (!n)
		return bad(msg, msglen, "Content-Length is empty");
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bad(msg, msglen, "Content-Length is not a number (digits alone)");
		if (cl > (~0ULL - 9) / 10) {
			*code = "payload_too_large";
			snprintf(msg, msglen, "request body larger than %u bytes", HTTP_BODY_MAX);
			return 413;
		}
		cl = cl * 10 + (unsigned long long)(v[i] - '0');
	}
	if (cl > HTTP_BODY_MAX) {
		*code = "payload_too_large";
		snprintf(msg, msglen, "request body larger than %u bytes", HTTP_BODY_MAX);
		return 413;
	}
	st->body = cl;
	return 0;
}

/* A control byte in a field value (HTAB aside): n bytes of v. */
static bool has_ctl(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return true;
	}
	return false;
}

/* A complete field: name (a token, name_len bytes) and its value v (vn
 * bytes, white space before it gone), counted and checked for what the
 * fields of a request say together. */
static int field_check(struct hdr_state *st, const char *name, size_t name_len, const char *v,
		       size_t vn, char *msg, size_t msglen, const char **code)
{
	if (++st->fields > HTTP_HEADER_FIELDS) {
		*code = "header_too_large";
		snprintf(msg, msglen, "more than %d header fields", HTTP_HEADER_FIELDS);
		return 431;
	}
	if (name_len == 14 && !strncasecmp(name, "content-length", 14)) {
		if (st->lengths++)
			return bad(msg, msglen, "more than one Content-Length");
		return content_length_check(v, vn, st, msg, msglen, code);
	}
	while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
		vn--;
	if (name_len == 4 && !strncasecmp(name, "host", 4)) {
		if (st->hosts++)
			return bad(msg, msglen, "more than one Host");
	} else if (name_len == 17 && !strncasecmp(name, "transfer-encoding", 17)) {
		st->te = true;
	} else if (name_len == 6 && !strncasecmp(name, "cookie", 6)) {
		/* libmicrohttpd splits cookies at ';' and ',' */
		st->cookies++;
		for (size_t i = 0; i < vn; i++)
			st->cookies += v[i] == ';' || v[i] == ',';
		if (st->cookies > HTTP_COOKIES_MAX) {
			*code = "header_too_large";
			snprintf(msg, msglen, "more than %d cookies", HTTP_COOKIES_MAX);
			return 431;
		}
	}
	return 0;
}

/* A field line, or as much of it as has come. */
static int field_line_check(const char *l, size_t n, bool complete, struct hdr_state *st, char *msg,
			    size_t msglen, const char **code)
{
	const char *v;
	size_t i, name, vn;

	if (l[0] == ' ' || l[0] == '\t')
		return bad(msg, msglen, "a header line starts with white space (obs-fold)");
	for (i = 0; i < n && is_tchar((unsigned char)l[i]); i++)
		;
	if (i < n && l[i] != ':')
		return bad(msg, msglen,
			   l[i] == ' ' || l[i] == '\t'
			       ? "white space before the colon of a header field"
			       : "a header field name with a byte that is not a token character");
	if (i == n)
		return complete ? bad(msg, msglen, "a header line without a colon") : 0;
	if (!i)
		return bad(msg, msglen, "a header field without a name");
	name = i;
	if (has_ctl(l + name + 1, n - name - 1))
		return bad(msg, msglen, "a control byte in a header value");
	if (!complete)
		return 0;
	/* the value without the white space before it */
	v = l + name + 1;
	vn = n - name - 1;
	while (vn && (*v == ' ' || *v == '\t')) {
		v++;
		vn--;
	}
	return field_check(st, l, name, v, vn, msg, msglen, code);
}

/* The blank line has come: what the fields say together. */
static int header_end_check(const struct hdr_state *st, char *msg, size_t msglen, const char **code)
{
	if (st->te && st->lengths)
		return bad(msg, msglen, "both Transfer-Encoding and Content-Length");
	if (st->te) {
		*code = "length_required";
		snprintf(msg, msglen,
			 "a request body needs a Content-Length (Transfer-Encoding is not "
			 "accepted)");
		return 411;
	}
	if (st->http11 && !st->hosts)
		return bad(msg, msglen, "an HTTP/1.1 request without Host");
	/* Refused rather than waited for: its bytes would hold the
	 * connection for nothing (RFC 9110 9.3.1: a GET body has no
	 * meaning), and a body sent a byte at a time holds it for long. */
	if (st->bodyless && st->body)
		return bad(msg, msglen, "a GET or HEAD request takes no body (Content-Length > 0)");
	return 0;
}

int http_header_check(const char *buf, size_t len, size_t *hdr_len, uint64_t *body_len, char *msg,
		      size_t msglen, const char **code)
{
	struct hdr_state st = {0};
	const char *p = buf, *end = buf + len;
	bool first = true;
	int status;

	*code = "bad_request";
	*hdr_len = 0;
	*body_len = 0;
	/* RFC 9112 2.2: empty lines before the request line are ignored
	 * (libmicrohttpd does too). */
	while (p < end && (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] == '\n'))))
		p++;
	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p)), *cr;
		bool complete = lf != NULL;
		size_t n = complete ? (size_t)(lf - p) : (size_t)(end - p);

		/* CRLF ends a line; a bare LF (which RFC 9112 2.2 lets a
		 * recipient take or refuse) is refused at once, since
		 * libmicrohttpd 0.9.75 waits for a byte after it before it
		 * answers; a CR elsewhere is refused. A CR last of what has
		 * come may be a CRLF's. */
		if (complete && !(n && p[n - 1] == '\r'))
			return bad(msg, msglen,
				   "a line ended by a bare LF (HTTP lines end with CRLF)");
		if (complete)
			n--;
		cr = memchr(p, '\r', n);
		if (cr && (complete || cr + 1 < p + n))
			return bad(msg, msglen, "a CR that does not end a line");
		if (cr)
			n--;
		if (first) {
			if (!n)
				return bad(msg, msglen, "an empty request line");
			status = request_line_check(p, n, complete, &st, msg, msglen, code);
			first = false;
		} else if (!n && complete) {
			if ((size_t)(lf + 1 - buf) > HTTP_HEADER_MAX)
				break; /* 431 below */
			status = header_end_check(&st, msg, msglen, code);
			if (!status) {
				*hdr_len = (size_t)(lf + 1 - buf);
				*body_len = st.body;
			}
			return status;
		} else {
			status = n ? field_line_check(p, n, complete, &st, msg, msglen, code) : 0;
		}
		if (status)
			return status;
		if (!complete)
			break;
		p = lf + 1;
	}
	if (len > HTTP_HEADER_MAX) {
		*code = "header_too_large";
		snprintf(msg, msglen, "request header larger than %d bytes", HTTP_HEADER_MAX);
		return 431;
	}
	return 0;
}

int http_fields_check(const struct http_field *f, size_t n, const char *method, const char *version,
		      char *msg, size_t msglen, const char **code)
{
	struct hdr_state st = {
	    .http11 = version && strcmp(version, "HTTP/1.0") != 0,
	    .bodyless = method && (!strcmp(method, "GET") || !strcmp(method, "HEAD")),
	};
	int status;

	*code = "bad_request";
	for (size_t i = 0; i < n; i++) {
		const char *v = f[i].value;
		size_t vn = f[i].value_len, k;

		for (k = 0; k < f[i].name_len && is_tchar((unsigned char)f[i].name[k]); k++)
			;
		if (!f[i].name_len || k < f[i].name_len)
			return bad(msg, msglen,
				   "a header field name with a byte that is not a token character");
		if (has_ctl(v, vn))
			return bad(msg, msglen, "a control byte in a header value");
		while (vn && (*v == ' ' || *v == '\t')) {
			v++;
			vn--;
		}
		status = field_check(&st, f[i].name, f[i].name_len, v, vn, msg, msglen, code);
		if (status)
			return status;
	}
	return header_end_check(&st, msg, msglen, code);
}

size_t http_target_args(const char *uri, size_t len)
{
	const char *q = memchr(uri, '?', len), *end = uri + len;
	size_t n = 0;

	if (q)
		for (n = 1; (q = memchr(q + 1, '&', (size_t)(end - q - 1))); n++)
			;
	return n;
}

int http_target_check(const char *uri, size_t len, char *msg, size_t msglen, const char **code)
{
	const char *q, *end = uri + len;
	size_t n_args = 0;

	*code = "bad_request";
	if (len > HTTP_URL_MAX) {
		*code = "uri_too_long";
		snprintf(msg, msglen, "request target longer than %d bytes", HTTP_URL_MAX);
		return 414;
	}
	/* libmicrohttpd decodes %00 into a NUL that cuts a key or a value
	 * short ("limit=5%00x" would read as "limit=5"). */
	for (const char *p = uri; p + 2 < end; p++)
		if (p[0] == '%' && p[1] == '0' && p[2] == '0') {
			snprintf(msg, msglen, "NUL (%%00) in the request target");
			return 400;
		}
	q = memchr(uri, '?', len);
	/* libmicrohttpd decodes the path before routing, so an encoded
	 * slash would read as a separator ("/api/v1/drops%2Fsamples" reached
	 * the samples route); no route has one in a segment. */
	for (const char *p = uri; p + 2 < (q ? q : end); p++)
		if (p[0] == '%' && p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) {
			snprintf(msg, msglen, "an encoded slash (%%2F) in the path");
			return 400;
		}
	n_args = http_target_args(uri, len);
	if (n_args > HTTP_ARGS_MAX) {
		snprintf(msg, msglen, "more than %d query parameters", HTTP_ARGS_MAX);
		return 400;
	}
	return 0;
}