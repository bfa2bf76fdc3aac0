/* SPDX-License-Identifier: MIT */
/*
 * Response compression: whether the client accepts gzip, the gzip of a
 * body, and the decision for one response (http_maybe_gzip).
 *
 * Bodies of HTTP_GZIP_MIN bytes or more are gzip-compressed when the client
 * accepts it (Prometheus always asks) and the [http] gzip mode allows it
 * (auto: not for loopback clients): a 10,000-series /metrics shrinks 9.8x
 * for 4.6 ms of CPU at level 1 (bench_metrics).
 *
 * Calls no other file of the server (http_respond.c calls it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/http.h"
#include "base/buf.h"
#include "base/gzip.h"
#include "api/http_internal.h"

bool http_accepts_gzip(const char *ae)
{
	const char *p = ae;

	/* "gzip, deflate", "br;q=1.0, gzip;q=0.8", "*" ... ; q=0 refuses */
	while (p && *p) {
		const char *tok, *end;
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		tok = p;
		while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		n = (size_t)(p - tok);
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if ((n == 4 && !strncasecmp(tok, "gzip", 4)) || (n == 1 && *tok == '*')) {
			const char *q = p;
			double qv = 1.0;

			while (q < end && (q = strchr(q, ';')) && q < end) {
				q++;
				while (*q == ' ' || *q == '\t')
					q++;
				if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=')
					qv = strtod(q + 2, NULL);
			}
			return qv > 0;
		}
		p = end;
	}
	return false;
}

int http_gzip(const char *in, size_t len, char **out, size_t *out_len)
{
	struct buf b = {0};

	/* Level 1: on metric text ~4x the speed of the default (6) for output
	 * ~6% larger. */
	if (gzip_compress(in, len, 1, &b)) {
		buf_free(&b);
		return -ENOMEM;
	}
	*out = b.p;
	*out_len = b.len;
	return 0;
}

/* A client on this host: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
static bool client_is_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* Replaces the body with its gzip form when that is worth it and wanted:
 * on loopback (mode auto) compressing a 1.3 MB /metrics costs ~5 ms of CPU
 * and saves nothing. */
bool http_maybe_gzip(enum http_gzip_mode mode, struct MHD_Connection *conn,
		     struct http_response *res)
{
	char *z = NULL;
	size_t zlen = 0;

	if (mode == HTTP_GZIP_NEVER || !conn || !res->body || res->len < HTTP_GZIP_MIN ||
	    res->len > UINT32_MAX ||
	    !http_accepts_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_ACCEPT_ENCODING)) ||
	    (mode == HTTP_GZIP_AUTO && client_is_loopback(conn)))
		return false;
	if (http_gzip(res->body, res->len, &z, &zlen))
		return false;
	if (zlen >= res->len) { /* incompressible */
		free(z);
		return false;
	}
	free(res->body);
	res->body = z;
	res->len = zlen;
	return true;
}
