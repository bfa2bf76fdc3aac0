/* SPDX-License-Identifier: MIT */
/*
 * The countdown is a detached thread asleep on CLOCK_MONOTONIC: it needs
 * no signal and no timer syscall beyond what the seccomp allow-list of the
 * running agent already has (clone, clock_nanosleep, write, exit_group).
 * If the shutdown ends first, exit() takes the thread with it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent/deadline.h"
#include "base/log.h"

static _Atomic(const char *) stage = "stopping the main loop";
static atomic_bool armed;

void deadline_stage(const char *what)
{
	atomic_store(&stage, what);
}

static void *countdown(void *arg)
{
	unsigned ms = (unsigned)(uintptr_t)arg;
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	log_err("agent", "shutdown took longer than %u ms: abandoned while %s; exiting now", ms,
		atomic_load(&stage));
	_exit(1);
	return NULL;
}

int deadline_arm(unsigned ms)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (atomic_exchange(&armed, true))
		return 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	err = pthread_create(&t, &attr, countdown, (void *)(uintptr_t)ms);
	pthread_attr_destroy(&attr);
	if (err)
		atomic_store(&armed, false);
	return -err;
}
