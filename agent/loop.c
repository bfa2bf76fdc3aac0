/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/loop.h"

struct loop_source {
	int fd;
	bool owns_fd; /* timerfds are ours to close */
	bool removed;
	loop_fn fn;
	void *arg;
	struct loop_source *next;
};

struct loop {
	int epfd;
	volatile bool stop;
	struct loop_source *sources;
};

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	return l;
}

static void source_free(struct loop_source *s)
{
	if (s->owns_fd)
		close(s->fd);
	free(s);
}

void loop_free(struct loop *l)
{
	struct loop_source *s, *next;

	if (!l)
		return;
	for (s = l->sources; s; s = next) {
		next = s->next;
		source_free(s);
	}
	close(l->epfd);
	free(l);
}

static struct loop_source *source_add(struct loop *l, int fd, bool owns, loop_fn fn, void *arg)
{
	struct loop_source *s = calloc(1, sizeof(*s));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!s)
		return NULL;
	s->fd = fd;
	s->owns_fd = owns;
	s->fn = fn;
	s->arg = arg;
	ev.data.ptr = s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = errno;

		free(s);
		errno = err;
		return NULL;
	}
	s->next = l->sources;
	l->sources = s;
	return s;
}

struct loop_source *loop_add_fd(struct loop *l, int fd, loop_fn fn, void *arg)
{
	return source_add(l, fd, false, fn, arg);
}

struct loop_source *loop_add_timer(struct loop *l, uint64_t interval_ms, loop_fn fn, void *arg)
{
	struct itimerspec its = {
	    .it_interval = {interval_ms / 1000, (interval_ms % 1000) * 1000000},
	    .it_value = {interval_ms / 1000, (interval_ms % 1000) * 1000000},
	};
	struct loop_source *s;
	int fd;

	if (!interval_ms) {
		errno = EINVAL;
		return NULL;
	}
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		close(fd);
		return NULL;
	}
	s = source_add(l, fd, true, fn, arg);
	if (!s)
		close(fd);
	return s;
}

/* Removal is deferred to the end of the current dispatch round, so a callback
 * may remove any source (itself included) safely. */
void loop_remove(struct loop *l, struct loop_source *s)
{
	if (!s || s->removed)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	s->removed = true;
}

static void reap_removed(struct loop *l)
{
	struct loop_source **pp = &l->sources;

	while (*pp) {
		struct loop_source *s = *pp;

		if (s->removed) {
			*pp = s->next;
			source_free(s);
		} else {
			pp = &s->next;
		}
	}
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[32];

	l->stop = false;
	while (!l->stop) {
		int n = epoll_wait(l->epfd, evs, 32, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !l->stop; i++) {
			struct loop_source *s = evs[i].data.ptr;

			if (s->removed)
				continue;
			if (s->owns_fd) {
				uint64_t expirations;

				if (read(s->fd, &expirations, sizeof(expirations)) < 0 &&
				    errno == EAGAIN)
					continue;
			}
			if (s->fn(s->fd, s->arg) < 0)
				loop_remove(l, s);
		}
		reap_removed(l);
	}
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}
