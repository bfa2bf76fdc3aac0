/* SPDX-License-Identifier: MIT */
/*
 * A whole regular file read into memory, at most a size the caller names:
 * the recordings of the collectors, the web config and its TLS files. A
 * config file has its own reader (base/config.c: it also takes FIFOs,
 * within a deadline).
 */
#ifndef SYSOBS_BASE_FILE_H
#define SYSOBS_BASE_FILE_H

#include <stddef.h>

/* The whole of the open file fd, read from its start whatever its offset
 * (an O_APPEND descriptor too), into a new buffer (*out, NUL-terminated;
 * *len without the NUL). 0, or -errno: -EINVAL when fd is not a regular
 * file, -EFBIG when it holds more than max bytes, -ENODATA when it shrank
 * while read, -ENOMEM; *out is then NULL. */
int file_read_fd(int fd, size_t max, char **out, size_t *len);

/* The same for path, opened without blocking (a FIFO is refused, not
 * waited on) and closed. */
int file_read(const char *path, size_t max, char **out, size_t *len);

/* What a file_read*() error means, for a log line ("not a regular file",
 * "more than N bytes", strerror()'s text otherwise). */
const char *file_read_strerror(int err, size_t max, char *buf, size_t len);

#endif
