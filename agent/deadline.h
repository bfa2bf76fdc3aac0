/* SPDX-License-Identifier: MIT */
/*
 * The shutdown deadline: once armed, the process exits within the given
 * time whatever its threads are doing. What the shutdown was doing when the
 * time ran out is logged (deadline_stage() names each step as it starts),
 * then _exit(1): the database is SQLite in WAL mode, which an abandoned
 * write leaves as consistent as a kill -9 does (rows not yet committed are
 * lost, nothing stored is damaged).
 */
#ifndef SYSOBS_DEADLINE_H
#define SYSOBS_DEADLINE_H

/* SIGTERM to exit, within the 2 s promised; the steps have budgets of their
 * own inside it (the store gives up on a locked database after 1 s). */
#define DEADLINE_SHUTDOWN_MS 1700

/* Starts the countdown (once; later calls do nothing). 0 or -errno. */
int deadline_arm(unsigned ms);
/* What the shutdown does now (a static string), logged if time runs out. */
void deadline_stage(const char *what);

#endif
