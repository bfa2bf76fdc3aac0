/* SPDX-License-Identifier: MIT */
/*
 * The accepting thread: a plain-HTTP connection is handed to libmicrohttpd
 * (MHD_add_connection) only once its first request header is complete and
 * sane. The header is read with MSG_PEEK, so libmicrohttpd then reads the
 * very same bytes.
 *
 * Why: libmicrohttpd 0.9.75 answers some bad requests itself, in HTML and
 * with no hook to change that - a Content-Length beyond 2^64 gets a 413
 * whose header block is sent twice, a header beyond its 32 KiB
 * per-connection memory a 431 - and connections that never complete a
 * header take its slots. Here such requests get the JSON ErrorResponse,
 * and a connection that sends nothing, or a header a byte at a time, waits
 * in this thread's list (bounded by max_connections and max_per_ip, the
 * oldest shut first, and cut at header_timeout) and not in libmicrohttpd.
 *
 * TLS connections are handed over at once (their bytes are encrypted);
 * libmicrohttpd's own limits and http_conn.c cover them, and the next
 * requests of a kept-alive connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "agent/log.h"
#include "api/http_internal.h"
#include "api/metrics.h"

#define HEADER_MAX    8192 /* a first request header larger than this gets 431 */
#define HEADER_FIELDS 100  /* ... and one with more fields */

static bool same_client(const struct http_pending *a, const struct http_pending *b)
{
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&b->addr)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
		       &((const struct sockaddr_in6 *)&b->addr)->sin6_addr, 16);
}

static void pending_drop(struct http_acceptor *ac, struct http_pending *p, bool close_fd)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
	ac->n--;
	if (close_fd) {
		epoll_ctl(ac->ep, EPOLL_CTL_DEL, p->fd, NULL);
		close(p->fd);
	}
	free(p);
}

static void refuse(struct http_server *h, struct http_pending *p, int status, const char *code,
		   const char *msg)
{
	http_write_error(h, p->fd, status, code, msg, p->t0);
	series_add(h->conns.closed[HTTP_CLOSE_REJECTED], 1);
	/* Let the client read the answer before the close resets it. */
	shutdown(p->fd, SHUT_WR);
	pending_drop(&h->acceptor, p, true);
}

/*
 * Looks at a complete header: the request line's target and the
 * Content-Length, the field count. 0 when libmicrohttpd may have it.
 */
static int header_check(const char *b, size_t len, char *msg, size_t msglen, const char **code)
{
	const char *eol = memchr(b, '\n', len), *sp1, *sp2, *p, *end = b + len;
	unsigned fields = 0;

	*code = "bad_request";
	if (!eol)
		return 0; /* cannot be: the caller found the blank line */
	sp1 = memchr(b, ' ', (size_t)(eol - b));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 && sp2) {
		int st = http_target_check(sp1 + 1, (size_t)(sp2 - sp1 - 1), msg, msglen, code);

		if (st)
			return st;
	}
	for (p = eol + 1; p < end; p = eol + 1) {
		size_t n;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		n = (size_t)(eol - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (!n)
			break; /* the blank line */
		if (++fields > HEADER_FIELDS) {
			*code = "header_too_large";
			snprintf(msg, msglen, "more than %d header fields", HEADER_FIELDS);
			return 431;
		}
		if (n > 15 && !strncasecmp(p, "content-length:", 15)) {
			const char *v = p + 15, *ve = p + n;
			unsigned long long cl = 0;
			bool digits = false;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			for (; v < ve; v++) {
				if (*v < '0' || *v > '9') {
					snprintf(msg, msglen, "Content-Length is not a number");
					return 400;
				}
				digits = true;
				if (cl > (~0ULL - 9) / 10) {
					*code = "payload_too_large";
					snprintf(msg, msglen, "request body larger than %u bytes",
						 HTTP_BODY_MAX);
					return 413;
				}
				cl = cl * 10 + (unsigned long long)(*v - '0');
			}
			if (!digits) {
				snprintf(msg, msglen, "Content-Length is empty");
				return 400;
			}
		}
	}
	return 0;
}

/* Reads what has come of the first header; hands the connection over,
 * refuses it, or leaves it waiting. */
static void screen(struct http_server *h, struct http_pending *p)
{
	struct http_acceptor *ac = &h->acceptor;
	char buf[HEADER_MAX + 1], msg[128];
	const char *code, *blank;
	ssize_t r;
	int st;

	r = recv(p->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		pending_drop(ac, p, true);
		return;
	}
	blank = memmem(buf, (size_t)r, "\r\n\r\n", 4);
	if (!blank)
		blank = memmem(buf, (size_t)r, "\n\n", 2);
	if (!blank) {
		if (r > HEADER_MAX) {
			snprintf(msg, sizeof(msg), "request header larger than %d bytes",
				 HEADER_MAX);
			refuse(h, p, 431, "header_too_large", msg);
		}
		return;
	}
	st = header_check(buf, (size_t)(blank - buf) + 2, msg, sizeof(msg), &code);
	if (st) {
		refuse(h, p, st, code, msg);
		return;
	}
	epoll_ctl(ac->ep, EPOLL_CTL_DEL, p->fd, NULL);
	/* libmicrohttpd owns (and on failure closes) the socket from here. */
	if (MHD_add_connection(h->daemon, p->fd, (struct sockaddr *)&p->addr, p->addrlen) !=
	    MHD_YES)
		log_debug("http", "cannot hand a connection over: %s", strerror(errno));
	pending_drop(ac, p, false);
}

/*
 * Makes room: the oldest waiting connection (of like's address when like
 * is given) other than np goes. A request that has come in full on it is
 * handed over (or refused) rather than dropped; only a connection whose
 * header is still incomplete is shut. false when there was none.
 */
static bool evict_one(struct http_server *h, struct http_pending *np,
		      const struct http_pending *like, enum http_close_reason why)
{
	struct http_acceptor *ac = &h->acceptor;

	for (struct http_pending *p = ac->head.next; p != &ac->head; p = p->next) {
		unsigned before = ac->n;

		if (p == np || (like && !same_client(p, like)))
			continue;
		screen(h, p);
		if (ac->n < before)
			return true;
		series_add(h->conns.closed[why], 1);
		pending_drop(ac, p, true);
		return true;
	}
	return false;
}

static void admit(struct http_server *h, struct http_pending *np)
{
	struct http_acceptor *ac = &h->acceptor;
	unsigned same = 0;

	for (struct http_pending *p = ac->head.next; p != &ac->head; p = p->next)
		if (same_client(p, np))
			same++;
	if (same > h->cfg.max_per_ip)
		evict_one(h, np, np, HTTP_CLOSE_PER_IP);
	if (ac->n > h->cfg.max_connections)
		evict_one(h, np, NULL, HTTP_CLOSE_LIMIT);
}

static void accept_all(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;

	for (int i = 0; i < 64; i++) {
		struct http_pending *p = calloc(1, sizeof(*p));
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};

		if (!p)
			return;
		p->addrlen = sizeof(p->addr);
		p->fd = accept4(ac->listen_fd, (struct sockaddr *)&p->addr, &p->addrlen,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			free(p);
			return; /* EAGAIN, or EMFILE & co: retried on the next wake */
		}
		if (h->tls) {
			MHD_add_connection(h->daemon, p->fd, (struct sockaddr *)&p->addr,
					   p->addrlen);
			free(p);
			continue;
		}
		p->t0 = clock_mono_ns();
		p->prev = ac->head.prev;
		p->next = &ac->head;
		ac->head.prev->next = p;
		ac->head.prev = p;
		ac->n++;
		ev.data.ptr = p;
		if (epoll_ctl(ac->ep, EPOLL_CTL_ADD, p->fd, &ev)) {
			pending_drop(ac, p, true);
			continue;
		}
		admit(h, p);
	}
}

static void *acceptor_thread(void *arg)
{
	struct http_server *h = arg;
	struct http_acceptor *ac = &h->acceptor;
	int64_t limit = (int64_t)h->cfg.header_timeout_ms * 1000000;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(ac->ep, evs, 64, 200);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &ac->listen_fd) {
				accept_all(h);
			} else if (evs[i].data.ptr == &ac->wake_fd) {
				return NULL;
			} else {
				struct http_pending *p = evs[i].data.ptr;

				/* An earlier event of this batch may have dropped it. */
				bool live = false;

				for (struct http_pending *q = ac->head.next; q != &ac->head;
				     q = q->next)
					if (q == p) {
						live = true;
						break;
					}
				if (live)
					screen(h, p);
			}
		}
		int64_t now = clock_mono_ns();

		while (ac->head.next != &ac->head && now - ac->head.next->t0 > limit) {
			series_add(h->conns.closed[HTTP_CLOSE_DEADLINE], 1);
			pending_drop(ac, ac->head.next, true);
		}
	}
}

int http_acceptor_start(struct http_server *h, int listen_fd)
{
	struct http_acceptor *ac = &h->acceptor;
	struct epoll_event ev = {.events = EPOLLIN};
	int err;

	ac->head.next = ac->head.prev = &ac->head;
	ac->listen_fd = listen_fd;
	ac->ep = epoll_create1(EPOLL_CLOEXEC);
	ac->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ac->ep < 0 || ac->wake_fd < 0) {
		err = -errno;
		goto out_close;
	}
	ev.data.ptr = &ac->listen_fd;
	if (epoll_ctl(ac->ep, EPOLL_CTL_ADD, listen_fd, &ev)) {
		err = -errno;
		goto out_close;
	}
	ev.data.ptr = &ac->wake_fd;
	if (epoll_ctl(ac->ep, EPOLL_CTL_ADD, ac->wake_fd, &ev)) {
		err = -errno;
		goto out_close;
	}
	err = -pthread_create(&ac->thread, NULL, acceptor_thread, h);
	if (err)
		goto out_close;
	ac->running = true;
	return 0;

out_close:
	if (ac->ep >= 0)
		close(ac->ep);
	if (ac->wake_fd >= 0)
		close(ac->wake_fd);
	ac->ep = ac->wake_fd = -1;
	return err;
}

void http_acceptor_stop(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;
	uint64_t one = 1;

	if (!ac->running)
		return;
	(void)!write(ac->wake_fd, &one, sizeof(one));
	pthread_join(ac->thread, NULL);
	ac->running = false;
	while (ac->head.next != &ac->head)
		pending_drop(ac, ac->head.next, true);
	close(ac->ep);
	close(ac->wake_fd);
	close(ac->listen_fd);
	ac->ep = ac->wake_fd = ac->listen_fd = -1;
}
