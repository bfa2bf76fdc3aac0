/* SPDX-License-Identifier: MIT */
/*
 * Agent lifecycle: config sections, storage, collectors, HTTP, the event
 * loop and an orderly shutdown. A collector that is unavailable or fails is
 * reported and left behind; the agent keeps serving.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/collector_routes.h"
#include "agent/log.h"
#include "agent/sink_impl.h"
#include "agent/snapshot.h"
#include "agent/status.h"
#include "api/history.h"
#include "api/routes.h"
#include "collectors/collector.h"

#define MAX_TABLES	 64
#define AGENT_PUBLISH_MS 1000 /* storage statistics into metrics */

static const struct cfg_key agent_keys[] = {
    {"log_level", "info", "error, warn, info or debug"},
    {"hostname", "", "host name used in alerts; empty = gethostname()"},
    {"sysfs_root", "/sys", "root of sysfs (point at the IFS fake to try the ifs collector)"},
    {0},
};

static const struct cfg_key http_keys[] = {
    {"listen", "127.0.0.1:9559", "address:port to serve on (port 0 = any free port)"},
    {"max_connections", "64", "simultaneous HTTP connections"},
    {"timeout", "10s", "idle connection timeout"},
    {"threads", "2", "HTTP worker threads"},
    {"admin", "false", "allow state-changing endpoints such as POST /api/v1/ifs/scans"},
    {"gzip", "auto",
     "gzip responses of 1 KiB or more for clients that accept it: auto (not for loopback "
     "clients, where it only costs CPU), always or never"},
    {0},
};

static const struct cfg_key storage_keys[] = {
    {"path", "./var/sysobs.db", "SQLite database file (its directory must exist)"},
    {"queue_rows", "65536", "bounded event queue between collectors and the writer"},
    {"batch_rows", "2000", "commit after this many rows ..."},
    {"batch_ms", "200", "... or after this many milliseconds"},
    {"snapshot_interval", "15s", "metric history snapshot period (0 = off)"},
    {"retention", "7d", "delete history older than this (0 = keep)"},
    {"table_retention", "",
     "per-table retention overriding the above, e.g. drop_samples=1d, mptcp_events=30d "
     "(tables: self_samples, drop_samples, mptcp_events, ifs_scans, cachefiles_slow)"},
    {"max_size", "1G", "delete the oldest history past this database size (0 = no cap)"},
    {"busy_timeout", "5s", "how long a statement waits on a locked database"},
    {"readers", "4", "read-only connections for the HTTP API"},
    {0},
};

static const struct cfg_key collector_enabled_key = {
    "enabled", "true", "run this collector when the host supports it"};

int agent_config_declare(struct agent *a)
{
	int err;

	if ((err = cfg_declare(&a->cfg, "agent", agent_keys)) ||
	    (err = cfg_declare(&a->cfg, "http", http_keys)) ||
	    (err = cfg_declare(&a->cfg, "storage", storage_keys)))
		return err;
	for (size_t i = 0; collector_registry[i]; i++) {
		const struct collector_ops *ops = collector_registry[i];
		struct cfg_key keys[64] = {collector_enabled_key};
		char section[64];
		size_t n = 1;

		for (const struct cfg_key *k = ops->keys; k && k->key && n < 63; k++)
			keys[n++] = *k;
		snprintf(section, sizeof(section), "collector.%s", ops->name);
		err = cfg_declare(&a->cfg, section, keys);
		if (err)
			return err;
	}
	return 0;
}

/* The store's messages into the agent's log. */
static void store_log_to_agent(enum store_log_level lvl, const char *msg, void *arg)
{
	static const enum log_level map[] = {
	    [STORE_LOG_ERR] = LOG_LVL_ERR,
	    [STORE_LOG_WARN] = LOG_LVL_WARN,
	    [STORE_LOG_INFO] = LOG_LVL_INFO,
	};

	log_msg(map[lvl], "store", "%s", msg);
}

/* Typed storage settings; any bad value leaves the message in cfg.err. */
static int storage_config(struct agent *a, struct store_config *sc)
{
	struct config *cfg = &a->cfg;
	uint64_t queue, batch, batch_ms, snap, ret, size, busy, readers;
	int err;

	if ((err = cfg_get_u64(cfg, "storage", "queue_rows", 16, 1u << 24, &queue)) ||
	    (err = cfg_get_u64(cfg, "storage", "batch_rows", 1, 1000000, &batch)) ||
	    (err = cfg_get_u64(cfg, "storage", "batch_ms", 1, 60000, &batch_ms)) ||
	    (err = cfg_get_duration_ms(cfg, "storage", "snapshot_interval", 0, 86400000, &snap)) ||
	    (err = cfg_get_duration_ms(cfg, "storage", "retention", 0, UINT64_MAX, &ret)) ||
	    (err = cfg_get_size(cfg, "storage", "max_size", 0, UINT64_MAX, &size)) ||
	    (err = cfg_get_duration_ms(cfg, "storage", "busy_timeout", 0, 600000, &busy)) ||
	    (err = cfg_get_u64(cfg, "storage", "readers", 1, 64, &readers)))
		return err;
	if (snap && snap < 1000)
		return cfg_error(cfg, "storage", "snapshot_interval", "must be 0 or at least 1s");
	if (size && size < (1u << 20))
		return cfg_error(cfg, "storage", "max_size", "must be 0 or at least 1M");
	sc->path = cfg_get(cfg_section(cfg, "storage"), "path");
	if (!sc->path || !*sc->path)
		return cfg_error(cfg, "storage", "path", "must not be empty");
	sc->queue_rows = queue;
	sc->batch_rows = batch;
	sc->batch_ms = batch_ms;
	a->snapshot_ms = snap;
	sc->retention_ms = ret;
	sc->max_bytes = size;
	sc->busy_timeout_ms = busy;
	sc->readers = readers;
	sc->log = store_log_to_agent;
	return 0;
}

/* [storage] table_retention = "TABLE=DURATION, ...": an unknown table or a
 * bad duration is a config error (file:line), never ignored. */
static int table_retention(struct agent *a)
{
	const char *v = cfg_get(cfg_section(&a->cfg, "storage"), "table_retention");
	char *dup, *save = NULL;
	int err = 0;

	if (!v || !*v)
		return 0;
	dup = strdup(v);
	if (!dup)
		return -ENOMEM;
	for (char *tok = strtok_r(dup, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *name, *dur;
		uint64_t ms;

		if (cfg_kv_split(tok, &name, &dur)) {
			err = cfg_error(&a->cfg, "storage", "table_retention",
					"'%s': expected TABLE=DURATION", cfg_trim(tok));
			break;
		}
		if (cfg_parse_duration_ms(dur, &ms) || !ms)
			err = cfg_error(&a->cfg, "storage", "table_retention",
					"%s: expected a duration above 0 such as 12h or 30d", name);
		else if (store_set_table_retention(a->store, name, ms))
			err = cfg_error(&a->cfg, "storage", "table_retention",
					"no table '%s' in this database", name);
	}
	free(dup);
	return err;
}

static int http_config(struct agent *a, struct http_config *hc)
{
	struct config *cfg = &a->cfg;
	uint64_t maxc, timeout, threads;
	const char *gz;
	bool admin;
	int err;

	if ((err = cfg_get_u64(cfg, "http", "max_connections", 1, 10000, &maxc)) ||
	    (err = cfg_get_duration_ms(cfg, "http", "timeout", 1000, 3600000, &timeout)) ||
	    (err = cfg_get_u64(cfg, "http", "threads", 1, 64, &threads)) ||
	    (err = cfg_get_bool(cfg, "http", "admin", &admin)))
		return err;
	hc->listen = cfg_get(cfg_section(cfg, "http"), "listen");
	hc->max_connections = maxc;
	hc->timeout_s = timeout / 1000;
	hc->threads = threads;
	hc->admin = admin;
	gz = cfg_get(cfg_section(cfg, "http"), "gzip");
	if (!strcmp(gz, "auto"))
		hc->gzip = HTTP_GZIP_AUTO;
	else if (!strcmp(gz, "always"))
		hc->gzip = HTTP_GZIP_ALWAYS;
	else if (!strcmp(gz, "never"))
		hc->gzip = HTTP_GZIP_NEVER;
	else
		return cfg_error(cfg, "http", "gzip", "must be auto, always or never");
	return 0;
}

static void collector_set_up(struct collector *c)
{
	static const char *const labels[] = {"collector", NULL};
	static const char *const state_labels[] = {"collector", "state", NULL};
	static const enum collector_state states[] = {COLLECTOR_DISABLED, COLLECTOR_UNAVAILABLE,
						      COLLECTOR_RUNNING, COLLECTOR_FAILED};
	struct metric *up =
	    metrics_gauge(((struct agent *)c->owner)->metrics, "sysobs_collector_up",
			  "1 if the collector is running, 0 if it is disabled, "
			  "unavailable or failed.",
			  labels);
	/* A state set: "unavailable" (the host lacks the feature) must not page
	 * anyone, "failed" (it ran, or should have, and broke) should. */
	struct metric *state =
	    metrics_gauge(((struct agent *)c->owner)->metrics, "sysobs_collector_state",
			  "1 for the collector's current state (disabled, unavailable, running, "
			  "failed), 0 for the others.",
			  state_labels);
	const char *v[] = {c->ops->name, NULL};
	struct metric_series *s = up ? metric_series(up, v) : NULL;

	if (s)
		series_set(s, c->state == COLLECTOR_RUNNING);
	for (size_t i = 0; state && i < sizeof(states) / sizeof(states[0]); i++) {
		v[1] = collector_state_name(states[i]);
		if ((s = metric_series(state, v)))
			series_set(s, c->state == states[i]);
	}
}

static void collector_fail(struct collector *c, int err, const char *what)
{
	if (!c->why[0] || c->state == COLLECTOR_RUNNING)
		snprintf(c->why, sizeof(c->why), "%s: %s", what, strerror(-err));
	c->state = COLLECTOR_FAILED;
	log_err(c->ops->name, "failed: %s", c->why);
	loop_remove(((struct agent *)c->owner)->loop, c->loop_fd_src);
	loop_remove(((struct agent *)c->owner)->loop, c->loop_timer_src);
	c->loop_fd_src = c->loop_timer_src = NULL;
	collector_set_up(c);
}

static int collector_fd_ready(int fd, void *arg)
{
	struct collector *c = arg;
	int err;

	c->last_activity_ns = clock_wall_ns();
	err = c->ops->on_ready(c);
	if (err < 0) {
		c->errors++;
		c->why[0] = '\0';
		collector_fail(c, err, "on_ready");
		return 0; /* collector_fail removed the source already */
	}
	return 0;
}

static int collector_tick(int fd, void *arg)
{
	struct collector *c = arg;
	int err;

	c->last_activity_ns = clock_wall_ns();
	err = c->ops->collect(c);
	if (err < 0) {
		static struct log_ratelimit rl;

		c->errors++;
		log_ratelimited(&rl, 10000, LOG_LVL_WARN, c->ops->name, "collect failed: %s",
				strerror(-err));
	}
	return 0;
}

/* The collector's typed config and its sink, before init. -1 after logging
 * a config error, for exit status 2. */
static int collector_config(struct agent *a, struct collector *c)
{
	void *cfg = calloc(1, c->ops->cfg_size ? c->ops->cfg_size : 1);

	c->cfg = cfg;
	c->sink = agent_sink_new(c->ops->name, a->metrics, a->store);
	if (!cfg || !c->sink) {
		log_err("agent", "out of memory");
		return -1;
	}
	if (cfg_section_parse(&a->cfg, c->section, cfg)) {
		log_err("agent", "%s", a->cfg.err);
		return -1;
	}
	for (const struct metric_desc *d = c->ops->metrics; d && d->name; d++)
		if (!sink_family(c->sink, d))
			return -1;
	return 0;
}

/* init every enabled collector; 2 on a config error, else 0. */
static int collectors_init(struct agent *a)
{
	size_t n = 0;

	while (collector_registry[n])
		n++;
	a->collectors = calloc(n, sizeof(*a->collectors));
	if (!a->collectors)
		return 1;
	a->n_collectors = n;
	for (size_t i = 0; i < n; i++) {
		struct collector *c = &a->collectors[i];
		bool enabled;
		int err;

		c->ops = collector_registry[i];
		c->owner = a;
		c->sysfs_root = a->sysfs_root ? a->sysfs_root : "/sys";
		c->hostname = a->hostname ? a->hostname : "";
		if (cfg_get_bool(&a->cfg, "http", "admin", &c->admin)) {
			log_err("agent", "%s", a->cfg.err);
			return 2;
		}
		c->fd = -1;
		snprintf(c->section, sizeof(c->section), "collector.%s", c->ops->name);
		if (cfg_get_bool(&a->cfg, c->section, "enabled", &enabled)) {
			log_err("agent", "%s", a->cfg.err);
			return 2;
		}
		if (!enabled) {
			c->state = COLLECTOR_DISABLED;
			snprintf(c->why, sizeof(c->why), "disabled in the config");
			continue;
		}
		if (collector_config(a, c))
			return 2;
		err = c->ops->init(c);
		if (err == -EINVAL && c->cfg_err_key) {
			cfg_error(&a->cfg, c->section, c->cfg_err_key, "%s", c->why);
			log_err("agent", "%s", a->cfg.err);
			return 2;
		}
		if (err == -EINVAL && a->cfg.err[0]) {
			log_err("agent", "%s", a->cfg.err);
			return 2;
		}
		if (err) {
			c->state = COLLECTOR_UNAVAILABLE;
			if (!c->why[0])
				snprintf(c->why, sizeof(c->why), "%s", strerror(-err));
			log_warn(c->ops->name, "unavailable: %s", c->why);
			continue;
		}
		c->state = COLLECTOR_RUNNING;
	}
	return 0;
}

static void collectors_start(struct agent *a)
{
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];
		int err;

		if (c->state != COLLECTOR_RUNNING)
			goto publish;
		err = c->ops->start ? c->ops->start(c) : 0;
		if (err) {
			c->state = COLLECTOR_FAILED;
			if (!c->why[0])
				snprintf(c->why, sizeof(c->why), "start: %s", strerror(-err));
			log_err(c->ops->name, "failed to start: %s", c->why);
			goto publish;
		}
		if (c->fd >= 0 && c->ops->on_ready) {
			c->loop_fd_src = loop_add_fd(a->loop, c->fd, collector_fd_ready, c);
			if (!c->loop_fd_src) {
				collector_fail(c, -errno, "watch fd");
				goto publish;
			}
		}
		if (c->interval_ms && c->ops->collect) {
			c->loop_timer_src =
			    loop_add_timer(a->loop, c->interval_ms, collector_tick, c);
			if (!c->loop_timer_src) {
				collector_fail(c, -errno, "timer");
				goto publish;
			}
			collector_tick(-1, c); /* first sample now, not one interval later */
		}
		log_info(c->ops->name, "running");
	publish:
		collector_set_up(c);
	}
}

static int on_publish(int fd, void *arg)
{
	struct agent *a = arg;

	agent_store_metrics_publish(a->store_series, a->store);
	return 0;
}

static int on_snapshot(int fd, void *arg)
{
	struct agent *a = arg;

	agent_snapshot(a->metrics, a->store, clock_wall_ns());
	return 0;
}

static int on_signal(int fd, void *arg)
{
	struct agent *a = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGHUP) {
		log_info("agent", "SIGHUP ignored: restart sysobsd to apply a new config");
		return 0;
	}
	log_info("agent", "%s: shutting down", strsignal(si.ssi_signo));
	loop_stop(a->loop);
	return 0;
}

static int write_port_file(const char *path, uint16_t port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0; /* readers never see a partial file */
}

int agent_start(struct agent *a, const char *port_file)
{
	/* static: the HTTP routes keep a pointer to it (host.tables) after
	 * this function returns */
	static const struct event_table *tables[MAX_TABLES + 1];
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct api_host host = {0};
	static const char *const build_labels[] = {"version", NULL};
	const char *version[] = {SYSOBS_VERSION};
	struct metric *build;
	char err[512];
	size_t nt = 0;
	sigset_t mask;
	int rc, sfd;

	a->sysfs_root = cfg_get(cfg_section(&a->cfg, "agent"), "sysfs_root");
	a->hostname = cfg_get(cfg_section(&a->cfg, "agent"), "hostname");
	if (storage_config(a, &sc) || http_config(a, &hc)) {
		log_err("agent", "%s", a->cfg.err);
		return 2;
	}

	a->metrics = metrics_new();
	a->loop = loop_new();
	if (!a->metrics || !a->loop)
		return 1;
	build = metrics_gauge(a->metrics, "sysobs_build_info",
			      "Always 1; the version label says which sysobsd runs.", build_labels);
	if (build)
		series_set(metric_series(build, version), 1);

	/* Every collector's tables are registered, enabled or not, so history
	 * written earlier stays queryable and the schema does not depend on
	 * which features this boot found. */
	for (size_t i = 0; collector_registry[i]; i++)
		for (const struct event_table *const *t = collector_registry[i]->tables; t && *t;
		     t++)
			if (nt < MAX_TABLES)
				tables[nt++] = *t;
	tables[nt] = NULL;
	a->store = store_open(&sc, tables, err, sizeof(err));
	if (!a->store) {
		log_err("store", "%s", err);
		return 2;
	}

	if (table_retention(a)) {
		log_err("agent", "%s", a->cfg.err);
		return 2;
	}
	rc = collectors_init(a);
	if (rc)
		return rc;
	if (store_start(a->store)) {
		log_err("store", "cannot start the writer thread");
		return 1;
	}

	a->http = http_new(&hc, a->metrics);
	host.metrics = a->metrics;
	host.store = a->store;
	host.hostname = a->hostname;
	host.tables = tables;
	host.collectors = agent_collectors_status;
	host.arg = a;
	if (!a->http || api_routes_register(a->http, &host) ||
	    history_routes_register(a->http, a->store, tables) || collector_routes_register(a))
		return 1;
	if (http_start(a->http)) {
		log_err("http", "cannot listen on %s", hc.listen);
		return 1;
	}
	log_info("http", "listening on %s (port %u)", hc.listen, http_port(a->http));

	collectors_start(a);
	/* Start-up parses big inputs (kernel BTF, ...) and frees them; give
	 * the pages back so the idle agent's RSS is what it keeps. */
	malloc_trim(0);

	a->store_series = agent_store_metrics_new(a->metrics);
	agent_store_metrics_publish(a->store_series, a->store);
	if (!loop_add_timer(a->loop, AGENT_PUBLISH_MS, on_publish, a) ||
	    (a->snapshot_ms && !loop_add_timer(a->loop, a->snapshot_ms, on_snapshot, a)))
		return 1;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || !loop_add_fd(a->loop, sfd, on_signal, a))
		return 1;

	if (port_file && write_port_file(port_file, http_port(a->http))) {
		log_err("agent", "cannot write port file %s: %s", port_file, strerror(errno));
		return 1;
	}
	return 0;
}

int agent_run(struct agent *a)
{
	return loop_run(a->loop);
}

void agent_stop(struct agent *a)
{
	/* HTTP first, so no request reads a collector being torn down. */
	http_free(a->http);
	a->http = NULL;
	free(a->route_bindings);
	a->route_bindings = NULL;
	history_routes_free();
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];

		if (c->state != COLLECTOR_DISABLED && c->ops->stop)
			c->ops->stop(c);
		agent_sink_free(c->sink);
		free((void *)c->cfg);
	}
	free(a->collectors);
	a->collectors = NULL;
	a->n_collectors = 0;
	store_close(a->store);
	a->store = NULL;
	agent_store_metrics_free(a->store_series);
	a->store_series = NULL;
	loop_free(a->loop);
	a->loop = NULL;
	metrics_free(a->metrics);
	a->metrics = NULL;
	cfg_free(&a->cfg);
}
