// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD for integration.drops_modwatch: socket(AF_NETLINK, ...,
 * NETLINK_KOBJECT_UEVENT) fails as in a sandbox without it, every other
 * socket is the real one. The drops collector must fall back to its poll.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <sys/socket.h>

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);

	if (domain == AF_NETLINK && protocol == NETLINK_KOBJECT_UEVENT) {
		errno = EPERM;
		return -1;
	}
	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(domain, type, protocol);
}
