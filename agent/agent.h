/* SPDX-License-Identifier: MIT */
/*
 * The agent: the one place that wires config, store, metrics, HTTP and
 * collectors together. Nothing else includes this header.
 */
#ifndef SYSOBS_AGENT_H
#define SYSOBS_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/config.h"
#include "agent/expose.h"
#include "base/log.h"
#include "agent/loop.h"
#include "api/http.h"
#include "metrics/metrics.h"
#include "storage/store.h"

struct collector;
struct remote_write;
struct names;

struct agent {
	struct config cfg;
	struct loop *loop;
	struct metrics *metrics;
	struct store *store;
	struct http_server *http;
	struct collector *collectors;
	size_t n_collectors;
	const char *sysfs_root;	     /* "/sys" unless --sysfs-root (IFS fake) */
	const char *hostname;	     /* [agent] hostname as configured ("" = unset) */
	const char *machine_id_file; /* [agent] machine_id_file (agent/host_id.h) */
	/* The host's name on every path that names it (the exporters' default
	 * instance, the IFS alert push): [agent] hostname, else gethostname(),
	 * resolved once by agent_host_resolve(); "" if both fail. */
	char host[256];
	uint64_t snapshot_ms;		   /* metric history period; 0 = off */
	bool admin;			   /* [http] admin: collectors' POST routes */
	struct store_series *store_series; /* the store's statistics as metrics */
	void *route_bindings;		   /* collector routes on the server */
	struct expose expose;		   /* [metrics], build info, stale series */
	struct remote_write *rw;	   /* NULL unless [remote_write] url */
	struct am_export *am;		   /* NULL unless [collector.ifs] alertmanager_url */
	struct events_export *exp;	   /* NULL unless an [export.NAME] */
	size_t cfg_errors_logged;	   /* cfg.errors[] logged so far */
	struct names *names;		   /* Kubernetes names (agent/names.h) */
};

/* Declares [agent], [http], [storage] and every collector's section. */
int agent_config_declare(struct agent *a);
/*
 * Checks the values of [agent], [http] and [storage], the sections that
 * command-line flags override, as the config holds them now and as
 * agent_start() does. main() runs it on the file as read, before any flag
 * replaces a value: a flag overrides a value, it does not excuse a bad one,
 * so a bad value in the file is the same error (file:line, exit 2) with or
 * without the flag. With host, the directory of the file's absolute
 * database path must exist too (issue 30: --db hid a [storage] path that
 * the next start without the flag, the unit's, would refuse). Binding the address, and reaching the
 * directory as the user the agent becomes, agent_start() checks for the
 * value in effect alone: a flag is how a second agent runs beside the first
 * (on another port). 0, or -EINVAL with a->cfg.err set.
 */
int agent_config_check(struct agent *a, bool host);
/*
 * Everything agent_start() checks of the config, and records every error
 * (cfg.errors), without a side effect: no database, BPF, socket or sysfs
 * write, no collector init (sysobsd --check-config, SIGHUP). With host, also
 * what the values ask of the host that reading can tell: the secret, TLS and
 * web config files read and parsed, the database's directory present, the
 * [agent] user looked up (not after the privilege drop, where root's files
 * are out of reach and the seccomp filter holds).
 * 0, or -EINVAL.
 */
int agent_config_validate(struct agent *a, bool host);
/* Logs the config errors recorded since the last call, each once. */
void agent_config_errors_log(struct agent *a);
/* Writes cfg->errors[from...] to out, one a line, each once. */
void agent_config_errors_print(const struct config *cfg, size_t from, FILE *out);
/* [agent] parsed by its typed keys (agent/agent_config.c), the one parse of
 * log_level and log_format, for the start, a flag (-L) and SIGHUP alike:
 * 0, or -EINVAL with every bad value of [agent] recorded (cfg->err: the
 * last). */
int agent_log_config(struct config *cfg, enum log_level *lvl, enum log_format *fmt);
/* Exit status of a start the environment of the moment refused (the
 * database's file system full, its lock held): EX_TEMPFAIL of sysexits.h.
 * The unit restarts the agent for it (deploy/sysobsd.service), unlike 2. */
#define AGENT_EXIT_TEMPFAIL 75

/* After the config is loaded: opens storage, inits collectors, starts HTTP
 * and collectors. Returns 0; 2 for a config/storage error (message logged);
 * AGENT_EXIT_TEMPFAIL when the database cannot be opened for now (full
 * disk, locked); 1 for any other start failure. */
/* agent_signal_set(): the signals agent_run() takes through a signalfd
 * (SIGTERM, SIGINT, SIGHUP); main() blocks them before any thread starts. */
void agent_signal_set(sigset_t *mask);

int agent_start(struct agent *a, const char *port_file);
/* Runs the event loop until SIGTERM/SIGINT. */
int agent_run(struct agent *a);
/* Stops collectors and HTTP, flushes and closes storage. Accepts a partly
 * started agent. */
void agent_stop(struct agent *a);

/* --print-clickhouse-ddl[=CLUSTER]: the event exporter's ClickHouse tables. */
int agent_print_clickhouse_ddl(const char *cluster, FILE *out);

#endif
