/* SPDX-License-Identifier: MIT */
/*
 * The collector contract (see docs/DESIGN.md).
 *
 * A collector is a const ops table listed in collectors/registry.c. The agent
 * calls, on the main thread:
 *
 *   check_config(c)  optional: the checks of c->cfg its keys' types cannot
 *                say (one key against another, a list's items), and nothing
 *                else: no file, device, socket or kernel is touched, as
 *                sysobsd --check-config runs it as any user. Reports each bad
 *                value with collector_config_error() and goes on past it;
 *                returns -EINVAL if any (a field whose typed value was bad
 *                reads as zero). Run before init, which may take it as done.
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
 *                -ENODEV with c->why set: the feature went away while
 *                running (a module unloaded): the collector becomes
 *                "unavailable" (up 0) and is still polled; the next collect
 *                that returns >= 0 makes it "running" again.
 *   stop(c)      frees everything init/start made; safe after a failed init or
 *                start (c->priv may be NULL).
 *   recheck(c)   optional, unavailable collectors only, every
 *                COLLECTOR_RECHECK_MS: has the feature appeared since
 *                start-up? Return 1 after rewriting c->why to say what
 *                using it needs (a restart: what start-up alone could do is
 *                done, privileges included), 0 if not yet. Not called again
 *                after 1. Must be cheap (a directory read).
 *
 * Collectors publish through their sink (collectors/sink.h, c->sink) and
 * nothing else: metrics (declared in ops->metrics, registered by the agent
 * before init, their handles in c->families: collector_family()),
 * event rows (tables declared in ops->tables). Their config arrives parsed:
 * ops->keys are typed (struct cfg_key with offsetof into a struct of
 * ops->cfg_size bytes) and the agent fills c->cfg before init; a value that
 * is wrong only together with another is reported with
 * collector_config_error().
 * History is served by the API's generic route of each table; ops->routes
 * are only for what it cannot serve (live state, actions).
 */
#ifndef SYSOBS_COLLECTOR_H
#define SYSOBS_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "collectors/sink.h"

struct collector;

enum collector_state {
	COLLECTOR_DISABLED,    /* enabled = false in the config */
	COLLECTOR_UNAVAILABLE, /* host lacks the feature: why says what */
	COLLECTOR_RUNNING,
	COLLECTOR_FAILED, /* was running, or start failed: why says what */
};

struct arena;
struct ProtobufCMessage;
struct ProtobufCMessageDescriptor;

/* A request to a collector's own route, decoded by the agent. */
struct route_request {
	const char *subpath;		     /* after the route's path (prefix routes), or "" */
	const char *const *args;	     /* query pairs: args[2i] key, args[2i + 1] value */
	size_t n_args;			     /* (only keys listed in the route's params) */
	const struct ProtobufCMessage *body; /* POST: the route's body message */
	struct arena *arena;		     /* memory of the reply: freed once sent */
};

/* What the route answers: a message of api/proto/sysobs.proto allocated in
 * req->arena, or an error (route_error()). */
struct route_reply {
	int status; /* 200 unless set */
	const struct ProtobufCMessage *msg;
	char code[32]; /* error: "bad_request", "not_found", "unavailable", ... */
	char message[256];
};

/* Only what the generic history route of a table cannot serve: live state
 * and actions. Runs on an HTTP thread: read shared state under a lock. */
struct collector_route {
	const char *method; /* "GET" (NULL) or "POST" */
	const char *path;   /* e.g. "/api/v1/mptcp/connections" */
	bool prefix;
	const char *const *params; /* query parameters taken, NULL-terminated, or NULL */
	const struct ProtobufCMessageDescriptor *body; /* POST body message, or NULL */
	bool admin; /* changes the host: only with [http] admin = true */
	const char *help;
	void (*fn)(struct collector *c, const struct route_request *req, struct route_reply *rep);
	/* A GET answering a list ({repeated Row data = 1; ...}): its message and
	 * the fields of Row readers show by default, NULL-terminated (NULL:
	 * every scalar field), for GET /api/v1/schema. NULL: no list. */
	const struct ProtobufCMessageDescriptor *list;
	const char *const *show;
};

/* Sets an error reply (status >= 400) printf-style. */
void route_error(struct route_reply *rep, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Value of query parameter key, or NULL. */
const char *route_arg(const struct route_request *req, const char *key);

struct collector_ops {
	const char *name;
	const char *help;			 /* one line for --help / the landing page */
	const struct cfg_key *keys;		 /* [collector.NAME] keys, {0}-terminated;
						  * "enabled" is implicit */
	size_t cfg_size;			 /* struct the typed keys are parsed into */
	const struct metric_desc *metrics;	 /* {0}-terminated, or NULL; indexed by
						  * the collector's own enum */
	const struct event_table *const *tables; /* NULL-terminated, or NULL */
	const struct collector_route *routes;	 /* {0}-terminated, or NULL */
	int (*check_config)(struct collector *c);
	int (*init)(struct collector *c);
	int (*start)(struct collector *c);
	int (*on_ready)(struct collector *c);
	int (*collect)(struct collector *c);
	void (*stop)(struct collector *c);
	int (*recheck)(struct collector *c);
	/* Writes through priv_write_number() (collectors/privwrite.h): the
	 * agent forks its privileged helper only if such a collector runs
	 * once start-up is done. */
	bool priv_writes;
};

#define COLLECTOR_RECHECK_MS 10000

struct collector {
	const struct collector_ops *ops;
	struct sink *sink;
	const void *cfg;	 /* ops->cfg_size bytes, parsed from [collector.NAME] */
	char section[64];	 /* "collector.NAME" */
	const char *cfg_err_key; /* set by collector_config_error() */
	/* agent-owned: called by collector_config_error(), to record each */
	void (*config_error_hook)(struct collector *c);
	/* Agent settings a collector may read: */
	const char *sysfs_root; /* "/sys" unless --sysfs-root (IFS fake) */
	const char *hostname;	/* for alerts: [agent] hostname, else gethostname() */
	bool admin;		/* [http] admin: state-changing routes allowed */
	/* agent-owned: the registered family of each ops->metrics entry, same
	 * index, all non-NULL (the agent starts no collector, and exits, when
	 * one cannot be registered). Read them with collector_family(). */
	struct sink_family **families;
	enum collector_state state;
	char why[256];	      /* reason for unavailable / failed */
	int fd;		      /* -1: none */
	uint64_t interval_ms; /* 0: not polled */
	void *priv;
	int64_t last_activity_ns;	    /* wall clock of the last on_ready/collect */
	uint64_t errors;		    /* on_ready/collect failures */
	void *loop_fd_src, *loop_timer_src; /* agent-owned */
	void *owner;			    /* agent-owned: the agent */
};

/* The family the agent registered for ops->metrics[i]. */
static inline struct sink_family *collector_family(const struct collector *c, size_t i)
{
	return c->families[i];
}

/* The series of ops->metrics[i] with these label values (sink_series()). */
static inline struct sink_series *collector_series(const struct collector *c, size_t i,
						   const char *const *values)
{
	return sink_series(c->sink, c->families[i], values);
}

/* The only series of ops->metrics[i], a family without labels. */
static inline struct sink_series *collector_series1(const struct collector *c, size_t i)
{
	return collector_series(c, i, NULL);
}

/* The explicit list, NULL-terminated (collectors/registry.c). */
extern const struct collector_ops *const collector_registry[];

const char *collector_state_name(enum collector_state s);

/* Sets c->why printf-style and returns err (a negative errno), for init paths:
 *	return collector_unavailable(c, -ENODEV, "no %s", path); */
int collector_unavailable(struct collector *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A config value of this collector that is wrong (only together with
 * another, or in a way the key's type cannot say): c->why gets the reason,
 * the agent reports it as file:line of key and exits 2. Returns -EINVAL. */
int collector_config_error(struct collector *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
