/* SPDX-License-Identifier: MIT */
/*
 * The accepting thread: a plain-HTTP connection is handed to libmicrohttpd
 * (MHD_add_connection) only once its first request is complete - a sane
 * header and all of the body it declares - and only when libmicrohttpd
 * has a free slot. The request is read with MSG_PEEK, so libmicrohttpd
 * then reads the very same bytes. A body trickled in a byte at a time
 * waits here like a slow header (a GET or HEAD with a body is refused at
 * once), never in a slot.
 *
 * Why the header: libmicrohttpd 0.9.75 answers what it cannot parse
 * itself, in HTML and with no hook to change that - a Content-Length
 * beyond 2^64 gets a 413 whose header block is sent twice, a header beyond
 * its 32 KiB per-connection memory a 431, a NUL in a field name a 400 -
 * and waits out the deadline on bytes that never end a line (a TLS
 * ClientHello on this port); connections that never complete a header
 * take its slots. Here the header is judged as its bytes come, as a strict
 * HTTP/1.1 parser would (http_header.c): what is bad gets the JSON
 * ErrorResponse and the close at once, at the first bytes that show it.
 * A connection that sends nothing, or a header a byte at a time, waits in
 * the reading list (bounded by max_connections and max_per_ip, the oldest
 * shut first, and cut at header_timeout) and not in libmicrohttpd.
 *
 * Why the slot: libmicrohttpd 0.9.75 must never meet its own connection
 * limit with a connection handed in from outside. MHD_add_connection
 * checks a worker's count without its lock and queues the socket for the
 * worker; the worker's new_connection_process_() checks again under
 * cleanup_connection_mutex and, at the limit, returns with that mutex
 * still locked ("Server reached connection limit" is the last thing it
 * logs): the worker's next lock of it waits on itself for ever, and the
 * server answers nothing again. So libmicrohttpd's limit is set far above
 * max_connections (http.c) and this thread hands a connection over only
 * with a slot reserved (http_conns_reserve): libmicrohttpd never holds
 * more than max_connections, and its limit is never reached.
 *
 * A complete request is never dropped: it waits in the queued list (FIFO)
 * for a slot. While any wait, responses close their connections
 * (Connection: close) and idle kept-alive ones are evicted (http_conn.c),
 * so slots turn over; past max_queued this thread stops accepting and new
 * clients wait in the kernel's listen backlog (never reset). One queued
 * longer than header_timeout gets a JSON 503 with Retry-After.
 *
 * TLS connections are queued at once (their bytes are encrypted);
 * libmicrohttpd's own parsing, the checks of the fields it hands over
 * (http_fields_check, from http.c) and http_conn.c cover them, and the
 * next requests of a kept-alive connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "base/log.h"
#include "api/http_internal.h"
#include "metrics/metrics.h"

#define QUEUED_MIN   256  /* queued complete requests before the backlog takes over */
#define READING_HARD 16	  /* x max_connections, at least HTTP_BACKLOG: incomplete headers */
#define SOFT_AGE_MS  1000 /* evictable at the soft limits (max_connections, max_per_ip) */
#define HARD_AGE_MS  250  /* ... and at the hard one; younger ones are never evicted */

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

static void list_add_tail(struct http_pending *head, struct http_pending *p)
{
	p->prev = head->prev;
	p->next = head;
	head->prev->next = p;
	head->prev = p;
}

static void list_del(struct http_pending *p)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
}

/* Forgets p (reading or queued), closing its socket when close_fd. */
static void pending_drop(struct http_acceptor *ac, struct http_pending *p, bool close_fd)
{
	list_del(p);
	if (p->ready_ns)
		ac->n_queued--;
	else
		ac->n_reading--;
	if (close_fd) {
		if (!p->ready_ns)
			epoll_ctl(ac->ep, EPOLL_CTL_DEL, p->fd, NULL);
		close(p->fd);
	}
	free(p);
}

static void refuse(struct http_server *h, struct http_pending *p, int status, const char *code,
		   const char *msg, enum http_close_reason why)
{
	char sink[4096];
	size_t drained = 0;
	ssize_t r;

	http_write_error(h, p->fd, status, code, msg, p->t0);
	series_add(h->conns.closed[why], 1);
	/* Let the client read the answer before the close resets it: the
	 * request's bytes were only peeked, and closing a socket with unread
	 * input sends a reset that can overtake the answer. What has come is
	 * read away (bounded); what is still to come may yet reset. */
	shutdown(p->fd, SHUT_WR);
	while (drained < 16 * sizeof(sink) &&
	       (r = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		drained += (size_t)r;
	pending_drop(&h->acceptor, p, true);
}

/* Listens while the queue and the reading list have room; past them, the
 * kernel's backlog holds new clients (they wait; none is reset). */
static void listen_arm(struct http_acceptor *ac)
{
	int64_t now = clock_mono_ns();
	/* at the hard limit, room is made by evicting the oldest once it is
	 * HARD_AGE_MS old (may_accept) */
	bool room = ac->n_reading < ac->max_reading ||
		    now - ac->reading.next->t0 >= HARD_AGE_MS * 1000000LL;
	bool want = ac->n_queued < ac->max_queued && room && now >= ac->paused_until;
	struct epoll_event ev = {.events = want ? EPOLLIN : 0, .data.ptr = &ac->listen_fd};

	if (want == ac->listening)
		return;
	if (!epoll_ctl(ac->ep, EPOLL_CTL_MOD, ac->listen_fd, &ev))
		ac->listening = want;
}

/*
 * Hands queued connections to libmicrohttpd, oldest first, while it has
 * slots; then tells http_conn.c how many still wait.
 */
static void hand_over(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;

	while (ac->queued.next != &ac->queued) {
		struct http_pending *p = ac->queued.next;

		if (!http_conns_reserve(h, p->fd))
			break;
		/* libmicrohttpd owns (and on failure closes) the socket from here. */
		if (MHD_add_connection(h->daemon, p->fd, (struct sockaddr *)&p->addr, p->addrlen) !=
		    MHD_YES) {
			http_conns_unreserve(h, p->fd);
			log_debug("http", "cannot hand a connection over: %s", strerror(errno));
		}
		pending_drop(ac, p, false);
	}
	http_conns_waiting(h, ac->n_queued);
	series_set(h->conns.waiting, ac->n_queued);
	listen_arm(ac);
}

/* p queues for a slot (a TLS connection as soon as it is accepted). */
static void queue_tail(struct http_acceptor *ac, struct http_pending *p)
{
	p->ready_ns = clock_mono_ns();
	list_add_tail(&ac->queued, p);
	ac->n_queued++;
}

/* p's first request header is complete and sane: from the reading list to
 * the queue. */
static void enqueue(struct http_server *h, struct http_pending *p)
{
	struct http_acceptor *ac = &h->acceptor;

	epoll_ctl(ac->ep, EPOLL_CTL_DEL, p->fd, NULL);
	list_del(p);
	ac->n_reading--;
	queue_tail(ac, p);
}

enum screened { SCREEN_READING, SCREEN_QUEUED, SCREEN_GONE };

/*
 * Reads what has come of the first header and judges it at once
 * (http_header_check): queues the connection when the header is complete
 * and sane, refuses it as soon as its bytes cannot become one (a TLS
 * ClientHello, binary, an HTTP/0.9 line: at their first bytes), or leaves
 * it reading.
 */
static enum screened screen(struct http_server *h, struct http_pending *p)
{
	struct http_acceptor *ac = &h->acceptor;
	char buf[HTTP_HEADER_MAX + 1], msg[128];
	const char *code;
	uint64_t body_len;
	size_t hdr_len;
	ssize_t r;
	int st, queued;

	r = recv(p->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return SCREEN_READING;
	if (r <= 0) {
		pending_drop(ac, p, true);
		return SCREEN_GONE;
	}
	st = http_header_check(buf, (size_t)r, &hdr_len, &body_len, msg, sizeof(msg), &code);
	if (st) {
		refuse(h, p, st, code, msg, HTTP_CLOSE_REJECTED);
		return SCREEN_GONE;
	}
	if (!hdr_len)
		return SCREEN_READING;
	/* A body is waited for here too, under the same deadline: a body
	 * sent a byte at a time never holds a slot. What has come is in
	 * the socket's receive queue (SIOCINQ), which the listening
	 * socket's buffer leaves room for (http_acceptor_start). */
	if (body_len && (ioctl(p->fd, FIONREAD, &queued) || (uint64_t)queued < hdr_len + body_len))
		return SCREEN_READING;
	enqueue(h, p);
	return SCREEN_QUEUED;
}

/*
 * Makes room in the reading list: the oldest connection there (of like's
 * address when like is given) other than np goes. One whose request has
 * come in full meanwhile is queued (or refused) rather than dropped; only
 * a connection whose header is still incomplete is shut, and only one
 * older than min_ms: a client that has just connected may not have been
 * scheduled to send yet (a burst of honest clients on a loaded host is not
 * a flood). false when there was none.
 */
static bool evict_one(struct http_server *h, struct http_pending *np,
		      const struct http_pending *like, enum http_close_reason why, int64_t min_ms)
{
	struct http_acceptor *ac = &h->acceptor;
	int64_t now = clock_mono_ns();

	for (struct http_pending *p = ac->reading.next; p != &ac->reading; p = p->next) {
		if (p == np || (like && !same_client(p, like)))
			continue;
		if (screen(h, p) != SCREEN_READING)
			return true;
		if (now - p->t0 < min_ms * 1000000)
			return false; /* the oldest is young: so are the others */
		series_add(h->conns.closed[why], 1);
		pending_drop(ac, p, true);
		return true;
	}
	return false;
}

/* The soft limits of the reading list: past max_per_ip of one address or
 * max_connections in all, the oldest goes once SOFT_AGE_MS old. At the
 * hard limit, READING_HARD x max_connections or HTTP_BACKLOG if more, the
 * oldest goes once HARD_AGE_MS old, else accepting pauses (may_accept). */
static void admit(struct http_server *h, struct http_pending *np)
{
	struct http_acceptor *ac = &h->acceptor;
	unsigned same = 0;

	for (struct http_pending *p = ac->reading.next; p != &ac->reading; p = p->next)
		if (same_client(p, np))
			same++;
	if (same > h->cfg.max_per_ip)
		evict_one(h, np, np, HTTP_CLOSE_PER_IP, SOFT_AGE_MS);
	if (ac->n_reading > h->cfg.max_connections)
		evict_one(h, np, NULL, HTTP_CLOSE_LIMIT, SOFT_AGE_MS);
}

/* Room for one more connection: the queue and the reading list under
 * their limits (the oldest reading one evicted if it can be). */
static bool may_accept(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;

	if (ac->n_queued >= ac->max_queued)
		return false;
	return ac->n_reading < ac->max_reading ||
	       evict_one(h, NULL, NULL, HTTP_CLOSE_LIMIT, HARD_AGE_MS);
}

/*
 * A client outside [http] allow: reset (SO_LINGER 0) before a byte is read,
 * so the client sees "connection reset" at once rather than a timeout, and
 * no TIME_WAIT stays here. Counted and logged (at most every 10 s).
 */
static void refuse_address(struct http_server *h, struct http_pending *p)
{
	static struct log_ratelimit rl;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	char a[INET6_ADDRSTRLEN] = "?";

	if (p->addr.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&p->addr)->sin_addr, a, sizeof(a));
	else if (p->addr.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&p->addr)->sin6_addr, a, sizeof(a));
	log_ratelimited(&rl, 10000, LOG_LVL_WARN, "http",
			"refused a connection from %s: not in [http] allow", a);
	series_add(h->conns.closed[HTTP_CLOSE_NOT_ALLOWED], 1);
	setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(p->fd);
	free(p);
}

static void accept_all(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;

	for (int i = 0; i < 64 && may_accept(h); i++) {
		struct http_pending *p = calloc(1, sizeof(*p));
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};

		if (!p)
			return;
		p->addrlen = sizeof(p->addr);
		p->fd = accept4(ac->listen_fd, (struct sockaddr *)&p->addr, &p->addrlen,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			int e = errno;

			free(p);
			if (e != EAGAIN && e != EINTR && e != ECONNABORTED) {
				/* EMFILE & co: the level-triggered listening socket would
				 * spin; it waits for the next pass instead. */
				static struct log_ratelimit rl;

				log_ratelimited(&rl, 10000, LOG_LVL_WARN, "http", "accept: %s",
						strerror(e));
				ac->paused_until = clock_mono_ns() + 100 * 1000000LL;
			}
			return;
		}
		p->t0 = clock_mono_ns();
		if (!http_allow_match(&ac->allow, &p->addr)) {
			refuse_address(h, p);
			continue;
		}
		if (h->tls) {
			queue_tail(ac, p);
			continue;
		}
		list_add_tail(&ac->reading, p);
		ac->n_reading++;
		ev.data.ptr = p;
		if (epoll_ctl(ac->ep, EPOLL_CTL_ADD, p->fd, &ev)) {
			pending_drop(ac, p, true);
			continue;
		}
		/* Most clients send the request with the handshake's last ACK:
		 * it is usually here already. */
		if (screen(h, p) == SCREEN_READING)
			admit(h, p);
	}
}

/* Cuts what has waited too long: a header still incomplete at
 * header_timeout is shut; a complete request without a slot by then is
 * answered 503 (try again). */
static void expire(struct http_server *h, int64_t now)
{
	struct http_acceptor *ac = &h->acceptor;
	int64_t limit = (int64_t)h->cfg.header_timeout_ms * 1000000;

	while (ac->reading.next != &ac->reading && now - ac->reading.next->t0 > limit) {
		series_add(h->conns.closed[HTTP_CLOSE_DEADLINE], 1);
		pending_drop(ac, ac->reading.next, true);
	}
	while (ac->queued.next != &ac->queued && now - ac->queued.next->ready_ns > limit)
		refuse(h, ac->queued.next, 503, "unavailable",
		       "the server is at max_connections; try again", HTTP_CLOSE_BUSY);
}

static bool reading_has(struct http_acceptor *ac, const struct http_pending *p)
{
	for (struct http_pending *q = ac->reading.next; q != &ac->reading; q = q->next)
		if (q == p)
			return true;
	return false;
}

static void *acceptor_thread(void *arg)
{
	struct http_server *h = arg;
	struct http_acceptor *ac = &h->acceptor;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(ac->ep, evs, 64, 200);
		uint64_t v;

		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;

			if (ptr == &ac->wake_fd)
				return NULL;
			if (ptr == &ac->listen_fd)
				accept_all(h);
			else if (ptr == &h->conns.slot_fd)
				(void)!read(h->conns.slot_fd, &v, sizeof(v));
			else if (reading_has(ac, ptr) && /* an earlier event may have dropped it */
				 screen(h, ptr) == SCREEN_READING &&
				 (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
				/* The client closed its side with the header
				 * incomplete: it can never come (MSG_PEEK
				 * shows the bytes, not the end after them). */
				pending_drop(ac, ptr, true);
		}
		expire(h, clock_mono_ns());
		hand_over(h);
	}
}

/*
 * [http] allow, read once before the first accept. A listen other hosts
 * can reach with an allow that admits none of them is said loudly: it is
 * the silent "listening, but every scrape times out" this filter replaced.
 */
static int allow_load(struct http_server *h)
{
	struct http_acceptor *ac = &h->acceptor;
	char msg[256], desc[512];

	if (http_allow_parse(h->cfg.allow, &h->addr, &ac->allow, msg, sizeof(msg))) {
		log_err("http", "[http] allow: %s", msg);
		return -EINVAL;
	}
	http_allow_describe(&ac->allow, desc, sizeof(desc));
	if (!http_addr_is_loopback(&h->addr) && !http_allow_remote(&ac->allow))
		log_warn("http",
			 "[http] listen = %s serves other hosts, but [http] allow = %s admits "
			 "only this host: every other client is refused",
			 h->listen, desc);
	else
		log_info("http", "clients allowed: %s%s", desc,
			 ac->allow.automatic ? " (the default for this listen address)" : "");
	return 0;
}

void http_acceptor_limits(struct http_acceptor *ac, unsigned max_conn, rlim_t nofile)
{
	ac->max_queued = 4 * max_conn;
	if (ac->max_queued < QUEUED_MIN)
		ac->max_queued = QUEUED_MIN;
	/* At least a full listen backlog: the clients of a burst the kernel
	 * took for us (wrk -c4000) are accepted before they send, and each
	 * waits for its own client's turn to write (hundreds of ms on a busy
	 * host). With 16 x 64 = 1024 the hard limit evicted those waiting
	 * 250 ms: 1,182-3,369 of 4,000 clients reset in 5 s. */
	ac->max_reading = READING_HARD * max_conn;
	if (ac->max_reading < HTTP_BACKLOG)
		ac->max_reading = HTTP_BACKLOG;
	/* Within the descriptors left (sqlite, BPF, collectors take some). */
	if (nofile != RLIM_INFINITY) {
		rlim_t left = nofile > 256 ? nofile - 256 : 0;

		left =
		    left > ac->max_queued + 2 * max_conn ? left - ac->max_queued - 2 * max_conn : 0;
		if (ac->max_reading > left)
			ac->max_reading = left > max_conn ? (unsigned)left : max_conn;
	}
}

/* The acceptor's epoll set: the listening socket, its wake-up eventfd and
 * the request slots' eventfd, each known by the address of its fd. */
static int acceptor_epoll_init(struct http_server *h, int listen_fd)
{
	struct http_acceptor *ac = &h->acceptor;
	int *const fds[] = {&ac->listen_fd, &ac->wake_fd, &h->conns.slot_fd};

	ac->listen_fd = listen_fd;
	ac->ep = epoll_create1(EPOLL_CLOEXEC);
	ac->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ac->ep < 0 || ac->wake_fd < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = fds[i]};

		if (epoll_ctl(ac->ep, EPOLL_CTL_ADD, *fds[i], &ev))
			return -errno;
		if (fds[i] == &ac->listen_fd)
			ac->listening = true;
	}
	return 0;
}

int http_acceptor_start(struct http_server *h, int listen_fd)
{
	struct http_acceptor *ac = &h->acceptor;
	struct rlimit rl;
	int err;

	err = allow_load(h);
	if (err)
		return err;
	ac->reading.next = ac->reading.prev = &ac->reading;
	ac->queued.next = ac->queued.prev = &ac->queued;
	http_acceptor_limits(ac, h->cfg.max_connections,
			     getrlimit(RLIMIT_NOFILE, &rl) ? RLIM_INFINITY : rl.rlim_cur);
	err = acceptor_epoll_init(h, listen_fd);
	if (!err)
		err = -pthread_create(&ac->thread, NULL, acceptor_thread, h);
	if (err) {
		if (ac->ep >= 0)
			close(ac->ep);
		if (ac->wake_fd >= 0)
			close(ac->wake_fd);
		ac->ep = ac->wake_fd = -1;
		return err;
	}
	pthread_setname_np(ac->thread, "sysobs-accept");
	ac->running = true;
	return 0;
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
	while (ac->reading.next != &ac->reading)
		pending_drop(ac, ac->reading.next, true);
	while (ac->queued.next != &ac->queued)
		pending_drop(ac, ac->queued.next, true);
	close(ac->ep);
	close(ac->wake_fd);
	close(ac->listen_fd);
	ac->ep = ac->wake_fd = ac->listen_fd = -1;
}
