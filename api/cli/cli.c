/* SPDX-License-Identifier: MIT */
/*
 * sysobs: the command-line client of sysobsd's REST API (docs/api.md).
 *
 *   sysobs [OPTION]... COMMAND [ARG]... [KEY=VALUE]...
 *
 * Tables by default, fetched in protobuf (api/proto/sysobs.proto, decoded by
 * protobuf-c); -o json prints the agent's proto3 JSON as it came, -o
 * protobuf writes the binary message. KEY=VALUE arguments become query
 * parameters (reason=NO_SOCKET, protocol=UDP, netns=..., test=scan, ...).
 * TLS and basic auth use the names of Prometheus' http_config, which is
 * what an exporter-toolkit web-config on the serving side is matched with:
 * --ca-file, --cert-file/--key-file, --insecure-skip-verify,
 * --basic-auth-user with --basic-auth-password-file.
 *
 * Exit status: 0 ok, 1 the agent could not be reached or answered an error,
 * 2 a usage error, 3 (status) an export destination or remote_write stuck
 * or losing rows (GET /readyz). Errors are one line on stderr.
 *
 * This file: the options, the command table and each command, and the
 * fetch of a route (with --follow, its polling). The requests are
 * cli_http.c, any list as GET /api/v1/schema describes it cli_table.c, the
 * few printers of their own and the errors cli_print.c (cli_internal.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli_internal.h"
#include "cli_table.h"
#include "api/proto/messages.h"
#include "api/proto/sysobs.pb-c.h"

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: sysobs [OPTION]... COMMAND [ARG]... [KEY=VALUE]...\n"
	    "Query a sysobsd agent over its REST API.\n"
	    "\n"
	    "Commands:\n"
	    "  status                  agent health, each collector's state and each export "
	    "(remote_write\n"
	    "                          too); exit status 3 when one is stuck or losing rows\n"
	    "  export                  event export destinations: backlog, last success, errors\n"
	    "  drops                   sampled packet drops (reason=, protocol=, addr=, port=, "
	    "...)\n"
	    "  drops pcap [KEY=VALUE]  the same samples as a pcapng file on stdout (Wireshark, "
	    "tshark);\n"
	    "                          --follow streams new ones: | wireshark -k -i -\n"
	    "  mptcp [events|subflows] live MPTCP connections and subflows (refresh=1: their TCP "
	    "state now),\n"
	    "                          or path-manager events, or subflow health history\n"
	    "  ifs [scans]             each core's last IFS result per test, or the scan history\n"
	    "  cachefiles              slow cachefiles on-demand requests (op=, volume=)\n"
	    "  schema                  every list route of the agent and its message\n"
	    "  list PATH               any list route of the schema as a table, e.g. list\n"
	    "                          /api/v1/cachefiles/daemon\n"
	    "  series METRIC [MATCH]   metric history, e.g. series sysobs_collector_up "
	    "'{collector=\"drops\"}'\n"
	    "  scan CPU|PKG:CORE... [test=scan|array|sbaf]...\n"
	    "                          queue IFS scans (admin; the agent needs [http] admin = "
	    "true)\n"
	    "\n"
	    "Options:\n"
	    "  -s, --server URL            agent (default $SYSOBS_URL or http://127.0.0.1:9559)\n"
	    "  -o, --output FORMAT         table (default), json or protobuf\n"
	    "      --since TIME            start of the window: -15m, -1h30m, RFC 3339, unix "
	    "seconds\n"
	    "      --until TIME            end of the window (default now)\n"
	    "  -n, --limit N               rows per request\n"
	    "      --step DURATION         series: points on a grid of this step\n"
	    "  -f, --follow                print new rows as they arrive (tables only), until ^C\n"
	    "      --ca-file FILE          CA bundle to verify the agent's certificate\n"
	    "      --cert-file FILE        client certificate (PEM), with --key-file\n"
	    "      --key-file FILE         client key (PEM)\n"
	    "      --insecure-skip-verify  do not verify the agent's certificate (testing only)\n"
	    "      --basic-auth-user USER  HTTP basic auth, with --basic-auth-password-file\n"
	    "      --basic-auth-password-file FILE\n"
	    "                              the password, first line (trailing newline ignored)\n"
	    "      --timeout SECONDS       per request (default 10)\n"
	    "      --stuck-after DURATION  status: an export with rows pending longer than this, "
	    "or\n"
	    "                              that lost rows this recently, is not ready (default: "
	    "the\n"
	    "                              agent's, 5m)\n"
	    "  -h, --help                  this help\n"
	    "  -V, --version               version\n"
	    "\nExit status: 0 ok, 1 agent unreachable or error answer, 2 usage error,\n"
	    "3 (status) an export or remote_write stuck or losing rows.\n");
}

static void __attribute__((format(printf, 1, 2), noreturn)) die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("sysobs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (sysobs --help)\n", stderr);
	exit(2);
}

/* The agent's entry of GET /api/v1/schema for path, fetched once, and the
 * descriptor of its list message; NULL after a one-line error. */
static const Sysobs__V1__SchemaRoute *schema_route(const struct opts *o, const char *path,
						   const ProtobufCMessageDescriptor **list)
{
	static Sysobs__V1__SchemaRouteList *schema;
	struct body b;
	long code;

	if (!schema) {
		code = http_call(o, "/api/v1/schema", NULL, 0, false, NULL, 0, &b);
		if (code >= 200 && code <= 299)
			schema = sysobs__v1__schema_route_list__unpack(NULL, b.len,
								       (const uint8_t *)b.data);
		else if (code >= 0)
			report_error(code, &b, false);
		free(b.data);
		if (!schema) {
			if (code >= 200 && code <= 299)
				err_line("cannot decode the agent's GET /api/v1/schema");
			return NULL;
		}
	}
	for (size_t i = 0; i < schema->n_data; i++) {
		const Sysobs__V1__SchemaRoute *r = schema->data[i];

		if (strcmp(r->path, path))
			continue;
		*list = sysobs_message_find(r->list_message);
		if (*list)
			return r;
		err_line("%s answers %s, which this sysobs does not know: a newer agent?", path,
			 r->list_message);
		return NULL;
	}
	err_line("the agent's GET /api/v1/schema has no %s", path);
	return NULL;
}

/* A list of path in b as the table GET /api/v1/schema describes: the rows
 * printed, or (size_t)-1 after a one-line error. */
static size_t list_print(const struct opts *o, const char *path, const struct body *b,
			 struct table_view *view, bool header, int64_t after_id, int64_t *max_id)
{
	const ProtobufCMessageDescriptor *list = NULL;
	const Sysobs__V1__SchemaRoute *route = schema_route(o, path, &list);

	if (!route)
		return (size_t)-1;
	return table_print(stdout, route, list, b->data, b->len, view, header, after_id, max_id);
}

/* The query parameters of a fetch (show, drops pcap), with the buffers of
 * the items made from options. */
struct fetch_query {
	const char *q[MAX_PARAMS + 8];
	size_t n;
	char limit[64], until[80], since[80];
};

/* show()'s query: extra, the KEY=VALUE arguments, --limit, --until and
 * the start (--since, or the last minute with --follow); the start is the
 * last item when there is one. */
static void show_query_build(const struct opts *o, const char *const *extra, size_t n_extra,
			     struct fetch_query *sq)
{
	sq->n = 0;
	for (size_t i = 0; i < n_extra; i++)
		sq->q[sq->n++] = extra[i];
	for (size_t i = 0; i < o->n_params; i++)
		sq->q[sq->n++] = o->params[i];
	if (o->limit) {
		snprintf(sq->limit, sizeof(sq->limit), "limit=%s", o->limit);
		sq->q[sq->n++] = sq->limit;
	}
	if (o->until) {
		snprintf(sq->until, sizeof(sq->until), "end=%s", o->until);
		sq->q[sq->n++] = sq->until;
	}
	if (o->since || o->follow) {
		snprintf(sq->since, sizeof(sq->since), "start=%s", o->since ? o->since : "-1m");
		sq->q[sq->n++] = sq->since;
	}
}

/* -o json or -o protobuf: the answer as it came (JSON ending in a
 * newline; protobuf never to a terminal). 0, or 1 after an error line. */
static int show_raw(const struct opts *o, const struct body *b)
{
	if (o->output == OUT_PROTOBUF && isatty(1)) {
		err_line("refusing to write protobuf to a terminal: redirect it");
		return 1;
	}
	fwrite(b->data, 1, b->len, stdout);
	if (o->output == OUT_JSON && b->len && b->data[b->len - 1] != '\n')
		putchar('\n');
	return 0;
}

/* Fetches and prints one route, with its own printer or (print NULL) as
 * the table GET /api/v1/schema describes; with --follow, polls it every
 * second and prints the rows newer than the newest printed. */
static int show(const struct opts *o, const char *path, const char *const *extra, size_t n_extra,
		print_fn print, bool history)
{
	struct table_view view = {0};
	struct fetch_query sq;
	int64_t max_id = 0;
	bool first = true;

	if (o->follow && (o->output != OUT_TABLE || !history))
		die_usage("--follow works on history tables (drops, mptcp events, ifs scans, "
			  "cachefiles) with -o table");
	show_query_build(o, extra, n_extra, &sq);
	for (;;) {
		struct body b;
		long code = http_call(o, path, sq.q, sq.n, o->output == OUT_JSON, NULL, 0, &b);
		size_t rows;

		if (code >= 0 && (code < 200 || code > 299))
			report_error(code, &b, o->output == OUT_JSON);
		if (code < 200 || code > 299) {
			free(b.data);
			return 1;
		}
		if (o->output != OUT_TABLE) {
			int rc = show_raw(o, &b);

			free(b.data);
			return rc;
		}
		if (print)
			rows = print(&b, first, max_id, &max_id);
		else
			rows = list_print(o, path, &b, &view, first, max_id, &max_id);
		free(b.data);
		if (rows == (size_t)-1)
			return 1;
		if (!o->follow || stop)
			return 0;
		fflush(stdout);
		first = false;
		/* next polls: only what is newer than the window's newest row */
		snprintf(sq.since, sizeof(sq.since), "start=-%ds", 10 * FOLLOW_POLL);
		sleep(FOLLOW_POLL);
		if (stop)
			return 0;
	}
}

static void add_param(struct opts *o, const char *kv);

/* drops pcap's query: the KEY=VALUE arguments, --limit (1000 with
 * --follow), the start (--since, or the last minute with --follow) and
 * --until. */
static void pcap_query_build(const struct opts *o, struct fetch_query *sq)
{
	sq->n = 0;
	for (size_t i = 0; i < o->n_params; i++)
		sq->q[sq->n++] = o->params[i];
	if (o->limit || o->follow) {
		snprintf(sq->limit, sizeof(sq->limit), "limit=%s", o->limit ? o->limit : "1000");
		sq->q[sq->n++] = sq->limit;
	}
	if (o->since || o->follow) {
		snprintf(sq->since, sizeof(sq->since), "start=%s", o->since ? o->since : "-1m");
		sq->q[sq->n++] = sq->since;
	}
	if (o->until) {
		snprintf(sq->until, sizeof(sq->until), "end=%s", o->until);
		sq->q[sq->n++] = sq->until;
	}
}

/* drops pcap: the samples page as pcapng (the agent writes the file), to
 * stdout; filters and --since/--until/--limit as for drops. */
static int cmd_drops_pcap(struct opts *o, int argc, char **argv)
{
	struct pcap_follow f = {0};
	struct fetch_query sq;
	int rc = 1;

	if (isatty(1))
		die_usage("drops pcap: refusing to write pcapng to a terminal: redirect it");
	if (o->follow && o->until)
		die_usage("drops pcap: --follow and --until do not go together");
	for (int i = 0; i < argc; i++)
		add_param(o, argv[i]);
	pcap_query_build(o, &sq);
	o->accept = "application/x-pcapng";
	for (;;) {
		struct body b;
		long code = http_call(o, "/api/v1/drops/samples", sq.q, sq.n, false, NULL, 0, &b);

		if (code < 0)
			goto out;
		if (code < 200 || code > 299) {
			report_error(code, &b, true);
			free(b.data);
			goto out;
		}
		if (!o->follow) {
			if (fwrite(b.data, 1, b.len, stdout) != b.len)
				code = -1;
		} else if (pcap_follow_merge(&f, (const uint8_t *)b.data, b.len, stdout) < 0) {
			err_line("the agent's answer is not the pcapng it writes");
			free(b.data);
			goto out;
		}
		free(b.data);
		if (code < 0 || fflush(stdout)) {
			if (!o->follow || errno != EPIPE) /* the reader went away */
				err_line("writing the pcapng to stdout: %s", strerror(errno));
			rc = !o->follow || errno != EPIPE;
			goto out;
		}
		if (!o->follow || stop)
			break;
		/* next polls: the last seconds, packets newer than those written */
		snprintf(sq.since, sizeof(sq.since), "start=-%ds", 10 * FOLLOW_POLL);
		sleep(FOLLOW_POLL);
		if (stop)
			break;
	}
	rc = 0;
out:
	pcap_follow_free(&f);
	return rc;
}

/* status, after the collectors: the export destinations, if any (an agent
 * older than GET /api/v1/export answers 404: none). */
static int status_exports(const struct opts *o)
{
	struct table_view view = {0};
	int64_t max_id = 0;
	size_t rows = 0;
	Sysobs__V1__ExportList *m;
	struct body b;
	long code = http_call(o, "/api/v1/export", NULL, 0, false, NULL, 0, &b);

	if (code < 0 || code == 404) {
		free(b.data);
		return code < 0;
	}
	if (code < 200 || code > 299) {
		report_error(code, &b, false);
		free(b.data);
		return 1;
	}
	m = sysobs__v1__export_list__unpack(NULL, b.len, (const uint8_t *)b.data);
	if (m && m->n_data) {
		putchar('\n');
		rows = list_print(o, "/api/v1/export", &b, &view, true, 0, &max_id);
	} else if (!m) {
		err_line("cannot decode the agent's answer as Sysobs__V1__ExportList");
	}
	free(b.data);
	if (m)
		sysobs__v1__export_list__free_unpacked(m, NULL);
	return !m || rows == (size_t)-1;
}

/*
 * status, last: GET /readyz (with --stuck-after). Each destination stuck or
 * losing rows is printed (table output) or said on stderr (json, protobuf),
 * and makes the exit status 3. An agent older than /readyz (404): ready.
 */
static int status_ready(const struct opts *o)
{
	char q[96];
	const char *qp[] = {q};
	Sysobs__V1__Readiness *r;
	struct body b;
	long code;

	snprintf(q, sizeof(q), "stuck_after=%s", o->stuck_after ? o->stuck_after : "");
	code = http_call(o, "/readyz", qp, o->stuck_after ? 1 : 0, false, NULL, 0, &b);
	if (code < 0 || code == 404) {
		free(b.data);
		return code < 0;
	}
	if (code != 200 && code != 503) {
		report_error(code, &b, false);
		free(b.data);
		return 1;
	}
	r = sysobs__v1__readiness__unpack(NULL, b.len, (const uint8_t *)b.data);
	free(b.data);
	if (!r) {
		err_line("cannot decode the agent's answer as Sysobs__V1__Readiness");
		return 1;
	}
	for (size_t i = 0; i < r->n_reasons; i++) {
		if (o->output == OUT_TABLE)
			printf("%snot ready: %s\n", i ? "" : "\n", r->reasons[i]);
		else
			err_line("not ready: %s", r->reasons[i]);
	}
	code = r->n_reasons ? 3 : 0;
	sysobs__v1__readiness__free_unpacked(r, NULL);
	return (int)code;
}

static int cmd_status(struct opts *o, int argc, char **argv)
{
	struct body b;
	long code;
	int rc;

	if (argc > 0)
		die_usage("status takes no arguments");
	if (o->follow)
		die_usage("--follow works on history tables");
	if (o->output == OUT_TABLE) {
		Sysobs__V1__Health *h;

		code = http_call(o, "/healthz", NULL, 0, false, NULL, 0, &b);
		if (code < 0)
			return 1;
		h = sysobs__v1__health__unpack(NULL, b.len, (const uint8_t *)b.data);
		printf("agent %s: %s%s%s\n", o->server, h ? h->status : "?",
		       h && h->_reason_case ? ", " : "",
		       h && h->_reason_case ? str(h->reason) : "");
		if (h)
			sysobs__v1__health__free_unpacked(h, NULL);
		free(b.data);
	}
	rc = show(o, "/api/v1/collectors", NULL, 0, NULL, false);
	if (!rc && o->output == OUT_TABLE)
		rc = status_exports(o);
	return rc ? rc : status_ready(o);
}

/* scan's arguments: CPUs, PACKAGE:CORE pairs and test=... names, as the
 * request refers to them. */
struct scan_args {
	Sysobs__V1__IfsScanRequest req;
	Sysobs__V1__IfsCoreRef refs[64], *refp[64];
	int32_t cpus[64];
	char *tests[8];
};

/* One "CPU" or "PKG:CORE" argument into a; a bad one exits 2. */
static void scan_target_parse(struct scan_args *a, const char *arg)
{
	Sysobs__V1__IfsScanRequest *req = &a->req;
	unsigned long pkg, core;
	char *end;

	errno = 0;
	pkg = strtoul(arg, &end, 10);
	if (end == arg || errno || pkg > 1u << 20)
		die_usage("scan: '%s' is not a CPU number or PACKAGE:CORE", arg);
	if (*end == ':') {
		char *c = end + 1;

		core = strtoul(c, &end, 10);
		if (end == c || *end || core > 1u << 20 || req->n_cores == 64)
			die_usage("scan: '%s' is not PACKAGE:CORE", arg);
		sysobs__v1__ifs_core_ref__init(&a->refs[req->n_cores]);
		a->refs[req->n_cores]._package_case = SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE;
		a->refs[req->n_cores].package = (uint32_t)pkg;
		a->refs[req->n_cores].core = (uint32_t)core;
		a->refp[req->n_cores] = &a->refs[req->n_cores];
		req->n_cores++;
	} else if (*end || req->n_cpus == 64) {
		die_usage("scan: '%s' is not a CPU number or PACKAGE:CORE", arg);
	} else {
		a->cpus[req->n_cpus++] = (int32_t)pkg;
	}
}

static void scan_args_parse(struct scan_args *a, int argc, char **argv)
{
	sysobs__v1__ifs_scan_request__init(&a->req);
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "test=", 5)) {
			scan_target_parse(a, argv[i]);
			continue;
		}
		if (a->req.n_tests == 8)
			die_usage("too many tests");
		a->tests[a->req.n_tests++] = argv[i] + 5;
	}
	if (!a->req.n_cpus && !a->req.n_cores)
		die_usage("scan needs at least one CPU or PACKAGE:CORE");
	a->req.cpus = a->cpus;
	a->req.cores = a->refp;
	a->req.tests = a->tests;
}

/* The agent's IfsScanReply as a table, and where to poll for results. */
static int scan_reply_print(const struct body *b)
{
	Sysobs__V1__IfsScanReply *rep =
	    sysobs__v1__ifs_scan_reply__unpack(NULL, b->len, (const uint8_t *)b->data);

	if (!rep) {
		err_line("cannot decode the agent's answer as IfsScanReply");
		return 1;
	}
	printf("%-8s %-6s %-4s %-5s %s\n", "SCAN", "TEST", "PKG", "CORE", "CPU");
	for (size_t i = 0; i < rep->n_scans; i++)
		printf("%-8lld %-6s %-4u %-5u %d\n", (long long)rep->scans[i]->scan_id,
		       rep->scans[i]->test, rep->scans[i]->package, rep->scans[i]->core,
		       rep->scans[i]->cpu);
	printf("poll: %s\n", str(rep->poll));
	sysobs__v1__ifs_scan_reply__free_unpacked(rep, NULL);
	return 0;
}

/* "CPU" or "PKG:CORE" -> the request; test=... params choose the tests. */
static int cmd_scan(struct opts *o, int argc, char **argv)
{
	struct scan_args a;
	uint8_t buf[4096];
	struct body b;
	size_t len;
	long code;
	int rc;

	if (o->follow || o->since)
		die_usage("scan takes no --follow or --since");
	scan_args_parse(&a, argc, argv);
	len = sysobs__v1__ifs_scan_request__get_packed_size(&a.req);
	if (len > sizeof(buf))
		die_usage("scan: request too large");
	sysobs__v1__ifs_scan_request__pack(&a.req, buf);
	code = http_call(o, "/api/v1/ifs/scans", NULL, 0, o->output == OUT_JSON, buf, len, &b);
	if (code < 0)
		return 1;
	if (code < 200 || code > 299) {
		report_error(code, &b, o->output == OUT_JSON);
		rc = 1;
	} else if (o->output != OUT_TABLE) {
		fwrite(b.data, 1, b.len, stdout);
		rc = 0;
	} else {
		rc = scan_reply_print(&b);
	}
	free(b.data);
	return rc;
}

static void add_param(struct opts *o, const char *kv)
{
	if (!strchr(kv, '=') || kv[0] == '=')
		die_usage("'%s': expected KEY=VALUE", kv);
	if (o->n_params == MAX_PARAMS)
		die_usage("too many KEY=VALUE arguments");
	o->params[o->n_params++] = kv;
}

static void check_tls_opts(const struct opts *o)
{
	if (!!o->cert_file != !!o->key_file)
		die_usage("--cert-file and --key-file go together");
	if (o->password_file && !o->user)
		die_usage("--basic-auth-password-file needs --basic-auth-user");
	if (strncmp(o->server, "http://", 7) && strncmp(o->server, "https://", 8))
		die_usage("--server must be an http:// or https:// URL: '%s'", o->server);
	if (!strncmp(o->server, "http://", 7) && (o->cert_file || o->ca_file))
		die_usage("TLS options need an https:// --server");
}

/* METRIC [MATCH] [KEY=VALUE]...: a metric's history. */
static int cmd_series(struct opts *o, int argc, char **argv)
{
	static char metric[512], match[1024], step[64];
	const char *extra[3];
	size_t n = 0;
	int i = 0;

	if (i >= argc)
		die_usage("series needs a METRIC");
	snprintf(metric, sizeof(metric), "metric=%s", argv[i++]);
	extra[n++] = metric;
	/* a selector: '{collector="drops"}' or 'name{...}' (not KEY=VALUE) */
	if (i < argc && (strchr(argv[i], '{') || !strchr(argv[i], '='))) {
		snprintf(match, sizeof(match), "match[]=%s", argv[i++]);
		extra[n++] = match;
	}
	if (o->step) {
		snprintf(step, sizeof(step), "step=%s", o->step);
		extra[n++] = step;
	}
	for (; i < argc; i++)
		add_param(o, argv[i]);
	return show(o, "/api/v1/series", extra, n, print_series, false);
}

/* PATH [KEY=VALUE]...: any list route GET /api/v1/schema names, as its
 * table (history or not, as the schema says). */
static int cmd_list(struct opts *o, int argc, char **argv)
{
	const ProtobufCMessageDescriptor *list;
	const Sysobs__V1__SchemaRoute *r;

	if (argc < 1 || argv[0][0] != '/')
		die_usage(
		    "list needs a route PATH, e.g. /api/v1/cachefiles/daemon (sysobs schema)");
	for (int i = 1; i < argc; i++)
		add_param(o, argv[i]);
	if (o->output == OUT_TABLE || o->follow || o->since || o->until) {
		r = schema_route(o, argv[0], &list);
		if (!r)
			return 1;
		if (!r->history && (o->since || o->until || o->follow))
			die_usage("%s shows the current state: no --since/--until/--follow",
				  argv[0]);
		return show(o, argv[0], NULL, 0, NULL, r->history);
	}
	return show(o, argv[0], NULL, 0, NULL, false);
}

/*
 * The commands: a name, the word after it that selects a row (NULL: none),
 * and either a function that runs it with its arguments or the route whose
 * list it prints (history: a list of rows with ids, which --since, --until
 * and --follow apply to), as GET /api/v1/schema says unless it has a
 * printer of its own (print). The first row that matches runs; KEY=VALUE
 * arguments of a list become query parameters.
 */
struct command {
	const char *name, *sub;
	int (*run)(struct opts *o, int argc, char **argv);
	const char *path;
	print_fn print;
	bool history;
};

static const struct command commands[] = {
    {"status", NULL, cmd_status, NULL, NULL, false},
    {"scan", NULL, cmd_scan, NULL, NULL, false},
    {"series", NULL, cmd_series, NULL, NULL, false},
    {"drops", "pcap", cmd_drops_pcap, NULL, NULL, false},
    {"drops", NULL, NULL, "/api/v1/drops/samples", NULL, true},
    {"mptcp", "events", NULL, "/api/v1/mptcp/events", NULL, true},
    {"mptcp", "subflows", NULL, "/api/v1/mptcp/subflows", NULL, true},
    {"mptcp", NULL, NULL, "/api/v1/mptcp/connections", print_mptcp_connections, false},
    {"ifs", "scans", NULL, "/api/v1/ifs/scans", NULL, true},
    {"ifs", NULL, NULL, "/api/v1/ifs/cores", print_ifs_cores, false},
    {"cachefiles", NULL, NULL, "/api/v1/cachefiles/slow", NULL, true},
    {"export", NULL, NULL, "/api/v1/export", NULL, false},
    {"schema", NULL, NULL, "/api/v1/schema", NULL, false},
    {"list", NULL, cmd_list, NULL, NULL, false},
};

/* The row of command name whose sub-command word, if it has one, is the
 * first of args. */
static const struct command *command_find(const char *name, int argc, char **args)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];

		if (!strcmp(name, c->name) && (!c->sub || (argc > 0 && !strcmp(args[0], c->sub))))
			return c;
	}
	return NULL;
}

enum {
	OPT_SINCE = 256,
	OPT_UNTIL,
	OPT_STEP,
	OPT_CA,
	OPT_CERT,
	OPT_KEY,
	OPT_INSECURE,
	OPT_USER,
	OPT_PWFILE,
	OPT_TIMEOUT,
	OPT_STUCK
};

/* The options of the connection (--server, TLS, basic auth, --timeout)
 * into o: false when opt is none of them. */
static bool parse_conn_opt(struct opts *o, int opt)
{
	char *end;

	switch (opt) {
	case 's':
		o->server = optarg;
		return true;
	case OPT_CA:
		o->ca_file = optarg;
		return true;
	case OPT_CERT:
		o->cert_file = optarg;
		return true;
	case OPT_KEY:
		o->key_file = optarg;
		return true;
	case OPT_INSECURE:
		o->insecure = true;
		return true;
	case OPT_USER:
		o->user = optarg;
		return true;
	case OPT_PWFILE:
		o->password_file = optarg;
		return true;
	case OPT_TIMEOUT:
		o->timeout_s = (unsigned)strtoul(optarg, &end, 10);
		if (!o->timeout_s || *end || o->timeout_s > 3600)
			die_usage("--timeout: expected 1..3600 seconds, not '%s'", optarg);
		return true;
	default:
		return false;
	}
}

static enum output output_parse(const char *s)
{
	if (!strcmp(s, "table"))
		return OUT_TABLE;
	if (!strcmp(s, "json"))
		return OUT_JSON;
	if (!strcmp(s, "protobuf"))
		return OUT_PROTOBUF;
	die_usage("-o: expected table, json or protobuf, not '%s'", s);
}

/* One option into o; --help and --version answer and exit, a bad value
 * exits 2 (die_usage). */
static void parse_opt(struct opts *o, int opt)
{
	char *end;

	if (parse_conn_opt(o, opt))
		return;
	switch (opt) {
	case 'o':
		o->output = output_parse(optarg);
		break;
	case OPT_SINCE:
		o->since = optarg;
		break;
	case OPT_UNTIL:
		o->until = optarg;
		break;
	case 'n':
		if (strtoul(optarg, &end, 10) == 0 || *end)
			die_usage("--limit: expected a positive number, not '%s'", optarg);
		o->limit = optarg;
		break;
	case OPT_STEP:
		o->step = optarg;
		break;
	case 'f':
		o->follow = true;
		break;
	case OPT_STUCK:
		o->stuck_after = optarg;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("sysobs %s (libcurl %s, protobuf-c %s)\n", SYSOBS_VERSION,
		       curl_version_info(CURLVERSION_NOW)->version, protobuf_c_version());
		exit(0);
	default:
		fputs("sysobs: bad option (sysobs --help)\n", stderr);
		exit(2);
	}
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"server", required_argument, NULL, 's'},
	    {"output", required_argument, NULL, 'o'},
	    {"since", required_argument, NULL, OPT_SINCE},
	    {"until", required_argument, NULL, OPT_UNTIL},
	    {"limit", required_argument, NULL, 'n'},
	    {"step", required_argument, NULL, OPT_STEP},
	    {"follow", no_argument, NULL, 'f'},
	    {"ca-file", required_argument, NULL, OPT_CA},
	    {"cert-file", required_argument, NULL, OPT_CERT},
	    {"key-file", required_argument, NULL, OPT_KEY},
	    {"insecure-skip-verify", no_argument, NULL, OPT_INSECURE},
	    {"basic-auth-user", required_argument, NULL, OPT_USER},
	    {"basic-auth-password-file", required_argument, NULL, OPT_PWFILE},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"stuck-after", required_argument, NULL, OPT_STUCK},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	int opt;

	o->server = getenv("SYSOBS_URL");
	if (!o->server || !o->server[0])
		o->server = "http://127.0.0.1:9559";
	while ((opt = getopt_long(argc, argv, "s:o:n:fhV", lopts, NULL)) != -1)
		parse_opt(o, opt);
	if (optind >= argc)
		die_usage("no command");
	check_tls_opts(o);
}

int main(int argc, char **argv)
{
	struct opts o = {.output = OUT_TABLE, .timeout_s = 10};
	const struct command *c;
	const char *cmd;
	int rc;

	parse_opts(&o, argc, argv);
	cmd = argv[optind++];
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		err_line("cannot initialise libcurl");
		return 1;
	}

	c = command_find(cmd, argc - optind, argv + optind);
	if (!c)
		die_usage("unknown command '%s'", cmd);
	if (c->sub)
		optind++;
	if (c->run) {
		rc = c->run(&o, argc - optind, argv + optind);
	} else {
		if (!c->history && (o.since || o.until))
			die_usage("%s shows the current state: no --since/--until", cmd);
		for (; optind < argc; optind++)
			add_param(&o, argv[optind]);
		rc = show(&o, c->path, NULL, 0, c->print, c->history);
	}
	curl_global_cleanup();
	return rc;
}
