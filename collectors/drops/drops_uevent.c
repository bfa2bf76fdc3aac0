// SPDX-License-Identifier: MIT
/* Module add/remove uevents (see drops_uevent.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/netlink.h>

#include "collectors/drops/drops_uevent.h"

#define UEVENT_GROUP	 1	    /* the kernel's multicast group */
#define UEVENT_RCVBUF	 (64 << 10) /* the kernel doubles it for overhead */
#define UEVENT_BUDGET	 64	    /* datagrams per drops_watch_due() */
#define MODULE_DEVPATH	 "/module/"
#define WATCH_TAG_RING	 0
#define WATCH_TAG_SOCKET 1
#define WATCH_TAG_TIMER	 2

/* "KEY=" at the start of s: its value, else NULL. */
static const char *key_value(const char *s, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(s, key, n) && s[n] == '=' ? s + n + 1 : NULL;
}

static bool module_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char ch = s[n];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return false;
	}
	return n > 0 && n < DROPS_UEVENT_NAME_MAX;
}

int drops_uevent_parse(const void *buf, size_t len, char name[DROPS_UEVENT_NAME_MAX])
{
	const char *p = buf, *end = p + len, *at, *action = NULL, *devpath = NULL,
		   *subsystem = NULL;
	size_t hlen, alen;

	name[0] = '\0';
	/* Every string is NUL-terminated, the last one included. */
	if (!len || len > DROPS_UEVENT_MSG_MAX || p[len - 1] != '\0')
		return -EINVAL;
	hlen = strlen(p);
	at = memchr(p, '@', hlen);
	if (!at || at == p || at + 1 == p + hlen)
		return -EINVAL;
	alen = (size_t)(at - p);
	for (const char *s = p + hlen + 1; s < end; s += strlen(s) + 1) {
		const char **slot = NULL, *v;

		if (!*s || !strchr(s, '='))
			return -EINVAL; /* empty string, or not KEY=VALUE */
		if ((v = key_value(s, "ACTION")))
			slot = &action;
		else if ((v = key_value(s, "DEVPATH")))
			slot = &devpath;
		else if ((v = key_value(s, "SUBSYSTEM")))
			slot = &subsystem;
		if (!slot)
			continue;
		if (*slot)
			return -EINVAL; /* twice */
		*slot = v;
	}
	/* The kernel writes the header from the same two values. */
	if (!action || !devpath || strlen(action) != alen || strncmp(action, p, alen) ||
	    strcmp(devpath, at + 1))
		return -EINVAL;
	if (!subsystem || strcmp(subsystem, "module") ||
	    strncmp(devpath, MODULE_DEVPATH, strlen(MODULE_DEVPATH)))
		return DROPS_UEVENT_OTHER;
	devpath += strlen(MODULE_DEVPATH);
	if (strchr(devpath, '/'))
		return DROPS_UEVENT_OTHER; /* an object below a module's */
	if (!module_name_ok(devpath))
		return -EINVAL;
	if (strcmp(action, "add") && strcmp(action, "remove"))
		return DROPS_UEVENT_OTHER; /* change, bind, ... */
	memcpy(name, devpath, strlen(devpath) + 1);
	return strcmp(action, "add") ? DROPS_UEVENT_MODULE_REMOVE : DROPS_UEVENT_MODULE_ADD;
}

/* --- the socket ------------------------------------------------------------ */

#define W4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

/*
 * Classic BPF run by the kernel before a message is queued: only
 * "add@/module/" and "remove@/module/" pass, so device events (every veth
 * a container start creates, ...) never wake the agent. Loads are
 * big-endian; a load past the end drops the message. User space still
 * checks everything.
 */
static const struct sock_filter uevent_filter[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('a', 'd', 'd', '@'), 0, 4), /* -> 6 */
    /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
    /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('/', 'm', 'o', 'd'), 0, 11), /* -> 15 */
    /* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 8),
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('u', 'l', 'e', '/'), 10, 9), /* 16, 15 */
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('r', 'e', 'm', 'o'), 0, 8),	/* -> 15 */
    /* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('v', 'e', '@', '/'), 0, 6), /* -> 15 */
    /* 9 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 8),
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, W4('m', 'o', 'd', 'u'), 0, 4), /* -> 15 */
    /* 11 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
    /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)'l' << 8 | 'e', 0, 2), /* -> 15 */
    /* 13 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14),
    /* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, '/', 1, 0), /* 16, 15 */
    /* 15 */ BPF_STMT(BPF_RET | BPF_K, 0),
    /* 16 */ BPF_STMT(BPF_RET | BPF_K, DROPS_UEVENT_MSG_MAX + 1),
};

static int uevent_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1u << (UEVENT_GROUP - 1)};
	struct sock_fprog prog = {
	    .len = sizeof(uevent_filter) / sizeof(uevent_filter[0]),
	    .filter = (struct sock_filter *)uevent_filter,
	};
	int fd, rcvbuf = UEVENT_RCVBUF, err;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -errno;
	/* The filter before the bind: nothing unfiltered is ever queued. A
	 * kernel without socket filters still gets every message checked. */
	(void)setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* --- the watch ------------------------------------------------------------- */

struct drops_watch {
	int ep, sock, timer;
	unsigned settle_ms;
	bool armed;
	struct drops_uevent_stats stats;
	char buf[DROPS_UEVENT_MSG_MAX + 1];
};

static int watch_add(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

struct drops_watch *drops_watch_new(unsigned settle_ms)
{
	struct drops_watch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->ep = w->timer = -1;
	w->settle_ms = settle_ms;
	w->sock = uevent_open();
	if (w->sock < 0) {
		err = w->sock;
		goto err;
	}
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (w->ep < 0 || w->timer < 0) {
		err = -errno;
		goto err;
	}
	if ((err = watch_add(w->ep, w->sock, WATCH_TAG_SOCKET)) ||
	    (err = watch_add(w->ep, w->timer, WATCH_TAG_TIMER)))
		goto err;
	return w;

err:
	drops_watch_free(w);
	errno = -err;
	return NULL;
}

int drops_watch_add(struct drops_watch *w, int ring_fd)
{
	int err = watch_add(w->ep, ring_fd, WATCH_TAG_RING);

	if (err)
		errno = -err;
	return err ? -1 : 0;
}

void drops_watch_free(struct drops_watch *w)
{
	if (!w)
		return;
	if (w->ep >= 0)
		close(w->ep);
	if (w->timer >= 0)
		close(w->timer);
	if (w->sock >= 0)
		close(w->sock);
	free(w);
}

int drops_watch_fd(const struct drops_watch *w)
{
	return w->ep;
}

const struct drops_uevent_stats *drops_watch_stats(const struct drops_watch *w)
{
	return &w->stats;
}

/* Reads what the socket holds (up to the budget); true when a module came
 * or went, or a message may have been lost. */
static bool watch_read(struct drops_watch *w)
{
	bool changed = false;

	for (unsigned i = 0; i < UEVENT_BUDGET; i++) {
		struct sockaddr_nl sa;
		struct iovec iov = {.iov_base = w->buf, .iov_len = sizeof(w->buf)};
		struct msghdr mh = {
		    .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};
		char name[DROPS_UEVENT_NAME_MAX];
		int kind;
		ssize_t n = recvmsg(w->sock, &mh, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* the kernel dropped messages for us: maybe a module's */
				w->stats.overrun++;
				changed = true;
				continue;
			}
			break; /* EAGAIN: all read */
		}
		/* Only the kernel sends with port id 0, to group 1. */
		if ((mh.msg_flags & MSG_TRUNC) || mh.msg_namelen != sizeof(sa) ||
		    sa.nl_family != AF_NETLINK || sa.nl_pid != 0 ||
		    !(sa.nl_groups & (1u << (UEVENT_GROUP - 1))))
			kind = -EPERM;
		else
			kind = drops_uevent_parse(w->buf, (size_t)n, name);
		if (kind < 0) {
			w->stats.rejected++;
		} else if (kind == DROPS_UEVENT_OTHER) {
			w->stats.other++; /* what the filter let through */
		} else {
			w->stats.module++;
			changed = true;
		}
	}
	return changed;
}

bool drops_watch_due(struct drops_watch *w)
{
	struct epoll_event ev[3];
	bool due = false;
	int n = epoll_wait(w->ep, ev, 3, 0);

	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == WATCH_TAG_SOCKET && watch_read(w) && !w->armed) {
			struct itimerspec its = {
			    .it_value = {.tv_sec = w->settle_ms / 1000,
					 .tv_nsec = (long)(w->settle_ms % 1000) * 1000000}};

			if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
				its.it_value.tv_nsec = 1;
			/* A timer that cannot be armed: refresh now rather than never. */
			if (timerfd_settime(w->timer, 0, &its, NULL))
				due = true;
			else
				w->armed = true;
		} else if (ev[i].data.u32 == WATCH_TAG_TIMER) {
			uint64_t expirations;

			if (read(w->timer, &expirations, sizeof(expirations)) ==
			    (ssize_t)sizeof(expirations)) {
				w->armed = false;
				due = true;
			}
		}
	}
	return due;
}
