/* SPDX-License-Identifier: MIT */
/*
 * What goes back to the client: a route's response queued on its
 * connection with the headers every answer carries (gzip decided by
 * http_gzip.c), an error answered before any route ran, an error written
 * straight to a socket that libmicrohttpd has not seen (http_accept.c) or
 * will not answer (http.c), and the count of every request answered.
 *
 * Every request is counted in sysobs_http_requests_total{route,code} and
 * timed in sysobs_http_request_duration_seconds{route}, where route is the
 * registered path of the route that answered ("other" when none did), never
 * the raw URL: the label set stays as small as the route table. The metrics
 * are updated after the handler returned, so a /metrics handler that holds
 * the registry lock while rendering never meets its own update.
 *
 * Calls http_gzip.c, http_conn.c (is the server crowded), negotiate.c and
 * reply.c; called by http.c, http_route.c and http_accept.c.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"
#include "api/http.h"
#include "api/http_internal.h"
#include "metrics/metrics.h"
#include "api/negotiate.h"
#include "api/reply.h"
#include "api/webconfig.h"

#define CT_JSON "application/json"
#define CT_TEXT "text/plain; charset=utf-8"

void http_count_request(struct http_server *h, const struct http_route_entry *r,
			struct http_conn *c, int status)
{
	char code[12];
	const char *v[2];
	struct metric_series *s;

	if (!h->m_requests)
		return;
	snprintf(code, sizeof(code), "%d", status);
	v[0] = r ? r->path : HTTP_ROUTE_OTHER;
	v[1] = code;
	s = metric_series(h->m_requests, v);
	series_add(s, 1);
	series_observe(r ? r->duration : h->other_duration,
		       (double)(clock_mono_ns() - c->start_ns) / 1e9);
}

enum MHD_Result http_queue(struct http_server *h, struct MHD_Connection *conn,
			   struct http_response *res, const char *allow)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	bool gz = http_maybe_gzip(h->cfg.gzip, conn, res);

	if (res->body) {
		mr = MHD_create_response_from_buffer(res->len, res->body, MHD_RESPMEM_MUST_FREE);
		if (mr)
			res->body = NULL; /* MHD frees it now */
	} else {
		mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!mr)
		return MHD_NO;
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				res->content_type ? res->content_type : CT_TEXT);
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, allow);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	if (gz)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	if (res->status == 401)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Basic realm=\"sysobs\", charset=\"UTF-8\"");
	for (size_t i = 0; h->web && i < h->web->n_headers; i++)
		MHD_add_response_header(mr, h->web->headers[i].name, h->web->headers[i].value);
	/* The slots are full or clients wait for one: this one's goes to
	 * them (http_accept.c, http_conn.c). */
	if (res->close || http_conns_crowded(h))
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, (unsigned)res->status, mr);
	MHD_destroy_response(mr);
	return ret;
}

enum MHD_Result http_reply_error_now(struct http_server *h, struct MHD_Connection *conn,
				     struct http_conn *c, const struct http_route_entry *r,
				     int status, const char *code, const char *msg,
				     const char *allow)
{
	static const char *const offers[] = {API_CT_JSON, API_CT_PROTOBUF};
	struct http_response res = {0};
	enum MHD_Result ret;

	/* Refused before any route ran: still in the encoding the client
	 * asked for (protobuf only when it prefers it). */
	res.protobuf = http_negotiate(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								  MHD_HTTP_HEADER_ACCEPT),
				      offers, 2) == 1;
	http_reply_error(&res, status, code, "%s", msg);
	/* A malformed request closes its connection, as the first request's
	 * refusal does (http_accept.c): what follows it is not trusted. */
	res.close = status == 400 || status == 411 || status == 413 || status == 414 ||
		    status == 431 || status == 505;
	ret = http_queue(h, conn, &res, allow);
	http_count_request(h, r, c, res.status);
	free(res.body);
	return ret;
}

/* The reason phrase of the statuses http_write_error sends. */
static const char *reason_phrase(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 408:
		return "Request Timeout";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

void http_write_error(struct http_server *h, int fd, int status, const char *code, const char *msg,
		      int64_t start_ns)
{
	struct http_response res = {0};
	char head[256];
	int n;

	http_reply_error(&res, status, code, "%s", msg);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: %s\r\n"
		     "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
		     "%sContent-Length: %zu\r\n\r\n",
		     status, reason_phrase(status), res.content_type ? res.content_type : CT_JSON,
		     status == 503 ? "Retry-After: 1\r\n" : "", res.len);
	if (n > 0 && (size_t)n < sizeof(head) &&
	    send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n && res.body)
		(void)!send(fd, res.body, res.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(res.body);
	if (h) {
		struct http_conn c = {.start_ns = start_ns};

		http_count_request(h, NULL, &c, status);
	}
}
