/* SPDX-License-Identifier: MIT */
/*
 * Module load and unload as the kernel announces them, so the drops
 * collector refreshes module BTF and kallsyms when a module comes or goes
 * instead of polling.
 *
 * sysfs sends no inotify events for /sys/kernel/btf. The kernel announces a
 * module as a kobject uevent on NETLINK_KOBJECT_UEVENT, multicast group 1
 * (lib/kobject_uevent.c): one datagram "ACTION@DEVPATH\0" followed by
 * KEY=VALUE strings, each NUL-terminated (ACTION, DEVPATH, SUBSYSTEM, the
 * caller's keys, SEQNUM). A module's kobject is /module/<name> in the
 * "module" kset: add@/module/<name> once the module is live (its BTF is in
 * /sys/kernel/btf by then, its symbols in kallsyms), remove@/module/<name>
 * when it goes.
 *
 * Any process may listen (the kernel creates the socket with
 * NL_CFG_F_NONROOT_RECV), so this keeps working after the agent drops its
 * privileges. Only the kernel sends with port id 0; a message from a user
 * space socket (udevd's re-broadcasts carry a "libudev" header and go to
 * group 2; root may also send to group 1) is refused.
 *
 * The parser is pure (tests feed it bytes); the watch owns the socket, a
 * debounce timer and an epoll fd that also holds the ring buffer's fd, and
 * is what the collector exposes as its one fd.
 *
 * Why not libudev's kernel monitor (udev_monitor_new_from_netlink(udev,
 * "kernel")): it would replace the ~150 lines of socket code, not the
 * parser or the debounce, and it (a) filters by subsystem only for
 * udevd's "libudev"-framed messages, copying every kernel uevent of the
 * host to user space where this socket filter (SO_ATTACH_FILTER) keeps only
 * module ones in the kernel; (b) turns a full receive queue (ENOBUFS) into
 * a NULL device, while the watch must know it lost events to rescan every
 * module; (c) loads libudev into the unprivileged daemon for that.
 */
#ifndef SYSOBS_DROPS_UEVENT_H
#define SYSOBS_DROPS_UEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest datagram read: the kernel's environment buffer
 * (UEVENT_BUFFER_SIZE, 2048) plus the "action@devpath" header. */
#define DROPS_UEVENT_MSG_MAX 4096
/* Module names are shorter (MODULE_NAME_LEN, 56 on 64-bit). */
#define DROPS_UEVENT_NAME_MAX 64

enum drops_uevent_kind {
	DROPS_UEVENT_OTHER,	    /* well-formed, not a module add/remove */
	DROPS_UEVENT_MODULE_ADD,    /* add@/module/<name> */
	DROPS_UEVENT_MODULE_REMOVE, /* remove@/module/<name> */
};

/*
 * Parses one datagram (untrusted bytes). Returns its kind, with the module's
 * name in name for a module add/remove, or -EINVAL when it is not a kernel
 * uevent: empty, longer than DROPS_UEVENT_MSG_MAX, not NUL-terminated, a
 * header without '@', an empty or '='-less key, ACTION or DEVPATH missing,
 * repeated or disagreeing with the header, a module name that is not
 * [A-Za-z0-9_-].
 */
int drops_uevent_parse(const void *buf, size_t len, char name[DROPS_UEVENT_NAME_MAX]);

struct drops_uevent_stats {
	uint64_t module;   /* module add/remove announcements from the kernel */
	uint64_t other;	   /* from the kernel, well-formed, not a module add/remove */
	uint64_t rejected; /* not from the kernel, truncated or malformed */
	uint64_t overrun;  /* the socket's receive buffer overflowed (ENOBUFS) */
};

struct drops_watch;

/*
 * Opens the uevent socket (close-on-exec, non-blocking, a bounded receive
 * buffer, a socket filter that passes only add@/module/ and
 * remove@/module/), a one-shot timer and an epoll fd holding both. Opened
 * before the first scan of module BTF, so that no module loaded after it
 * goes unseen. NULL + errno when the socket cannot be opened (a sandbox
 * without netlink, ...).
 */
struct drops_watch *drops_watch_new(unsigned settle_ms);
/* Adds the ring buffer's fd to the epoll fd. 0, or -1 + errno. */
int drops_watch_add(struct drops_watch *w, int ring_fd);
void drops_watch_free(struct drops_watch *w); /* accepts NULL */
/* The epoll fd: readable when the ring, the socket or the timer is. */
int drops_watch_fd(const struct drops_watch *w);
/*
 * Serves the socket and the timer without blocking: a module announcement
 * (or an overrun, which may have lost one) arms the timer unless it is
 * armed already, so a burst of modules gives one refresh. True when the
 * timer has fired: refresh now. Reads at most a bounded number of
 * datagrams a call (the fd stays readable for the rest).
 */
bool drops_watch_due(struct drops_watch *w);
const struct drops_uevent_stats *drops_watch_stats(const struct drops_watch *w);

#endif
