/* SPDX-License-Identifier: MIT */
/*
 * HTTP server on libmicrohttpd: an internal polling thread (epoll) with an
 * optional thread pool, a route table fixed before start, bounded request
 * bodies, and JSON errors for everything that is not a route's own answer.
 * This file holds the server object, libmicrohttpd's callbacks (the raw
 * target, the access handler that reads a body and runs the checks, the
 * completion) and the lifecycle; the other jobs are in the http_*.c files
 * listed in http_internal.h, which this file calls and none of which calls
 * back into it.
 *
 * The listening socket is created and bound here, not by MHD, so that a bind
 * failure comes back as an errno the agent can report (EADDRINUSE, EACCES)
 * and so that port 0 can be read back with getsockname().
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
#include <unistd.h>

#include "base/log.h"
#include "api/http.h"
#include "api/http_internal.h"
#include "api/webconfig.h"
#include "metrics/metrics.h"

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

/* The defaults of what cfg leaves 0: 64 connections, half of them per
 * client address (never more than all), 30 s, one thread, 10 s for the
 * request headers. */
static void http_config_defaults(struct http_config *cfg)
{
	if (!cfg->max_connections)
		cfg->max_connections = 64;
	if (!cfg->timeout_s)
		cfg->timeout_s = 30;
	if (!cfg->threads)
		cfg->threads = 1;
	if (!cfg->max_per_ip)
		cfg->max_per_ip = cfg->max_connections > 1 ? cfg->max_connections / 2 : 1;
	if (cfg->max_per_ip > cfg->max_connections)
		cfg->max_per_ip = cfg->max_connections;
	if (!cfg->header_timeout_ms)
		cfg->header_timeout_ms = 10000;
}

/* The server's own metrics in m: requests by route and code, their
 * durations by route. 0, or -errno. */
static int http_metrics_register(struct http_server *h, struct metrics *m)
{
	static const char *const req_labels[] = {"route", "code", NULL};
	static const char *const dur_labels[] = {"route", NULL};
	const char *other[] = {HTTP_ROUTE_OTHER};

	h->metrics = m;
	if (!m)
		return 0;
	h->m_requests =
	    metrics_counter(m, "sysobs_http_requests_total",
			    "HTTP requests answered, by route and status code.", req_labels);
	h->m_duration = metrics_histogram(
	    m, "sysobs_http_request_duration_seconds",
	    "Time from request headers received to response queued, by route.", dur_labels,
	    duration_bounds, sizeof(duration_bounds) / sizeof(duration_bounds[0]));
	if (!h->m_requests || !h->m_duration)
		return -errno;
	h->other_duration = metric_series(h->m_duration, other);
	return 0;
}

struct http_server *http_new(const struct http_config *cfg, struct metrics *m)
{
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
	http_config_defaults(&h->cfg);
	err = http_listen_parse(cfg->listen, &h->addr, &h->addrlen);
	if (err) {
		log_err("http", "listen address \"%s\": expected HOST:PORT, [IPV6]:PORT or :PORT",
			cfg->listen);
		goto out_free;
	}
	err = http_metrics_register(h, m);
	if (err)
		goto out_free;
	h->acceptor.listen_fd = h->acceptor.ep = h->acceptor.wake_fd = h->conns.slot_fd = -1;
	err = http_conns_init(h);
	if (!err)
		err = http_login_init(h);
	if (err) {
		http_login_free(h);
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

/*
 * Answers a request from the URI callback, before libmicrohttpd parses its
 * arguments: each argument takes a record of libmicrohttpd's per-connection
 * memory, and 600 empty ones ("?&&&...", 1.2 KB) exhaust it, after which
 * libmicrohttpd cannot even build its own error and holds the connection
 * until its timeout. The JSON answer is written to the socket directly
 * (nothing else was sent on it for this request) and the socket is shut
 * down, so libmicrohttpd closes the connection. Over TLS the socket is
 * only shut down (on_uri lets a target with few arguments be answered from
 * the access handler instead). (A connection's first request is screened
 * earlier, in http_accept.c; this catches the next ones of a kept-alive
 * connection.)
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
		http_count_request(h, NULL, c, status);
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
	size_t len;
	int status;

	if (!c)
		return NULL;
	c->start_ns = clock_mono_ns();
	if (!uri)
		return c;
	len = strnlen(uri, HTTP_URL_MAX + 1);
	status = http_target_check(uri, len, msg, sizeof(msg), &code);
	if (!status)
		return c;
	/* Over TLS the answer can only go through libmicrohttpd: from the
	 * access handler's first call, unless the arguments would exhaust
	 * its memory before that (then the socket is only shut down). */
	if (h->tls && http_target_args(uri, len) <= HTTP_ARGS_MAX) {
		c->deny_status = status;
		c->deny_code = code;
		snprintf(c->deny_msg, sizeof(c->deny_msg), "%s", msg);
		return c;
	}
	refuse_early(h, conn, c, status, code, msg);
	return c;
}

static const char *deny_code(int status)
{
	switch (status) {
	case 401:
		return "unauthorized";
	case 429:
		return "too_many_requests";
	case 503:
		return "unavailable";
	default:
		return "forbidden";
	}
}

/*
 * The start of an authenticated request: a body still to come is waited
 * for under the header deadline; one that no route could take (a GET or
 * HEAD body, one over HTTP_BODY_MAX) is refused before a byte of it is
 * read. true when it has answered (*r the result), false to go on.
 */
static bool request_begin(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
			  const char *url, const char *method, enum MHD_Result *r)
{
	const char *cl =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;

	/* A body still to come keeps the connection under the header
	 * deadline (http_conn.c) until it is in: a kept-alive request
	 * trickling its body holds its slot no longer than a slow header
	 * would. */
	if (!len) {
		http_conns_busy(h, conn, true);
		return false;
	}
	/* As http_header.c does for a connection's first request: an
	 * oversize body (413) and then a GET or HEAD body (400) are refused
	 * before a byte of them is read. */
	if (len > HTTP_BODY_MAX) {
		c->too_large = true;
		*r = http_dispatch(h, conn, c, url, method);
		return true;
	}
	if (!strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		*r = http_reply_error_now(
		    h, conn, c, NULL, 400, "bad_request",
		    "a GET or HEAD request takes no body (Content-Length > 0)", NULL);
		return true;
	}
	return false;
}

/* The fields of a request, for http_fields_check: one more than
 * HTTP_HEADER_FIELDS is already too many. */
struct fields {
	struct http_field f[HTTP_HEADER_FIELDS + 1];
	size_t n;
};

static enum MHD_Result field_add(void *cls, enum MHD_ValueKind kind, const char *key,
				 size_t key_size, const char *value, size_t value_size)
{
	struct fields *fs = cls;

	(void)kind;
	if (fs->n == HTTP_HEADER_FIELDS + 1)
		return MHD_NO;
	fs->f[fs->n++] = (struct http_field){.name = key,
					     .name_len = key_size,
					     .value = value ? value : "",
					     .value_len = value ? value_size : 0};
	return MHD_YES;
}

/* A request libmicrohttpd parsed, checked as http_accept.c checks a
 * connection's first request: 0 or the status to answer (code, msg). */
static int fields_check(struct MHD_Connection *conn, const char *method, const char *version,
			char *msg, size_t msglen, const char **code)
{
	struct fields fs;

	fs.n = 0;
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, field_add, &fs);
	return http_fields_check(fs.f, fs.n, method, version, msg, msglen, code);
}

/*
 * A connection's first request, checked before it is routed; true to go
 * on, false with the answer in *r (refused, or held for the login thread).
 * What the first request of a plain connection was refused for
 * (http_header.c) is refused here in the next ones and over TLS, which
 * libmicrohttpd parsed itself: a chunked body before libmicrohttpd decodes
 * it (its errors there are HTML), a missing Host, too many fields...
 */
static bool request_admit(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
			  const char *method, const char *version, enum MHD_Result *r)
{
	const char *code;
	int status;

	status = fields_check(conn, method, version, c->deny_msg, sizeof(c->deny_msg), &code);
	if (status) {
		*r = http_reply_error_now(h, conn, c, NULL, status, code, c->deny_msg, NULL);
		return false;
	}
	if (!http_client_cert_ok(h, conn, c->deny_msg, sizeof(c->deny_msg))) {
		*r = http_reply_error_now(h, conn, c, NULL, 403, "forbidden", c->deny_msg, NULL);
		return false;
	}
	status = http_basic_auth(h, conn, c);
	if (status == HTTP_AUTH_PENDING) {
		c->auth_held = true;
		*r = MHD_YES;
		return false;
	}
	if (status) {
		*r = http_reply_error_now(h, conn, c, NULL, status, deny_code(status), c->deny_msg,
					  NULL);
		return false;
	}
	return true;
}

/* A piece of the request body, kept up to HTTP_BODY_MAX (past it, the rest
 * is discarded and the answer is a 413 once the body is over). */
static enum MHD_Result body_append(struct http_conn *c, const char *data, size_t n)
{
	if (c->too_large)
		return MHD_YES;
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
	memcpy(c->body + c->body_len, data, n);
	c->body_len += n;
	c->body[c->body_len] = '\0';
	return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct http_server *h = cls;
	struct http_conn *c = *con_cls;
	enum MHD_Result r;

	if (!c) { /* no URI callback ran (a request built by hand) */
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->start_ns = clock_mono_ns();
		*con_cls = c;
	}
	if (c->refused)
		return MHD_NO;
	if (c->deny_status) /* resumed after the failure delay, or a refused target */
		return http_reply_error_now(h, conn, c, NULL, c->deny_status,
					    c->deny_code ? c->deny_code : deny_code(c->deny_status),
					    c->deny_msg, NULL);
	if (!c->seen) {
		c->seen = true;
		if (!request_admit(h, conn, c, method, version, &r))
			return r;
	}
	if (!c->begun) {
		/* Authenticated (at once, or resumed after the login thread). */
		c->begun = true;
		if (request_begin(h, conn, c, url, method, &r))
			return r;
		if (!*upload_data_size)
			return MHD_YES; /* the body, or the call to answer, comes next */
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		return body_append(c, upload_data, n);
	}
	http_conns_busy(h, conn, true); /* the body is in */
	return http_dispatch(h, conn, c, url, method);
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

#define RCVBUF_WANTED (4 * (HTTP_HEADER_MAX + HTTP_BODY_MAX))

static int listen_socket(struct http_server *h, int *fd_out)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss), optlen = sizeof(int);
	int fd, one = 1, rcvbuf = 0, err;

	fd = socket(h->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A request is peeked whole before libmicrohttpd gets it
	 * (http_accept.c): the receive window of an accepted socket (half
	 * its buffer or less) must hold the largest header and body. */
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &optlen) || rcvbuf < RCVBUF_WANTED) {
		rcvbuf = RCVBUF_WANTED;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	}
	if (h->addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&h->addr, h->addrlen) < 0) {
		err = -errno;
		log_err("http", "cannot bind %s: %s", h->listen, strerror(-err));
		goto out_close;
	}
	if (listen(fd, HTTP_BACKLOG) < 0) {
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

/* The TLS options after opts[*no]: the pair per handshake, re-read when its
 * files change (http_tls.c), or given once when there are no files. */
static int http_tls_options(struct http_server *h, struct MHD_OptionItem *opts, size_t *no)
{
	const struct web_config *w = h->web;
	int err;

	if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		log_err("http", "this libmicrohttpd is built without TLS");
		return -ENOTSUP;
	}
	err = http_tls_init(h);
	if (err)
		return err;
	if (h->tls_state.initialized) {
		opts[(*no)++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, http_tls_callback()};
	} else {
		opts[(*no)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert_pem};
		opts[(*no)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, w->key_pem};
	}
	opts[(*no)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, w->tls_priorities};
	if (w->client_ca_pem && w->client_auth != WEB_CLIENT_NONE)
		opts[(*no)++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, w->client_ca_pem};
	return 0;
}

/* libmicrohttpd's daemon on no listening socket of its own. */
static int http_daemon_start(struct http_server *h)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
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
	int err;

	if (h->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (h->tls) {
		flags |= MHD_USE_TLS;
		err = http_tls_options(h, opts, &no);
		if (err)
			return err;
	}
	if (h->cfg.threads > 1)
		opts[no++] =
		    (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, h->cfg.threads, NULL};
	opts[no] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, h, MHD_OPTION_ARRAY, opts,
				     MHD_OPTION_END);
	if (!h->daemon) {
		log_err("http", "cannot start the HTTP server on %s%s", h->listen,
			h->tls ? " (check the TLS certificate and key)" : "");
		return -EIO;
	}
	return 0;
}

int http_start(struct http_server *h)
{
	int fd = -1, err;

	if (!h)
		return -EINVAL;
	if (h->daemon)
		return -EALREADY;
	err = listen_socket(h, &fd);
	if (err)
		return err;
	err = http_daemon_start(h);
	if (err) {
		close(fd);
		return err;
	}
	/* The listening socket is ours (http_accept.c): connections reach
	 * libmicrohttpd with their first request header complete. */
	err = http_conns_start(h);
	if (!err)
		err = http_login_start(h);
	if (!err)
		err = http_acceptor_start(h, fd);
	if (err) {
		close(fd);
		http_login_stop(h);
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
	http_login_stop(h);
	http_conns_stop(h);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	http_login_free(h);
	http_tls_free(h);
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
