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
/* The direct write (what the helper itself does). */
int priv_write_direct(const char *path, unsigned value, bool *at_open);

#endif
