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
 * 2 a usage error. Errors are one line on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "api/proto/sysobs.pb-c.h"

#define MAX_PARAMS  32
#define MAX_BODY    (64u << 20) /* an answer larger than this is refused */
#define FOLLOW_POLL 1		/* seconds between --follow polls */

enum output { OUT_TABLE, OUT_JSON, OUT_PROTOBUF };

struct opts {
	const char *server;
	enum output output;
	const char *since, *until, *limit, *step;
	bool follow;
	const char *ca_file, *cert_file, *key_file, *user, *password_file;
	bool insecure;
	unsigned timeout_s;
	const char *params[MAX_PARAMS]; /* "key=value", URL-escaped when sent */
	size_t n_params;
};

struct body {
	char *data;
	size_t len;
};

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
	    "  status                  agent health, each collector's state and each event "
	    "export\n"
	    "  export                  event export destinations: backlog, last success, errors\n"
	    "  drops                   sampled packet drops (reason=, protocol=, addr=, port=, "
	    "...)\n"
	    "  mptcp [events]          live MPTCP connections and subflows, or path-manager "
	    "events\n"
	    "  ifs [scans]             each core's last IFS result per test, or the scan history\n"
	    "  cachefiles              slow cachefiles on-demand requests (op=, volume=)\n"
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
	    "  -h, --help                  this help\n"
	    "  -V, --version               version\n"
	    "\nExit status: 0 ok, 1 agent unreachable or error answer, 2 usage error.\n");
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

static void __attribute__((format(printf, 1, 2))) err_line(const char *fmt, ...)
{
	va_list ap;

	fputs("sysobs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (b->len + n > MAX_BODY)
		return 0; /* curl reports a write error */
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->data = p;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* The password file's first line, as Prometheus reads password_file. */
static int read_password(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(out, (int)size, f)) {
		fclose(f);
		out[0] = '\0';
		return 0;
	}
	fclose(f);
	n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	return 0;
}

/* Appends "&key=value" (escaped) to url. */
static void url_add(CURL *c, char *url, size_t size, const char *key, const char *value)
{
	char *k = curl_easy_escape(c, key, 0), *v = curl_easy_escape(c, value, 0);
	size_t n = strlen(url);

	snprintf(url + n, size - n, "%s%s=%s", strchr(url, '?') ? "&" : "?", k ? k : "",
		 v ? v : "");
	curl_free(k);
	curl_free(v);
}

/*
 * One request: GET (or POST with a protobuf body) server+path with the
 * query parameters; the body lands in *out. Returns the HTTP status, or -1
 * after a one-line transport error.
 */
static long http_call(const struct opts *o, const char *path, const char *const *query,
		      size_t n_query, bool json, const void *post, size_t post_len,
		      struct body *out)
{
	char url[8192], errbuf[CURL_ERROR_SIZE] = "", pw[1024], auth[1280];
	struct curl_slist *hdr = NULL;
	long code = -1;
	CURLcode rc;
	CURL *c;

	out->data = NULL;
	out->len = 0;
	c = curl_easy_init();
	if (!c) {
		err_line("cannot initialise libcurl");
		return -1;
	}
	snprintf(url, sizeof(url), "%s%s", o->server, path);
	for (size_t i = 0; i < n_query; i++) {
		char kv[2048], *eq;

		snprintf(kv, sizeof(kv), "%s", query[i]);
		eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		url_add(c, url, sizeof(url), kv, eq + 1);
	}
	hdr = curl_slist_append(hdr, json ? "Accept: application/json"
					  : "Accept: application/x-protobuf");
	if (post)
		hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)o->timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sysobs/" SYSOBS_VERSION);
	if (o->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, o->key_file);
	if (o->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o->user) {
		int e = o->password_file ? read_password(o->password_file, pw, sizeof(pw)) : 0;

		if (e) {
			err_line("cannot read %s: %s", o->password_file, strerror(-e));
			goto out;
		}
		if (!o->password_file)
			pw[0] = '\0';
		snprintf(auth, sizeof(auth), "%s:%s", o->user, pw);
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERPWD, auth);
		memset(pw, 0, sizeof(pw));
	}
	if (post) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)post_len);
	}
	rc = curl_easy_perform(c);
	memset(auth, 0, sizeof(auth));
	if (rc != CURLE_OK) {
		err_line("%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return code;
}

/* A non-2xx answer: the agent's ErrorResponse in one line. */
static void report_error(long code, const struct body *b, bool json)
{
	Sysobs__V1__ErrorResponse *e = NULL;

	if (!json && b->len)
		e = sysobs__v1__error_response__unpack(NULL, b->len, (const uint8_t *)b->data);
	if (e && e->error)
		err_line("HTTP %ld: %s: %s", code, e->error->code, e->error->message);
	else if (json && b->len)
		err_line("HTTP %ld: %.*s", code, (int)strcspn(b->data, "\n"), b->data);
	else
		err_line("HTTP %ld", code);
	if (e)
		sysobs__v1__error_response__free_unpacked(e, NULL);
}

static const char *str(const char *s)
{
	return s && s[0] ? s : "-";
}

static void fmt_time(const Google__Protobuf__Timestamp *t, char *out, size_t size)
{
	struct tm tm;
	time_t sec;

	if (!t || (!t->seconds && !t->nanos)) {
		snprintf(out, size, "-");
		return;
	}
	sec = (time_t)t->seconds;
	gmtime_r(&sec, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t->nanos / 1000000);
}

static void fmt_endpoint(const char *addr, bool has_port, uint32_t port, char *out, size_t size)
{
	if (!addr || !addr[0])
		snprintf(out, size, "-");
	else if (!has_port)
		snprintf(out, size, "%s", addr);
	else if (strchr(addr, ':'))
		snprintf(out, size, "[%s]:%u", addr, port);
	else
		snprintf(out, size, "%s:%u", addr, port);
}

/* ---- status ---- */

static const char *state_name(Sysobs__V1__CollectorState s)
{
	switch (s) {
	case SYSOBS__V1__COLLECTOR_STATE__DISABLED:
		return "disabled";
	case SYSOBS__V1__COLLECTOR_STATE__UNAVAILABLE:
		return "unavailable";
	case SYSOBS__V1__COLLECTOR_STATE__RUNNING:
		return "running";
	case SYSOBS__V1__COLLECTOR_STATE__FAILED:
		return "failed";
	default:
		return "?";
	}
}

/* ---- the table printers: one per message; each returns the rows printed
 * and, for history lists, the newest id seen (for --follow). ---- */

typedef size_t (*print_fn)(const struct body *b, bool header, int64_t after_id, int64_t *max_id);

#define UNPACK(type, fn, b)                                                                        \
	type *m = fn##__unpack(NULL, (b)->len, (const uint8_t *)(b)->data);                        \
	if (!m) {                                                                                  \
		err_line("cannot decode the agent's answer as " #type);                            \
		return (size_t)-1;                                                                 \
	}

/* Rows come newest first; printing oldest first reads like a log and lets
 * --follow append. Only rows with id > after_id are printed. */
static size_t print_collectors(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__CollectorList, sysobs__v1__collector_list, b);
	char t[40];

	if (header)
		printf("%-12s %-12s %8s  %-24s %s\n", "COLLECTOR", "STATE", "ERRORS",
		       "LAST ACTIVITY", "REASON");
	for (size_t i = 0; i < m->n_data; i++) {
		const Sysobs__V1__Collector *c = m->data[i];

		fmt_time(c->last_activity, t, sizeof(t));
		printf("%-12s %-12s %8llu  %-24s %s\n", c->name, state_name(c->state),
		       (unsigned long long)c->errors, t, str(c->reason));
	}
	sysobs__v1__collector_list__free_unpacked(m, NULL);
	return 1;
}

/* One line per [export.NAME] destination. */
static void export_lines(const Sysobs__V1__ExportList *m, bool header)
{
	char t[40];

	if (header)
		printf("%-12s %-10s %10s %9s %10s %8s %10s  %-24s %-36s %s\n", "EXPORT", "FORMAT",
		       "PENDING", "LAG_S", "SENT", "REFUSED", "RETRIED", "LAST SUCCESS", "URL",
		       "LAST ERROR");
	for (size_t i = 0; i < m->n_data; i++) {
		const Sysobs__V1__ExportDestination *d = m->data[i];

		fmt_time(d->last_success, t, sizeof(t));
		printf("%-12s %-10s %10llu %9.1f %10llu %8llu %10llu  %-24s %-36s %s\n", d->name,
		       d->format, (unsigned long long)d->pending_rows, d->lag_seconds,
		       (unsigned long long)d->rows_sent, (unsigned long long)d->rows_refused,
		       (unsigned long long)d->rows_retried, t, str(d->url), str(d->last_error));
	}
}

static size_t print_exports(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__ExportList, sysobs__v1__export_list, b);

	export_lines(m, header);
	sysobs__v1__export_list__free_unpacked(m, NULL);
	return 1;
}

static size_t print_drops(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__DropSampleList, sysobs__v1__drop_sample_list, b);
	size_t rows = 0;
	char t[40], src[80], dst[80];

	if (header)
		printf("%-24s %-24s %-6s %-26s %-26s %-10s %5s  %s\n", "TIME", "REASON", "PROTO",
		       "SOURCE", "DESTINATION", "DEVICE", "LEN", "LOCATION");
	for (size_t k = m->n_data; k-- > 0;) {
		const Sysobs__V1__DropSample *d = m->data[k];

		if (d->id <= after_id)
			continue;
		if (d->id > *max_id)
			*max_id = d->id;
		fmt_time(d->time, t, sizeof(t));
		fmt_endpoint(d->_saddr_case ? d->saddr : NULL, d->_sport_case, d->sport, src,
			     sizeof(src));
		fmt_endpoint(d->_daddr_case ? d->daddr : NULL, d->_dport_case, d->dport, dst,
			     sizeof(dst));
		printf("%-24s %-24s %-6s %-26s %-26s %-10s %5u  %s\n", t,
		       d->_reason_case ? str(d->reason) : "-",
		       d->_protocol_case ? str(d->protocol) : "-", src, dst,
		       d->_ifname_case ? str(d->ifname) : "-", d->len,
		       d->_location_case ? str(d->location) : "-");
		rows++;
	}
	sysobs__v1__drop_sample_list__free_unpacked(m, NULL);
	return rows;
}

/* A namespace as a person knows it: its name where the host gives one
 * (ip netns), else its inode number. */
static const char *fmt_netns(uint32_t inum, bool named, const char *name, char *buf, size_t len)
{
	if (named && name && *name)
		return name;
	snprintf(buf, len, "%u", inum);
	return buf;
}

static size_t print_mptcp_events(const struct body *b, bool header, int64_t after_id,
				 int64_t *max_id)
{
	UNPACK(Sysobs__V1__MptcpEventList, sysobs__v1__mptcp_event_list, b);
	size_t rows = 0;
	char t[40], src[80], dst[80], tok[16], ns[16];

	if (header)
		printf("%-24s %-20s %-10s %-12s %-26s %-26s %s\n", "TIME", "TYPE", "TOKEN", "NETNS",
		       "SOURCE", "DESTINATION", "DETAIL");
	for (size_t k = m->n_data; k-- > 0;) {
		const Sysobs__V1__MptcpEvent *e = m->data[k];

		if (e->id <= after_id)
			continue;
		if (e->id > *max_id)
			*max_id = e->id;
		fmt_time(e->time, t, sizeof(t));
		fmt_endpoint(e->_saddr_case ? e->saddr : NULL, e->_sport_case, e->sport, src,
			     sizeof(src));
		fmt_endpoint(e->_daddr_case ? e->daddr : NULL, e->_dport_case, e->dport, dst,
			     sizeof(dst));
		if (e->_token_case)
			snprintf(tok, sizeof(tok), "%08x", e->token);
		else
			snprintf(tok, sizeof(tok), "-");
		printf("%-24s %-20s %-10s %-12s %-26s %-26s %s\n", t, e->type, tok,
		       fmt_netns(e->netns, e->_netns_name_case, e->netns_name, ns, sizeof(ns)), src,
		       dst,
		       e->_reset_reason_name_case ? str(e->reset_reason_name)
		       : e->_error_case		  ? "error"
						  : "");
		rows++;
	}
	sysobs__v1__mptcp_event_list__free_unpacked(m, NULL);
	return rows;
}

static size_t print_mptcp_connections(const struct body *b, bool header, int64_t after_id,
				      int64_t *max_id)
{
	UNPACK(Sysobs__V1__MptcpConnectionList, sysobs__v1__mptcp_connection_list, b);
	char src[80], dst[80], since[40], ns[16];

	printf("%u connections, %u subflows, %zu listeners%s\n", m->n_connections, m->n_subflows,
	       m->n_listeners, m->truncated ? " (list truncated)" : "");
	printf("%-10s %-12s %-6s %-28s %-28s %-7s %s\n", "TOKEN", "NETNS", "SIDE", "LOCAL",
	       "REMOTE", "STATE", "SUBFLOWS");
	for (size_t i = 0; i < m->n_data; i++) {
		const Sysobs__V1__MptcpConnection *c = m->data[i];

		fmt_endpoint(c->_saddr_case ? c->saddr : NULL, true, c->sport, src, sizeof(src));
		fmt_endpoint(c->_daddr_case ? c->daddr : NULL, true, c->dport, dst, sizeof(dst));
		printf("%-10s %-12s %-6s %-28s %-28s %-7s %zu\n", str(c->token_hex),
		       fmt_netns(c->netns, c->_netns_name_case, c->netns_name, ns, sizeof(ns)),
		       !c->_server_side_case ? "?"
		       : c->server_side	     ? "server"
					     : "client",
		       src, dst, c->established ? "estab" : "open", c->n_subflows);
		for (size_t j = 0; j < c->n_subflows; j++) {
			const Sysobs__V1__MptcpSubflow *s = c->subflows[j];

			fmt_endpoint(s->_saddr_case ? s->saddr : NULL, true, s->sport, src,
				     sizeof(src));
			fmt_endpoint(s->_daddr_case ? s->daddr : NULL, true, s->dport, dst,
				     sizeof(dst));
			fmt_time(s->since, since, sizeof(since));
			printf("  subflow %u/%u %-28s %-28s %s%s since %s\n", s->loc_id, s->rem_id,
			       src, dst, s->family, s->backup ? " backup" : "", since);
		}
	}
	for (size_t i = 0; i < m->n_namespaces; i++) {
		const Sysobs__V1__MptcpNamespace *n = m->namespaces[i];

		printf("netns %s (%u%s%s): %llu overruns\n", n->path, n->netns,
		       n->_netns_name_case ? ", name " : "",
		       n->_netns_name_case ? n->netns_name : "", (unsigned long long)n->overruns);
	}
	sysobs__v1__mptcp_connection_list__free_unpacked(m, NULL);
	return 1;
}

static size_t print_ifs_cores(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__IfsCoreList, sysobs__v1__ifs_core_list, b);
	char t[40];

	for (size_t i = 0; i < m->n_devices; i++) {
		const Sysobs__V1__IfsDevice *d = m->devices[i];

		printf("device %s: test %s, image %s%s%s\n", d->device, d->test,
		       d->image_loaded ? "loaded" : "not loaded",
		       d->_image_version_case ? " version " : "",
		       d->_image_version_case ? str(d->image_version) : "");
	}
	if (m->scheduler)
		printf("scheduler: %s, %s, %u pending, %u ms used this hour\n",
		       m->scheduler->enabled ? "enabled" : "disabled",
		       m->scheduler->running ? "running" : "idle", m->scheduler->pending,
		       m->scheduler->hour_used_ms);
	printf("%-4s %-5s %-10s %-7s %-6s %-10s %-24s %s\n", "PKG", "CORE", "CPUS", "ONLINE",
	       "TEST", "RESULT", "TIME", "DETAILS");
	for (size_t i = 0; i < m->n_data; i++) {
		const Sysobs__V1__IfsCore *c = m->data[i];
		char cpus[64] = "";
		size_t n = 0;

		for (size_t j = 0; j < c->n_cpus && n < sizeof(cpus) - 12; j++)
			n += (size_t)snprintf(cpus + n, sizeof(cpus) - n, "%s%u", j ? "," : "",
					      c->cpus[j]);
		if (!c->n_last)
			printf("%-4u %-5u %-10s %-7s %-6s %-10s %-24s %s\n", c->package, c->core,
			       cpus, c->online ? "yes" : "no", "-", "untested", "-",
			       c->allowed ? "" : "(excluded)");
		for (size_t j = 0; j < c->n_last; j++) {
			const Sysobs__V1__IfsTestResult *r = c->last[j];

			fmt_time(r->time, t, sizeof(t));
			printf("%-4u %-5u %-10s %-7s %-6s %-10s %-24s %s%s%s\n", c->package,
			       c->core, j ? "" : cpus,
			       j	   ? ""
			       : c->online ? "yes"
					   : "no",
			       r->test, r->_status_case ? str(r->status) : "-", t,
			       r->_details_case ? str(r->details) : "",
			       r->_error_name_case ? " " : "",
			       r->_error_name_case ? str(r->error_name) : "");
		}
	}
	sysobs__v1__ifs_core_list__free_unpacked(m, NULL);
	return 1;
}

static size_t print_ifs_scans(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__IfsScanList, sysobs__v1__ifs_scan_list, b);
	size_t rows = 0;
	char t[40];

	if (header)
		printf("%-24s %-8s %-6s %-4s %-5s %-4s %-10s %-12s %-10s %s\n", "TIME", "SCAN",
		       "TEST", "PKG", "CORE", "CPU", "RESULT", "DETAILS", "BY", "ERROR");
	for (size_t k = m->n_data; k-- > 0;) {
		const Sysobs__V1__IfsScan *s = m->data[k];

		if (s->id <= after_id)
			continue;
		if (s->id > *max_id)
			*max_id = s->id;
		fmt_time(s->time, t, sizeof(t));
		printf("%-24s %-8lld %-6s %-4u %-5u %-4u %-10s %-12s %-10s %s\n", t,
		       (long long)(s->_scan_id_case ? s->scan_id : 0),
		       s->_test_case ? str(s->test) : "-", s->package, s->core, s->cpu,
		       s->_status_case ? str(s->status) : "-",
		       s->_details_case ? str(s->details) : "-",
		       s->_requested_by_case ? str(s->requested_by) : "-",
		       s->_error_name_case ? str(s->error_name) : "");
		rows++;
	}
	sysobs__v1__ifs_scan_list__free_unpacked(m, NULL);
	return rows;
}

static size_t print_cachefiles(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__CachefilesSlowRequestList, sysobs__v1__cachefiles_slow_request_list, b);
	size_t rows = 0;
	char t[40];

	if (header)
		printf("%-24s %-5s %-20s %10s %12s %10s %6s  %s\n", "TIME", "OP", "VOLUME",
		       "LATENCY_MS", "OFFSET", "LENGTH", "RESULT", "PROCESS");
	for (size_t k = m->n_data; k-- > 0;) {
		const Sysobs__V1__CachefilesSlowRequest *r = m->data[k];

		if (r->id <= after_id)
			continue;
		if (r->id > *max_id)
			*max_id = r->id;
		fmt_time(r->time, t, sizeof(t));
		printf("%-24s %-5s %-20s %10.3f %12lld %10lld %6d  %s[%u]\n", t, r->op, r->volume,
		       r->latency_seconds * 1e3, (long long)r->offset, (long long)r->length,
		       r->result, str(r->comm), r->pid);
		rows++;
	}
	sysobs__v1__cachefiles_slow_request_list__free_unpacked(m, NULL);
	return rows;
}

static size_t print_series(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__SeriesList, sysobs__v1__series_list, b);
	char t[40];

	printf("%-60s %7s  %-24s %s\n", "SERIES", "POINTS", "LAST", "VALUE");
	for (size_t i = 0; i < m->n_data; i++) {
		const Sysobs__V1__Series *s = m->data[i];
		const Sysobs__V1__Point *last = s->n_points ? s->points[s->n_points - 1] : NULL;
		char labels[1024] = "";
		size_t n = 0;

		for (size_t j = 0; j < s->n_labels && n < sizeof(labels) - 1; j++)
			n +=
			    (size_t)snprintf(labels + n, sizeof(labels) - n, "%s%s=\"%s\"",
					     j ? "," : "{", s->labels[j]->key, s->labels[j]->value);
		if (n && n < sizeof(labels) - 1)
			snprintf(labels + n, sizeof(labels) - n, "}");
		fmt_time(last ? last->time : NULL, t, sizeof(t));
		printf("%-60s %7zu  %-24s %.17g\n", labels, s->n_points, t,
		       last ? last->value : 0.0);
	}
	sysobs__v1__series_list__free_unpacked(m, NULL);
	return 1;
}

/* Fetches and prints one route; with --follow, polls it every second and
 * prints the rows newer than the newest printed. */
static int show(const struct opts *o, const char *path, const char *const *extra, size_t n_extra,
		print_fn print, bool history)
{
	const char *q[MAX_PARAMS + 8];
	char since[64];
	size_t nq = 0;
	int64_t max_id = 0;
	bool first = true;

	if (o->follow && (o->output != OUT_TABLE || !history))
		die_usage("--follow works on history tables (drops, mptcp events, ifs scans, "
			  "cachefiles) with -o table");
	for (size_t i = 0; i < n_extra; i++)
		q[nq++] = extra[i];
	for (size_t i = 0; i < o->n_params; i++)
		q[nq++] = o->params[i];
	if (o->limit) {
		static char lim[64];

		snprintf(lim, sizeof(lim), "limit=%s", o->limit);
		q[nq++] = lim;
	}
	if (o->until) {
		static char until[80];

		snprintf(until, sizeof(until), "end=%s", o->until);
		q[nq++] = until;
	}
	if (o->since) {
		snprintf(since, sizeof(since), "start=%s", o->since);
		q[nq++] = since;
	} else if (o->follow) {
		snprintf(since, sizeof(since), "start=-1m");
		q[nq++] = since;
	}
	for (;;) {
		struct body b;
		long code = http_call(o, path, q, nq, o->output == OUT_JSON, NULL, 0, &b);
		size_t rows;

		if (code < 0) {
			free(b.data);
			return 1;
		}
		if (code < 200 || code > 299) {
			report_error(code, &b, o->output == OUT_JSON);
			free(b.data);
			return 1;
		}
		if (o->output == OUT_JSON) {
			fwrite(b.data, 1, b.len, stdout);
			if (b.len && b.data[b.len - 1] != '\n')
				putchar('\n');
			free(b.data);
			return 0;
		}
		if (o->output == OUT_PROTOBUF) {
			if (isatty(1)) {
				free(b.data);
				err_line("refusing to write protobuf to a terminal: redirect it");
				return 1;
			}
			fwrite(b.data, 1, b.len, stdout);
			free(b.data);
			return 0;
		}
		rows = print(&b, first, max_id, &max_id);
		free(b.data);
		if (rows == (size_t)-1)
			return 1;
		if (!o->follow || stop)
			return 0;
		fflush(stdout);
		first = false;
		/* next polls: only what is newer than the window's newest row */
		snprintf(since, sizeof(since), "start=-%ds", 10 * FOLLOW_POLL);
		if (!o->since)
			q[nq - 1] = since;
		sleep(FOLLOW_POLL);
		if (stop)
			return 0;
	}
}

/* status, after the collectors: the export destinations, if any (an agent
 * older than GET /api/v1/export answers 404: none). */
static int status_exports(const struct opts *o)
{
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
	free(b.data);
	if (!m) {
		err_line("cannot decode the agent's answer as Sysobs__V1__ExportList");
		return 1;
	}
	if (m->n_data) {
		putchar('\n');
		export_lines(m, true);
	}
	sysobs__v1__export_list__free_unpacked(m, NULL);
	return 0;
}

static int cmd_status(const struct opts *o)
{
	struct body b;
	long code;
	int rc;

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
	rc = show(o, "/api/v1/collectors", NULL, 0, print_collectors, false);
	if (rc || o->output != OUT_TABLE)
		return rc;
	return status_exports(o);
}

/* "CPU" or "PKG:CORE" -> the request; test=... params choose the tests. */
static int cmd_scan(const struct opts *o, int argc, char **argv)
{
	Sysobs__V1__IfsScanRequest req = SYSOBS__V1__IFS_SCAN_REQUEST__INIT;
	Sysobs__V1__IfsCoreRef refs[64], *refp[64];
	Sysobs__V1__IfsScanReply *rep;
	int32_t cpus[64];
	char *tests[8];
	uint8_t buf[4096];
	struct body b;
	size_t len;
	long code;

	if (o->follow || o->since)
		die_usage("scan takes no --follow or --since");
	for (int i = 0; i < argc; i++) {
		unsigned long pkg, core;
		char *end;

		if (!strncmp(argv[i], "test=", 5)) {
			if (req.n_tests == 8)
				die_usage("too many tests");
			tests[req.n_tests++] = argv[i] + 5;
			continue;
		}
		errno = 0;
		pkg = strtoul(argv[i], &end, 10);
		if (end == argv[i] || errno || pkg > 1u << 20)
			die_usage("scan: '%s' is not a CPU number or PACKAGE:CORE", argv[i]);
		if (*end == ':') {
			char *c = end + 1;

			core = strtoul(c, &end, 10);
			if (end == c || *end || core > 1u << 20 || req.n_cores == 64)
				die_usage("scan: '%s' is not PACKAGE:CORE", argv[i]);
			sysobs__v1__ifs_core_ref__init(&refs[req.n_cores]);
			refs[req.n_cores]._package_case =
			    SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE;
			refs[req.n_cores].package = (uint32_t)pkg;
			refs[req.n_cores].core = (uint32_t)core;
			refp[req.n_cores] = &refs[req.n_cores];
			req.n_cores++;
		} else if (*end || req.n_cpus == 64) {
			die_usage("scan: '%s' is not a CPU number or PACKAGE:CORE", argv[i]);
		} else {
			cpus[req.n_cpus++] = (int32_t)pkg;
		}
	}
	if (!req.n_cpus && !req.n_cores)
		die_usage("scan needs at least one CPU or PACKAGE:CORE");
	req.cpus = cpus;
	req.cores = refp;
	req.tests = tests;
	len = sysobs__v1__ifs_scan_request__get_packed_size(&req);
	if (len > sizeof(buf))
		die_usage("scan: request too large");
	sysobs__v1__ifs_scan_request__pack(&req, buf);
	code = http_call(o, "/api/v1/ifs/scans", NULL, 0, o->output == OUT_JSON, buf, len, &b);
	if (code < 0)
		return 1;
	if (code < 200 || code > 299) {
		report_error(code, &b, o->output == OUT_JSON);
		free(b.data);
		return 1;
	}
	if (o->output != OUT_TABLE) {
		fwrite(b.data, 1, b.len, stdout);
		free(b.data);
		return 0;
	}
	rep = sysobs__v1__ifs_scan_reply__unpack(NULL, b.len, (const uint8_t *)b.data);
	free(b.data);
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
	OPT_TIMEOUT
};

int main(int argc, char **argv)
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
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	struct opts o = {.output = OUT_TABLE, .timeout_s = 10};
	const char *cmd;
	char *end;
	int opt, rc;

	o.server = getenv("SYSOBS_URL");
	if (!o.server || !o.server[0])
		o.server = "http://127.0.0.1:9559";
	while ((opt = getopt_long(argc, argv, "s:o:n:fhV", lopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.server = optarg;
			break;
		case 'o':
			if (!strcmp(optarg, "table"))
				o.output = OUT_TABLE;
			else if (!strcmp(optarg, "json"))
				o.output = OUT_JSON;
			else if (!strcmp(optarg, "protobuf"))
				o.output = OUT_PROTOBUF;
			else
				die_usage("-o: expected table, json or protobuf, not '%s'", optarg);
			break;
		case OPT_SINCE:
			o.since = optarg;
			break;
		case OPT_UNTIL:
			o.until = optarg;
			break;
		case 'n':
			if (strtoul(optarg, &end, 10) == 0 || *end)
				die_usage("--limit: expected a positive number, not '%s'", optarg);
			o.limit = optarg;
			break;
		case OPT_STEP:
			o.step = optarg;
			break;
		case 'f':
			o.follow = true;
			break;
		case OPT_CA:
			o.ca_file = optarg;
			break;
		case OPT_CERT:
			o.cert_file = optarg;
			break;
		case OPT_KEY:
			o.key_file = optarg;
			break;
		case OPT_INSECURE:
			o.insecure = true;
			break;
		case OPT_USER:
			o.user = optarg;
			break;
		case OPT_PWFILE:
			o.password_file = optarg;
			break;
		case OPT_TIMEOUT:
			o.timeout_s = (unsigned)strtoul(optarg, &end, 10);
			if (!o.timeout_s || *end || o.timeout_s > 3600)
				die_usage("--timeout: expected 1..3600 seconds, not '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("sysobs %s (libcurl %s, protobuf-c %s)\n", SYSOBS_VERSION,
			       curl_version_info(CURLVERSION_NOW)->version, protobuf_c_version());
			return 0;
		default:
			fputs("sysobs: bad option (sysobs --help)\n", stderr);
			return 2;
		}
	}
	if (optind >= argc)
		die_usage("no command");
	check_tls_opts(&o);
	cmd = argv[optind++];
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		err_line("cannot initialise libcurl");
		return 1;
	}

	if (!strcmp(cmd, "status")) {
		if (optind < argc)
			die_usage("status takes no arguments");
		rc = cmd_status(&o);
	} else if (!strcmp(cmd, "scan")) {
		rc = cmd_scan(&o, argc - optind, argv + optind);
	} else if (!strcmp(cmd, "series")) {
		static char metric[512], match[1024], step[64];
		const char *extra[3];
		size_t n = 0;

		if (optind >= argc)
			die_usage("series needs a METRIC");
		snprintf(metric, sizeof(metric), "metric=%s", argv[optind++]);
		extra[n++] = metric;
		/* a selector: '{collector="drops"}' or 'name{...}' (not KEY=VALUE) */
		if (optind < argc && (strchr(argv[optind], '{') || !strchr(argv[optind], '='))) {
			snprintf(match, sizeof(match), "match[]=%s", argv[optind++]);
			extra[n++] = match;
		}
		if (o.step) {
			snprintf(step, sizeof(step), "step=%s", o.step);
			extra[n++] = step;
		}
		for (; optind < argc; optind++)
			add_param(&o, argv[optind]);
		rc = show(&o, "/api/v1/series", extra, n, print_series, false);
	} else {
		const char *path = NULL;
		print_fn print = NULL;
		bool history = true;

		if (!strcmp(cmd, "drops")) {
			path = "/api/v1/drops/samples";
			print = print_drops;
		} else if (!strcmp(cmd, "mptcp")) {
			if (optind < argc && !strcmp(argv[optind], "events")) {
				optind++;
				path = "/api/v1/mptcp/events";
				print = print_mptcp_events;
			} else {
				path = "/api/v1/mptcp/connections";
				print = print_mptcp_connections;
				history = false;
			}
		} else if (!strcmp(cmd, "ifs")) {
			if (optind < argc && !strcmp(argv[optind], "scans")) {
				optind++;
				path = "/api/v1/ifs/scans";
				print = print_ifs_scans;
			} else {
				path = "/api/v1/ifs/cores";
				print = print_ifs_cores;
				history = false;
			}
		} else if (!strcmp(cmd, "cachefiles")) {
			path = "/api/v1/cachefiles/slow";
			print = print_cachefiles;
		} else if (!strcmp(cmd, "export")) {
			path = "/api/v1/export";
			print = print_exports;
			history = false;
		} else {
			die_usage("unknown command '%s'", cmd);
		}
		if (!history && (o.since || o.until))
			die_usage("%s shows the current state: no --since/--until", cmd);
		for (; optind < argc; optind++)
			add_param(&o, argv[optind]);
		rc = show(&o, path, NULL, 0, print, history);
	}
	curl_global_cleanup();
	return rc;
}
