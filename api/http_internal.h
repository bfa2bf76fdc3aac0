/* SPDX-License-Identifier: MIT */
/*
 * Shared between the files of the HTTP server, not for use outside
 * api/http*.c:
 *   http.c          the server object, libmicrohttpd's callbacks, start/stop
 *   http_route.c    the route table, query arguments, dispatch to a handler
 *   http_auth.c     client certificates, basic auth, state-changing routes
 *   http_respond.c  responses queued, early errors, request counting
 *   http_gzip.c     response compression
 *   http_header.c   the checks of a raw request header and target (pure)
 *   http_conn.c     connections inside libmicrohttpd: the slot count, idle
 *                   eviction, the header deadline, delayed answers
 *   http_accept.c   connections before libmicrohttpd: screening, the queue
 *                   for a slot
 *   http_login.c    bcrypt off the request threads, failed logins limited
 *                   per address, refusals at a fixed time
 * Calls go down that list (http.c -> http_route.c -> http_auth.c ->
 * http_respond.c -> http_gzip.c; http_accept.c -> http_respond.c,
 * http_header.c, http_conn.c). http_conn.c knows nothing of the acceptor:
 * when a slot comes free it signals its own eventfd (conns.slot_fd), which
 * the acceptor's epoll set watches.
 */
#ifndef SYSOBS_HTTP_INTERNAL_H
#define SYSOBS_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "api/http.h"
#include "api/http_allow.h"

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

/* Per-request state, from the first call of the access handler to the
 * completion callback. */
struct http_conn {
	int64_t start_ns;
	bool seen;	       /* the access handler ran once */
	bool auth_held;	       /* held by http_login.c while its password is checked */
	bool begun;	       /* authenticated; request_begin ran */
	bool refused;	       /* answered from the URI callback; close */
	int deny_status;       /* 401/403 to send when resumed after a delay, or a
				* refused target to answer over TLS */
	const char *deny_code; /* its error code (NULL: by the status) */
	char deny_msg[160];
	char *body;
	size_t body_len, body_cap;
	bool too_large;
	size_t n_args;
	bool too_many_args;
	const char *args[2 * HTTP_ARGS_MAX + 1];
};

/* One accepted socket, from libmicrohttpd's STARTED to its CLOSED notice. */
struct http_sock {
	struct http_sock *prev, *next; /* oldest first */
	int fd;
	int64_t since_ns;	 /* accepted, or its last response done */
	bool busy;		 /* a request's header is in; not evictable */
	bool doomed;		 /* shut down by us; MHD closes it soon */
	signed char tls_verdict; /* client certificate: 0 unchecked, 1 ok, -1 refused */
	bool held;		 /* suspended by http_conns_hold, out of the slot count */
};

enum http_close_reason {
	HTTP_CLOSE_LIMIT,	/* idle, evicted for a client waiting for a slot, or
				 * header incomplete, evicted at max_connections */
	HTTP_CLOSE_PER_IP,	/* header incomplete, evicted at max_per_ip */
	HTTP_CLOSE_DEADLINE,	/* no complete request header within header_timeout */
	HTTP_CLOSE_REJECTED,	/* answered early (bad request) and closed */
	HTTP_CLOSE_BUSY,	/* complete request, no slot within header_timeout: 503 */
	HTTP_CLOSE_NOT_ALLOWED, /* client address outside [http] allow: reset at accept */
	HTTP_CLOSE_N,
};

/* A connection handed to libmicrohttpd that has not been STARTED yet. */
struct http_unstarted {
	int fd;
	int64_t at_ns;
};

struct http_delayed {
	struct MHD_Connection *conn;
	struct http_sock *sock; /* NULL: untracked */
	int64_t at_ns;
	bool suspended; /* MHD_suspend_connection returned */
};

struct http_conns {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct http_sock head; /* list sentinel */
	unsigned n_live;       /* not doomed */
	unsigned n_socks;      /* in the list: STARTED and not CLOSED, doomed too */
	/* Handed over, not STARTED yet: with n_socks, what libmicrohttpd holds. */
	struct http_unstarted *unstarted;
	unsigned n_unstarted, cap_unstarted;
	unsigned n_waiting;  /* complete requests queued in http_accept.c */
	unsigned n_held;     /* held (http_conns_hold): not counted in the slots */
	atomic_bool crowded; /* slots full or clients waiting: Connection: close */
	struct http_delayed *delayed;
	size_t n_delayed, cap_delayed;
	pthread_t thread;
	bool thread_running, stop;
	int slot_fd; /* eventfd: a slot may have come free (read by the acceptor) */
	struct metric_series *open;
	struct metric_series *waiting;
	struct metric_series *closed[HTTP_CLOSE_N];
};

/* A deep accept queue: under a connection flood the server accepts and
 * evicts quickly, but a fresh client's SYN dropped on a full queue costs it
 * the 1 s SYN retransmission. The kernel caps it at net.core.somaxconn.
 * The accepting thread's reading list holds as many (http_accept.c). */
#define HTTP_BACKLOG 4096

/* http_accept.c: a connection until libmicrohttpd has it. */
struct http_pending {
	struct http_pending *prev, *next; /* oldest first */
	int fd;
	int64_t t0;	  /* accepted */
	int64_t ready_ns; /* its first request header complete (queued); 0: not yet */
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

struct http_acceptor {
	int listen_fd, ep, wake_fd;
	struct http_pending reading; /* list sentinel: header incomplete */
	struct http_pending queued;  /* list sentinel: header complete, FIFO */
	unsigned n_reading, n_queued;
	unsigned max_queued;	 /* past this, new clients wait in the listen backlog */
	unsigned max_reading;	 /* ... and past this */
	bool listening;		 /* the listening socket is in the epoll set */
	int64_t paused_until;	 /* accept failed (EMFILE & co): not listening until then */
	struct http_allow allow; /* [http] allow, checked at accept */
	pthread_t thread;
	bool running;
};

/* http_login.c: the login thread and the per-address limit of failed
 * logins. */
#define LOGIN_BUCKETS 1024 /* client addresses remembered */

struct login_key {
	int family;
	unsigned char addr[8]; /* IPv4 address, or an IPv6 /64 */
};

struct login_bucket {
	struct login_key key;
	double tokens;	  /* failed logins it may still make now */
	unsigned pending; /* its pairs waiting for the login thread */
	int64_t last_ns;
	bool used;
};

enum login_outcome { LOGIN_OK, LOGIN_REFUSED, LOGIN_LIMITED, LOGIN_BUSY, LOGIN_N };

struct http_login_job;

struct http_login {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool initialized, running, stop;
	struct http_login_job *head, *tail;
	unsigned n_queued;
	int64_t slowest_ns; /* the longest bcrypt seen */
	struct login_bucket buckets[LOGIN_BUCKETS];
	struct metric_series *outcome[LOGIN_N];
};

/* http_tls.c: the certificate and key served, re-read when they change. */
struct http_tls_pair;

struct http_tls {
	pthread_mutex_t lock;
	bool initialized, refused;
	char *cert_file, *key_file;
	struct stat cert_st, key_st;	     /* the files of the pair served */
	struct stat bad_cert_st, bad_key_st; /* the files of a pair refused */
	struct http_tls_pair *pair;	     /* served; older ones behind it */
	int64_t checked_ns;
	unsigned reloads;
};

/* 0 (also without TLS files: the PEM given at start is served as it is) or
 * -errno; before MHD starts. */
int http_tls_init(struct http_server *h);
/* The gnutls_certificate_retrieve_function2 for MHD_OPTION_HTTPS_CERT_CALLBACK. */
void *http_tls_callback(void);
void http_tls_free(struct http_server *h); /* after MHD_stop_daemon */

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
	struct http_login login;
	struct http_tls tls_state;
};

/* http_accept.c: takes listen_fd (closed by http_acceptor_stop). */
int http_acceptor_start(struct http_server *h, int listen_fd);
/* How many connections wait for a request thread (ac->max_queued) and for
 * their request headers (ac->max_reading), for max_conn request slots and
 * nofile descriptors (RLIM_INFINITY: no limit); pure. */
void http_acceptor_limits(struct http_acceptor *ac, unsigned max_conn, rlim_t nofile);
void http_acceptor_stop(struct http_server *h); /* before MHD_stop_daemon */

/* http_route.c: finds the route of a request whose body is in (or refused)
 * and answers it. */
enum MHD_Result http_dispatch(struct http_server *h, struct MHD_Connection *conn,
			      struct http_conn *c, const char *url, const char *method);

/* http_auth.c */
/* A state-changing route's request: 0 when it may run, else 403 or 415
 * with msg saying why. */
int http_admin_check(const struct http_server *h, struct MHD_Connection *conn, const char *method,
		     char *msg, size_t msglen);
/* The client certificate the TLS config asks for (false: 403, msg why). */
bool http_client_cert_ok(struct http_server *h, struct MHD_Connection *conn, char *msg,
			 size_t msglen);
/* basic_auth_users: 0 when the request may go on; HTTP_AUTH_PENDING when
 * the connection is held (resumed with c->deny_status set, or 0 to go on);
 * else the status to answer now, with c->deny_msg. */
#define HTTP_AUTH_PENDING 1
int http_basic_auth(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c);

/* http_login.c: a user and password given: 0, HTTP_AUTH_PENDING or a
 * status to answer now (as http_basic_auth). */
int http_login_check(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
		     const char *user, const char *pass);
int http_login_init(struct http_server *h);  /* at http_new */
int http_login_start(struct http_server *h); /* the login thread, when there are users */
void http_login_stop(struct http_server *h); /* before http_conns_stop */
void http_login_free(struct http_server *h);

/* http_respond.c */
/* Counts a request answered (r NULL: route "other") with its duration. */
void http_count_request(struct http_server *h, const struct http_route_entry *r,
			struct http_conn *c, int status);
/* Queues res on conn with the common headers (allow: an Allow header). */
enum MHD_Result http_queue(struct http_server *h, struct MHD_Connection *conn,
			   struct http_response *res, const char *allow);
/* An error answered before or instead of a route, in the encoding the
 * client prefers, queued and counted. */
enum MHD_Result http_reply_error_now(struct http_server *h, struct MHD_Connection *conn,
				     struct http_conn *c, const struct http_route_entry *r,
				     int status, const char *code, const char *msg,
				     const char *allow);
/* Writes a complete JSON error response (Connection: close) to fd, without
 * blocking, and counts it. */
void http_write_error(struct http_server *h, int fd, int status, const char *code, const char *msg,
		      int64_t start_ns);

/* http_gzip.c: replaces res's body with its gzip form when that is worth
 * it and wanted; true when it did. */
bool http_maybe_gzip(enum http_gzip_mode mode, struct MHD_Connection *conn,
		     struct http_response *res);

/* http_header.c: the check of a connection's first request header. */
#define HTTP_HEADER_MAX	   8192 /* a first request header larger than this gets 431 */
#define HTTP_HEADER_FIELDS 100	/* ... one with more fields */
#define HTTP_COOKIES_MAX   100	/* ... one with more cookies */
/*
 * Checks the len bytes received so far of a connection's first request as
 * a strict HTTP/1.1 parser would (RFC 9112), each line as soon as it has
 * come. 0 when they are a valid start of a request (*hdr_len 0: more must
 * come) or a complete acceptable header (*hdr_len: its length with the
 * blank line, *body_len: the body it declares, at most HTTP_BODY_MAX);
 * else the status to answer (400, 411, 413, 414, 431, 505) with its error
 * code and msg. Pure: no I/O, no state.
 */
int http_header_check(const char *buf, size_t len, size_t *hdr_len, uint64_t *body_len, char *msg,
		      size_t msglen, const char **code);
/*
 * The fields of a request as libmicrohttpd parsed them (a kept-alive
 * connection's next requests, every request over TLS: http_accept.c saw
 * none of their bytes), checked as http_header_check checks a first
 * request's: names that are tokens, no control byte in a value, at most
 * HTTP_HEADER_FIELDS fields and HTTP_COOKIES_MAX cookies (431), one Host on
 * HTTP/1.1, one Content-Length of digits alone and at most HTTP_BODY_MAX
 * (413), none above 0 on a GET or HEAD, no Transfer-Encoding (411). 0 or
 * the status with its error code and msg. Pure.
 */
struct http_field {
	const char *name, *value;
	size_t name_len, value_len;
};
int http_fields_check(const struct http_field *f, size_t n, const char *method, const char *version,
		      char *msg, size_t msglen, const char **code);
/* The query arguments of a raw request target ('&'-separated). */
size_t http_target_args(const char *uri, size_t len);
/* Checks a raw request target: 0, or 400/414 with msg and the error code. */
int http_target_check(const char *uri, size_t len, char *msg, size_t msglen, const char **code);

/* http_conn.c */
int http_conns_init(struct http_server *h);
int http_conns_start(struct http_server *h); /* the deadline thread */
void http_conns_stop(struct http_server *h); /* before MHD_stop_daemon */
void http_conns_free(struct http_server *h); /* after it */
/*
 * Slots: libmicrohttpd holds at most max_connections connections (handed
 * over and not CLOSED). reserve takes one for fd before MHD_add_connection
 * (false: none free), unreserve gives it back when the hand-over failed.
 */
bool http_conns_reserve(struct http_server *h, int fd);
void http_conns_unreserve(struct http_server *h, int fd);
/* n complete requests wait for a slot: responses close their connections
 * while n > 0, and up to n idle connections are evicted. */
void http_conns_waiting(struct http_server *h, unsigned n);
bool http_conns_crowded(struct http_server *h);
/* MHD_OPTION_NOTIFY_CONNECTION callback (cls = the server). */
void http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe);
/* The connection's socket, or NULL (a test's request without one). */
struct http_sock *http_conns_sock(struct MHD_Connection *conn);
void http_conns_busy(struct http_server *h, struct MHD_Connection *conn, bool busy);
/* Shuts the connection's socket down now (reason counted). */
void http_conns_close(struct http_server *h, struct MHD_Connection *conn,
		      enum http_close_reason why);
/* Suspends conn until at_ns (CLOCK_MONOTONIC; INT64_MAX: until released). */
int http_conns_hold(struct http_server *h, struct MHD_Connection *conn, int64_t at_ns);
/* A held connection is resumed at at_ns (0: now). */
void http_conns_release(struct http_server *h, struct MHD_Connection *conn, int64_t at_ns);

#endif
