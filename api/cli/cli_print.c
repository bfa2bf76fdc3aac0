/* SPDX-License-Identifier: MIT */
/*
 * What the sysobs CLI prints: one table printer per message of
 * api/proto/sysobs.proto, the formats of times, endpoints and states they
 * share, and the one-line errors on stderr. Calls nothing of the CLI.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_internal.h"

void err_line(const char *fmt, ...)
{
	va_list ap;

	fputs("sysobs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A non-2xx answer: the agent's ErrorResponse in one line. */
void report_error(long code, const struct body *b, bool json)
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

const char *str(const char *s)
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

#define UNPACK(type, fn, b)                                                                        \
	type *m = fn##__unpack(NULL, (b)->len, (const uint8_t *)(b)->data);                        \
	if (!m) {                                                                                  \
		err_line("cannot decode the agent's answer as " #type);                            \
		return (size_t)-1;                                                                 \
	}

size_t print_collectors(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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
void export_lines(const Sysobs__V1__ExportList *m, bool header)
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

size_t print_exports(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
{
	UNPACK(Sysobs__V1__ExportList, sysobs__v1__export_list, b);

	export_lines(m, header);
	sysobs__v1__export_list__free_unpacked(m, NULL);
	return 1;
}

size_t print_drops(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_mptcp_events(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_mptcp_connections(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_ifs_cores(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_ifs_scans(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_cachefiles(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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

size_t print_series(const struct body *b, bool header, int64_t after_id, int64_t *max_id)
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
