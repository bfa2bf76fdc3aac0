// SPDX-License-Identifier: MIT
/* Privileged sysfs writes, direct or through the agent's helper (privwrite.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "collectors/privwrite.h"

static priv_write_fn installed;

void priv_write_install(priv_write_fn fn)
{
	__atomic_store_n(&installed, fn, __ATOMIC_RELEASE);
}

int priv_write_direct(const char *path, unsigned value, bool *at_open)
{
	char buf[16];
	int fd, n, rc = 0;

	*at_open = false;
	n = snprintf(buf, sizeof(buf), "%u\n", value);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		*at_open = true;
		return -errno;
	}
	/* The IFS driver runs the whole test (or image load) inside write(). */
	errno = 0;
	if (write(fd, buf, (size_t)n) != n)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

int priv_write_number(const char *path, unsigned value, bool *at_open)
{
	priv_write_fn fn = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);

	return fn ? fn(path, value, at_open) : priv_write_direct(path, value, at_open);
}
