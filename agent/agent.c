/* SPDX-License-Identifier: MIT */
/*
 * Agent lifecycle: config sections, storage, collectors, HTTP, the event
 * loop and an orderly shutdown. A collector that is unavailable or fails is
 * reported and left behind; the agent keeps serving.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "agent/cgroup_ipfilter.h"
#include "agent/deadline.h"
#include "agent/collector_host.h"
#include "agent/collector_routes.h"
#include "base/log.h"
#include "exporters/alertmanager.h"
#include "exporters/clickhouse.h"
#include "exporters/events.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"
#include "agent/expose.h"
#include "agent/host_id.h"
#include "agent/mem_stage.h"
#include "agent/names.h"
#include "agent/privsep.h"
#include "agent/sink_impl.h"
#include "agent/snapshot.h"
#include "agent/status.h"
#include "api/history.h"
#include "storage/store_export.h"
#include "api/schema.h"
#include "api/routes.h"
#include "collectors/collector.h"

#define AGENT_PUBLISH_MS 1000 /* storage statistics into metrics */

static int on_publish(int fd, void *arg)
{
	struct agent *a = arg;

	agent_store_metrics_publish(a->store_series, a->store);
	return 0;
}

static struct metric_series *privhelper_rss, *privhelper_hwm;

/* The helper's VmRSS and VmHWM at every render, next to the agent's own
 * process_resident_memory_bytes. /proc/PID/status is readable by every
 * user (no ptrace check), so the agent reads it after the drop too. A
 * helper that is gone keeps its last values. */
static void privhelper_memory_hook(struct metrics *m, void *arg)
{
	char path[64], line[128];
	unsigned long long kb;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)privsep_helper_pid());
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			series_set(privhelper_rss, (double)kb * 1024);
		else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			series_set(privhelper_hwm, (double)kb * 1024);
	}
	fclose(f);
}

/* Only with a helper: the families' absence says there is none. */
static int privhelper_metrics_register(struct metrics *m)
{
	privhelper_rss = metrics_gauge1(m, "sysobs_privhelper_resident_memory_bytes",
					"Resident memory of the privileged IFS helper "
					"(sysobsd-priv) in bytes; absent when it does not run.");
	privhelper_hwm = metrics_gauge1(m, "sysobs_privhelper_peak_resident_memory_bytes",
					"Peak resident memory (VmHWM) of the privileged IFS helper "
					"in bytes.");
	if (!privhelper_rss || !privhelper_hwm)
		return -ENOMEM;
	privhelper_memory_hook(m, NULL);
	return metrics_add_hook(m, privhelper_memory_hook, NULL);
}

static int on_snapshot(int fd, void *arg)
{
	struct agent *a = arg;

	agent_snapshot(a->metrics, a->store, a->store_series, clock_wall_ns());
	return 0;
}

/* Keys SIGHUP applies to the running agent; every other key that changed is
 * named in the log as needing a restart. Collectors read their typed config
 * from their own threads and the store its retention from its writer
 * thread, so those are not changed under them. */
static const char *const reload_live_keys[] = {"agent.log_level", "agent.log_format", NULL};

static bool reload_key_is_live(const char *section, const char *key)
{
	char name[128];

	snprintf(name, sizeof(name), "%s.%s", section, key);
	for (size_t i = 0; reload_live_keys[i]; i++)
		if (!strcmp(name, reload_live_keys[i]))
			return true;
	return false;
}

/* Was this error recorded before index i (two checks of one key)? */
static bool config_error_repeated(const struct config *cfg, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(cfg->errors[j], cfg->errors[i]))
			return true;
	return false;
}

void agent_config_errors_print(const struct config *cfg, size_t from, FILE *out)
{
	for (size_t i = from; i < cfg->n_errors; i++)
		if (!config_error_repeated(cfg, i))
			fprintf(out, "%s\n", cfg->errors[i]);
}

void agent_config_errors_log(struct agent *a)
{
	const struct config *cfg = &a->cfg;

	for (; a->cfg_errors_logged < cfg->n_errors; a->cfg_errors_logged++)
		if (!config_error_repeated(cfg, a->cfg_errors_logged))
			log_err("agent", "%s", cfg->errors[a->cfg_errors_logged]);
}

/* A reload's config errors, each once, then that nothing changed. */
static void reload_errors_log(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_errors; i++)
		if (!config_error_repeated(cfg, i))
			log_err("agent", "SIGHUP: %s", cfg->errors[i]);
	log_err("agent", "SIGHUP: %s; nothing changed",
		cfg->n_errors ? "config not valid" : "cannot reload");
}

/* Sections in one config and not the other: a [remote_write.NAME] or
 * [export.NAME] a drop-in added or took away, each named; how many. */
static unsigned reload_sections_diff(const struct config *run, const struct config *fresh)
{
	unsigned n = 0;

	for (size_t i = 0; i < fresh->n_sections; i++)
		if (!cfg_section(run, fresh->sections[i].name) && ++n)
			log_warn("agent", "SIGHUP: [%s] added: needs a restart",
				 fresh->sections[i].name);
	for (size_t i = 0; i < run->n_sections; i++)
		if (!cfg_section(fresh, run->sections[i].name) && ++n)
			log_warn("agent", "SIGHUP: [%s] removed: needs a restart",
				 run->sections[i].name);
	return n;
}

/* SIGHUP: reads the config file and its drop-ins again (command-line flags
 * still win: a running value from line 0 that is not the default came from
 * a flag), then applies the live keys and names the others that changed. A
 * bad config, a value only wrong to the checks (agent_config_validate(),
 * without the host's files: read at the restart a change needs), is logged
 * error by error and changes nothing; every key is checked in the files, as
 * at start, whether or not a flag overrides it. The running config is kept
 * as it was, so the next reload compares with what actually runs. */
/* The values the command line set (no line in the file, not the default)
 * carried into the reloaded configuration: a reload does not undo a flag.
 * -1, logged, when one no longer fits. */
static int reload_keep_flags(const struct agent *a, struct agent *fresh)
{
	for (size_t i = 0; i < a->cfg.n_sections; i++) {
		const struct cfg_section *sec = &a->cfg.sections[i];

		for (const struct cfg_key *k = sec->keys; k && k->key; k++) {
			const char *v = cfg_get(sec, k->key);

			if (cfg_line(sec, k->key) == 0 && strcmp(v, k->def ? k->def : "") &&
			    cfg_set(&fresh->cfg, sec->name, k->key, v)) {
				log_err("agent", "SIGHUP: %s; nothing changed", fresh->cfg.err);
				return -1;
			}
		}
	}
	return 0;
}

/* Each key whose value the reload changes, logged as applied (a live key)
 * or as needing a restart; the count of the latter. */
static unsigned reload_keys_diff(const struct agent *a, const struct agent *fresh)
{
	unsigned restart = 0;

	for (size_t i = 0; i < a->cfg.n_sections; i++) {
		const struct cfg_section *sec = &a->cfg.sections[i];
		const struct cfg_section *nsec = cfg_section(&fresh->cfg, sec->name);

		for (const struct cfg_key *k = sec->keys; nsec && k && k->key; k++) {
			const char *was = cfg_get(sec, k->key), *now = cfg_get(nsec, k->key);

			if (!was || !now || !strcmp(was, now))
				continue;
			if (reload_key_is_live(sec->name, k->key)) {
				log_info("agent", "SIGHUP: [%s] %s = %s applied", sec->name, k->key,
					 now);
				continue;
			}
			restart++;
			log_warn("agent",
				 "SIGHUP: [%s] %s changed (\"%s\" -> \"%s\"): needs a restart",
				 sec->name, k->key, was, now);
		}
	}
	return restart;
}

static void agent_reload(struct agent *a)
{
	struct agent fresh = {0};
	enum log_level lvl;
	enum log_format fmt;
	unsigned restart;
	int bad;

	/* The certificate first, config file or not: a renewed one is what a
	 * reload is most often for (handshakes look too, once a second). */
	http_tls_reload(a->http);
	if (!a->cfg.path) {
		log_info("agent", "SIGHUP: no config file to reload (embedded defaults)");
		return;
	}
	if (agent_config_declare(&fresh)) {
		log_err("agent", "SIGHUP: cannot reload; nothing changed");
		goto out;
	}
	bad = cfg_load(&fresh.cfg, a->cfg.path);
	if (!bad)
		bad = agent_config_validate(&fresh, false);
	if (bad) {
		reload_errors_log(&fresh.cfg);
		goto out;
	}
	if (reload_keep_flags(a, &fresh))
		goto out;
	if (agent_log_config(&fresh.cfg, &lvl, &fmt)) {
		log_err("agent", "SIGHUP: %s; nothing changed", fresh.cfg.err);
		goto out;
	}
	log_set_level(lvl);
	log_set_format(fmt);
	restart = reload_keys_diff(a, &fresh);
	restart += reload_sections_diff(&a->cfg, &fresh.cfg);
	log_info("agent",
		 "SIGHUP: reloaded %s (log_level %s, log_format %s); %u change%s need%s a "
		 "restart",
		 a->cfg.path, log_level_names[lvl], log_format_names[fmt], restart,
		 restart == 1 ? "" : "s", restart == 1 ? "s" : "");
out:
	cfg_free(&fresh.cfg);
}

/*
 * The soft limit on open files (1024 by default, for select(2)) up to the
 * hard one, at most 65536: connections waiting for the HTTP server are
 * descriptors, and nothing here uses select(2).
 */
static void fd_limit_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	rlim_t want = rl.rlim_max < 65536 ? rl.rlim_max : 65536;

	if (rl.rlim_cur < want) {
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			log_warn("agent", "cannot raise the open file limit: %s", strerror(errno));
	}
}

static int on_signal(int fd, void *arg)
{
	struct agent *a = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGHUP) {
		agent_reload(a);
		return 0;
	}
	log_info("agent", "%s: shutting down", strsignal(si.ssi_signo));
	if (deadline_arm(DEADLINE_SHUTDOWN_MS))
		log_warn("agent", "cannot arm the shutdown deadline");
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

int agent_print_clickhouse_ddl(const char *cluster, FILE *out)
{
	const struct event_table *tables[AGENT_MAX_TABLES + 1];
	struct buf b = {0};
	int err;

	agent_all_tables(tables);
	if (cluster && !clickhouse_ident_ok(cluster)) {
		fprintf(stderr, "sysobsd: cluster '%s': [A-Za-z_][A-Za-z0-9_]*\n", cluster);
		return -EINVAL;
	}
	fprintf(out, "-- ClickHouse tables of sysobsd's event exporter ([export.NAME] format =\n"
		     "-- clickhouse), made by sysobsd --print-clickhouse-ddl from the event\n"
		     "-- table descriptors: docs/fleet.md.\n");
	err = clickhouse_ddl(tables, "sysobs", cluster, &b);
	if (!err)
		fputs(b.p, out);
	buf_free(&b);
	return err;
}

/* What start-up keeps between its steps. Static: the API host, the
 * history routes and the senders keep pointing at the tables, the
 * collector names and the identity's strings after agent_start() returns. */
static struct agent_boot {
	const struct event_table *tables[AGENT_MAX_TABLES + 1];
	const char *names[64];
	struct export_identity_buf identity;
	struct store_config sc;
	struct http_config hc;
	struct privsep_config pc;
	struct names_config nc;
} boot;

/* Every value of every section checked, the senders built, the
 * per-thread privilege state prepared: 2 on a config error. */
static int start_config(struct agent *a)
{
	char err[512];

	/* Once, for every path that names the host: the senders' identity (its
	 * errors are remote_write_new()'s) and the collectors' host name. */
	agent_host_config(a);
	export_identity_resolve(&a->cfg, a->host, &boot.identity);
	if (agent_storage_config(a, &boot.sc) || agent_http_config(a, &boot.hc, true) ||
	    agent_listen_check(a, boot.hc.listen, false) ||
	    agent_privsep_config(a, &boot.pc, true) || agent_names_config(a, &boot.nc) ||
	    agent_db_dir_check(a, boot.sc.path, &boot.pc) ||
	    remote_write_new(&a->cfg, a->host, &a->rw) ||
	    agent_export_new(a, &boot.identity, true, &a->exp) ||
	    am_export_new(&a->cfg, true, &a->am)) {
		agent_config_errors_log(a);
		return 2;
	}
	/* Per-thread privilege state, on the only thread there is yet. */
	if (privsep_prepare(&boot.pc, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 1;
	}
	return 0;
}

/* The registry, the loop, the exposition endpoints, the tables. */
static int start_registry(struct agent *a)
{
	int rc;

	a->metrics = metrics_new();
	a->loop = loop_new();
	if (!a->metrics || !a->loop)
		return 1;
	rc = expose_start(&a->expose, &a->cfg, a->metrics, a->loop);
	if (rc == -EINVAL) {
		agent_config_errors_log(a);
		return 2;
	}
	if (rc)
		return 1;
	mem_stage("expose");
	for (size_t i = 0; collector_registry[i] && i < 63; i++)
		boot.names[i] = collector_registry[i]->name;
	/* Every collector's tables are registered, enabled or not, so history
	 * written earlier stays queryable and the schema does not depend on
	 * which features this boot found. */
	agent_all_tables(boot.tables);
	return 0;
}

/* The collectors' init: 2 on a config error. Before the store opens:
 * their BPF loads are start-up's peak (libbpf parses the kernel's BTF,
 * ~11 MiB, for each object), and SQLite's pages (~1.6 MiB) would sit under
 * it. No collector writes or reads a row before its start. */
static int start_collectors(struct agent *a)
{
	a->admin = boot.hc.admin;
	return collectors_init(a);
}

/* The database, then its writer thread: 2 on an environment error that
 * stays (a path, permission, corrupt file), AGENT_EXIT_TEMPFAIL on one that
 * passes by itself (the disk full, another process's lock): the unit
 * restarts the agent for that, never for 2. */
static int start_store(struct agent *a)
{
	char err[512];

	a->store = store_open(&boot.sc, boot.tables, err, sizeof(err));
	if (!a->store && errno == EAGAIN) {
		log_err("store",
			"%s; exiting with status %d for the service manager to start it again "
			"(the database's file system full, locked or failing for now)",
			err, AGENT_EXIT_TEMPFAIL);
		return AGENT_EXIT_TEMPFAIL;
	}
	if (!a->store) {
		log_err("store", "%s", err);
		return 2;
	}
	mem_stage("store open");
	if (agent_table_retention(a)) {
		agent_config_errors_log(a);
		return 2;
	}
	/* After every config value was checked: an environment error. */
	if (privsep_check_db_dir(&boot.pc, boot.sc.path, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 2;
	}
	if (events_export_attach(a->exp, a->store) || am_export_attach(a->am, a->store))
		return 1;
	if (store_start(a->store)) {
		log_err("store", "cannot start the writer thread");
		return 1;
	}
	mem_stage("store writer start");
	return 0;
}

/* Every route registered, then the listening socket. */
static int start_http(struct agent *a)
{
	struct api_host host = {
	    .metrics = a->metrics,
	    .store = a->store,
	    .hostname = a->host,
	    .tables = boot.tables,
	    .collectors = agent_collectors_status,
	    .exports = agent_exports_status,
	    .arg = a,
	    .collector_names = boot.names,
	};

	a->http = http_new(&boot.hc, a->metrics);
	if (!a->http || api_routes_register(a->http, &host) ||
	    history_routes_register(a->http, a->store, boot.tables) ||
	    collector_routes_register(a) || schema_routes_register(a->http))
		return 1;
	fd_limit_raise();
	if (http_start(a->http)) {
		log_err("http", "cannot listen on %s", boot.hc.listen);
		return 1;
	}
	log_info("http", "listening on %s (port %u)", boot.hc.listen, http_port(a->http));
	cgroup_ipfilter_warn(boot.hc.listen);
	mem_stage("http start");
	return 0;
}

/* sysobs_host_info (agent/host_id.h), before remote_write starts so that
 * its first metadata names it. 0, or -ENOMEM. */
static int agent_host_info(struct agent *a)
{
	struct host_id id;
	uint64_t db_id;

	host_id_read(&id, a->machine_id_file);
	if (!store_db_id(a->store, &db_id))
		snprintf(id.db_id, sizeof(id.db_id), "%016" PRIx64, db_id);
	return host_id_publish(a->metrics, &id);
}

/* The agent's timers, the senders and the signals on the loop. */
static int start_loop_work(struct agent *a)
{
	sigset_t mask;
	int sfd;

	a->store_series = agent_store_metrics_new(a->metrics);
	agent_store_metrics_publish(a->store_series, a->store);
	if (!loop_add_timer(a->loop, AGENT_PUBLISH_MS, on_publish, a) ||
	    (a->snapshot_ms && !loop_add_timer(a->loop, a->snapshot_ms, on_snapshot, a)))
		return 1;
	names_declare(a->metrics);
	if (agent_host_info(a))
		return 1;
	if (remote_write_start(a->rw, a->store, a->metrics) ||
	    events_export_start(a->exp, a->metrics) || am_export_start(a->am, a->metrics))
		return 1;
	mem_stage("remote_write start");

	agent_signal_set(&mask);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || !loop_add_fd(a->loop, sfd, on_signal, a))
		return 1;
	return 0;
}

/*
 * Everything privileged is done: keep root for the IFS writes alone, in
 * the helper, and drop the rest. No collector that writes through it runs
 * (no IFS device at start-up): no helper, no root process without a job; a
 * device that appears later needs a restart (the ifs collector's recheck
 * says so).
 */
static int drop_privileges(struct agent *a)
{
	bool dropping = geteuid() == 0 && strcmp(boot.pc.user, "root");
	char err[512];
	int rc;

	/* The CRI runtime's socket is root's: after the drop, the helper
	 * connects to it (again after a runtime restart) and passes the
	 * descriptor. */
	if (dropping && (collectors_need_priv_writes(a) || boot.nc.cri_socket[0])) {
		rc = privsep_helper_start(a->sysfs_root, boot.nc.cri_socket);
		if (rc) {
			log_err("agent", "cannot start the privileged helper: %s", strerror(-rc));
			return 1;
		}
		if (privhelper_metrics_register(a->metrics))
			log_warn("agent", "cannot report the privileged helper's memory");
	}
	boot.pc.db_path = store_path(a->store);
	if (privsep_drop(&boot.pc, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 1;
	}
	mem_stage("privilege drop");
	if (dropping && boot.nc.cri_socket[0])
		boot.nc.connect = privsep_cri_connect;
	return 0;
}

/* The name service, after the drop: its thread connects through the
 * helper (or directly, when the agent kept root). */
static int start_names(struct agent *a)
{
	a->names = names_start(&boot.nc, a->metrics);
	if (!a->names) {
		log_err("agent", "cannot start the name service: %s", strerror(errno));
		return 1;
	}
	agent_sink_names_set(a->names);
	return 0;
}

/* The signals the loop takes through its signalfd: stop, stop, reload. */
void agent_signal_set(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

int agent_start(struct agent *a, const char *port_file)
{
	int rc;

	mem_stage("config");
	if ((rc = start_config(a)) || (rc = start_registry(a)) || (rc = start_collectors(a)) ||
	    (rc = start_store(a)) || (rc = start_http(a)))
		return rc;
	agent_sink_alerts_set(a->am); /* before a collector may raise one */
	collectors_start(a);
	/* Start-up parses big inputs (kernel BTF, ...) and frees them; give
	 * the pages back so the idle agent's RSS is what it keeps. */
	malloc_trim(0);
	mem_stage("malloc_trim");
	if ((rc = start_loop_work(a)))
		return rc;
	if (port_file && write_port_file(port_file, http_port(a->http))) {
		log_err("agent", "cannot write port file %s: %s", port_file, strerror(errno));
		return 1;
	}
	if ((rc = drop_privileges(a)))
		return rc;
	return start_names(a);
}

int agent_run(struct agent *a)
{
	return loop_run(a->loop);
}

void agent_stop(struct agent *a)
{
	/* HTTP first, so no request reads a collector being torn down. */
	deadline_stage("stopping the HTTP server");
	http_free(a->http);
	a->http = NULL;
	free(a->route_bindings);
	a->route_bindings = NULL;
	history_routes_free();
	schema_free();
	deadline_stage("stopping the collectors");
	collectors_stop(a);
	agent_sink_names_set(NULL);
	agent_sink_alerts_set(NULL);
	deadline_stage("stopping the alert push");
	am_export_free(a->am);
	a->am = NULL;
	names_stop(a->names);
	a->names = NULL;
	deadline_stage("stopping remote_write");
	remote_write_free(a->rw); /* reads the store, updates metrics */
	a->rw = NULL;
	deadline_stage("stopping the event exporters");
	events_export_free(a->exp);
	a->exp = NULL;
	deadline_stage("writing the queued rows and closing the database");
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
