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
#include "api/negotiate.h"
#include "api/reply.h"
#include "api/metrics.h"

#define CT_JSON "application/json"
#define CT_TEXT "text/plain; charset=utf-8"

struct http_route_entry {
	char *method;
	char *path;
	size_t path_len;
	bool prefix;
	http_handler fn;
	void *arg;
	struct metric_series *duration; /* this route's histogram series */
};

struct http_server {
	struct http_config cfg;
	char *listen;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct metrics *metrics;
	struct metric *m_requests;
	struct metric *m_duration;
	struct metric_series *other_duration;
	struct http_route_entry *routes;
	size_t n_routes, cap_routes;
	struct MHD_Daemon *daemon;
	uint16_t port;
};

/* Per-request state, from the first call of the access handler to the
 * completion callback. */
struct http_conn {
	int64_t start_ns;
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
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfg = *cfg;
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
	return h;

out_free:
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

static enum MHD_Result queue(const struct http_server *h, struct MHD_Connection *conn,
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
	ret = MHD_queue_response(conn, (unsigned)res->status, mr);
	MHD_destroy_response(mr);
	return ret;
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
	if (!h->cfg.admin && strcmp(r->method, MHD_HTTP_METHOD_GET) &&
	    strcmp(r->method, MHD_HTTP_METHOD_HEAD))
		return reply_error_now(
		    h, conn, c, r, 403, "forbidden",
		    "state-changing endpoints are disabled ([http] admin = false)", NULL);
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

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct http_server *h = cls;
	struct http_conn *c = *con_cls;

	if (!c) {
		const char *cl;

		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->start_ns = clock_mono_ns();
		*con_cls = c;
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
	struct http_conn *c = *con_cls;

	if (!c)
		return;
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
	if (listen(fd, 128) < 0) {
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
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
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
	/* The logger first, or MHD prints its early messages itself. */
	struct MHD_OptionItem opts[] = {
	    {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, h},
	    {MHD_OPTION_LISTEN_SOCKET, fd, NULL},
	    {MHD_OPTION_CONNECTION_LIMIT, h->cfg.max_connections, NULL},
	    {MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->cfg.max_per_ip, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, h->cfg.timeout_s, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
	    {h->cfg.threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, h->cfg.threads,
	     NULL},
	    {MHD_OPTION_END, 0, NULL},
	};

	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, h, MHD_OPTION_ARRAY, opts,
				     MHD_OPTION_END);
	if (!h->daemon) {
		close(fd);
		log_err("http", "cannot start the HTTP server on %s", h->listen);
		return -EIO;
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
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	for (size_t i = 0; i < h->n_routes; i++) {
		free(h->routes[i].method);
		free(h->routes[i].path);
	}
	free(h->routes);
	free(h->listen);
	free(h);
}
