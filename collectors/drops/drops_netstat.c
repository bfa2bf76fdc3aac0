// SPDX-License-Identifier: MIT
/*
 * drops_netstat: the kernel's own per-namespace TCP counters for drops the
 * kfree_skb tracepoint does not see (docs/drops.md, "What the tracepoint
 * does not see"), read by a walk of the kernel's namespace list
 * (bpf/netstat.bpf.c) that needs no privilege once loaded: it works after
 * the agent drops its privileges, for every namespace, also those created
 * later or held by no process. One series per namespace and counter, from
 * the first collect that finds one of the namespace's counters non-zero;
 * a namespace's series are declared gone when it leaves the list. The same
 * walk lists the AF_PACKET sockets with receive drops
 * (sysobs_packet_socket_drops_total, psk_publish()).
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "bpf/netstat.h"
#include "collectors/collector.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/sink.h"

static const char *const netstat_labels[] = {"netns", NULL};

/* In the order of mib_idx. */
static const struct metric_desc netstat_metrics[NETSTAT_N] = {
    {"sysobs_tcp_listen_drops_total",
     "TCP segments to a listening socket that it dropped (TcpExt ListenDrops, the namespace's "
     "/proc/net/netstat): SYNs refused for a full accept or SYN queue are freed with "
     "consume_skb() and never reach sysobs_packet_drops_total.",
     METRIC_KIND_COUNTER, netstat_labels},
    {"sysobs_tcp_listen_overflows_total",
     "Times a listening socket's accept queue was full (TcpExt ListenOverflows): a refused "
     "SYN or a dropped handshake-completing ACK.",
     METRIC_KIND_COUNTER, netstat_labels},
    {"sysobs_tcp_reqq_full_drops_total",
     "SYNs dropped because the SYN queue was full and syncookies were off (TcpExt "
     "TCPReqQFullDrop), freed with consume_skb().",
     METRIC_KIND_COUNTER, netstat_labels},
    {"sysobs_tcp_abort_on_close_total",
     "TCP connections reset because they were closed with unread data (TcpExt "
     "TCPAbortOnClose); the unread segments are freed with __kfree_skb(), no tracepoint.",
     METRIC_KIND_COUNTER, netstat_labels},
};
static const struct metric_desc psk_metric = {
    "sysobs_packet_socket_drops_total",
    "Packets AF_PACKET sockets of the namespace could not take (full receive buffer or full "
    "TPACKET ring: tcpdump's \"dropped by kernel\"), from each socket's own count (sk_drops, "
    "packet_diag's SK_MEMINFO_DROPS; PACKET_STATISTICS tp_drops counts the same). The skb is "
    "shared, so kfree_skb does not fire: never in sysobs_packet_drops_total.",
    METRIC_KIND_COUNTER, netstat_labels};

/* Looked up by name in the running kernel's BTF: the values are not stable
 * (Debian's linux/snmp.h says LINUX_MIB_LISTENDROPS = 20, the 6.18 kernel
 * here 24: entries were inserted before it). */
static const char *const netstat_mib_names[NETSTAT_N] = {
    "LINUX_MIB_LISTENDROPS", "LINUX_MIB_LISTENOVERFLOWS", "LINUX_MIB_TCPREQQFULLDROP",
    "LINUX_MIB_TCPABORTONCLOSE"};

int drops_netstat_indices(const struct btf *btf, uint32_t idx[NETSTAT_N])
{
	uint32_t n = btf ? btf__type_cnt(btf) : 0;
	int found = 0;

	for (int k = 0; k < NETSTAT_N; k++)
		idx[k] = UINT32_MAX;
	for (uint32_t id = 1; id < n && found < NETSTAT_N; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (uint16_t i = 0; i < btf_vlen(t); i++) {
			const char *name = btf__name_by_offset(btf, e[i].name_off);

			for (int k = 0; k < NETSTAT_N; k++)
				if (idx[k] == UINT32_MAX && name &&
				    !strcmp(name, netstat_mib_names[k])) {
					idx[k] = (uint32_t)e[i].val;
					found++;
				}
		}
	}
	return found == NETSTAT_N ? 0 : -ENOENT;
}

/* An AF_PACKET socket with drops, as the last walk saw it. */
struct psk_seen {
	uint64_t sk;
	uint32_t inum;
	uint32_t drops;
};

/* A namespace's AF_PACKET drops so far (sockets closed since included). */
struct psk_total {
	uint32_t inum;
	uint64_t total;
};

struct drops_netstat {
	int prog_fd;
	const struct netstat_ns *table; /* the walk's .bss, mmapped */
	const struct netstat_psk *psk;	/* ... its packet sockets with drops */
	const __u32 *npsk;
	struct sink_family *fam[NETSTAT_N];
	struct sink_family *psk_fam;
	uint32_t *shown; /* namespaces with series, sorted */
	size_t nshown;
	struct psk_seen *socks; /* sorted by sk */
	size_t nsocks;
	struct psk_total *totals; /* sorted by inum */
	size_t ntotals;
	bool warned;
};

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int run(struct drops_netstat *ns, uint32_t *n)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	if (bpf_prog_test_run_opts(ns->prog_fd, &opts))
		return -errno;
	*n = opts.retval;
	if (*n == NETNS_WALK_NO_INIT)
		return -ENOENT;
	if (*n == NETSTAT_NO_OFFSETS)
		return -EOPNOTSUPP;
	if (*n > NETNS_LIVE_MAX)
		return -E2BIG;
	return 0;
}

struct drops_netstat *drops_netstat_open(struct collector *c, int prog_fd,
					 const struct netstat_ns *table,
					 const struct netstat_psk *psk, const __u32 *npsk)
{
	struct drops_netstat *ns = calloc(1, sizeof(*ns));
	const char *why = NULL;
	uint32_t n;
	int err;

	if (!ns)
		return NULL;
	if (prog_fd < 0) {
		err = prog_fd;
		why = err == -ENOENT	   ? "no LINUX_MIB_* counters in the kernel's BTF"
		      : err == -EOPNOTSUPP ? "the kernel has no bpf_map_lookup_percpu_elem() "
					     "(Linux 5.19)"
					   : "the walk did not load";
		goto out_warn;
	}
	ns->prog_fd = prog_fd;
	ns->table = table;
	ns->psk = psk;
	ns->npsk = npsk;
	if ((err = run(ns, &n)))
		goto out_warn;
	for (int i = 0; i < NETSTAT_N; i++)
		if (!(ns->fam[i] = sink_family(c->sink, &netstat_metrics[i]))) {
			err = -ENOMEM;
			goto out_warn;
		}
	if (!(ns->psk_fam = sink_family(c->sink, &psk_metric))) {
		err = -ENOMEM;
		goto out_warn;
	}
	return ns;
out_warn:
	clog_warn(c,
		  "cannot read the namespaces' TCP counters (%s): no "
		  "sysobs_tcp_listen_drops_total and the like",
		  why ? why : strerror(-err));
	drops_netstat_close(ns);
	return NULL;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct psk_total *psk_total_get(struct drops_netstat *ns, uint32_t inum)
{
	struct psk_total *t = bsearch(&inum, ns->totals, ns->ntotals, sizeof(*t), u32_cmp), *p;
	size_t at = 0;

	if (t)
		return t;
	p = realloc(ns->totals, (ns->ntotals + 1) * sizeof(*p));
	if (!p)
		return NULL;
	ns->totals = p;
	while (at < ns->ntotals && p[at].inum < inum)
		at++;
	memmove(p + at + 1, p + at, (ns->ntotals - at) * sizeof(*p));
	p[at] = (struct psk_total){inum, 0};
	ns->ntotals++;
	return &p[at];
}

/*
 * sysobs_packet_socket_drops_total{netns}: each socket's drops added as they
 * grow (a socket first seen brings all it counted; an address seen again
 * with fewer drops is another socket), so a namespace's total keeps what its
 * closed sockets counted up to the walk before they closed. live: the
 * walk's namespaces (sorted inums); a namespace no longer in it is gone.
 */
static int psk_publish(struct collector *c, struct drops_netstat *ns, uint32_t n,
		       const uint32_t *live, size_t nlive)
{
	uint32_t cnt = ns->npsk ? *ns->npsk : 0;
	bool truncated = cnt >= NETSTAT_PSK_MAX;
	struct psk_seen *now;
	size_t nnow = 0, j = 0;
	char label[16];

	if (!ns->psk)
		return 0;
	if (cnt > NETSTAT_PSK_MAX)
		cnt = NETSTAT_PSK_MAX;
	now = calloc(cnt + ns->nsocks + 1, sizeof(*now));
	if (!now)
		return -ENOMEM;
	for (uint32_t i = 0; i < cnt; i++) {
		const struct netstat_psk *e = &ns->psk[i];
		const struct psk_seen *old;
		struct psk_total *t;
		uint32_t inum = e->ns < n ? ns->table[e->ns].inum : 0;

		if (!inum)
			continue;
		old = bsearch(&e->sk, ns->socks, ns->nsocks, sizeof(*old), u64_cmp);
		t = psk_total_get(ns, inum);
		if (t)
			t->total += old && old->inum == inum && e->drops >= old->drops
					? e->drops - old->drops
					: e->drops;
		now[nnow++] = (struct psk_seen){e->sk, inum, e->drops};
	}
	qsort(now, nnow, sizeof(*now), u64_cmp);
	/* a truncated walk did not see every socket: keep the others' counts */
	for (size_t i = 0; truncated && i < ns->nsocks; i++)
		if (!bsearch(&ns->socks[i].sk, now, nnow, sizeof(*now), u64_cmp))
			now[nnow++] = ns->socks[i];
	if (truncated)
		qsort(now, nnow, sizeof(*now), u64_cmp);
	free(ns->socks);
	ns->socks = now;
	ns->nsocks = nnow;
	for (size_t i = 0; i < ns->ntotals; i++) {
		const char *values[] = {label, NULL};
		struct sink_series *s;

		snprintf(label, sizeof(label), "%" PRIu32, ns->totals[i].inum);
		s = sink_series(c->sink, ns->psk_fam, values);
		if (bsearch(&ns->totals[i].inum, live, nlive, sizeof(*live), u32_cmp)) {
			if (s)
				sink_set(c->sink, s, (double)ns->totals[i].total);
			ns->totals[j++] = ns->totals[i];
		} else {
			sink_series_gone(c->sink, ns->psk_fam, s);
		}
	}
	ns->ntotals = j;
	return 0;
}

int drops_netstat_publish(struct collector *c, struct drops_netstat *ns)
{
	const struct netstat_ns *e;
	uint32_t n = 0, *now;
	size_t nnow = 0;
	char label[16];
	int err;

	if (!ns)
		return 0;
	if ((err = run(ns, &n))) {
		if (!ns->warned)
			clog_warn(c, "namespaces' TCP counters: %s", strerror(-err));
		ns->warned = true;
		return 0;
	}
	ns->warned = false;
	e = ns->table;
	now = calloc(n ? n : 1, sizeof(*now));
	if (!now)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		now[i] = e[i].inum;
	qsort(now, n, sizeof(*now), u32_cmp);
	err = psk_publish(c, ns, n, now, n);
	if (err) {
		free(now);
		return err;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool any = false, shown;

		for (int k = 0; k < NETSTAT_N; k++)
			any |= e[i].v[k] != 0;
		shown = ns->nshown &&
			bsearch(&e[i].inum, ns->shown, ns->nshown, sizeof(*ns->shown), u32_cmp);
		if (!any && !shown)
			continue;
		now[nnow++] = e[i].inum;
		snprintf(label, sizeof(label), "%" PRIu32, e[i].inum);
		for (int k = 0; k < NETSTAT_N; k++) {
			const char *values[] = {label, NULL};
			struct sink_series *s = sink_series(c->sink, ns->fam[k], values);

			if (s)
				sink_set(c->sink, s, (double)e[i].v[k]);
		}
	}
	qsort(now, nnow, sizeof(*now), u32_cmp);
	/* shown before, not in the list now: the namespace is gone */
	for (size_t i = 0; i < ns->nshown; i++) {
		if (bsearch(&ns->shown[i], now, nnow, sizeof(*now), u32_cmp))
			continue;
		snprintf(label, sizeof(label), "%" PRIu32, ns->shown[i]);
		for (int k = 0; k < NETSTAT_N; k++) {
			const char *values[] = {label, NULL};
			struct sink_series *s = sink_series(c->sink, ns->fam[k], values);

			sink_series_gone(c->sink, ns->fam[k], s);
		}
	}
	free(ns->shown);
	ns->shown = now;
	ns->nshown = nnow;
	return 0;
}

void drops_netstat_close(struct drops_netstat *ns)
{
	if (!ns)
		return;
	free(ns->shown);
	free(ns->socks);
	free(ns->totals);
	free(ns);
}
