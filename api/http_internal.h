/* SPDX-License-Identifier: MIT */
/*
 * Shared between api/http.c (requests, routes, responses) and
 * api/http_conn.c (connections: limits, the header deadline, delayed
 * answers). Not for use outside api/http*.c.
 */
#ifndef SYSOBS_HTTP_INTERNAL_H
#define SYSOBS_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "api/http.h"

struct metric;
struct metric_series;
struct web_config;

struct http_route_entry {
	char *method;
	char *path;
	size_t path_len;
	bool prefix;
	http_handler fn;
	void *arg;
	struct metric_series *duration; /* this route's histogram series */
};

/* One accepted socket, from libmicrohttpd's STARTED to its CLOSED notice. */
struct http_sock {
	struct http_sock *prev, *next; /* oldest first */
	int fd;
	int64_t since_ns;	 /* accepted, or its last response done */
	bool busy;		 /* a request's header is in; not evictable */
	bool doomed;		 /* shut down by us; MHD closes it soon */
	signed char tls_verdict; /* client certificate: 0 unchecked, 1 ok, -1 refused */
	unsigned char addr[16];	 /* client address (IPv4 in the first 4 bytes) */
	unsigned char addr_len;
};

enum http_close_reason {
	HTTP_CLOSE_LIMIT,    /* evicted for a new connection at max_connections */
	HTTP_CLOSE_PER_IP,   /* evicted or refused at max_per_ip */
	HTTP_CLOSE_DEADLINE, /* no complete request header within header_timeout */
	HTTP_CLOSE_REJECTED, /* answered early (bad URL) and closed */
	HTTP_CLOSE_N,
};

struct http_delayed {
	struct MHD_Connection *conn;
	int64_t at_ns;
	bool suspended; /* MHD_suspend_connection returned */
};

struct http_conns {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct http_sock head; /* list sentinel */
	unsigned n_live;       /* not doomed */
	struct http_delayed *delayed;
	size_t n_delayed, cap_delayed;
	pthread_t thread;
	bool thread_running, stop;
	struct metric_series *open;
	struct metric_series *closed[HTTP_CLOSE_N];
};

/* http_accept.c: a connection until its first request header is in. */
struct http_pending {
	struct http_pending *prev, *next; /* oldest first */
	int fd;
	int64_t t0;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

struct http_acceptor {
	int listen_fd, ep, wake_fd;
	struct http_pending head; /* list sentinel */
	unsigned n;
	pthread_t thread;
	bool running;
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
	struct web_config *web; /* owned; NULL: plain HTTP without auth */
	bool tls;
	struct http_conns conns;
	struct http_acceptor acceptor;
};

/* http_accept.c: takes listen_fd (closed by http_acceptor_stop). */
int http_acceptor_start(struct http_server *h, int listen_fd);
void http_acceptor_stop(struct http_server *h); /* before MHD_stop_daemon */

/* http.c */
/* Writes a complete JSON error response (Connection: close) to fd, without
 * blocking, and counts it. */
void http_write_error(struct http_server *h, int fd, int status, const char *code, const char *msg,
		      int64_t start_ns);
/* Checks a raw request target: 0, or 400/414 with msg and the error code. */
int http_target_check(const char *uri, size_t len, char *msg, size_t msglen, const char **code);

/* http_conn.c */
int http_conns_init(struct http_server *h);
int http_conns_start(struct http_server *h); /* the deadline thread */
void http_conns_stop(struct http_server *h); /* before MHD_stop_daemon */
void http_conns_free(struct http_server *h); /* after it */
/* MHD_OPTION_NOTIFY_CONNECTION callback (cls = the server). */
void http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe);
/* The connection's socket, or NULL (a test's request without one). */
struct http_sock *http_conns_sock(struct MHD_Connection *conn);
void http_conns_busy(struct http_server *h, struct MHD_Connection *conn, bool busy);
/* Shuts the connection's socket down now (reason counted). */
void http_conns_close(struct http_server *h, struct MHD_Connection *conn,
		      enum http_close_reason why);
/* Suspends conn and resumes it after ms (then the access handler runs
 * again). 0 or -errno. */
int http_conns_delay(struct http_server *h, struct MHD_Connection *conn, unsigned ms);

#endif
