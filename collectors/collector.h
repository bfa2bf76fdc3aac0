/* SPDX-License-Identifier: MIT */
/*
 * The collector contract (see docs/DESIGN.md).
 *
 * A collector is a const ops table listed in collectors/registry.c. The agent
 * calls, on the main thread:
 *
 *   init(c)      probe the host and read config. Return 0; -ENODEV / -EPERM /
 *                -EOPNOTSUPP with c->why set when the feature is absent (the
 *                collector becomes "unavailable" and the agent runs on); or
 *                -EINVAL after cfg_error() for a bad config value (fatal: exit 2).
 *   start(c)     open fds, attach. May set c->fd (watched for EPOLLIN, then
 *                on_ready(c) is called) and c->interval_ms (collect(c) every
 *                interval). A collector with several fds owns an epoll fd of
 *                its own and exposes that. Failure -> state "failed".
 *   on_ready(c)  its fd is readable. Must not block. <0 -> "failed".
 *   collect(c)   periodic poll. Must not block for long (a blocking write such
 *                as IFS run_test belongs on a worker thread of the collector).
 *   stop(c)      frees everything init/start made; safe after a failed init or
 *                start (c->priv may be NULL).
 *
 * Collectors publish through c->agent: metrics (api/metrics.h), event rows
 * (storage/store.h, their tables listed in ops->tables), and HTTP routes
 * (ops->routes, registered before the server starts, only for collectors that
 * are enabled in the config).
 */
#ifndef SYSOBS_COLLECTOR_H
#define SYSOBS_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "api/http.h"
#include "storage/store.h"

struct agent;
struct collector;

enum collector_state {
	COLLECTOR_DISABLED,    /* enabled = false in the config */
	COLLECTOR_UNAVAILABLE, /* host lacks the feature: why says what */
	COLLECTOR_RUNNING,
	COLLECTOR_FAILED, /* was running, or start failed: why says what */
};

struct collector_route {
	const char *method;
	const char *path; /* e.g. "/api/v1/mptcp/connections" */
	bool prefix;
	http_handler fn; /* arg is the struct collector * */
};

struct collector_ops {
	const char *name;
	const char *help;			 /* one line for --help / the landing page */
	const struct cfg_key *keys;		 /* [collector.NAME] keys, {0}-terminated;
						  * "enabled" is implicit */
	const struct store_table *const *tables; /* NULL-terminated, or NULL */
	const struct collector_route *routes;	 /* {0}-terminated, or NULL */
	int (*init)(struct collector *c);
	int (*start)(struct collector *c);
	int (*on_ready)(struct collector *c);
	int (*collect)(struct collector *c);
	void (*stop)(struct collector *c);
};

struct collector {
	const struct collector_ops *ops;
	struct agent *agent;
	char section[64]; /* "collector.NAME" */
	enum collector_state state;
	char why[256];	      /* reason for unavailable / failed */
	int fd;		      /* -1: none */
	uint64_t interval_ms; /* 0: not polled */
	void *priv;
	int64_t last_activity_ns;	    /* wall clock of the last on_ready/collect */
	uint64_t errors;		    /* on_ready/collect failures */
	void *loop_fd_src, *loop_timer_src; /* agent-owned */
};

/* The explicit list, NULL-terminated (collectors/registry.c). */
extern const struct collector_ops *const collector_registry[];

const char *collector_state_name(enum collector_state s);

/* Sets c->why printf-style and returns err (a negative errno), for init paths:
 *	return collector_unavailable(c, -ENODEV, "no %s", path); */
int collector_unavailable(struct collector *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Config access for this collector's section. */
const char *collector_cfg(const struct collector *c, const char *key);

/* May this process load tracing BPF: CAP_SYS_ADMIN, or CAP_BPF with
 * CAP_PERFMON, in its effective set (not just "is root"). */
bool collector_have_bpf_caps(void);

#endif
