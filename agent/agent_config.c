/* SPDX-License-Identifier: MIT */
/*
 * The agent's own config sections, [agent], [http] and [storage], declared
 * as typed keys (CFG_KEY) and parsed by cfg_section_parse() into one struct
 * per section, as the collectors' and remote_write's are: defaults, ranges,
 * --print-config and the messages of a bad value come from the key tables.
 * What a key type cannot say (a value of 0 or at least 1s, a list, the
 * listen address's form, a user that exists) is checked here after the
 * parse, every error recorded (cfg->errors). Then the checks of everything
 * start-up reads (agent_config_validate()).
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "agent/collector_host.h"
#include "agent/expose.h"
#include "agent/names.h"
#include "api/http_allow.h"
#include "api/webconfig.h"
#include "collectors/collector.h"
#include "exporters/alertmanager.h"
#include "exporters/events.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"

/* [agent]: field names are the key names (CFG_KEY). */
struct agent_section {
	unsigned log_level;  /* enum log_level */
	unsigned log_format; /* enum log_format */
	const char *hostname;
	const char *machine_id_file;
	const char *sysfs_root;
	const char *user;
	unsigned seccomp; /* enum privsep_seccomp */
};

struct http_section {
	const char *listen;
	const char *allow;
	uint64_t max_connections;
	uint64_t max_per_ip;
	uint64_t timeout; /* ms */
	uint64_t header_timeout;
	const char *web_config_file;
	uint64_t threads;
	bool admin;
	unsigned gzip; /* enum http_gzip_mode */
};

struct storage_section {
	const char *path;
	uint64_t queue_rows;
	uint64_t batch_rows;
	uint64_t batch_ms;
	uint64_t snapshot_interval; /* ms */
	uint64_t retention;
	const char *table_retention;
	uint64_t max_size; /* bytes */
	uint64_t busy_timeout;
	uint64_t query_timeout;
	uint64_t readers;
};

/* Indexed by enum privsep_seccomp and enum http_gzip_mode. */
static const char *const seccomp_modes[] = {
    [PRIVSEP_SECCOMP_ERRNO] = "errno",
    [PRIVSEP_SECCOMP_KILL] = "kill",
    [PRIVSEP_SECCOMP_LOG] = "log",
    [PRIVSEP_SECCOMP_OFF] = "off",
    NULL,
};
static const char *const gzip_modes[] = {
    [HTTP_GZIP_AUTO] = "auto",
    [HTTP_GZIP_ALWAYS] = "always",
    [HTTP_GZIP_NEVER] = "never",
    NULL,
};

#define AK(f, t, d, h)	       CFG_KEY(struct agent_section, f, t, d, 0, 0, h)
#define HK(f, t, d, lo, hi, h) CFG_KEY(struct http_section, f, t, d, lo, hi, h)
#define SK(f, t, d, lo, hi, h) CFG_KEY(struct storage_section, f, t, d, lo, hi, h)
#define SECONDS(s)	       ((s)*1000ull)

/* Accepted since the first release, before "warn" was the documented name. */
static const char *const log_level_aliases[] = {"warning", "warn", NULL};

static const struct cfg_key agent_keys[] = {
    CFG_KEY_CHOICE_ALIAS(struct agent_section, log_level, "info", log_level_names,
			 log_level_aliases, "error, warn, info or debug"),
    CFG_KEY_CHOICE(struct agent_section, log_format, "text", log_format_names,
		   "text, logfmt or json; under systemd (JOURNAL_STREAM) without time stamps and "
		   "with <N> priority prefixes"),
    AK(hostname, CFG_STRING, "", "host name used in alerts; empty = gethostname()"),
    AK(machine_id_file, CFG_STRING, "/etc/machine-id",
       "the machine's id for sysobs_host_info (systemd's machine-id file); a container points "
       "it at the host's file mounted in, a test gives each agent its own"),
    AK(sysfs_root, CFG_STRING, "/sys",
       "root of sysfs (point at the IFS fake to try the ifs collector)"),
    AK(user, CFG_STRING, "sysobs",
       "after start-up, run as this user without capabilities (sysobs, else nobody; root "
       "keeps every privilege); IFS writes go through a helper"),
    CFG_KEY_CHOICE(struct agent_section, seccomp, "errno", seccomp_modes,
		   "system calls outside the agent's allow-list after start-up: errno (fail with "
		   "EPERM), kill (end the agent), log (allow and log), off"),
    {0},
};

static const struct cfg_key http_keys[] = {
    HK(listen, CFG_STRING, "127.0.0.1:9559", 0, 0,
       "address:port to serve on (port 0 = any free port)"),
    HK(allow, CFG_STRING, "", 0, 0,
       "client addresses served: addresses or CIDRs, loopback, any (comma-separated); empty = "
       "loopback when listen is a loopback address, else any"),
    HK(max_connections, CFG_U64, "64", 1, 10000,
       "connections served at once; past this, complete requests wait for a slot and new "
       "clients in the listen backlog (never reset)"),
    HK(max_per_ip, CFG_U64, "0", 0, 10000,
       "connections of one client address still sending their first request header (0 = half "
       "of max_connections); past this its oldest one is closed"),
    HK(timeout, CFG_DURATION, "10s", SECONDS(1), SECONDS(3600), "idle connection timeout"),
    HK(header_timeout, CFG_DURATION, "10s", 100, SECONDS(3600),
       "a connection must send a complete request header within this after it is accepted or "
       "after its previous response (slowloris)"),
    HK(web_config_file, CFG_STRING, "", 0, 0,
       "exporter-toolkit web config (YAML: tls_server_config, basic_auth_users, "
       "http_server_config), as for node_exporter's --web.config.file; empty = plain HTTP"),
    HK(threads, CFG_U64, "2", 1, 64, "HTTP worker threads"),
    HK(admin, CFG_BOOL, "false", 0, 0,
       "allow state-changing endpoints such as POST /api/v1/ifs/scans"),
    CFG_KEY_CHOICE(struct http_section, gzip, "auto", gzip_modes,
		   "gzip responses of 1 KiB or more for clients that accept it: auto (not for "
		   "loopback clients, where it only costs CPU), always or never"),
    {0},
};

static const struct cfg_key storage_keys[] = {
    SK(path, CFG_STRING, "./var/sysobs.db", 0, 0,
       "SQLite database file (its directory must exist)"),
    SK(queue_rows, CFG_U64, "65536", 16, 1u << 24,
       "bounded event queue between collectors and the writer; a metric-history snapshot "
       "(every series) is queued whole or dropped whole, so keep it well above the series "
       "count"),
    SK(batch_rows, CFG_U64, "2000", 1, 1000000, "commit after this many rows ..."),
    SK(batch_ms, CFG_U64, "200", 1, 60000, "... or after this many milliseconds"),
    SK(snapshot_interval, CFG_DURATION, "15s", 0, SECONDS(86400),
       "metric history snapshot period (0 = off)"),
    SK(retention, CFG_DURATION, "7d", 0, UINT64_MAX, "delete history older than this (0 = keep)"),
    SK(table_retention, CFG_STRING, "", 0, 0,
       "per-table retention overriding the above, e.g. drop_samples=1d, mptcp_events=30d "
       "(tables: self_samples, drop_samples, mptcp_events, ifs_scans, cachefiles_slow)"),
    SK(max_size, CFG_SIZE, "1G", 0, UINT64_MAX,
       "delete the oldest history past this size of the database file and its WAL "
       "together (0 = no cap)"),
    SK(busy_timeout, CFG_DURATION, "5s", 0, SECONDS(600),
       "how long a statement waits on a locked database"),
    SK(query_timeout, CFG_DURATION, "5s", 10, SECONDS(600),
       "an API read running longer is stopped (503 query_timeout): one expensive query "
       "cannot hold an HTTP worker"),
    SK(readers, CFG_U64, "4", 1, 64, "read-only connections for the HTTP API"),
    {0},
};

/* [kubernetes]: the name service (agent/names.h). */
struct kubernetes_section {
	const char *cri_socket;
	uint64_t refresh; /* ms */
	uint64_t timeout; /* ms */
};

#define KK(f, t, d, lo, hi, h) CFG_KEY(struct kubernetes_section, f, t, d, lo, hi, h)
static const struct cfg_key kubernetes_keys[] = {
    KK(cri_socket, CFG_STRING, "auto", 0, 0,
       "the CRI runtime's unix socket that names pods (ListPodSandbox, ListContainers): auto = "
       "the first of /run/containerd/containerd.sock and /run/crio/crio.sock that exists at "
       "start; off = none (pod UIDs from cgroup paths only)"),
    KK(refresh, CFG_DURATION, "30s", SECONDS(1), SECONDS(3600),
       "how often the pod and container lists are read again (also at once, at most once a "
       "second, when a drop comes from a Kubernetes container or namespace not known yet)"),
    KK(timeout, CFG_DURATION, "2s", 100, SECONDS(60), "a call to the runtime fails after this"),
    {0},
};

static const char *const cri_socket_auto[] = {
    "/run/containerd/containerd.sock",
    "/run/crio/crio.sock",
    NULL,
};

int agent_names_config(struct agent *a, struct names_config *nc)
{
	struct kubernetes_section s = {0};
	int bad = cfg_section_parse(&a->cfg, "kubernetes", &s);
	struct stat st;

	*nc = (struct names_config){.refresh_ms = s.refresh, .timeout_ms = s.timeout};
	if (bad)
		return -EINVAL;
	if (!s.cri_socket || !strcmp(s.cri_socket, "off") || !*s.cri_socket) {
		nc->cri_socket = "";
	} else if (!strcmp(s.cri_socket, "auto")) {
		nc->cri_socket = "";
		for (size_t i = 0; cri_socket_auto[i]; i++)
			if (!stat(cri_socket_auto[i], &st) && S_ISSOCK(st.st_mode)) {
				nc->cri_socket = cri_socket_auto[i];
				break;
			}
	} else if (s.cri_socket[0] != '/' || strlen(s.cri_socket) >= 108) {
		return cfg_error(&a->cfg, "kubernetes", "cri_socket",
				 "expected auto, off or an absolute path of a unix socket "
				 "(107 characters at most)");
	} else {
		nc->cri_socket = s.cri_socket;
	}
	return 0;
}

static const struct cfg_key collector_enabled_key = {
    "enabled", "true", "run this collector when the host supports it"};

int agent_config_declare(struct agent *a)
{
	int err;

	if ((err = cfg_declare(&a->cfg, "agent", agent_keys)) ||
	    (err = cfg_declare(&a->cfg, "http", http_keys)) ||
	    (err = cfg_declare(&a->cfg, "storage", storage_keys)) ||
	    (err = cfg_declare(&a->cfg, "kubernetes", kubernetes_keys)) ||
	    (err = expose_config_declare(&a->cfg)) || (err = remote_write_declare(&a->cfg)) ||
	    (err = events_export_declare(&a->cfg)) || (err = am_export_declare(&a->cfg)))
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

int agent_log_config(struct config *cfg, enum log_level *lvl, enum log_format *fmt)
{
	struct agent_section s = {0};
	int err = cfg_section_parse(cfg, "agent", &s);

	*lvl = (enum log_level)s.log_level;
	*fmt = (enum log_format)s.log_format;
	return err;
}

void agent_host_config(struct agent *a)
{
	struct agent_section s = {0};

	cfg_section_parse(&a->cfg, "agent", &s); /* errors: agent_privsep_config() */
	a->sysfs_root = s.sysfs_root;
	a->hostname = s.hostname;
	a->machine_id_file = s.machine_id_file;
	/* [agent] hostname, else gethostname() (which may truncate without a
	 * NUL: one is forced); "" when that fails too. */
	if (a->hostname && *a->hostname)
		snprintf(a->host, sizeof(a->host), "%s", a->hostname);
	else if (gethostname(a->host, sizeof(a->host) - 1))
		a->host[0] = '\0';
	a->host[sizeof(a->host) - 1] = '\0';
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

int agent_storage_config(struct agent *a, struct store_config *sc)
{
	struct storage_section s = {0};
	int bad = cfg_section_parse(&a->cfg, "storage", &s);

	if (s.snapshot_interval && s.snapshot_interval < SECONDS(1))
		bad |=
		    cfg_error(&a->cfg, "storage", "snapshot_interval", "must be 0 or at least 1s");
	if (s.max_size && s.max_size < (1u << 20))
		bad |= cfg_error(&a->cfg, "storage", "max_size", "must be 0 or at least 1M");
	sc->path = s.path; /* for the directory's check, even past a bad value */
	if (!s.path || !*s.path)
		bad |= cfg_error(&a->cfg, "storage", "path", "must not be empty");
	if (bad)
		return -EINVAL;
	sc->queue_rows = s.queue_rows;
	sc->batch_rows = s.batch_rows;
	sc->batch_ms = s.batch_ms;
	a->snapshot_ms = s.snapshot_interval;
	sc->retention_ms = s.retention;
	sc->max_bytes = s.max_size;
	sc->busy_timeout_ms = s.busy_timeout;
	sc->query_timeout_ms = s.query_timeout;
	sc->readers = s.readers;
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

int agent_table_retention(struct agent *a)
{
	struct storage_section s = {0};
	char *dup, *save = NULL;
	int err = 0;

	cfg_section_parse(&a->cfg, "storage", &s); /* errors: agent_storage_config() */
	if (!s.table_retention || !*s.table_retention)
		return 0;
	dup = strdup(s.table_retention);
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

int agent_http_config(struct agent *a, struct http_config *hc, bool read_files)
{
	struct http_section s = {0};
	char why[256];
	int bad = cfg_section_parse(&a->cfg, "http", &s);

	if (http_allow_check(s.allow, why, sizeof(why)))
		bad |= cfg_error(&a->cfg, "http", "allow", "%s", why);
	if (read_files && s.web_config_file && *s.web_config_file) {
		char msg[512];

		hc->web = web_config_load(s.web_config_file, msg, sizeof(msg));
		if (!hc->web)
			bad |= cfg_error(&a->cfg, "http", "web_config_file", "%s", msg);
	}
	hc->listen = s.listen;
	hc->allow = s.allow;
	hc->max_connections = s.max_connections;
	hc->max_per_ip = s.max_per_ip;
	hc->timeout_s = s.timeout / 1000;
	hc->header_timeout_ms = s.header_timeout;
	hc->threads = s.threads;
	hc->admin = s.admin;
	hc->gzip = (enum http_gzip_mode)s.gzip;
	return bad ? -EINVAL : 0;
}

int agent_privsep_config(struct agent *a, struct privsep_config *pc, bool lookup)
{
	const struct cfg_section *sec = cfg_section(&a->cfg, "agent");
	struct agent_section s = {0};
	int bad = cfg_section_parse(&a->cfg, "agent", &s);

	pc->user = s.user;
	/* The default, written out (as in the example config), falls back too. */
	pc->user_is_default = cfg_line(sec, "user") == 0 || !strcmp(pc->user, "sysobs");
	pc->seccomp = (enum privsep_seccomp)s.seccomp;
	pc->sysfs_root = a->sysfs_root;
	if (!pc->user[0] ||
	    (lookup && !pc->user_is_default && strcmp(pc->user, "root") && !getpwnam(pc->user)))
		bad |= cfg_error(&a->cfg, "agent", "user", "no user named \"%s\"", pc->user);
	return bad ? -EINVAL : 0;
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

/* The lowest port an unprivileged bind may take here (the sysctl of this
 * network namespace), 1024 when it cannot be read. */
static unsigned unprivileged_port_start(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");
	unsigned v = 1024;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 1024;
		fclose(f);
	}
	return v;
}

int agent_listen_check(struct agent *a, const char *listen, bool in_use_ok)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	unsigned port, lowest;
	int fd, one = 1, err = 0;

	if (listen_parse(a, listen, &ss, &sslen))
		return -EINVAL;
	port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
	lowest = unprivileged_port_start();
	if (port && port < lowest)
		/* Whoever checks (root outside the unit: the package's
		 * postinst, the reload's guard) could bind it; the unit, whose
		 * bounding set has no CAP_NET_BIND_SERVICE, could not. One
		 * verdict for both: the agent never counts on that capability. */
		return cfg_error(&a->cfg, "http", "listen",
				 "port %u is below net.ipv4.ip_unprivileged_port_start (%u): the "
				 "agent does not use CAP_NET_BIND_SERVICE (its unit grants none); "
				 "choose a port from %u, or lower that sysctl",
				 port, lowest, lowest);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0; /* not the address's fault; http_start() reports it */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 && !(in_use_ok && errno == EADDRINUSE))
		err = cfg_error(&a->cfg, "http", "listen", "cannot bind: %s%s", strerror(errno),
				errno == EADDRNOTAVAIL ? " (no such address on this host)" : "");
	close(fd);
	return err;
}

/* [storage] path's directory exists (the database itself is not opened). */
static int storage_dir_check(struct agent *a, const char *path)
{
	char dir[4096];
	const char *slash;
	struct stat st;

	if (!path || !*path)
		return 0; /* agent_storage_config() said so */
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

/* Whether dir is path or below it (both absolute, without "..": realpath). */
static bool path_under(const char *dir, const char *path, size_t n)
{
	while (n > 1 && path[n - 1] == '/')
		n--;
	return !strncmp(dir, path, n) && (dir[n] == '/' || dir[n] == '\0' || n == 1);
}

/*
 * The sandbox of the service (deploy/sysobsd.service): under
 * ProtectSystem=strict only its StateDirectory= and ReadWritePaths= are
 * writable, which the unit also names in SYSOBS_WRITABLE_PATHS (':'
 * separated) for this check, seen by the agent it starts, by its reload's
 * check and by the package's postinst. A database directory outside them
 * would fail only inside the unit, at its next start.
 */
static int sandbox_check(struct agent *a, const char *dir)
{
	const char *list = getenv("SYSOBS_WRITABLE_PATHS");
	char real[PATH_MAX], *dup, *save = NULL;
	bool ok = false;

	if (!list || !*list || !realpath(dir, real))
		return 0; /* no sandbox named; a missing directory: said already */
	dup = strdup(list);
	if (!dup)
		return -ENOMEM;
	for (char *p = strtok_r(dup, ":", &save); p && !ok; p = strtok_r(NULL, ":", &save))
		ok = *p == '/' && path_under(real, p, strlen(p));
	free(dup);
	if (!ok)
		return cfg_error(
		    &a->cfg, "storage", "path",
		    "directory %s is outside what the service may write "
		    "(SYSOBS_WRITABLE_PATHS=%s: its StateDirectory= and ReadWritePaths=; "
		    "ProtectSystem=strict makes the rest read-only)",
		    real, list);
	return 0;
}

int agent_db_dir_check(struct agent *a, const char *path, const struct privsep_config *pc)
{
	char dir[PATH_MAX], msg[512];
	const char *slash;

	if (storage_dir_check(a, path))
		return -EINVAL;
	if (!path || !*path)
		return 0;
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (sandbox_check(a, dir))
		return -EINVAL;
	if (pc && pc->user && privsep_check_db_dir(pc, path, msg, sizeof(msg)))
		return cfg_error(&a->cfg, "storage", "path", "%s", msg);
	return 0;
}

int agent_config_check(struct agent *a, bool host)
{
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct privsep_config pc = {0};
	struct sockaddr_storage ss;
	socklen_t sslen;
	int bad = 0;

	bad |= agent_storage_config(a, &sc);
	/* a flag (--db) may replace the path: the file's own must still be
	 * one the agent could use; a relative one names a directory of the
	 * working directory a start will have (the unit's), not this one's */
	if (host && sc.path && sc.path[0] == '/')
		bad |= storage_dir_check(a, sc.path);
	bad |= agent_http_config(a, &hc, host);
	bad |= listen_parse(a, hc.listen, &ss, &sslen);
	bad |= agent_privsep_config(a, &pc, host);
	web_config_free(hc.web);
	return bad ? -EINVAL : 0;
}

size_t agent_all_tables(const struct event_table **tables)
{
	size_t nt = 0;

	for (size_t i = 0; collector_registry[i]; i++)
		for (const struct event_table *const *t = collector_registry[i]->tables; t && *t;
		     t++)
			if (nt < AGENT_MAX_TABLES)
				tables[nt++] = *t;
	tables[nt] = NULL;
	return nt;
}

int agent_export_new(struct agent *a, const struct export_identity_buf *id, bool read_files,
		     struct events_export **out)
{
	const struct event_table *tables[AGENT_MAX_TABLES + 1];

	*out = NULL;
	agent_all_tables(tables);
	return events_export_new(&a->cfg, tables, &id->id, read_files, out);
}

static int export_config_check(struct agent *a, const struct export_identity_buf *id, bool host)
{
	struct events_export *e;
	int err = agent_export_new(a, id, host, &e);

	events_export_free(e);
	return err ? 1 : 0;
}

/* The IFS alert push's keys ([collector.ifs] alertmanager_url...). */
static int am_config_check(struct agent *a, bool host)
{
	struct am_export *am;
	int err = am_export_new(&a->cfg, host, &am);

	am_export_free(am);
	return err ? 1 : 0;
}

int agent_config_validate(struct agent *a, bool host)
{
	struct store_config sc = {0};
	struct http_config hc = {0};
	struct privsep_config pc = {0};
	struct names_config nc;
	struct remote_write *rw = NULL;
	struct export_identity_buf id;
	struct sockaddr_storage ss;
	socklen_t sslen;
	int bad = 0;

	agent_host_config(a);
	bad |= agent_storage_config(a, &sc);
	bad |= agent_table_retention(a);
	bad |= agent_http_config(a, &hc, host);
	bad |= agent_privsep_config(a, &pc, host);
	bad |= agent_names_config(a, &nc) ? 1 : 0;
	if (host) {
		/* what the start checks of this host: the database directory
		 * (for the user the agent becomes, in the unit's sandbox), a
		 * throwaway bind of the listen address (taken: by the running
		 * agent, whose reload this may be) */
		bad |= agent_db_dir_check(a, sc.path, pc.user ? &pc : NULL);
		if (hc.listen)
			bad |= agent_listen_check(a, hc.listen, true);
	} else if (hc.listen)
		bad |= listen_parse(a, hc.listen, &ss, &sslen);
	bad |= expose_config_check(&a->cfg);
	export_identity_resolve(&a->cfg, a->host, &id); /* errors: remote_write_check() */
	bad |= remote_write_check(&a->cfg, a->host, host, &rw) ? 1 : 0;
	bad |= export_config_check(a, &id, host);
	bad |= am_config_check(a, host);
	bad |= collectors_config_check(a);
	remote_write_free(rw);
	web_config_free(hc.web);
	return bad ? -EINVAL : 0;
}
