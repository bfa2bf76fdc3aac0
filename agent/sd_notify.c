// SPDX-License-Identifier: MIT
/* The sd_notify datagram (agent/sd_notify.h). Runs under the agent's
 * seccomp filter (STOPPING=1): socket(AF_UNIX), sendto and close are in it. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/sd_notify.h"

int sd_notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd, rc = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	/* A path or an abstract name; no room for the final NUL is needed (the
	 * address length says where it ends). */
	if ((path[0] != '/' && path[0] != '@') || len < 2 || len > sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* MSG_NOSIGNAL: no SIGPIPE from a manager that went away. */
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}
