// SPDX-License-Identifier: MIT
/*
 * drops_samples: the drop_samples table and what fills it. Its descriptor
 * (columns, filters, the reason names the running kernel's BTF gives, for
 * ?reason=), and the ring-buffer records bpf/drops.bpf.c samples, decoded
 * (drops_decode.c) into rows, each stored with its id as the exemplar of
 * its drop counter. drops.c owns the collector and calls in here; nothing
 * here calls back into it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_capture.h"
#include "collectors/drops/drops_cgroup.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_stack.h"

#define DROPS_CONSUME_BUDGET 8192 /* records per on_ready before yielding */

/* --- store ----------------------------------------------------------------- */

/*
 * ?reason= is checked against the names the running kernel's BTF gives (and
 * UNKNOWN_<n>, which the collector writes for a value no BTF names). The
 * HTTP threads read an immutable snapshot of the names, published with a
 * release store after every (re)scan; older snapshots are freed at stop, as
 * a request may still be reading one.
 */
struct drops_names {
	struct drops_names *prev;
	size_t n;
	char (*name)[DROPS_REASON_NAME_MAX];
};

static struct drops_names *drops_names_cur;

void drops_names_publish(const struct drops_reasons *r)
{
	struct drops_names *n = calloc(1, sizeof(*n));
	size_t count = drops_reasons_count(r);

	if (!n)
		return;
	n->name = calloc(count ? count : 1, sizeof(*n->name));
	if (!n->name) {
		free(n);
		return;
	}
	for (size_t i = 0; i < count; i++) {
		const char *name = drops_reason_at(r, i);

		snprintf(n->name[n->n++], sizeof(n->name[0]), "%s", name);
	}
	n->prev = drops_names_cur;
	__atomic_store_n(&drops_names_cur, n, __ATOMIC_RELEASE);
}

void drops_names_free_all(void)
{
	struct drops_names *n = drops_names_cur;

	drops_names_cur = NULL;
	while (n) {
		struct drops_names *prev = n->prev;

		free(n->name);
		free(n);
		n = prev;
	}
}

static int drops_reason_lookup(const char *s, char *out, size_t len)
{
	const struct drops_names *n = __atomic_load_n(&drops_names_cur, __ATOMIC_ACQUIRE);
	char *end;

	if (!strncasecmp(s, "UNKNOWN_", 8) && s[8] >= '0' && s[8] <= '9') {
		unsigned long v = strtoul(s + 8, &end, 10);

		if (!*end && v <= UINT32_MAX) {
			snprintf(out, len, "UNKNOWN_%lu", v);
			return 0;
		}
	}
	for (size_t i = 0; n && i < n->n; i++) {
		if (!strcasecmp(s, n->name[i])) {
			snprintf(out, len, "%s", n->name[i]);
			return 0;
		}
	}
	return -ENOENT;
}

static void drops_reason_list(char *buf, size_t len)
{
	const struct drops_names *n = __atomic_load_n(&drops_names_cur, __ATOMIC_ACQUIRE);
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; n && i < n->n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", n->name[i]);

		if (w < 0 || (size_t)w >= len - off) {
			buf[off] = '\0'; /* never half a name */
			break;
		}
		off += (size_t)w;
	}
	if (!n || !n->n)
		snprintf(buf, len, "(the drops collector has not read the kernel's reasons)");
}

static const struct col_domain drops_reason_domain = {
    .lookup = drops_reason_lookup,
    .list = drops_reason_list,
};

static const char *const drops_protocols[] = {
    "tcp", "udp", "udplite", "icmp", "icmpv6", "sctp", "igmp", "gre",
    "esp", "ah",  "ip",	     "arp",  "other",  "none", NULL,
};
static const struct col_domain drops_protocol_domain = {.values = drops_protocols};

#define DROPS_COL(f, t, n, ...) COL(struct drops_row, f, t, n, __VA_ARGS__)
static const struct event_column drops_cols[] = {
    DROPS_COL(reason, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM,
	      .domain = &drops_reason_domain),
    DROPS_COL(reason_code, COL_UINT, COL_NOT_NULL),
    DROPS_COL(location, COL_TEXT, COL_NULL_EMPTY),
    DROPS_COL(ifindex, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .fmin = 1,
	      .fmax = INT32_MAX),
    DROPS_COL(ifname, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_EQ),
    /* 0: no namespace known (a datagram a closed UDP socket never read,
     * without fentry): a value the samples carry, so one to filter by */
    DROPS_COL(netns, COL_UINT, COL_NOT_NULL, .filter = COL_FILTER_EQ, .fmin = 0),
    DROPS_COL(l3, COL_TEXT, COL_NULL_EMPTY),
    DROPS_COL(protocol, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM,
	      .domain = &drops_protocol_domain),
    DROPS_COL(saddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    DROPS_COL(daddr, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ADDR, .param = "addr"),
    DROPS_COL(sport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port",
	      .fmax = 65535),
    DROPS_COL(dport, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ, .param = "port",
	      .fmax = 65535),
    DROPS_COL(icmp_type, COL_INT, COL_NULL_NEG),
    DROPS_COL(icmp_code, COL_INT, COL_NULL_NEG),
    DROPS_COL(tcp_flags, COL_INT, COL_NULL_NEG),
    DROPS_COL(len, COL_UINT, COL_NOT_NULL),
    DROPS_COL(cpu, COL_UINT, COL_NOT_NULL),
    DROPS_COL(truncated, COL_BOOL, COL_NULL_ZERO),
    DROPS_COL(fragment, COL_BOOL, COL_NULL_ZERO),
    DROPS_COL(cgroup_id, COL_UINT, COL_NULL_ZERO, .filter = COL_FILTER_EQ, .fmin = 1),
    DROPS_COL(cgroup, COL_TEXT, COL_NULL_EMPTY),
    /* ?container= the 12-digit label value, or any longer prefix */
    DROPS_COL(container, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_PREFIX,
	      .otel = "container.id"),
    DROPS_COL(netns_cookie, COL_UINT, COL_NULL_ZERO, .filter = COL_FILTER_EQ, .fmin = 1),
    DROPS_COL(stack, COL_TEXT, COL_NULL_EMPTY),
    DROPS_COL(capture, COL_BLOB, COL_NULL_EMPTY),
    DROPS_COL(orig_len, COL_UINT, COL_NULL_ZERO),
    /* ?pod=&pod_namespace=: Kubernetes names, as the runtime had them */
    COL_POD(struct drops_row),
    DROPS_COL(container_name, COL_TEXT, COL_NULL_EMPTY, .otel = "k8s.container.name"),
    {0},
};

static const char *const drop_sample_show[] = {
    "time", "reason", "protocol", "saddr", "daddr", "ifname", "len", "location", NULL,
};

const struct event_table drops_samples_table = {
    .name = "drop_samples",
    .collector = "drops",
    .route = "/api/v1/drops/samples",
    .help = "sampled drop records with 5-tuple, device, netns and kernel location",
    .cols = drops_cols,
    .row_size = sizeof(struct drops_row),
    .message = &sysobs__v1__drop_sample__descriptor,
    .list_message = &sysobs__v1__drop_sample_list__descriptor,
    .show = drop_sample_show,
    .stacks_route = "/api/v1/drops/stacks",
};

_Static_assert(sizeof(struct drops_row) <= EVENT_ROW_MAX, "drops_row too large for the store");
_Static_assert(DROPS_ROW_CAPTURE_MAX == DROPS_CAPTURE_MAX, "capture sizes differ");

/* --- samples ------------------------------------------------------------- */

/* Fills a table row from a decoded sample. */
static void drops_row_fill(struct drops_state *st, const struct drop_sample *s, struct drops_row *r)
{
	memset(r, 0, sizeof(*r));
	drops_reason_format(st->reasons, s->reason, r->reason, sizeof(r->reason));
	r->reason_code = s->reason;
	if (s->location)
		drops_ksyms_format(st->ksyms, s->location, r->location, sizeof(r->location));
	r->ifindex = s->ifindex > 0 ? s->ifindex : -1;
	snprintf(r->ifname, sizeof(r->ifname), "%s", s->ifname);
	r->netns = s->netns;
	drops_l3_name(s->l3_proto, r->l3, sizeof(r->l3));
	snprintf(r->protocol, sizeof(r->protocol), "%s",
		 drops_protocol_name(s->l3_proto, s->l4_proto));
	if (s->has_addrs) {
		snprintf(r->saddr, sizeof(r->saddr), "%s", s->saddr);
		snprintf(r->daddr, sizeof(r->daddr), "%s", s->daddr);
	}
	r->sport = s->has_ports ? s->sport : -1;
	r->dport = s->has_ports ? s->dport : -1;
	r->icmp_type = s->has_icmp ? s->icmp_type : -1;
	r->icmp_code = s->has_icmp ? s->icmp_code : -1;
	r->tcp_flags = s->has_ports && s->l4_proto == 6 ? s->tcp_flags : -1;
	r->len = s->len;
	r->cpu = s->cpu;
	r->truncated = s->truncated;
	r->fragment = s->fragment;
	r->cgroup_id = s->cgroup_id;
	r->netns_cookie = s->netns_cookie;
	drops_stack_fold(st->ksyms, s->stack, s->stack_n, r->stack, sizeof(r->stack));
	r->capture.len =
	    (uint16_t)drops_capture_sll2(s, r->capture.data, sizeof(r->capture.data), &r->orig_len);
	if (s->cgroup_id &&
	    !drops_cgroups_path(st->cgroups, s->cgroup_id, r->cgroup, sizeof(r->cgroup)))
		drops_container_id(r->cgroup, r->container, sizeof(r->container));
}

/* The pod's names from the agent's cache: no call to a runtime here. */
static void drops_row_pod(struct sink *k, struct drops_row *r)
{
	struct sink_pod p;

	if (sink_pod(k, r->container, r->cgroup, r->netns, &p))
		return;
	SINK_POD_ROW_SET(r, &p);
	snprintf(r->container_name, sizeof(r->container_name), "%s", p.container);
}

/* The stored sample's id, as the exemplar of its drop counter: from a
 * graph of sysobs_packet_drops_total to GET /api/v1/drops/samples, on the
 * series as drops_counts.c labels it. */
static void drops_sample_exemplar(struct collector *c, struct drops_state *st,
				  const struct drop_sample *s, const struct drops_row *row,
				  int64_t ts, int64_t id)
{
	char netns[16], ids[24], ctr[13];
	struct sink_pod np;
	const char *values[7] = {row->reason, row->protocol, NULL, NULL, NULL, NULL, NULL};
	int v = 2;

	snprintf(netns, sizeof(netns), "%" PRIu32, s->netns);
	snprintf(ctr, sizeof(ctr), "%s", row->container);
	if (st->cfg->netns_label)
		values[v++] = netns;
	if (st->cfg->container_label)
		values[v++] = ctr;
	if (st->cfg->pod_label) { /* the counts name a pod by its netns */
		sink_pod(c->sink, "", "", s->netns, &np);
		values[v++] = np.pod;
		values[v++] = np.pod_namespace;
	}
	snprintf(ids, sizeof(ids), "%lld", (long long)id);
	sink_exemplar(c->sink, sink_series(c->sink, st->drops, values), "sample_id", ids, 1, ts);
}

int drops_on_sample(void *ctx, void *data, size_t len)
{
	struct collector *c = ctx;
	struct drops_state *st = c->priv;
	struct drop_sample s;
	struct drops_row row;
	int64_t ts, id;

	if (st->rec)
		drops_record_sample(st, data, len);
	if (drops_record_decode(data, len, &s)) {
		st->invalid++;
		return 0;
	}
	if (st->rec)
		drops_record_syms(st, &s);
	drops_row_fill(st, &s, &row);
	if (!st->replay) /* the names of the host now, not of the recording's */
		drops_row_pod(c->sink, &row);
	ts = (int64_t)s.ts_mono_ns + st->mono_to_wall_ns;
	/* Not for a namespace seen deleted: its series is gone (or taken over
	 * by a namespace that got its inode number), and asking for it would
	 * bring it back. */
	if (!sink_event_id(c->sink, &drops_samples_table, ts, &row, &id) && id > 0 &&
	    !drops_counts_netns_gone(st->counts, s.netns_cookie))
		drops_sample_exemplar(c, st, &s, &row, ts, id);
	/* Budget per wakeup: a negative return stops ring_buffer__consume()
	 * (this record already consumed); the ring fd stays readable, so the
	 * loop comes back after serving everything else. */
	if (++st->consumed >= DROPS_CONSUME_BUDGET)
		return -EAGAIN;
	return 0;
}
