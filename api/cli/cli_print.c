/* SPDX-License-Identifier: MIT */
/*
 * What the sysobs CLI prints besides the generic table (cli_table.c): the
 * routes that are no flat table (MPTCP connections with their subflows,
 * IFS cores with a line per test result, metric series) and the one-line
 * errors on stderr. Calls cli_table.c's formats, nothing else of the CLI.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_internal.h"
#include "cli_table.h"

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

#define UNPACK(type, fn, b)                                                                        \
	type *m = fn##__unpack(NULL, (b)->len, (const uint8_t *)(b)->data);                        \
	if (!m) {                                                                                  \
		err_line("cannot decode the agent's answer as " #type);                            \
		return (size_t)-1;                                                                 \
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

/* A subflow's TCP state under its line, as `ss -ti` spells the figures
 * (rtt/rttvar in ms with %g, retrans current/total); bytes_acked and
 * delivery_rate when the kernel gave them. */
static void print_mptcp_subflow_tcp(const Sysobs__V1__MptcpSubflowTcp *t)
{
	printf("    rtt %gms/%gms cwnd %u retrans %u/%u", (double)t->rtt_us / 1000,
	       (double)t->rttvar_us / 1000, t->snd_cwnd, t->retrans, t->total_retrans);
	if (t->_bytes_acked_case)
		printf(" acked %llu", (unsigned long long)t->bytes_acked);
	if (t->_bytes_received_case)
		printf(" received %llu", (unsigned long long)t->bytes_received);
	if (t->_delivery_rate_case)
		printf(" delivery %.1fMbit/s", (double)t->delivery_rate * 8 / 1e6);
	putchar('\n');
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

		table_fmt_endpoint(c->_saddr_case ? c->saddr : NULL, true, c->sport, src,
				   sizeof(src));
		table_fmt_endpoint(c->_daddr_case ? c->daddr : NULL, true, c->dport, dst,
				   sizeof(dst));
		printf("%-10s %-12s %-6s %-28s %-28s %-7s %zu\n", str(c->token_hex),
		       fmt_netns(c->netns, c->_netns_name_case, c->netns_name, ns, sizeof(ns)),
		       !c->_server_side_case ? "?"
		       : c->server_side	     ? "server"
					     : "client",
		       src, dst, c->established ? "estab" : "open", c->n_subflows);
		for (size_t j = 0; j < c->n_subflows; j++) {
			const Sysobs__V1__MptcpSubflow *s = c->subflows[j];

			table_fmt_endpoint(s->_saddr_case ? s->saddr : NULL, true, s->sport, src,
					   sizeof(src));
			table_fmt_endpoint(s->_daddr_case ? s->daddr : NULL, true, s->dport, dst,
					   sizeof(dst));
			table_fmt_time(s->since, since, sizeof(since));
			printf("  subflow %u/%u %-28s %-28s %s%s since %s\n", s->loc_id, s->rem_id,
			       src, dst, s->family, s->backup ? " backup" : "", since);
			if (s->tcp)
				print_mptcp_subflow_tcp(s->tcp);
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

			table_fmt_time(r->time, t, sizeof(t));
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
		table_fmt_time(last ? last->time : NULL, t, sizeof(t));
		printf("%-60s %7zu  %-24s %.17g\n", labels, s->n_points, t,
		       last ? last->value : 0.0);
	}
	sysobs__v1__series_list__free_unpacked(m, NULL);
	return 1;
}
