// SPDX-License-Identifier: MIT
/* Privileged sysfs writes, direct or through the agent's helper (privwrite.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collectors/privwrite.h"

static priv_write_fn installed;

void priv_write_install(priv_write_fn fn)
{
	__atomic_store_n(&installed, fn, __ATOMIC_RELEASE);
}

/* Writes "<value>\n" to fd in one write(). 0 or -errno. */
static int write_number(int fd, unsigned value)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%u\n", value);

	/* The IFS driver runs the whole test (or image load) inside write(). */
	errno = 0;
	if (write(fd, buf, (size_t)n) != n)
		return errno ? -errno : -EIO;
	return 0;
}

static int priv_write_direct(const char *path, unsigned value, bool *at_open)
{
	int fd, rc;

	*at_open = false;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		*at_open = true;
		return -errno;
	}
	rc = write_number(fd, value);
	close(fd);
	return rc;
}

/*
 * openat2(2) (Linux 5.6; glibc 2.36 has no wrapper) with no symlink in any
 * component (ELOOP) and nothing outside dirfd: an absolute path or a ".."
 * that climbs out is EXDEV. A kernel without openat2 answers ENOSYS, which
 * the caller gets like any other error: no fallback, see privwrite.h.
 */
int priv_open_beneath(int dirfd, const char *rel, int flags)
{
	struct open_how how = {
	    .flags = (__u64)(flags | O_CLOEXEC),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int priv_write_beneath(int dirfd, const char *rel, unsigned value, bool *at_open)
{
	int fd, rc;

	fd = priv_open_beneath(dirfd, rel, O_WRONLY);
	*at_open = fd < 0;
	if (fd < 0)
		return fd;
	rc = write_number(fd, value);
	close(fd);
	return rc;
}

int priv_write_number(const char *path, unsigned value, bool *at_open)
{
	priv_write_fn fn = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);

	return fn ? fn(path, value, at_open) : priv_write_direct(path, value, at_open);
}
