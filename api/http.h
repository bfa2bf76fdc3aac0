/* SPDX-License-Identifier: MIT */
/*
 * HTTP server on libmicrohttpd (internal thread pool). Routes are registered
 * before http_start(); a route is a method, a path or path prefix, and a
 * handler that fills a response. Collectors add their own /api/v1/<name>/...
 * routes through their ops (see collector.h).
 *
 * Errors are always JSON: {"error":{"code":"bad_request","message":"..."}}.
 *
 * With a web config (exporter-toolkit's --web.config.file): HTTPS, client
 * certificates and basic auth on every route. State-changing routes (any
 * method but GET/HEAD) answer only with [http] admin = true, and then only
 * to a request of Content-Type application/json whose Host (and Origin, if
 * any) names the address the server was reached at.
 */
#ifndef SYSOBS_HTTP_H
#define SYSOBS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct http_server;
struct MHD_Connection;
struct metrics;
struct web_config;

struct http_request {
	const char *method;
	const char *path;    /* without query string */
	const char *subpath; /* path after a prefix route's prefix */
	struct MHD_Connection *conn;
	const char *body; /* POST body, NUL-terminated, or NULL */
	size_t body_len;
	const char *accept;	  /* Accept header or NULL */
	const char *content_type; /* Content-Type header or NULL */
	/* Query arguments as decoded pairs: args[2i] key, args[2i+1] value
	 * (never NULL; "" for "?key"), n_args pairs. Filled by the server; tests
	 * may build a request by hand with conn = NULL. */
	const char *const *args;
	size_t n_args;
};

struct http_response {
	int status;
	const char *content_type; /* static string */
	char *body;		  /* malloc'ed, freed by the server */
	size_t len;
	bool protobuf; /* errors in protobuf (set by api_encoding()) */
	bool close;    /* Connection: close after it */
};

typedef void (*http_handler)(const struct http_request *req, struct http_response *res, void *arg);

enum http_gzip_mode {
	HTTP_GZIP_AUTO,	  /* for clients that accept it, except loopback ones */
	HTTP_GZIP_ALWAYS, /* for clients that accept it */
	HTTP_GZIP_NEVER,
};

struct http_config {
	const char *listen; /* "127.0.0.1:9464", "[::1]:9464", ":9464" */
	unsigned max_connections;
	unsigned timeout_s;
	unsigned threads;
	bool admin;		    /* allow state-changing POST endpoints */
	enum http_gzip_mode gzip;   /* compression of bodies >= HTTP_GZIP_MIN */
	unsigned max_per_ip;	    /* connections per client address; 0: half of
				     * max_connections */
	unsigned header_timeout_ms; /* whole request header within this after
				     * accept or the previous response; 0: 10 s */
	struct web_config *web;	    /* TLS and basic auth (api/webconfig.h); taken
				     * by http_new, even when it fails; NULL: none */
	const char *allow;	    /* client addresses served (api/http_allow.h);
				     * NULL or "": loopback for a loopback listen,
				     * else any */
};

#define HTTP_BODY_MAX	   (64 * 1024) /* larger POST bodies get 413 */
#define HTTP_ARGS_MAX	   64	       /* more query arguments get 400 */
#define HTTP_ROUTE_OTHER   "other"     /* route label of requests matching no route */
#define HTTP_GZIP_MIN	   1024	       /* smaller bodies are sent as they are */
#define HTTP_URL_MAX	   4096	       /* longer request targets get 414 */
#define HTTP_AUTH_DELAY_MS 300	       /* a wrong password is answered after this */

struct http_server *http_new(const struct http_config *cfg, struct metrics *m);
/* prefix=true: matches path == p or path starting with p + '/'. */
int http_route(struct http_server *h, const char *method, const char *path, bool prefix,
	       http_handler fn, void *arg);
int http_start(struct http_server *h);		 /* binds; -errno with a logged reason */
uint16_t http_port(const struct http_server *h); /* actual port (for :0) */
void http_free(struct http_server *h);		 /* stops and frees; accepts NULL */
/* SIGHUP: the TLS certificate and key files looked at again (as every
 * handshake does at most once a second): 1 a new pair served, 0 unchanged
 * or no TLS, -1 the new files refused (logged; the old pair stays). */
int http_tls_reload(struct http_server *h);

/*
 * Parses a listen address: "127.0.0.1:9464", "[::1]:9464", ":9464" (all IPv4
 * addresses), "localhost:9464"; port 0 asks for an ephemeral port. Pure; 0 or
 * -EINVAL.
 */
int http_listen_parse(const char *s, struct sockaddr_storage *ss, socklen_t *sslen);

/* Query parameters. */
const char *http_query(const struct http_request *req, const char *key);
/* All values of a repeated key (e.g. match[]); returns the count, up to max. */
size_t http_query_all(const struct http_request *req, const char *key, const char **vals,
		      size_t max);

/* Accept-Encoding allows gzip (or *) with a q-value above 0. Pure. */
bool http_accepts_gzip(const char *accept_encoding);
/* gzip (RFC 1952) of in, level 1; *out malloc'ed. 0 or -errno. */
int http_gzip(const char *in, size_t len, char **out, size_t *out_len);

/* Response helpers. */
void http_reply_text(struct http_response *res, int status, const char *ctype, char *body,
		     size_t len); /* takes body */
void http_reply_error(struct http_response *res, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
