/* SPDX-License-Identifier: MIT */
/*
 * sysobsd: kernel observability agent. Flags override the config file, which
 * overrides the embedded defaults; the file's values are checked all the
 * same, before the flags replace any. SIGHUP reloads the config file (see
 * agent_reload()); under systemd it reports READY=1/STOPPING=1 (Type=notify). Exit status: 0 after
 * SIGTERM/SIGINT, 2 for a bad command line, config or database, 1 for other start failures.
 * --check-config checks the config as start-up would, without starting
 * anything, and prints every error; --print-config prints the defaults, or
 * with --config the values in effect and where each came from.
 */
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>
#include <protobuf-c/protobuf-c.h>
#include <sqlite3.h>
#include <zlib.h>

#include "agent/agent.h"
#include "base/lazylib.h"
#include "base/log.h"
#include "agent/sd_notify.h"
#include "collectors/collector.h"
#include "sysobs_revision.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: sysobsd [OPTION]...\n"
	    "Watch IFS core scans, cachefiles on-demand latency, MPTCP path-manager\n"
	    "events and packet-drop reasons; keep history in SQLite; serve it over HTTP.\n"
	    "\n"
	    "  -c, --config FILE       INI config file (default: embedded defaults); then\n"
	    "                          the *.ini files of its drop-in directory (FILE.d/\n"
	    "                          for FILE.ini) in lexical order, later ones winning\n"
	    "  -l, --listen ADDR:PORT  HTTP address, e.g. 127.0.0.1:9559 ([http] listen)\n"
	    "  -d, --db FILE           SQLite database ([storage] path)\n"
	    "  -L, --log-level LEVEL   error, warn, info or debug ([agent] log_level)\n"
	    "      --sysfs-root DIR    sysfs root, e.g. the IFS fake ([agent] sysfs_root)\n"
	    "  -u, --user USER         user to run as after start-up ([agent] user; root keeps\n"
	    "                          every privilege)\n"
	    "      --port-file FILE    write the bound HTTP port here once listening\n"
	    "      --web.config.file FILE\n"
	    "                          TLS and basic auth in exporter-toolkit's YAML format\n"
	    "                          ([http] web_config_file)\n"
	    "      --check-config      check the config (and flags) as start-up would, print\n"
	    "                          every error as file:line: message and the drop-ins\n"
	    "                          read; exit 0 or 2; opens no database or BPF object,\n"
	    "                          binds [http] listen once and closes it\n"
	    "      --print-config      print every config key with its default and exit;\n"
	    "                          with --config, the values in effect, each with\n"
	    "                          the file:line it came from\n"
	    "      --print-clickhouse-ddl[=CLUSTER]\n"
	    "                          print the ClickHouse tables of the event exporter\n"
	    "                          (deploy/clickhouse/sysobs.sql), with CLUSTER also\n"
	    "                          Distributed tables <table>_all over it, and exit\n"
	    "  -h, --help              this help\n"
	    "  -V, --version           version, git revision and library versions\n"
	    "\nCollectors:\n");
	for (size_t i = 0; collector_registry[i]; i++)
		fprintf(out, "  %-12s %s\n", collector_registry[i]->name,
			collector_registry[i]->help ? collector_registry[i]->help : "");
}

enum {
	OPT_SYSFS_ROOT = 256,
	OPT_PORT_FILE,
	OPT_PRINT_CONFIG,
	OPT_WEB_CONFIG,
	OPT_CHECK_CONFIG,
	OPT_CLICKHOUSE_DDL
};

/* --version: the release, the git revision it was built from, and the
 * libraries it runs with (run-time versions where the library reports one).
 * libcurl is loaded for it (base/lazylib.h): its version or its absence. */
static void version(void)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL);
	curl_version_info_data *cv = cu ? cu->version_info(CURLVERSION_NOW) : NULL;

	printf("sysobsd %s (revision %s)\n", SYSOBS_VERSION, SYSOBS_REVISION);
	printf("libbpf %s, sqlite %s, libmicrohttpd %s, libcurl %s, protobuf-c %s, jansson %s, "
	       "zlib %s\n",
	       SYSOBS_LIBBPF_VERSION, sqlite3_libversion(), MHD_get_version(),
	       cv ? cv->version : "not installed", protobuf_c_version(), JANSSON_VERSION,
	       zlibVersion());
}

struct override {
	const char *section, *key, *value;
};

/*
 * --check-config and --print-config --config: the file and its drop-ins,
 * the file's values checked as main() checks them before the flags, then
 * the flags, then everything agent_start() would check
 * (agent_config_validate()), side-effect free. Every error on stderr, one a
 * line; 0 or 2. --print-config then writes the values in effect.
 */
static int config_offline(struct agent *a, const char *config, const struct override *over,
			  size_t n_over, bool print)
{
	int bad = 0;

	char dir[PATH_MAX];

	if (config)
		bad |= cfg_load(&a->cfg, config);
	if (config)
		bad |= agent_config_check(a, !print);
	for (size_t i = 0; i < n_over; i++)
		bad |= cfg_set(&a->cfg, over[i].section, over[i].key, over[i].value);
	/* printing asks nothing of this host (a missing ./var included) */
	bad |= agent_config_validate(a, !print);
	agent_config_errors_print(&a->cfg, 0, stderr);
	if (bad) {
		fprintf(stderr, "sysobsd: %s: config not valid\n",
			config ? config : "embedded defaults");
		return 2;
	}
	if (print) {
		cfg_print_effective(&a->cfg, stdout);
		return 0;
	}
	/* the files read: what was checked is what a start reads */
	if (!config) {
		fprintf(stderr, "sysobsd: embedded defaults: config valid\n");
		return 0;
	}
	if (cfg_dropin_dir(config, dir, sizeof(dir)))
		snprintf(dir, sizeof(dir), "%s.d", config);
	fprintf(stderr, "sysobsd: %s: config valid", config);
	if (a->cfg.n_files > 1) {
		fprintf(stderr, " with %zu drop-in%s:", a->cfg.n_files - 1,
			a->cfg.n_files > 2 ? "s" : "");
		for (size_t i = 1; i < a->cfg.n_files; i++)
			fprintf(stderr, " %s", a->cfg.files[i]);
		fputc('\n', stderr);
	} else
		fprintf(stderr, " (no drop-in in %s)\n", dir);
	return 0;
}

/* The command line: flags that are config values become overrides. */
struct cmdline {
	struct override overrides[16];
	size_t n_over;
	const char *config, *port_file;
	bool print_config, check_config;
};

/* The flags that stand for a configuration key, and the key. */
static const struct {
	int opt;
	const char *section, *key;
} option_keys[] = {
    {'u', "agent", "user"},
    {'l', "http", "listen"},
    {'d', "storage", "path"},
    {'L', "agent", "log_level"},
    {OPT_SYSFS_ROOT, "agent", "sysfs_root"},
    {OPT_WEB_CONFIG, "http", "web_config_file"},
};

/* Flag opt with argument arg: a configuration key's value kept as an
 * override, or one of the flags that are not keys. -1 to go on, else the
 * exit status. */
static int parse_option(int opt, char *arg, struct cmdline *cl)
{
	for (size_t i = 0; i < sizeof(option_keys) / sizeof(option_keys[0]); i++) {
		if (option_keys[i].opt != opt)
			continue;
		cl->overrides[cl->n_over++] =
		    (struct override){option_keys[i].section, option_keys[i].key, arg};
		if (cl->n_over == sizeof(cl->overrides) / sizeof(cl->overrides[0])) {
			fprintf(stderr, "sysobsd: too many options\n");
			return 2;
		}
		return -1;
	}
	switch (opt) {
	case 'c':
		cl->config = arg;
		return -1;
	case OPT_PORT_FILE:
		cl->port_file = arg;
		return -1;
	case OPT_PRINT_CONFIG:
		cl->print_config = true;
		return -1;
	case OPT_CHECK_CONFIG:
		cl->check_config = true;
		return -1;
	case OPT_CLICKHOUSE_DDL:
		return agent_print_clickhouse_ddl(arg, stdout) ? 1 : 0;
	case 'h':
		usage(stdout);
		return 0;
	case 'V':
		version();
		return 0;
	default:
		usage(stderr);
		return 2;
	}
}

/* -1 to go on, else the exit status (--help, --version, a usage error,
 * --print-clickhouse-ddl). */
static int parse_args(int argc, char **argv, struct cmdline *cl)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"listen", required_argument, NULL, 'l'},
	    {"db", required_argument, NULL, 'd'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT},
	    {"user", required_argument, NULL, 'u'},
	    {"port-file", required_argument, NULL, OPT_PORT_FILE},
	    {"web.config.file", required_argument, NULL, OPT_WEB_CONFIG},
	    {"print-config", no_argument, NULL, OPT_PRINT_CONFIG},
	    {"check-config", no_argument, NULL, OPT_CHECK_CONFIG},
	    {"print-clickhouse-ddl", optional_argument, NULL, OPT_CLICKHOUSE_DDL},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:l:d:L:u:hV", opts, NULL)) != -1) {
		rc = parse_option(opt, optarg, cl);
		if (rc >= 0)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "sysobsd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The config file checked as written, then the flags over it, then the
 * log settings they give: 0, or 2 after saying why. */
static int load_config(struct agent *a, const struct cmdline *cl)
{
	enum log_level lvl;
	enum log_format fmt;

	log_set_journal(log_stderr_is_journal());
	if (cl->config && cfg_load(&a->cfg, cl->config)) {
		for (size_t i = 0; i < a->cfg.n_errors; i++)
			fprintf(stderr, "sysobsd: %s\n", a->cfg.errors[i]);
		return 2;
	}
	/* The file's values as the file has them, before a flag replaces one:
	 * --listen over a bad [http] listen is refused as the bad listen alone
	 * is, and logged as agent_start() logs it. */
	if (cl->config && agent_config_check(a, true)) {
		agent_config_errors_log(a);
		return 2;
	}
	for (size_t i = 0; i < cl->n_over; i++) {
		const struct override *o = &cl->overrides[i];

		if (cfg_set(&a->cfg, o->section, o->key, o->value)) {
			fprintf(stderr, "sysobsd: %s\n", a->cfg.err);
			return 2;
		}
	}
	/* the flags' own values */
	if (agent_log_config(&a->cfg, &lvl, &fmt)) {
		fprintf(stderr, "sysobsd: %s\n", a->cfg.err);
		return 2;
	}
	log_set_level(lvl);
	log_set_format(fmt);
	return 0;
}

int main(int argc, char **argv)
{
	struct cmdline cl = {0};
	struct agent a = {0};
	sigset_t mask;
	int rc;

	rc = parse_args(argc, argv, &cl);
	if (rc >= 0)
		return rc;

	/* Signals are taken through a signalfd in the loop: block them before
	 * any thread starts so every thread inherits the mask. */
	agent_signal_set(&mask);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (agent_config_declare(&a)) {
		fprintf(stderr, "sysobsd: cannot declare config\n");
		return 1;
	}
	if (cl.print_config && !cl.config) {
		cfg_print_defaults(&a.cfg, stdout);
		cfg_free(&a.cfg);
		return 0;
	}
	if (cl.check_config || cl.print_config) {
		rc = config_offline(&a, cl.config, cl.overrides, cl.n_over, cl.print_config);
		cfg_free(&a.cfg);
		return rc;
	}
	if (load_config(&a, &cl)) {
		cfg_free(&a.cfg);
		return 2;
	}

	/* A fixed mmap threshold turns glibc's sliding one off: after the first
	 * freed BTF buffer (5.4 MiB) it would rise to that size, and the next
	 * multi-MiB buffers (kallsyms, libbpf's own BTF parse) would come from
	 * the heap and stay resident until malloc_trim(): start-up's peak
	 * VmHWM 30.3 -> 28.5 MiB (bench/idle_rss.sh). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	log_info("agent", "sysobsd %s (revision %s) starting (config: %s)", SYSOBS_VERSION,
		 SYSOBS_REVISION, cl.config ? cl.config : "embedded defaults");
	rc = agent_start(&a, cl.port_file);
	if (rc == 0) {
		/* Type=notify: serving HTTP, collectors started, privileges dropped.
		 * Without NOTIFY_SOCKET this does nothing. */
		sd_notify_send("READY=1\nSTATUS=serving");
		rc = agent_run(&a) ? 1 : 0;
		sd_notify_send("STOPPING=1");
	}
	agent_stop(&a);
	if (rc == 0)
		log_info("agent", "stopped");
	return rc;
}
