/* SPDX-License-Identifier: MIT */
/*
 * The one privileged operation a collector needs once the agent has dropped
 * its privileges: writing a number to a sysfs file only root may write (the
 * IFS driver's run_test and current_batch). The agent installs a function
 * that forwards the write to its privileged helper (agent/privsep.c), which
 * checks it against a fixed command set; without one (the agent kept its
 * privileges, or a unit test), the write is done here directly.
 */
#ifndef SYSOBS_PRIVWRITE_H
#define SYSOBS_PRIVWRITE_H

#include <stdbool.h>

/* Writes "<value>\n" to path in one write(). 0 or -errno; *at_open: the
 * error came from opening the file. */
typedef int (*priv_write_fn)(const char *path, unsigned value, bool *at_open);

void priv_write_install(priv_write_fn fn);
int priv_write_number(const char *path, unsigned value, bool *at_open);
/*
 * The helper's write: rel is resolved beneath the directory dirfd with
 * openat2(2), RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: a symlink in any
 * component is ELOOP, an absolute rel or a ".." out of dirfd EXDEV. On a
 * kernel without openat2 (before 5.6) every write fails with ENOSYS: a
 * fallback walk of O_NOFOLLOW opens would be code no supported kernel runs
 * (the unprivileged agent needs 5.19 already, agent/privsep.h), so it fails
 * closed instead.
 */
int priv_write_beneath(int dirfd, const char *rel, unsigned value, bool *at_open);
/* The open under it: a file descriptor (O_CLOEXEC added), or -errno. */
int priv_open_beneath(int dirfd, const char *rel, int flags);

#endif
