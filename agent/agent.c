/* SPDX-License-Identifier: MIT */
/*
 * Agent lifecycle: config sections, storage, collectors, HTTP, the event
 * loop and an orderly shutdown. A collector that is unavailable or fails is
 * reported and left behind; the agent keeps serving.
 */
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/cgroup_ipfilter.h"
#include "agent/deadline.h"
#include "agent/collector_host.h"
#include "agent/collector_routes.h"
#include "base/log.h"
#include "exporters/clickhouse.h"
#include "exporters/events.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"
#include "agent/expose.h"
#include "agent/mem_stage.h"
#include "agent/privsep.h"
#include "agent/snapshot.h"
#include "agent/status.h"
#include "api/history.h"
#include "api/schema.h"
#include "api/http_allow.h"
#include "api/routes.h"
#include "api/webconfig.h"
#include "collectors/collector.h"

#define MAX_TABLES	 64
#define AGENT_PUBLISH_MS 1000 /* storage statistics into metrics */

static const struct cfg_key agent_keys[] = {
    {"log_level", "info", "error, warn, info or debug"},
    {"log_format", "text",
     "text, logfmt or json; under systemd (JOURNAL_STREAM) without time stamps and with "
     "<N> priority prefixes"},
    {"hostname", "", "host name used in alerts; empty = gethostname()"},
    {"sysfs_root", "/sys", "root of sysfs (point at the IFS fake to try the ifs collector)"},
    {"user", "sysobs",
     "after start-up, run as this user without capabilities (sysobs, else nobody; root "
     "keeps every privilege); IFS writes go through a helper"},
    {"seccomp", "errno",
     "system calls outside the agent's allow-list after start-up: errno (fail with EPERM), "
     "kill (end the agent), log (allow and log), off"},
    {0},
};

static const struct cfg_key http_keys[] = {
    {"listen", "127.0.0.1:9559", "address:port to serve on (port 0 = any free port)"},
    {"allow", "",
     "client addresses served: addresses or CIDRs, loopback, any (comma-separated); empty = "
     "loopback when listen is a loopback address, else any"},
    {"max_connections", "64",
     "connections served at once; past this, complete requests wait for a slot and new clients "
     "in the listen backlog (never reset)"},
    {"max_per_ip", "0",
     "connections of one client address still sending their first request header (0 = half of "
     "max_connections); past this its oldest one is closed"},
    {"timeout", "10s", "idle connection timeout"},
    {"header_timeout", "10s",
     "a connection must send a complete request header within this after it is accepted or "
     "after its previous response (slowloris)"},
    {"web_config_file", "",
     "exporter-toolkit web config (YAML: tls_server_config, basic_auth_users, "
     "http_server_config), as for node_exporter's --web.config.file; empty = plain HTTP"},
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
    {"query_timeout", "5s",
     "an API read running longer is stopped (503 query_timeout): one expensive query "
     "cannot hold an HTTP worker"},
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
	    (err = cfg_declare(&a->cfg, "storage", storage_keys)) ||
	    (err = expose_config_declare(&a->cfg)) ||
	    (err = cfg_declare(&a->cfg, "remote_write", remote_write_keys)) ||
	    (err = events_export_declare(&a->cfg)))
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

/* Typed storage settings; every bad value is recorded (cfg->errors), the
 * last in cfg.err. */
static int storage_config(struct agent *a, struct store_config *sc)
{
	struct config *cfg = &a->cfg;
	uint64_t queue = 0, batch = 0, batch_ms = 0, snap = 0, ret = 0, size = 0, busy = 0,
		 readers = 0, qt = 0;
	int bad = 0;

	bad |= cfg_get_u64(cfg, "storage", "queue_rows", 16, 1u << 24, &queue);
	bad |= cfg_get_u64(cfg, "storage", "batch_rows", 1, 1000000, &batch);
	bad |= cfg_get_u64(cfg, "storage", "batch_ms", 1, 60000, &batch_ms);
	if (cfg_get_duration_ms(cfg, "storage", "snapshot_interval", 0, 86400000, &snap))
		bad = -EINVAL;
	else if (snap && snap < 1000)
		bad |= cfg_error(cfg, "storage", "snapshot_interval", "must be 0 or at least 1s");
	bad |= cfg_get_duration_ms(cfg, "storage", "retention", 0, UINT64_MAX, &ret);
	if (cfg_get_size(cfg, "storage", "max_size", 0, UINT64_MAX, &size))
		bad = -EINVAL;
	else if (size && size < (1u << 20))
		bad |= cfg_error(cfg, "storage", "max_size", "must be 0 or at least 1M");
	bad |= cfg_get_duration_ms(cfg, "storage", "busy_timeout", 0, 600000, &busy);
	bad |= cfg_get_duration_ms(cfg, "storage", "query_timeout", 10, 600000, &qt);
	bad |= cfg_get_u64(cfg, "storage", "readers", 1, 64, &readers);
	sc->path = cfg_get(cfg_section(cfg, "storage"), "path");
	if (!sc->path || !*sc->path)
		bad |= cfg_error(cfg, "storage", "path", "must not be empty");
	if (bad)
		return -EINVAL;
	sc->queue_rows = queue;
	sc->batch_rows = batch;
	sc->batch_ms = batch_ms;
	a->snapshot_ms = snap;
	sc->retention_ms = ret;
	sc->max_bytes = size;
	sc->busy_timeout_ms = busy;
	sc->query_timeout_ms = (unsigned)qt;
	sc->readers = readers;
	sc->log = store_log_to_agent;
	return 0;
}

/* A table of some collector (what a database opened now would hold). */
static bool table_declared(const char *name)
{
	for (size_t i = 0; collector_registry[i]; i++)
		for (const struct event_table *const *t = collector_registry[i]->tables; t && *t;
		     t++)
			if (!strcmp((*t)->name, name))
				return true;
	return false;
}

/* [storage] table_retention = "TABLE=DURATION, ...": an unknown table or a
 * bad duration is a config error (file:line), never ignored. Without a
 * store (a check), a table is known if a collector declares it. */
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
		else if (a->store ? store_set_table_retention(a->store, name, ms)
				  : !table_declared(name))
			err = cfg_error(&a->cfg, "storage", "table_retention",
					"no table '%s' in this database", name);
	}
	free(dup);
	return err;
}

/* [http]: every bad value recorded; the web config file is read and parsed
 * only with read_files (not by a reload's check, after the drop). */
static int http_config(struct agent *a, struct http_config *hc, bool read_files)
{
	struct config *cfg = &a->cfg;
	uint64_t maxc = 0, timeout = 0, threads = 0, per_ip = 0, header_timeout = 0;
	const char *gz, *web;
	char why[256];
	bool admin = false;
	int bad = 0;

	bad |= cfg_get_u64(cfg, "http", "max_connections", 1, 10000, &maxc);
	bad |= cfg_get_duration_ms(cfg, "http", "timeout", 1000, 3600000, &timeout);
	bad |= cfg_get_u64(cfg, "http", "threads", 1, 64, &threads);
	bad |= cfg_get_u64(cfg, "http", "max_per_ip", 0, 10000, &per_ip);
	bad |= cfg_get_duration_ms(cfg, "http", "header_timeout", 100, 3600000, &header_timeout);
	bad |= cfg_get_bool(cfg, "http", "admin", &admin);
	hc->max_per_ip = per_ip;
	hc->header_timeout_ms = header_timeout;
	hc->allow = cfg_get(cfg_section(cfg, "http"), "allow");
	if (http_allow_check(hc->allow, why, sizeof(why)))
		bad |= cfg_error(cfg, "http", "allow", "%s", why);
	web = cfg_get(cfg_section(cfg, "http"), "web_config_file");
	if (read_files && web && *web) {
		char msg[512];

		hc->web = web_config_load(web, msg, sizeof(msg));
		if (!hc->web)
			bad |= cfg_error(cfg, "http", "web_config_file", "%s", msg);
	}
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
		bad |= cfg_error(cfg, "http", "gzip", "must be auto, always or never");
	return bad ? -EINVAL : 0;
}

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

	agent_snapshot(a->metrics, a->store, clock_wall_ns());
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

/* SIGHUP: reads the config file and its drop-ins again (command-line flags
 * still win: a running value from line 0 that is not the default came from
 * a flag), then applies the live keys and names the others that changed. A
 * bad config, a value only wrong to the checks (agent_config_validate(),
 * without the host's files: read at the restart a change needs), is logged
 * error by error and changes nothing; every key is checked in the files, as
 * at start, whether or not a flag overrides it. The running config is kept
 * as it was, so the next reload compares with what actually runs. */
static void agent_reload(struct agent *a)
{
	struct agent fresh = {0};
	enum log_level lvl;
	enum log_format fmt;
	unsigned restart = 0;
	int bad;

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
	for (size_t i = 0; i < a->cfg.n_sections; i++) {
		const struct cfg_section *sec = &a->cfg.sections[i];

		for (const struct cfg_key *k = sec->keys; k && k->key; k++) {
			const char *v = cfg_get(sec, k->key);

			if (cfg_line(sec, k->key) == 0 && strcmp(v, k->def ? k->def : "") &&
			    cfg_set(&fresh.cfg, sec->name, k->key, v)) {
				log_err("agent", "SIGHUP: %s; nothing changed", fresh.cfg.err);
				goto out;
			}
		}
	}
	if (agent_log_config(&fresh.cfg, &lvl, &fmt)) {
		log_err("agent", "SIGHUP: %s; nothing changed", fresh.cfg.err);
		goto out;
	}
	log_set_level(lvl);
	log_set_format(fmt);
	for (size_t i = 0; i < a->cfg.n_sections; i++) {
		const struct cfg_section *sec = &a->cfg.sections[i];
		const struct cfg_section *nsec = cfg_section(&fresh.cfg, sec->name);

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
	log_info("agent",
		 "SIGHUP: reloaded %s (log_level %s, log_format %s); %u change%s need%s a "
		 "restart",
		 a->cfg.path, cfg_get(cfg_section(&fresh.cfg, "agent"), "log_level"),
		 cfg_get(cfg_section(&fresh.cfg, "agent"), "log_format"), restart,
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

static const char *const seccomp_modes[] = {
    [PRIVSEP_SECCOMP_OFF] = "off",
    [PRIVSEP_SECCOMP_LOG] = "log",
    [PRIVSEP_SECCOMP_ERRNO] = "errno",
    [PRIVSEP_SECCOMP_KILL] = "kill",
};

/* [agent] user and seccomp, checked before anything starts. The user is
 * looked up only with lookup (not by a reload's check, which runs under the
 * agent's own seccomp filter, where NSS may not work). */
static int privsep_config(struct agent *a, struct privsep_config *pc, bool lookup)
{
	const struct cfg_section *sec = cfg_section(&a->cfg, "agent");
	const char *mode = cfg_get(sec, "seccomp");
	int bad = -EINVAL;

	pc->user = cfg_get(sec, "user");
	/* The default, written out (as in the example config), falls back too. */
	pc->user_is_default = cfg_line(sec, "user") == 0 || !strcmp(pc->user, "sysobs");
	pc->sysfs_root = a->sysfs_root;
	for (size_t i = 0; i < sizeof(seccomp_modes) / sizeof(seccomp_modes[0]); i++)
		if (!strcmp(mode, seccomp_modes[i])) {
			pc->seccomp = (enum privsep_seccomp)i;
			bad = 0;
		}
	if (bad)
		cfg_error(&a->cfg, "agent", "seccomp", "must be errno, kill, log or off");
	if (!pc->user[0] ||
	    (lookup && !pc->user_is_default && strcmp(pc->user, "root") && !getpwnam(pc->user)))
		bad |= cfg_error(&a->cfg, "agent", "user", "no user named \"%s\"", pc->user);
	return bad;
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

/* [http] listen's grammar alone; what agent_config_check() asks of a value
 * a flag may replace. */
static int listen_parse(struct agent *a, const char *listen, struct sockaddr_storage *ss,
			socklen_t *sslen)
{
	if (http_listen_parse(listen, ss, sslen))
		return cfg_error(&a->cfg, "http", "listen",
				 "expected HOST:PORT, [IPV6]:PORT or :PORT");
	return 0;
}

/* [http] listen must parse and be bindable now, before anything is loaded
 * or attached: a bad address or a port in use exits 2 at once. The probe
 * socket is closed again; http_start() binds for real later. */
static int listen_check(struct agent *a, const char *listen)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int fd, one = 1, err = 0;

	if (listen_parse(a, listen, &ss, &sslen))
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0; /* not the address's fault; http_start() reports it */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0)
		err = cfg_error(&a->cfg, "http", "listen", "cannot bind: %s", strerror(errno));
	close(fd);
	return err;
}

int agent_log_config(struct config *cfg, enum log_level *lvl, enum log_format *fmt)
{
	const struct cfg_section *sec = cfg_section(cfg, "agent");
	int bad = 0;

	if (log_level_parse(cfg_get(sec, "log_level"), lvl))
		bad |= cfg_error(cfg, "agent", "log_level", "expected error, warn, info or debug");
	if (log_format_parse(cfg_get(sec, "log_format"), fmt))
		bad |= cfg_error(cfg, "agent", "log_format", "expected text, logfmt or json");
	return bad;
}

int agent_config_check(struct agent *a)
{
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct privsep_config pc = {0};
	struct sockaddr_storage ss;
	enum log_level lvl;
	enum log_format fmt;
	socklen_t sslen;
	int bad = 0;

	bad |= agent_log_config(&a->cfg, &lvl, &fmt);
	bad |= storage_config(a, &sc);
	bad |= http_config(a, &hc, true);
	bad |= listen_parse(a, hc.listen, &ss, &sslen);
	bad |= privsep_config(a, &pc, true);
	web_config_free(hc.web);
	return bad ? -EINVAL : 0;
}

/* [storage] path's directory exists (the database itself is not opened). */
static int storage_dir_check(struct agent *a)
{
	const char *path = cfg_get(cfg_section(&a->cfg, "storage"), "path");
	char dir[4096];
	const char *slash;
	struct stat st;

	if (!path || !*path)
		return 0; /* storage_config() said so */
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st))
		return cfg_error(&a->cfg, "storage", "path", "directory %s: %s", dir,
				 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cfg_error(&a->cfg, "storage", "path", "%s is not a directory", dir);
	return 0;
}

/* Every event table any collector declares, NULL-terminated, into
 * tables[MAX_TABLES + 1]: the store has them all, whichever run. */
static size_t all_tables(const struct event_table **tables)
{
	size_t nt = 0;

	for (size_t i = 0; collector_registry[i]; i++)
		for (const struct event_table *const *t = collector_registry[i]->tables; t && *t;
		     t++)
			if (nt < MAX_TABLES)
				tables[nt++] = *t;
	tables[nt] = NULL;
	return nt;
}

int agent_print_clickhouse_ddl(const char *cluster, FILE *out)
{
	const struct event_table *tables[MAX_TABLES + 1];
	struct buf b = {0};
	int err;

	all_tables(tables);
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

/* [export.NAME] sections, with the host's identity (a failed resolution:
 * remote_write_check() names the key, and job and instance are ""). */
static int export_new(struct agent *a, const struct export_identity_buf *id, bool read_files,
		      struct events_export **out)
{
	const struct event_table *tables[MAX_TABLES + 1];

	*out = NULL;
	all_tables(tables);
	return events_export_new(&a->cfg, tables, &id->id, read_files, out);
}

static int export_config_check(struct agent *a, const struct export_identity_buf *id, bool host)
{
	struct events_export *e;
	int err = export_new(a, id, host, &e);

	events_export_free(e);
	return err ? 1 : 0;
}

/* a->host: [agent] hostname, else gethostname() (which may truncate
 * without a NUL: one is forced); "" when that fails too. */
static void agent_host_resolve(struct agent *a)
{
	if (a->hostname && *a->hostname)
		snprintf(a->host, sizeof(a->host), "%s", a->hostname);
	else if (gethostname(a->host, sizeof(a->host) - 1))
		a->host[0] = '\0';
	a->host[sizeof(a->host) - 1] = '\0';
}

int agent_config_validate(struct agent *a, bool host)
{
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct privsep_config pc = {0};
	struct remote_write *rw = NULL;
	struct export_identity_buf id;
	struct sockaddr_storage ss;
	enum log_level lvl;
	enum log_format fmt;
	socklen_t sslen;
	int bad = 0;

	a->sysfs_root = cfg_get(cfg_section(&a->cfg, "agent"), "sysfs_root");
	a->hostname = cfg_get(cfg_section(&a->cfg, "agent"), "hostname");
	agent_host_resolve(a);
	bad |= agent_log_config(&a->cfg, &lvl, &fmt);
	bad |= storage_config(a, &sc);
	bad |= table_retention(a);
	if (host)
		bad |= storage_dir_check(a);
	bad |= http_config(a, &hc, host);
	if (hc.listen)
		bad |= listen_parse(a, hc.listen, &ss, &sslen);
	bad |= privsep_config(a, &pc, host);
	bad |= expose_config_check(&a->cfg);
	export_identity_resolve(&a->cfg, a->host, &id); /* errors: remote_write_check() */
	bad |= remote_write_check(&a->cfg, &id, host, &rw);
	bad |= export_config_check(a, &id, host);
	bad |= collectors_config_check(a);
	remote_write_free(rw);
	web_config_free(hc.web);
	return bad ? -EINVAL : 0;
}

int agent_start(struct agent *a, const char *port_file)
{
	/* static: the API host and history routes keep pointing at it after
	 * agent_start() returns (ASan: stack use after return) */
	static const struct event_table *tables[MAX_TABLES + 1];
	/* static: the senders keep pointing at its strings */
	static struct export_identity_buf identity;
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct api_host host = {0};
	struct privsep_config pc = {0};
	static const char *names[64];
	char err[512];
	sigset_t mask;
	int rc, sfd;

	mem_stage("config");
	a->sysfs_root = cfg_get(cfg_section(&a->cfg, "agent"), "sysfs_root");
	a->hostname = cfg_get(cfg_section(&a->cfg, "agent"), "hostname");
	/* Once, for every path that names the host: the senders' identity (its
	 * errors are remote_write_new()'s) and the collectors' host name. */
	agent_host_resolve(a);
	export_identity_resolve(&a->cfg, a->host, &identity);
	if (storage_config(a, &sc) || http_config(a, &hc, true) || listen_check(a, hc.listen) ||
	    privsep_config(a, &pc, true) || remote_write_new(&a->cfg, &identity, &a->rw) ||
	    export_new(a, &identity, true, &a->exp)) {
		agent_config_errors_log(a);
		return 2;
	}
	/* Per-thread privilege state, on the only thread there is yet. */
	if (privsep_prepare(&pc, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 1;
	}

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
		names[i] = collector_registry[i]->name;

	/* Every collector's tables are registered, enabled or not, so history
	 * written earlier stays queryable and the schema does not depend on
	 * which features this boot found. */
	all_tables(tables);
	a->store = store_open(&sc, tables, err, sizeof(err));
	if (!a->store) {
		log_err("store", "%s", err);
		return 2;
	}
	mem_stage("store open");

	if (table_retention(a)) {
		agent_config_errors_log(a);
		return 2;
	}
	rc = collectors_init(a);
	if (rc)
		return rc;
	/* After every config value was checked: an environment error. */
	if (privsep_check_db_dir(&pc, sc.path, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 2;
	}
	if (events_export_attach(a->exp, a->store))
		return 1;
	if (store_start(a->store)) {
		log_err("store", "cannot start the writer thread");
		return 1;
	}
	mem_stage("store writer start");

	a->http = http_new(&hc, a->metrics);
	host.metrics = a->metrics;
	host.store = a->store;
	host.hostname = a->hostname;
	host.tables = tables;
	host.collectors = agent_collectors_status;
	host.exports = agent_exports_status;
	host.arg = a;
	host.collector_names = names;
	if (!a->http || api_routes_register(a->http, &host) ||
	    history_routes_register(a->http, a->store, tables) || collector_routes_register(a) ||
	    schema_routes_register(a->http))
		return 1;
	fd_limit_raise();
	if (http_start(a->http)) {
		log_err("http", "cannot listen on %s", hc.listen);
		return 1;
	}
	log_info("http", "listening on %s (port %u)", hc.listen, http_port(a->http));
	cgroup_ipfilter_warn(hc.listen);
	mem_stage("http start");

	collectors_start(a);
	/* Start-up parses big inputs (kernel BTF, ...) and frees them; give
	 * the pages back so the idle agent's RSS is what it keeps. */
	malloc_trim(0);
	mem_stage("malloc_trim");

	a->store_series = agent_store_metrics_new(a->metrics);
	agent_store_metrics_publish(a->store_series, a->store);
	if (!loop_add_timer(a->loop, AGENT_PUBLISH_MS, on_publish, a) ||
	    (a->snapshot_ms && !loop_add_timer(a->loop, a->snapshot_ms, on_snapshot, a)))
		return 1;
	if (remote_write_start(a->rw, a->store, a->metrics) ||
	    events_export_start(a->exp, a->metrics))
		return 1;
	mem_stage("remote_write start");

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

	/* Everything privileged is done: keep root for the IFS writes alone,
	 * in the helper, and drop the rest. No collector that writes through
	 * it runs (no IFS device at start-up): no helper, no root process
	 * without a job; a device that appears later needs a restart (the
	 * ifs collector's recheck says so). */
	if (geteuid() == 0 && strcmp(pc.user, "root") && collectors_need_priv_writes(a)) {
		rc = privsep_helper_start(a->sysfs_root);
		if (rc) {
			log_err("agent", "cannot start the privileged helper: %s", strerror(-rc));
			return 1;
		}
		if (privhelper_metrics_register(a->metrics))
			log_warn("agent", "cannot report the privileged helper's memory");
	}
	pc.db_path = store_path(a->store);
	if (privsep_drop(&pc, err, sizeof(err))) {
		log_err("agent", "%s", err);
		return 1;
	}
	mem_stage("privilege drop");
	return 0;
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
