/* SPDX-License-Identifier: MIT */
/*
 * Connections of the HTTP server: what libmicrohttpd's own limits do not
 * give.
 *
 * - Slots. libmicrohttpd holds at most max_connections connections: the
 *   accepting thread (http_accept.c) reserves a slot before each hand-over
 *   (why this matters: the deadlock described there). A slot is taken from
 *   the reservation until libmicrohttpd's CLOSED notice; a hand-over that
 *   libmicrohttpd dropped before its STARTED notice (out of memory) gives
 *   its slot back after UNSTARTED_MS.
 * - Turn-over when the slots are full or clients wait for one: responses
 *   carry Connection: close, so no connection stays idle in a slot; one
 *   kept alive from before, idle for IDLE_EVICT_MS (no request in
 *   progress, no request bytes waiting to be read), is shut down for each
 *   waiting client, oldest first (a client's next request may meet the
 *   close: the keep-alive race every HTTP client retries). A request whose
 *   header is complete is never evicted.
 * - A deadline for the whole request header (slowloris): a thread shuts
 *   down every connection that has not completed a request header within
 *   header_timeout of being accepted or of its previous response
 *   (libmicrohttpd's own timeout only measures inactivity).
 * - Delayed answers: a failed authentication is answered after a pause
 *   without holding a server thread (suspend, then resume from here).
 *
 * Shutting a socket down (shutdown(2)) rather than closing it leaves the
 * descriptor to libmicrohttpd, which sees the end of the stream and closes
 * the connection itself. The descriptor stays valid while its entry is in
 * the list: CLOSED is notified before libmicrohttpd closes it, and the
 * entry is removed under the same lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "api/http_internal.h"
#include "metrics/metrics.h"

#define SWEEP_MS      200
#define IDLE_EVICT_MS 1000 /* idle at least this long to be evicted for a waiting client */
#define UNSTARTED_MS  5000 /* a hand-over not STARTED by then was dropped */

/* Called with the lock held. */
static void doom(struct http_conns *cs, struct http_sock *s, enum http_close_reason why)
{
	if (s->doomed)
		return;
	s->doomed = true;
	cs->n_live--;
	shutdown(s->fd, SHUT_RDWR);
	series_add(cs->closed[why], 1);
}

/*
 * Shuts down up to n connections idle for IDLE_EVICT_MS (no request in
 * progress, none waiting to be read), oldest first, for clients waiting
 * for a slot. Lock held.
 */
static void evict_idle(struct http_conns *cs, unsigned n, int64_t now)
{
	int pending;

	for (struct http_sock *s = cs->head.next; s != &cs->head && n; s = s->next) {
		if (s->busy || s->doomed || now - s->since_ns < IDLE_EVICT_MS * 1000000LL)
			continue;
		/* A request waiting to be read is about to be served. */
		if (ioctl(s->fd, FIONREAD, &pending) == 0 && pending > 0)
			continue;
		doom(cs, s, HTTP_CLOSE_LIMIT);
		n--;
	}
}

/* Forgets the reservation of fd (the oldest when the number repeats).
 * Lock held. */
static bool unstarted_del(struct http_conns *cs, int fd)
{
	for (unsigned i = 0; i < cs->n_unstarted; i++)
		if (cs->unstarted[i].fd == fd) {
			memmove(&cs->unstarted[i], &cs->unstarted[i + 1],
				(cs->n_unstarted - i - 1) * sizeof(cs->unstarted[0]));
			cs->n_unstarted--;
			return true;
		}
	return false;
}

/* Responses close their connections while the slots are all taken or
 * clients wait for one. Lock held. */
/* A slot may have come free for a waiting client: wakes the acceptor
 * (any thread; async-signal-safe). */
static void slot_freed(struct http_conns *cs)
{
	uint64_t one = 1;

	if (cs->slot_fd >= 0)
		(void)!write(cs->slot_fd, &one, sizeof(one));
}

static void crowded_update(struct http_server *h)
{
	struct http_conns *cs = &h->conns;
	bool crowded = cs->n_waiting > 0 ||
		       cs->n_unstarted + cs->n_socks - cs->n_held >= h->cfg.max_connections;

	atomic_store_explicit(&cs->crowded, crowded, memory_order_relaxed);
}

bool http_conns_reserve(struct http_server *h, int fd)
{
	struct http_conns *cs = &h->conns;
	bool ok;

	pthread_mutex_lock(&cs->lock);
	ok = cs->n_unstarted + cs->n_socks - cs->n_held < h->cfg.max_connections &&
	     cs->n_unstarted < cs->cap_unstarted;
	if (ok)
		cs->unstarted[cs->n_unstarted++] =
		    (struct http_unstarted){.fd = fd, .at_ns = clock_mono_ns()};
	crowded_update(h);
	pthread_mutex_unlock(&cs->lock);
	return ok;
}

void http_conns_unreserve(struct http_server *h, int fd)
{
	pthread_mutex_lock(&h->conns.lock);
	unstarted_del(&h->conns, fd);
	crowded_update(h);
	pthread_mutex_unlock(&h->conns.lock);
}

void http_conns_waiting(struct http_server *h, unsigned n)
{
	struct http_conns *cs = &h->conns;

	pthread_mutex_lock(&cs->lock);
	cs->n_waiting = n;
	crowded_update(h);
	if (n)
		evict_idle(cs, n, clock_mono_ns());
	pthread_mutex_unlock(&cs->lock);
}

bool http_conns_crowded(struct http_server *h)
{
	return atomic_load_explicit(&h->conns.crowded, memory_order_relaxed);
}

void http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	struct http_conns *cs = &h->conns;
	struct http_sock *s = *socket_context;
	bool wake;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		s = calloc(1, sizeof(*s));
		if (!s || !fd) {
			free(s); /* untracked: libmicrohttpd's own limits still apply */
			return;
		}
		s->fd = fd->connect_fd;
		s->since_ns = clock_mono_ns();
		*socket_context = s;
		pthread_mutex_lock(&cs->lock);
		unstarted_del(cs, s->fd);
		s->prev = cs->head.prev;
		s->next = &cs->head;
		cs->head.prev->next = s;
		cs->head.prev = s;
		cs->n_live++;
		cs->n_socks++;
		series_set(cs->open, cs->n_live);
		pthread_mutex_unlock(&cs->lock);
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED || !s)
		return;
	pthread_mutex_lock(&cs->lock);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	if (!s->doomed)
		cs->n_live--;
	cs->n_socks--;
	if (s->held) /* closed while held: only at stop */
		cs->n_held--;
	crowded_update(h);
	wake = cs->n_waiting > 0;
	series_set(cs->open, cs->n_live);
	pthread_mutex_unlock(&cs->lock);
	*socket_context = NULL;
	free(s);
	if (wake) /* a slot for a waiting client */
		slot_freed(&h->conns);
}

struct http_sock *http_conns_sock(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;

	if (!conn)
		return NULL;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void http_conns_busy(struct http_server *h, struct MHD_Connection *conn, bool busy)
{
	struct http_sock *s = http_conns_sock(conn);

	if (!s)
		return;
	pthread_mutex_lock(&h->conns.lock);
	s->busy = busy;
	if (!busy)
		s->since_ns = clock_mono_ns();
	pthread_mutex_unlock(&h->conns.lock);
}

void http_conns_close(struct http_server *h, struct MHD_Connection *conn,
		      enum http_close_reason why)
{
	struct http_sock *s = http_conns_sock(conn);

	if (!s)
		return;
	pthread_mutex_lock(&h->conns.lock);
	doom(&h->conns, s, why);
	pthread_mutex_unlock(&h->conns.lock);
}

void http_conns_release(struct http_server *h, struct MHD_Connection *conn, int64_t at_ns)
{
	struct http_conns *cs = &h->conns;

	pthread_mutex_lock(&cs->lock);
	for (size_t i = 0; i < cs->n_delayed; i++)
		if (cs->delayed[i].conn == conn)
			cs->delayed[i].at_ns = at_ns;
	pthread_cond_signal(&cs->cond);
	pthread_mutex_unlock(&cs->lock);
}

int http_conns_hold(struct http_server *h, struct MHD_Connection *conn, int64_t at_ns)
{
	struct http_conns *cs = &h->conns;
	struct http_sock *s = http_conns_sock(conn);

	pthread_mutex_lock(&cs->lock);
	if (!cs->thread_running || cs->stop) {
		pthread_mutex_unlock(&cs->lock);
		return -ESRCH;
	}
	if (cs->n_delayed == cs->cap_delayed) {
		size_t cap = cs->cap_delayed ? cs->cap_delayed * 2 : 16;
		struct http_delayed *t = realloc(cs->delayed, cap * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&cs->lock);
			return -ENOMEM;
		}
		cs->delayed = t;
		cs->cap_delayed = cap;
	}
	cs->delayed[cs->n_delayed].conn = conn;
	cs->delayed[cs->n_delayed].sock = s;
	cs->delayed[cs->n_delayed].at_ns = at_ns;
	cs->delayed[cs->n_delayed].suspended = false;
	cs->n_delayed++;
	/* A held connection (a login checked or refused later) gives its
	 * slot to the next client while it waits: guessed passwords do not
	 * fill the slots. At most max_connections of them, so that
	 * libmicrohttpd's own limit (twice that) is never met. */
	if (s && !s->held && cs->n_held < h->cfg.max_connections) {
		s->held = true;
		cs->n_held++;
		crowded_update(h);
		if (cs->n_waiting)
			slot_freed(cs);
	}
	pthread_mutex_unlock(&cs->lock);
	/* Outside our lock (libmicrohttpd takes its own); the entry is only
	 * resumed once marked suspended, so the resume never comes first. */
	MHD_suspend_connection(conn);
	pthread_mutex_lock(&cs->lock);
	for (size_t i = 0; i < cs->n_delayed; i++)
		if (cs->delayed[i].conn == conn)
			cs->delayed[i].suspended = true;
	pthread_cond_signal(&cs->cond);
	pthread_mutex_unlock(&cs->lock);
	return 0;
}

/* Resumes every delayed connection that is due (all of them when all). */
static void resume_due(struct http_conns *cs, bool all)
{
	struct MHD_Connection *due[64];
	size_t n;

	do {
		int64_t now = clock_mono_ns();

		n = 0;
		pthread_mutex_lock(&cs->lock);
		for (size_t i = 0; i < cs->n_delayed && n < 64;) {
			if (cs->delayed[i].suspended && (all || cs->delayed[i].at_ns <= now)) {
				struct http_sock *s = cs->delayed[i].sock;

				if (s && s->held) { /* back in the slot count */
					s->held = false;
					cs->n_held--;
				}
				due[n++] = cs->delayed[i].conn;
				cs->delayed[i] = cs->delayed[--cs->n_delayed];
			} else {
				i++;
			}
		}
		pthread_mutex_unlock(&cs->lock);
		/* Outside our lock: libmicrohttpd takes its own, and it calls
		 * http_conns_notify (our lock) with its lock held. */
		for (size_t i = 0; i < n; i++)
			MHD_resume_connection(due[i]);
		if (all && !n) { /* one may be between its entry and its suspend */
			pthread_mutex_lock(&cs->lock);
			n = cs->n_delayed ? 64 : 0;
			pthread_mutex_unlock(&cs->lock);
			if (n)
				sched_yield();
		}
	} while (n == 64);
}

static void *deadline_thread(void *arg)
{
	struct http_server *h = arg;
	struct http_conns *cs = &h->conns;
	int64_t limit = (int64_t)h->cfg.header_timeout_ms * 1000000;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		struct timespec ts;
		int64_t now = clock_mono_ns(), wake = now + SWEEP_MS * 1000000LL;

		bool freed = false;

		for (struct http_sock *s = cs->head.next; s != &cs->head; s = s->next)
			if (!s->busy && !s->doomed && now - s->since_ns > limit)
				doom(cs, s, HTTP_CLOSE_DEADLINE);
		if (cs->n_waiting)
			evict_idle(cs, cs->n_waiting, now);
		while (cs->n_unstarted && now - cs->unstarted[0].at_ns > UNSTARTED_MS * 1000000LL) {
			unstarted_del(cs, cs->unstarted[0].fd);
			freed = true;
		}
		if (freed && cs->n_waiting)
			slot_freed(cs);
		for (size_t i = 0; i < cs->n_delayed; i++)
			if (cs->delayed[i].suspended && cs->delayed[i].at_ns < wake)
				wake = cs->delayed[i].at_ns;
		if (cs->n_delayed && wake <= now) {
			pthread_mutex_unlock(&cs->lock);
			resume_due(cs, false);
			pthread_mutex_lock(&cs->lock);
			continue;
		}
		/* The condition variable runs on CLOCK_MONOTONIC. */
		ts.tv_sec = wake / 1000000000;
		ts.tv_nsec = wake % 1000000000;
		pthread_cond_timedwait(&cs->cond, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int http_conns_init(struct http_server *h)
{
	static const char *const reasons[HTTP_CLOSE_N] = {
	    "limit", "per_address", "header_deadline", "rejected", "busy", "not_allowed"};
	static const char *const labels[] = {"reason", NULL};
	struct http_conns *cs = &h->conns;
	pthread_condattr_t ca;

	cs->head.next = cs->head.prev = &cs->head;
	cs->slot_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cs->slot_fd < 0)
		return -errno;
	cs->cap_unstarted = h->cfg.max_connections;
	cs->unstarted = calloc(cs->cap_unstarted, sizeof(*cs->unstarted));
	if (!cs->unstarted)
		return -ENOMEM;
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!h->metrics)
		return 0;
	cs->open =
	    metrics_gauge1(h->metrics, "sysobs_http_connections",
			   "HTTP connections being served now (at most max_connections; before "
			   "their first request header is complete they are in the accepting "
			   "thread).");
	cs->waiting = metrics_gauge1(h->metrics, "sysobs_http_connections_waiting",
				     "HTTP connections with a complete request waiting for one of "
				     "the max_connections slots.");
	struct metric *closed = metrics_counter(
	    h->metrics, "sysobs_http_connections_closed_total",
	    "HTTP connections the server shut down itself, by reason: limit (an idle one for a "
	    "client waiting for a slot, or one with an incomplete header past max_connections), "
	    "per_address (incomplete header, past max_per_ip), header_deadline (no complete "
	    "request header within header_timeout), rejected (a request refused before "
	    "parsing), busy (a complete request that found no slot within header_timeout: 503), "
	    "not_allowed (a client address outside [http] allow, reset at accept).",
	    labels);

	if (!cs->open || !cs->waiting || !closed)
		return -ENOMEM;
	for (int i = 0; i < HTTP_CLOSE_N; i++) {
		const char *v[] = {reasons[i]};

		cs->closed[i] = metric_series(closed, v);
	}
	return 0;
}

int http_conns_start(struct http_server *h)
{
	int err = pthread_create(&h->conns.thread, NULL, deadline_thread, h);

	if (err)
		return -err;
	pthread_setname_np(h->conns.thread, "sysobs-http-dl");
	h->conns.thread_running = true;
	return 0;
}

void http_conns_stop(struct http_server *h)
{
	struct http_conns *cs = &h->conns;

	if (!cs->thread_running)
		return;
	pthread_mutex_lock(&cs->lock);
	cs->stop = true;
	pthread_cond_signal(&cs->cond);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->thread, NULL);
	cs->thread_running = false;
	/* libmicrohttpd must not be stopped with suspended connections. */
	resume_due(cs, true);
}

void http_conns_free(struct http_server *h)
{
	struct http_conns *cs = &h->conns;

	free(cs->delayed);
	cs->delayed = NULL;
	free(cs->unstarted);
	cs->unstarted = NULL;
	if (cs->slot_fd >= 0)
		close(cs->slot_fd);
	cs->slot_fd = -1;
	pthread_cond_destroy(&cs->cond);
	pthread_mutex_destroy(&cs->lock);
}
