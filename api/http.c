/* SPDX-License-Identifier: MIT */
/*
 * HTTP server on libmicrohttpd: an internal polling thread (epoll) with an
 * optional thread pool, a route table fixed before start, bounded request
 * bodies, and JSON errors for everything that is not a route's own answer.
 *
 * The listening socket is created and bound here, not by MHD, so that a bind
 * failure comes back as an errno the agent can report (EADDRINUSE, EACCES)
 * and so that port 0 can be read back with getsockname().
 *
 * Every request is counted in sysobs_http_requests_total{route,code} and
 * timed in sysobs_http_request_duration_seconds{route}, where route is the
 * registered path of the route that answered ("other" when none did), never
 * the raw URL: the label set stays as small as the route table. The metrics
 * are updated after the handler returned, so a /metrics handler that holds
 * the registry lock while rendering never meets its own update.
 *
 * Bodies of HTTP_GZIP_MIN bytes or more are gzip-compressed when the client
 * accepts it (Prometheus always asks) and the [http] gzip mode allows it
 * (auto: not for loopback clients): a 10,000-series /metrics shrinks 9.8x
 * for 4.6 ms of CPU at level 1 (bench_metrics).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/log.h"
#include "api/http.h"
#include "api/http_internal.h"
#include "api/webconfig.h"
#include "api/negotiate.h"
#include "api/reply.h"
#include "api/metrics.h"

#define CT_JSON "application/json"
#define CT_TEXT "text/plain; charset=utf-8"

/* Per-request state, from the first call of the access handler to the
 * completion callback. */
struct http_conn {
	int64_t start_ns;
	bool seen;	 /* the access handler ran once */
	bool refused;	 /* answered from the URI callback; close */
	int deny_status; /* 401/403 to send when resumed after a delay */
	char deny_msg[160];
	char *body;
	size_t body_len, body_cap;
	bool too_large;
	size_t n_args;
	bool too_many_args;
	const char *args[2 * HTTP_ARGS_MAX + 1];
};

static const double duration_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					 0.05,	 0.1,	0.25,	0.5,   1,    2.5};

/* ---- listen address ---- */

int http_listen_parse(const char *s, struct sockaddr_storage *ss, socklen_t *sslen)
{
	char host[64];
	const char *port_s, *colon;
	unsigned long port;
	char *end;
	size_t hlen;

	if (!s || !ss || !sslen)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hlen = close - s - 1;
		if (hlen == 0 || hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		port_s = close + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hlen = colon - s;
		if (hlen >= sizeof(host) || memchr(s, ':', hlen))
			return -EINVAL; /* a bare IPv6 address needs brackets */
		memcpy(host, s, hlen);
		host[hlen] = '\0';
		port_s = colon + 1;
	}
	if (*port_s < '0' || *port_s > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || *end || port > 65535 || end - port_s > 5)
		return -EINVAL;

	if (s[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*a6);
		return 0;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	if (!host[0])
		a4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
		return -EINVAL;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	*sslen = sizeof(*a4);
	return 0;
}

/* ---- server object and routes ---- */

struct http_server *http_new(const struct http_config *cfg, struct metrics *m)
{
	static const char *const req_labels[] = {"route", "code", NULL};
	static const char *const dur_labels[] = {"route", NULL};
	struct http_server *h;
	int err;

	if (!cfg || !cfg->listen) {
		if (cfg)
			web_config_free(cfg->web);
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		web_config_free(cfg->web);
		return NULL;
	}
	h->cfg = *cfg;
	h->web = cfg->web;
	h->cfg.web = NULL;
	h->tls = h->web && h->web->cert_pem;
	h->listen = strdup(cfg->listen);
	if (!h->listen) {
		err = -ENOMEM;
		goto out_free;
	}
	h->cfg.listen = h->listen;
	if (!h->cfg.max_connections)
		h->cfg.max_connections = 64;
	if (!h->cfg.timeout_s)
		h->cfg.timeout_s = 30;
	if (!h->cfg.threads)
		h->cfg.threads = 1;
	if (!h->cfg.max_per_ip)
		h->cfg.max_per_ip = h->cfg.max_connections > 1 ? h->cfg.max_connections / 2 : 1;
	if (h->cfg.max_per_ip > h->cfg.max_connections)
		h->cfg.max_per_ip = h->cfg.max_connections;
	if (!h->cfg.header_timeout_ms)
		h->cfg.header_timeout_ms = 10000;
	err = http_listen_parse(cfg->listen, &h->addr, &h->addrlen);
	if (err) {
		log_err("http", "listen address \"%s\": expected HOST:PORT, [IPV6]:PORT or :PORT",
			cfg->listen);
		goto out_free;
	}
	h->metrics = m;
	if (m) {
		h->m_requests = metrics_counter(m, "sysobs_http_requests_total",
						"HTTP requests answered, by route and status code.",
						req_labels);
		h->m_duration = metrics_histogram(
		    m, "sysobs_http_request_duration_seconds",
		    "Time from request headers received to response queued, by route.", dur_labels,
		    duration_bounds, sizeof(duration_bounds) / sizeof(duration_bounds[0]));
		if (!h->m_requests || !h->m_duration) {
			err = -errno;
			goto out_free;
		}
		const char *v[] = {HTTP_ROUTE_OTHER};

		h->other_duration = metric_series(h->m_duration, v);
	}
	h->acceptor.listen_fd = h->acceptor.ep = h->acceptor.wake_fd = h->acceptor.slot_fd = -1;
	err = http_conns_init(h);
	if (err) {
		http_conns_free(h);
		goto out_free;
	}
	return h;

out_free:
	web_config_free(h->web);
	free(h->listen);
	free(h);
	errno = -err;
	return NULL;
}

int http_route(struct http_server *h, const char *method, const char *path, bool prefix,
	       http_handler fn, void *arg)
{
	struct http_route_entry *r;

	if (!h || !method || !path || path[0] != '/' || !fn)
		return -EINVAL;
	if (h->daemon)
		return -EBUSY; /* the table is read without a lock once running */
	for (size_t i = 0; i < h->n_routes; i++) {
		r = &h->routes[i];
		if (!strcmp(r->method, method) && !strcmp(r->path, path) && r->prefix == prefix)
			return -EEXIST;
	}
	if (h->n_routes == h->cap_routes) {
		size_t cap = h->cap_routes ? h->cap_routes * 2 : 16;
		struct http_route_entry *t = realloc(h->routes, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		h->routes = t;
		h->cap_routes = cap;
	}
	r = &h->routes[h->n_routes];
	memset(r, 0, sizeof(*r));
	r->method = strdup(method);
	r->path = strdup(path);
	if (!r->method || !r->path) {
		free(r->method);
		free(r->path);
		return -ENOMEM;
	}
	r->path_len = strlen(path);
	/* "/api/v1/x/" as a prefix means the same as "/api/v1/x". */
	if (prefix && r->path_len > 1 && path[r->path_len - 1] == '/')
		r->path[--r->path_len] = '\0';
	r->prefix = prefix;
	r->fn = fn;
	r->arg = arg;
	if (h->m_duration) {
		const char *v[] = {r->path};

		r->duration = metric_series(h->m_duration, v);
	}
	h->n_routes++;
	return 0;
}

/* How well r matches path: 0 not at all, else higher is more specific. */
static size_t route_match(const struct http_route_entry *r, const char *path)
{
	if (!r->prefix)
		return strcmp(r->path, path) ? 0 : r->path_len + 2;
	if (r->path_len == 1) /* prefix "/" matches everything */
		return 1;
	if (strncmp(path, r->path, r->path_len))
		return 0;
	if (path[r->path_len] != '\0' && path[r->path_len] != '/')
		return 0;
	return r->path_len + 1;
}

static bool method_matches(const char *route_method, const char *method)
{
	if (!strcmp(route_method, method))
		return true;
	/* HEAD is GET without a body; MHD drops the body. */
	return !strcmp(method, MHD_HTTP_METHOD_HEAD) && !strcmp(route_method, MHD_HTTP_METHOD_GET);
}

/*
 * Finds the most specific route for (method, path). When the path matches
 * but the method does not, returns NULL with *path_route set to the most
 * specific route for the path and allow filled with its methods.
 */
static const struct http_route_entry *route_find(const struct http_server *h, const char *method,
						 const char *path,
						 const struct http_route_entry **path_route,
						 char *allow, size_t allow_len)
{
	const struct http_route_entry *best = NULL, *best_path = NULL;
	size_t best_q = 0, best_path_q = 0;

	for (size_t i = 0; i < h->n_routes; i++) {
		const struct http_route_entry *r = &h->routes[i];
		size_t q = route_match(r, path);

		if (!q)
			continue;
		if (q > best_path_q) {
			best_path_q = q;
			best_path = r;
		}
		if (method_matches(r->method, method) && q > best_q) {
			best_q = q;
			best = r;
		}
	}
	*path_route = best_path;
	if (best || !best_path)
		return best;

	/* Allow: the methods of every route as specific as the best one. */
	size_t n = 0;
	bool get = false, head = false;

	allow[0] = '\0';
	for (size_t i = 0; i < h->n_routes; i++) {
		const struct http_route_entry *r = &h->routes[i];

		if (route_match(r, path) != best_path_q || strstr(allow, r->method))
			continue;
		get |= !strcmp(r->method, MHD_HTTP_METHOD_GET);
		head |= !strcmp(r->method, MHD_HTTP_METHOD_HEAD);
		n += snprintf(allow + n, n < allow_len ? allow_len - n : 0, "%s%s", n ? ", " : "",
			      r->method);
	}
	if (get && !head && n < allow_len)
		snprintf(allow + n, allow_len - n, ", HEAD");
	return NULL;
}

/* ---- responses ---- */

void http_reply_text(struct http_response *res, int status, const char *ctype, char *body,
		     size_t len)
{
	free(res->body);
	res->status = status;
	res->content_type = ctype;
	res->body = body;
	res->len = body ? len : 0;
}

void http_reply_json(struct http_response *res, int status, json_t *j)
{
	char *s = NULL;

	/* 15 significant digits: doubles read from counters and /proc print as
	 * 0.092354, not 0.092354000000000006. */
	if (j)
		s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	json_decref(j);
	if (!s) {
		static const char oom[] =
		    "{\"error\":{\"code\":\"internal\",\"message\":\"cannot encode JSON\"}}";

		http_reply_text(res, 500, CT_JSON, strdup(oom), sizeof(oom) - 1);
		return;
	}
	http_reply_text(res, status, CT_JSON, s, strlen(s));
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

/* ---- query arguments ---- */

const char *http_query(const struct http_request *req, const char *key)
{
	if (!req || !key || !req->args)
		return NULL;
	for (size_t i = 0; i < req->n_args; i++) {
		if (!strcmp(req->args[2 * i], key))
			return req->args[2 * i + 1];
	}
	return NULL;
}

size_t http_query_all(const struct http_request *req, const char *key, const char **vals,
		      size_t max)
{
	size_t n = 0;

	if (!req || !key || !req->args)
		return 0;
	for (size_t i = 0; i < req->n_args && n < max; i++) {
		if (!strcmp(req->args[2 * i], key))
			vals[n++] = req->args[2 * i + 1];
	}
	return n;
}

static enum MHD_Result arg_collect(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct http_conn *c = cls;

	if (c->n_args >= HTTP_ARGS_MAX) {
		c->too_many_args = true;
		return MHD_NO;
	}
	c->args[2 * c->n_args] = key;
	c->args[2 * c->n_args + 1] = value ? value : "";
	c->n_args++;
	return MHD_YES;
}

/* ---- request handling ---- */

static void count_request(struct http_server *h, const struct http_route_entry *r,
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
	z_stream z = {0};
	size_t cap;
	char *buf;
	int rc;

	/* 15 + 16: gzip framing; on metric text level 1 is ~4x the speed of
	 * the default (6) for output ~6% larger. */
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
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
static bool maybe_gzip(enum http_gzip_mode mode, struct MHD_Connection *conn,
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

static enum MHD_Result queue(struct http_server *h, struct MHD_Connection *conn,
			     struct http_response *res, const char *allow)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	bool gz = maybe_gzip(h->cfg.gzip, conn, res);

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
	if (http_conns_crowded(h))
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, (unsigned)res->status, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* ---- state-changing routes ---- */

/* The address this connection arrived at (the listen address, or for a
 * wildcard listener the local address the client chose). */
static bool local_addr(struct MHD_Connection *conn, struct sockaddr_storage *ss)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	socklen_t len = sizeof(*ss);

	return ci && !getsockname(ci->connect_fd, (struct sockaddr *)ss, &len);
}

static bool addr_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
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
	bool loop = addr_is_loopback(local);

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
	if (loop && addr_is_loopback(&ss))
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

static int admin_check(const struct http_server *h, struct MHD_Connection *conn, const char *method,
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

static enum MHD_Result reply_error_now(struct http_server *h, struct MHD_Connection *conn,
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
	ret = queue(h, conn, &res, allow);
	count_request(h, r, c, res.status);
	free(res.body);
	return ret;
}

static enum MHD_Result dispatch(struct http_server *h, struct MHD_Connection *conn,
				struct http_conn *c, const char *url, const char *method)
{
	const struct http_route_entry *r, *path_route;
	struct http_response res = {0};
	struct http_request req = {0};
	char allow[128], msg[512];
	enum MHD_Result ret;

	r = route_find(h, method, url, &path_route, allow, sizeof(allow));
	if (!r && path_route) {
		snprintf(msg, sizeof(msg), "method %s not allowed on %.128s (allowed: %s)", method,
			 url, allow);
		return reply_error_now(h, conn, c, path_route, 405, "method_not_allowed", msg,
				       allow);
	}
	if (!r) {
		snprintf(msg, sizeof(msg), "no such route: %.200s", url);
		return reply_error_now(h, conn, c, NULL, 404, "not_found", msg, NULL);
	}
	if (strcmp(r->method, MHD_HTTP_METHOD_GET) && strcmp(r->method, MHD_HTTP_METHOD_HEAD)) {
		int status = admin_check(h, conn, method, msg, sizeof(msg));

		if (status)
			return reply_error_now(
			    h, conn, c, r, status,
			    status == 415 ? "unsupported_media_type" : "forbidden", msg, NULL);
	}
	if (c->too_large) {
		snprintf(msg, sizeof(msg), "request body larger than %u bytes", HTTP_BODY_MAX);
		return reply_error_now(h, conn, c, r, 413, "payload_too_large", msg, NULL);
	}
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, arg_collect, c);
	if (c->too_many_args) {
		snprintf(msg, sizeof(msg), "more than %d query parameters", HTTP_ARGS_MAX);
		return reply_error_now(h, conn, c, r, 400, "bad_request", msg, NULL);
	}

	req.method = method;
	req.path = url;
	req.subpath = r->prefix && r->path_len > 1 ? url + r->path_len : "";
	req.conn = conn;
	req.body = c->body;
	req.body_len = c->body_len;
	req.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	req.content_type =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.args = c->args;
	req.n_args = c->n_args;
	r->fn(&req, &res, r->arg);
	if (res.status < 100 || res.status > 599) {
		log_err("http", "handler of %s %s gave no status", r->method, r->path);
		http_reply_error(&res, 500, "internal", "the handler produced no response");
	}
	ret = queue(h, conn, &res, NULL);
	free(res.body);
	count_request(h, r, c, res.status);
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

		count_request(h, NULL, &c, status);
	}
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
	if (q)
		for (n_args = 1; (q = memchr(q + 1, '&', (size_t)(end - q - 1))); n_args++)
			;
	if (n_args > HTTP_ARGS_MAX) {
		snprintf(msg, msglen, "more than %d query parameters", HTTP_ARGS_MAX);
		return 400;
	}
	return 0;
}

/*
 * Answers a request from the URI callback, before libmicrohttpd parses its
 * arguments: each argument takes a record of libmicrohttpd's per-connection
 * memory, and 600 empty ones ("?&&&...", 1.2 KB) exhaust it, after which
 * libmicrohttpd cannot even build its own error and holds the connection
 * until its timeout. The JSON answer is written to the socket directly
 * (nothing else was sent on it for this request) and the socket is shut
 * down, so libmicrohttpd closes the connection. Over TLS the socket is
 * only shut down. (A connection's first request is screened earlier, in
 * http_accept.c; this catches the next ones of a kept-alive connection.)
 */
static void refuse_early(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
			 int status, const char *code, const char *msg)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	c->refused = true;
	if (ci && !h->tls)
		http_write_error(h, ci->connect_fd, status, code, msg, c->start_ns);
	else
		count_request(h, NULL, c, status);
	http_conns_close(h, conn, HTTP_CLOSE_REJECTED);
}

/* MHD_OPTION_URI_LOG_CALLBACK: the raw request target, before decoding;
 * what it returns is the request's state. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_server *h = cls;
	struct http_conn *c = calloc(1, sizeof(*c));
	const char *code;
	char msg[128];
	int status;

	if (!c)
		return NULL;
	c->start_ns = clock_mono_ns();
	if (!uri)
		return c;
	status = http_target_check(uri, strnlen(uri, HTTP_URL_MAX + 1), msg, sizeof(msg), &code);
	if (status)
		refuse_early(h, conn, c, status, code, msg);
	return c;
}

/* tls_server_config.client_auth_type, checked once per connection. */
static bool client_cert_ok(struct http_server *h, struct MHD_Connection *conn, char *msg,
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
 * basic_auth_users: 0 when the request may go on, else the status to answer
 * (401). A wrong password is answered after HTTP_AUTH_DELAY_MS with the
 * connection suspended, not a server thread asleep.
 */
static int basic_auth(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
		      bool *delay)
{
	char *pass = NULL, *user;
	bool ok;

	*delay = false;
	if (!h->web || !h->web->n_users)
		return 0;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	if (!user) {
		snprintf(c->deny_msg, sizeof(c->deny_msg), "authentication required");
		MHD_free(pass);
		return 401;
	}
	ok = pass && web_auth_check(h->web, user, pass);
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		MHD_free(pass);
	}
	MHD_free(user);
	if (ok)
		return 0;
	snprintf(c->deny_msg, sizeof(c->deny_msg), "wrong user name or password");
	*delay = true;
	return 401;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct http_server *h = cls;
	struct http_conn *c = *con_cls;

	if (!c) { /* no URI callback ran (a request built by hand) */
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->start_ns = clock_mono_ns();
		*con_cls = c;
	}
	if (c->refused)
		return MHD_NO;
	if (c->deny_status) /* resumed after the failure delay */
		return reply_error_now(h, conn, c, NULL, c->deny_status,
				       c->deny_status == 401 ? "unauthorized" : "forbidden",
				       c->deny_msg, NULL);
	if (!c->seen) {
		const char *cl;
		bool delay;
		int status;

		c->seen = true;
		http_conns_busy(h, conn, true);
		/* A chunked body is refused before libmicrohttpd decodes it (its
		 * errors there are HTML): the first request of a plain
		 * connection was refused earlier (http_header.c), this catches
		 * the next ones and TLS. */
		if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
			if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_LENGTH))
				return reply_error_now(h, conn, c, NULL, 400, "bad_request",
						       "both Transfer-Encoding and Content-Length",
						       NULL);
			return reply_error_now(h, conn, c, NULL, 411, "length_required",
					       "a request body needs a Content-Length "
					       "(Transfer-Encoding is not accepted)",
					       NULL);
		}
		if (!client_cert_ok(h, conn, c->deny_msg, sizeof(c->deny_msg)))
			return reply_error_now(h, conn, c, NULL, 403, "forbidden", c->deny_msg,
					       NULL);
		status = basic_auth(h, conn, c, &delay);
		if (status) {
			c->deny_status = status;
			if (delay && !http_conns_delay(h, conn, HTTP_AUTH_DELAY_MS))
				return MHD_YES;
			return reply_error_now(h, conn, c, NULL, status, "unauthorized",
					       c->deny_msg, NULL);
		}
		/* Refuse a declared oversize body before reading any of it. */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > HTTP_BODY_MAX)
			c->too_large = true;
		if (c->too_large)
			return dispatch(h, conn, c, url, method);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (c->too_large)
			return MHD_YES; /* discard; 413 once the body is over */
		if (c->body_len + n > HTTP_BODY_MAX) {
			c->too_large = true;
			free(c->body);
			c->body = NULL;
			c->body_len = 0;
			return MHD_YES;
		}
		if (c->body_len + n + 1 > c->body_cap) {
			size_t cap = c->body_cap ? c->body_cap : 1024;
			char *b;

			while (cap < c->body_len + n + 1)
				cap *= 2;
			b = realloc(c->body, cap);
			if (!b)
				return MHD_NO;
			c->body = b;
			c->body_cap = cap;
		}
		memcpy(c->body + c->body_len, upload_data, n);
		c->body_len += n;
		c->body[c->body_len] = '\0';
		return MHD_YES;
	}
	return dispatch(h, conn, c, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;
	struct http_conn *c = *con_cls;

	if (!c)
		return;
	if (c->seen)
		http_conns_busy(h, conn, false);
	free(c->body);
	free(c);
	*con_cls = NULL;
}

/* libmicrohttpd's own messages (a client that vanished mid-response, a
 * failed accept). A remote peer can provoke them at will, so they are
 * rate-limited. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static struct log_ratelimit rl;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_ratelimited(&rl, 10000, LOG_LVL_WARN, "http", "%s", msg);
}

/* ---- lifecycle ---- */

/* A deep accept queue: under a connection flood the server accepts and
 * evicts quickly, but a fresh client's SYN dropped on a full queue costs it
 * the 1 s SYN retransmission. The kernel caps it at net.core.somaxconn. */
#define SOMAXCONN_WANTED 4096

static int listen_socket(struct http_server *h, int *fd_out)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int fd, one = 1, err;

	fd = socket(h->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (h->addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&h->addr, h->addrlen) < 0) {
		err = -errno;
		log_err("http", "cannot bind %s: %s", h->listen, strerror(-err));
		goto out_close;
	}
	if (listen(fd, SOMAXCONN_WANTED) < 0) {
		err = -errno;
		log_err("http", "cannot listen on %s: %s", h->listen, strerror(-err));
		goto out_close;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
		err = -errno;
		goto out_close;
	}
	h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	*fd_out = fd;
	return 0;

out_close:
	close(fd);
	return err;
}

int http_start(struct http_server *h)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
	const struct web_config *w = h ? h->web : NULL;
	int fd = -1, err;

	if (!h)
		return -EINVAL;
	if (h->daemon)
		return -EALREADY;
	err = listen_socket(h, &fd);
	if (err)
		return err;
	if (h->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (h->tls) {
		if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
			close(fd);
			log_err("http", "this libmicrohttpd is built without TLS");
			return -ENOTSUP;
		}
		flags |= MHD_USE_TLS;
	}
	/*
	 * The logger first, or MHD prints its early messages itself. The
	 * limit is ours: http_accept.c hands at most max_connections over
	 * (http_conns_reserve). libmicrohttpd's own limit must never be
	 * reached - 0.9.75 deadlocks a worker that meets it with a connection
	 * handed in (http_accept.c) - and it is split between the pool's
	 * threads, which MHD_add_connection picks by socket number: each
	 * thread's share is set above the whole of max_connections.
	 */
	struct MHD_OptionItem opts[16] = {
	    {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, h},
	    {MHD_OPTION_CONNECTION_LIMIT, h->cfg.threads * (2 * h->cfg.max_connections + 16), NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, h->cfg.timeout_s, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
	    {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http_conns_notify, h},
	    {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, h},
	};
	size_t no = 6;

	if (h->tls) {
		opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert_pem};
		opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, w->key_pem};
		opts[no++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, w->tls_priorities};
		if (w->client_ca_pem && w->client_auth != WEB_CLIENT_NONE)
			opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
							     w->client_ca_pem};
	}
	if (h->cfg.threads > 1)
		opts[no++] =
		    (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, h->cfg.threads, NULL};
	opts[no] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, h, MHD_OPTION_ARRAY, opts,
				     MHD_OPTION_END);
	if (!h->daemon) {
		close(fd);
		log_err("http", "cannot start the HTTP server on %s%s", h->listen,
			h->tls ? " (check the TLS certificate and key)" : "");
		return -EIO;
	}
	/* The listening socket is ours (http_accept.c): connections reach
	 * libmicrohttpd with their first request header complete. */
	err = http_conns_start(h);
	if (!err)
		err = http_acceptor_start(h, fd);
	if (err) {
		close(fd);
		http_conns_stop(h);
		MHD_stop_daemon(h->daemon);
		h->daemon = NULL;
		return err;
	}
	log_debug("http", "listening on %s (port %u, %u thread%s)", h->listen, h->port,
		  h->cfg.threads, h->cfg.threads == 1 ? "" : "s");
	return 0;
}

uint16_t http_port(const struct http_server *h)
{
	return h ? h->port : 0;
}

void http_free(struct http_server *h)
{
	if (!h)
		return;
	http_acceptor_stop(h);
	http_conns_stop(h);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	http_conns_free(h);
	web_config_free(h->web);
	for (size_t i = 0; i < h->n_routes; i++) {
		free(h->routes[i].method);
		free(h->routes[i].path);
	}
	free(h->routes);
	free(h->listen);
	free(h);
}
