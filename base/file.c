// SPDX-License-Identifier: MIT
/* A whole regular file read into memory (base/file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

int file_read_fd(int fd, size_t max, char **out, size_t *len)
{
	struct stat st;
	size_t n = 0, size;
	char *buf;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size < 0 || (unsigned long long)st.st_size > max)
		return -EFBIG;
	size = (size_t)st.st_size;
	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	while (n < size) {
		ssize_t r = pread(fd, buf + n, size - n, (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = r ? -errno : -ENODATA;

			free(buf);
			return err;
		}
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int file_read(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), err;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	err = file_read_fd(fd, max, out, len);
	close(fd);
	return err;
}

const char *file_read_strerror(int err, size_t max, char *buf, size_t len)
{
	if (err == -EINVAL)
		return "not a regular file";
	if (err == -EFBIG) {
		snprintf(buf, len, "more than %zu bytes", max);
		return buf;
	}
	if (err == -ENODATA)
		return "it shrank while read";
	return strerror(-err);
}
