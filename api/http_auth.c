/* SPDX-License-Identifier: MIT */
/*
 * Who may ask: the checks of a request before its route runs. Client
 * certificates (tls_server_config.client_auth_type) and basic_auth_users
 * for every request; for a state-changing route, [http] admin, the Host and
 * Origin naming this server, and a body type a cross-site page cannot send
 * without a preflight.
 *
 * Calls http_conn.c (a connection's socket state), http_allow.c (the
 * loopback test) and webconfig.c; called by http.c (certificates, users)
 * and http_route.c (admin routes).
 */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "api/http.h"
#include "api/http_internal.h"
#include "api/reply.h"
#include "api/webconfig.h"

/* The address this connection arrived at (the listen address, or for a
 * wildcard listener the local address the client chose). */
static bool local_addr(struct MHD_Connection *conn, struct sockaddr_storage *ss)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	socklen_t len = sizeof(*ss);

	return ci && !getsockname(ci->connect_fd, (struct sockaddr *)ss, &len);
}

/*
 * Does an authority ("host[:port]" of a Host header or an Origin) name this
 * server as the client reached it? The host must be the local address of
 * the connection, or for a loopback one any loopback form (localhost,
 * 127.0.0.1, [::1]); the port must be ours (or absent when ours is the
 * scheme's default). Names other than localhost are not resolved, so a
 * DNS rebinding page cannot pass.
 */
static bool authority_is_us(const struct http_server *h, const struct sockaddr_storage *local,
			    const char *a, size_t len)
{
	char host[64];
	const char *colon = NULL, *hend;
	unsigned long port = h->tls ? 443 : 80;
	bool loop = http_addr_is_loopback(local);

	if (len == 0 || len >= 128)
		return false;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', len);

		if (!close)
			return false;
		hend = close + 1;
		if (hend < a + len && *hend != ':')
			return false;
		colon = hend < a + len ? hend : NULL;
	} else {
		colon = memchr(a, ':', len);
		hend = colon ? colon : a + len;
	}
	if (colon) {
		char pbuf[8], *end;
		size_t plen = (size_t)(a + len - colon - 1);

		if (plen == 0 || plen >= sizeof(pbuf))
			return false;
		memcpy(pbuf, colon + 1, plen);
		pbuf[plen] = '\0';
		port = strtoul(pbuf, &end, 10);
		if (*end || pbuf[0] < '0' || pbuf[0] > '9')
			return false;
	}
	if (port != h->port)
		return false;
	if ((size_t)(hend - a) >= sizeof(host))
		return false;
	if (a[0] == '[') {
		memcpy(host, a + 1, (size_t)(hend - a - 2));
		host[hend - a - 2] = '\0';
	} else {
		memcpy(host, a, (size_t)(hend - a));
		host[hend - a] = '\0';
	}
	if (!strcasecmp(host, "localhost"))
		return loop;
	struct sockaddr_storage ss = {0};

	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (a[0] == '[' &&
		 inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		return false;
	if (loop && http_addr_is_loopback(&ss))
		return true;
	if (local->ss_family == AF_INET && ss.ss_family == AF_INET)
		return ((const struct sockaddr_in *)local)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&ss)->sin_addr.s_addr;
	if (local->ss_family == AF_INET6 && ss.ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)local)->sin6_addr,
			       &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	return false;
}

/*
 * Checks a request to a state-changing route: 403 unless [http] admin is
 * on, the Host is this server, an Origin (if sent) is this server and the
 * browser does not flag it cross-site; 415 unless a POST body is JSON (a form
 * or text/plain body is what a cross-site page can send without a
 * preflight; protobuf is as safe). 0 when it may run; msg says why not.
 */
static bool media_type_is(const char *ct, const char *type)
{
	size_t n = strlen(type);

	while (*ct == ' ' || *ct == '\t')
		ct++;
	return !strncasecmp(ct, type, n) &&
	       (!ct[n] || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t');
}

struct header_count {
	const char *name;
	unsigned n;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct header_count *hc = cls;

	(void)kind;
	(void)value;
	if (key && !strcasecmp(key, hc->name))
		hc->n++;
	return MHD_YES;
}

/* How many times the request carries header NAME (libmicrohttpd's lookup
 * finds the first only). */
static unsigned header_count(struct MHD_Connection *conn, const char *name)
{
	struct header_count hc = {name, 0};

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &hc);
	return hc.n;
}

int http_admin_check(const struct http_server *h, struct MHD_Connection *conn, const char *method,
		     char *msg, size_t msglen)
{
	const char *host, *origin, *site, *ct;
	struct sockaddr_storage local = {0};

	if (!h->cfg.admin) {
		snprintf(msg, msglen,
			 "state-changing endpoints are disabled ([http] admin = false)");
		return 403;
	}
	if (!conn)
		return 0;
	host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!local_addr(conn, &local)) {
		snprintf(msg, msglen, "cannot tell the local address");
		return 403;
	}
	if (!host || !authority_is_us(h, &local, host, strlen(host))) {
		snprintf(msg, msglen, "Host %.64s is not this server's address and port",
			 host ? host : "(none)");
		return 403;
	}
	if (origin && header_count(conn, "Origin") > 1) {
		snprintf(msg, msglen, "more than one Origin header");
		return 403;
	}
	if (origin) {
		const char *scheme = h->tls ? "https://" : "http://";
		size_t sl = strlen(scheme);

		if (strncasecmp(origin, scheme, sl) ||
		    !authority_is_us(h, &local, origin + sl, strlen(origin + sl))) {
			snprintf(msg, msglen, "cross-origin request refused (Origin %.64s)",
				 origin);
			return 403;
		}
	}
	if (site && strcasecmp(site, "same-origin") && strcasecmp(site, "none")) {
		snprintf(msg, msglen, "cross-site request refused (Sec-Fetch-Site %.32s)", site);
		return 403;
	}
	/* Only POST can come cross-site without a preflight, and only with a
	 * form or text/plain body. */
	if (strcmp(method, MHD_HTTP_METHOD_POST))
		return 0;
	if (!ct || (!media_type_is(ct, API_CT_JSON) && !media_type_is(ct, API_CT_PROTOBUF))) {
		snprintf(msg, msglen,
			 "the body must be Content-Type: application/json (or %s), not %.64s",
			 API_CT_PROTOBUF, ct ? ct : "(none)");
		return 415;
	}
	return 0;
}

/* tls_server_config.client_auth_type, checked once per connection. */
bool http_client_cert_ok(struct http_server *h, struct MHD_Connection *conn, char *msg,
			 size_t msglen)
{
	enum web_client_auth mode = h->web ? h->web->client_auth : WEB_CLIENT_NONE;
	const union MHD_ConnectionInfo *ci;
	struct http_sock *s;
	gnutls_session_t tls;
	unsigned n = 0, status = 0;
	bool given, ok;

	if (!h->tls || mode == WEB_CLIENT_NONE || mode == WEB_CLIENT_REQUEST)
		return true;
	s = http_conns_sock(conn);
	if (s && s->tls_verdict)
		return s->tls_verdict > 0;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	tls = ci ? ci->tls_session : NULL;
	given = tls && gnutls_certificate_get_peers(tls, &n) && n > 0;
	if (!given)
		ok = mode == WEB_CLIENT_VERIFY_IF_GIVEN;
	else if (mode == WEB_CLIENT_REQUIRE_ANY)
		ok = true;
	else
		ok = gnutls_certificate_verify_peers2(tls, &status) == 0 && status == 0;
	if (!ok)
		snprintf(msg, msglen, "%s",
			 given ? "client certificate not signed by client_ca_file (or invalid)"
			       : "a client certificate is required");
	if (s)
		s->tls_verdict = ok ? 1 : -1;
	return ok;
}

/*
 * basic_auth_users: 0 when the request may go on, a status to answer now
 * (401 without credentials), or HTTP_AUTH_PENDING while http_login.c holds
 * the connection (a bcrypt, or a refusal answered at its fixed time).
 */
int http_basic_auth(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c)
{
	char *pass = NULL, *user;
	int status;

	if (!h->web || !h->web->n_users)
		return 0;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	if (!user || !pass) {
		snprintf(c->deny_msg, sizeof(c->deny_msg), "authentication required");
		MHD_free(user);
		MHD_free(pass);
		return 401;
	}
	status = http_login_check(h, conn, c, user, pass);
	explicit_bzero(pass, strlen(pass));
	MHD_free(pass);
	MHD_free(user);
	return status;
}
