/* SPDX-License-Identifier: MIT */
/*
 * The agent's single epoll loop. It owns collector fds, timerfds and the
 * signalfd; callbacks run on the main thread and must not block.
 */
#ifndef SYSOBS_LOOP_H
#define SYSOBS_LOOP_H

#include <stdint.h>

struct loop;
struct loop_source;

/* Called when fd is readable (or the timer expired). Return <0 to remove. */
typedef int (*loop_fn)(int fd, void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l); /* accepts NULL; closes timerfds it created */

/* Watches fd (EPOLLIN). The fd stays the caller's. */
struct loop_source *loop_add_fd(struct loop *l, int fd, loop_fn fn, void *arg);
/* A periodic timerfd; the first expiry after interval_ms. */
struct loop_source *loop_add_timer(struct loop *l, uint64_t interval_ms, loop_fn fn, void *arg);
void loop_remove(struct loop *l, struct loop_source *s); /* accepts NULL */

/* Runs until loop_stop(); returns 0 or -errno. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

#endif
