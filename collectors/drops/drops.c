// SPDX-License-Identifier: MIT
/*
 * The "drops" collector: packet drops by reason from the skb:kfree_skb
 * tracepoint (bpf/drops.bpf.c).
 *
 *   init     kernel BTF -> reason names and tracepoint arity; open the BPF
 *            object, set its knobs, load it (tp_btf, else raw_tp). Missing
 *            BTF, a tracepoint without the reason argument, or no permission
 *            to load BPF make the collector "unavailable" with that reason.
 *   start    attach, ring buffer (its epoll fd is c->fd), kallsyms.
 *   collect  every interval: sum the per-CPU counters into
 *            sysobs_packet_drops_total{reason,protocol[,netns]} (kernel
 *            totals, so series_set) and the program's own health counters.
 *   on_ready drain sampled records into the drop_samples table.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "bpf/drops.h"
#include "bpf/drops.skel.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_ksym.h"

#define DROPS_RESCAN_MS	     60000 /* module BTF rescan for unnamed subsystem reasons */
#define DROPS_CONSUME_BUDGET 8192  /* records per on_ready before yielding */

struct drops_agg {
	uint32_t reason;
	const char *proto; /* static string from drops_protocol_name() */
	uint32_t netns;
	uint64_t count;
};

struct drops_state {
	struct drops_bpf *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	struct btf *vmlinux;
	struct drops_reasons *reasons;
	struct drops_ksyms *ksyms;
	const char *attach_kind; /* "tp_btf" or "raw_tp" */

	char btf_path[PATH_MAX];
	char kallsyms_path[PATH_MAX];
	bool netns_label;
	bool fast_slots;
	int nargs; /* kfree_skb tracepoint arguments */
	bool has_rdonly_cast;
	uint64_t sample_rate, sample_burst, map_entries, ring_bytes;
	int ncpus;	  /* possible CPUs: per-CPU value arrays */
	uint64_t *percpu; /* ncpus values */
	struct drops_agg *agg;
	size_t agg_cap;

	int64_t mono_to_wall_ns;
	int64_t last_rescan_ns;
	uint64_t invalid;  /* undecodable ring-buffer records */
	unsigned consumed; /* records handled in this on_ready */
	uint64_t stat[DROPS_STAT_MAX];
	uint64_t events;	      /* drops counted (slots + hash), last collect */
	uint64_t not_sampled;	      /* drops neither sampled nor lost */
	__u32 *slot_keys;	      /* DROPS_SLOTS */
	struct drops_slot *slot_vals; /* DROPS_SLOTS * ncpus */

	struct metric *drops;
	struct metric_series *runs, *overflow, *samples, *lost, *throttled, *invalid_s, *keys;
};

/* --- store ----------------------------------------------------------------- */

static const char *const drops_migrations[] = {
    "CREATE TABLE drop_samples(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,"
    " reason TEXT, reason_code INTEGER, location TEXT, ifindex INTEGER, ifname TEXT,"
    " netns INTEGER, l3 TEXT, protocol TEXT, saddr TEXT, daddr TEXT, sport INTEGER,"
    " dport INTEGER, icmp_type INTEGER, icmp_code INTEGER, tcp_flags INTEGER,"
    " len INTEGER, cpu INTEGER);"
    "CREATE INDEX drop_samples_ts ON drop_samples(ts);",
    NULL,
};

static int bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	return s[0] ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static int bind_int_or_null(sqlite3_stmt *st, int i, int64_t v)
{
	return v >= 0 ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static int drops_bind(sqlite3_stmt *st, const void *p)
{
	const struct drops_row *r = p;
	int rc;

	if ((rc = bind_text_or_null(st, 3, r->reason)) ||
	    (rc = sqlite3_bind_int64(st, 4, r->reason_code)) ||
	    (rc = bind_text_or_null(st, 5, r->location)) ||
	    (rc = bind_int_or_null(st, 6, r->ifindex)) ||
	    (rc = bind_text_or_null(st, 7, r->ifname)) ||
	    (rc = sqlite3_bind_int64(st, 8, r->netns)) || (rc = bind_text_or_null(st, 9, r->l3)) ||
	    (rc = bind_text_or_null(st, 10, r->protocol)) ||
	    (rc = bind_text_or_null(st, 11, r->saddr)) ||
	    (rc = bind_text_or_null(st, 12, r->daddr)) ||
	    (rc = bind_int_or_null(st, 13, r->sport)) ||
	    (rc = bind_int_or_null(st, 14, r->dport)) ||
	    (rc = bind_int_or_null(st, 15, r->icmp_type)) ||
	    (rc = bind_int_or_null(st, 16, r->icmp_code)) ||
	    (rc = bind_int_or_null(st, 17, r->tcp_flags)) ||
	    (rc = sqlite3_bind_int64(st, 18, r->len)))
		return rc;
	return sqlite3_bind_int64(st, 19, r->cpu);
}

const struct store_table drops_samples_table = {
    .name = "drop_samples",
    .collector = "drops",
    .migrations = drops_migrations,
    .insert_sql = "INSERT INTO drop_samples(id, ts, reason, reason_code, location, ifindex,"
		  " ifname, netns, l3, protocol, saddr, daddr, sport, dport, icmp_type,"
		  " icmp_code, tcp_flags, len, cpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
		  " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
    .bind = drops_bind,
    .row_size = sizeof(struct drops_row),
};

_Static_assert(sizeof(struct drops_row) <= STORE_ROW_MAX, "drops_row too large for the store");

static const struct store_table *const drops_tables[] = {&drops_samples_table, NULL};

/* --- libbpf messages ----------------------------------------------------- */

/* Warnings libbpf printed during the current load attempt; the one naming
 * the error is quoted in c->why (the first is often a harmless
 * RLIMIT_MEMLOCK note). */
#define DROPS_LIBBPF_LINES 8
static char drops_libbpf_warn[DROPS_LIBBPF_LINES][200];
static unsigned drops_libbpf_nwarn;

static int drops_libbpf_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (lvl != LIBBPF_WARN) {
		log_msg(LOG_LVL_DEBUG, "drops", "%s", buf);
		return 0;
	}
	log_msg(LOG_LVL_WARN, "drops", "%s", buf);
	if (drops_libbpf_nwarn < DROPS_LIBBPF_LINES) {
		char *dst = drops_libbpf_warn[drops_libbpf_nwarn++];
		const char *src = strncmp(buf, "libbpf: ", 8) ? buf : buf + 8;

		n = strlen(src);
		if (n > sizeof(drops_libbpf_warn[0]) - 1)
			n = sizeof(drops_libbpf_warn[0]) - 1; /* c->why is shorter anyway */
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return 0;
}

/* The libbpf warning that names err, else the first one, else "". */
static const char *drops_libbpf_cause(int err)
{
	const char *what = strerror(-err);

	for (unsigned i = 0; i < drops_libbpf_nwarn; i++)
		if (strstr(drops_libbpf_warn[i], what))
			return drops_libbpf_warn[i];
	return drops_libbpf_nwarn ? drops_libbpf_warn[0] : "";
}

/* --- init ---------------------------------------------------------------- */

/* Adds subsystem reason names from every module BTF next to vmlinux
 * (/sys/kernel/btf/<module>): openvswitch, mac80211, ... are modules. */
static void drops_scan_modules(struct drops_state *st)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct btf *base = st->vmlinux;
	struct dirent *e;
	char *slash;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", st->btf_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	d = opendir(dir[0] ? dir : "/");
	if (!d)
		return;
	/* a rescan after init parses vmlinux again (not kept: ~6 MiB) */
	if (!base && !(base = btf__parse(st->btf_path, NULL))) {
		closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		struct btf *mod;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, slash + 1))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		mod = btf__parse_split(path, base);
		if (!mod)
			continue;
		drops_reasons_add_btf(st->reasons, mod);
		btf__free(mod);
	}
	closedir(d);
	if (base != st->vmlinux)
		btf__free(base);
}

static int drops_read_config(struct collector *c, struct drops_state *st)
{
	struct config *cfg = &c->agent->cfg;
	const char *s;
	uint64_t interval;
	int err;

	if ((err = cfg_get_duration_ms(cfg, c->section, "interval", 100, 3600000, &interval)) ||
	    (err = cfg_get_u64(cfg, c->section, "sample_rate", 0, 1000000, &st->sample_rate)) ||
	    (err = cfg_get_u64(cfg, c->section, "sample_burst", 1, 1000000, &st->sample_burst)) ||
	    (err = cfg_get_u64(cfg, c->section, "map_entries", 16, 1 << 20, &st->map_entries)) ||
	    (err =
		 cfg_get_size(cfg, c->section, "ring_bytes", 4096, 1ull << 30, &st->ring_bytes)) ||
	    (err = cfg_get_bool(cfg, c->section, "netns_label", &st->netns_label)) ||
	    (err = cfg_get_bool(cfg, c->section, "fast_slots", &st->fast_slots)))
		return err;
	if (st->ring_bytes & (st->ring_bytes - 1) || st->ring_bytes % getpagesize())
		return cfg_error(cfg, c->section, "ring_bytes",
				 "must be a power of two and a multiple of the page size");
	s = collector_cfg(c, "attach");
	if (strcmp(s, "auto") && strcmp(s, "tp_btf") && strcmp(s, "raw_tp"))
		return cfg_error(cfg, c->section, "attach", "must be auto, tp_btf or raw_tp");
	snprintf(st->btf_path, sizeof(st->btf_path), "%s", collector_cfg(c, "btf_path"));
	snprintf(st->kallsyms_path, sizeof(st->kallsyms_path), "%s", collector_cfg(c, "kallsyms"));
	c->interval_ms = interval;
	return 0;
}

/* Opens and loads the BPF object with one of its two programs. */
static int drops_load(struct drops_state *st, bool tp_btf)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = st->btf_path);
	long ncpu_online = sysconf(_SC_NPROCESSORS_ONLN);
	struct drops_bpf *skel;
	int err;

	skel = drops_bpf__open_opts(&oo);
	if (!skel)
		return -errno;
	bpf_program__set_autoload(skel->progs.drops_tp_btf, tp_btf);
	bpf_program__set_autoload(skel->progs.drops_raw_tp, !tp_btf);
	bpf_program__set_autoload(skel->progs.drops_baseline, false);
	skel->rodata->has_rx_sk = st->nargs >= 4;
	skel->rodata->use_slots = st->fast_slots;
	skel->rodata->has_rdonly_cast = st->has_rdonly_cast;
	if (st->sample_rate) {
		/* Host-wide rate split evenly over the online CPUs' buckets. */
		uint64_t per_cpu_burst;

		if (ncpu_online < 1)
			ncpu_online = 1;
		per_cpu_burst = st->sample_burst / ncpu_online;
		if (!per_cpu_burst)
			per_cpu_burst = 1;
		skel->rodata->sample_cost_ns = 1000000000ull * ncpu_online / st->sample_rate;
		skel->rodata->sample_burst_ns = skel->rodata->sample_cost_ns * per_cpu_burst;
	}
	if ((err = bpf_map__set_max_entries(skel->maps.counts, st->map_entries)) ||
	    (err = bpf_map__set_max_entries(skel->maps.samples, st->ring_bytes)))
		goto err_destroy;
	err = drops_bpf__load(skel);
	if (err)
		goto err_destroy;
	st->skel = skel;
	st->attach_kind = tp_btf ? "tp_btf" : "raw_tp";
	return 0;

err_destroy:
	drops_bpf__destroy(skel);
	return err;
}

static int drops_init(struct collector *c)
{
	struct drops_state *st;
	libbpf_print_fn_t prev;
	const char *attach;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	c->priv = st;
	err = drops_read_config(c, st);
	if (err)
		return err;

	if (access(st->btf_path, R_OK))
		return collector_unavailable(c, -ENODEV,
					     "no kernel BTF at %s (%s): kernel built without "
					     "CONFIG_DEBUG_INFO_BTF",
					     st->btf_path, strerror(errno));
	st->vmlinux = btf__parse(st->btf_path, NULL);
	if (!st->vmlinux)
		return collector_unavailable(c, -ENODEV, "cannot parse kernel BTF %s: %s",
					     st->btf_path, strerror(errno));
	st->nargs = drops_btf_kfree_skb_nargs(st->vmlinux);
	if (st->nargs < 0)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "kernel has no skb:kfree_skb tracepoint in BTF");
	if (st->nargs < 3)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "skb:kfree_skb has no reason argument (%d arguments; "
					     "needs Linux 5.17 or later)",
					     st->nargs);
	st->reasons = drops_reasons_new(st->vmlinux);
	if (!st->reasons)
		return collector_unavailable(
		    c, -EOPNOTSUPP, "kernel BTF has no enum skb_drop_reason: %s", strerror(errno));
	drops_scan_modules(st);
	/* bpf_rdonly_cast() (v6.2) lets tp_btf read packet bytes without a
	 * helper call; kfuncs are FUNCs in the kernel's BTF. */
	st->has_rdonly_cast =
	    btf__find_by_name_kind(st->vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	/* Names are copied out. The parsed BTF is ~6 MiB: gone before libbpf
	 * parses its own copy for CO-RE, and not part of the idle agent. */
	btf__free(st->vmlinux);
	st->vmlinux = NULL;

	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus < 1)
		return collector_unavailable(c, -ENODEV, "cannot count possible CPUs");
	st->percpu = calloc(st->ncpus, sizeof(*st->percpu));
	st->slot_keys = calloc(DROPS_SLOTS, sizeof(*st->slot_keys));
	st->slot_vals = calloc((size_t)DROPS_SLOTS * st->ncpus, sizeof(*st->slot_vals));
	if (!st->percpu || !st->slot_keys || !st->slot_vals)
		return -ENOMEM;

	drops_libbpf_nwarn = 0;
	prev = libbpf_set_print(drops_libbpf_print);
	attach = collector_cfg(c, "attach");
	err = drops_load(st, strcmp(attach, "raw_tp") != 0);
	if (err && !strcmp(attach, "auto") && err != -EPERM) {
		clog_warn(c, "tp_btf program did not load (%s); trying raw_tp", strerror(-err));
		drops_libbpf_nwarn = 0;
		err = drops_load(st, false);
	}
	libbpf_set_print(prev);
	/* The verifier also answers EACCES (a refused pointer access): only
	 * without the capabilities is it a permission problem. */
	if (err == -EPERM || (err == -EACCES && !collector_have_bpf_caps()))
		return collector_unavailable(
		    c, err,
		    "no permission to load BPF (needs CAP_BPF and CAP_PERFMON, "
		    "or CAP_SYS_ADMIN): %s; libbpf: %s",
		    strerror(-err), drops_libbpf_cause(err));
	if (err == -EACCES)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "the kernel's verifier refused the BPF program: %s; "
					     "libbpf: %s",
					     strerror(-err), drops_libbpf_cause(err));
	/* -EINVAL would read as a config error to the agent: a program this
	 * kernel's verifier refuses is a missing feature. */
	if (err)
		return collector_unavailable(c, err == -EINVAL ? -EOPNOTSUPP : err,
					     "cannot load the BPF program: %s; libbpf: %s",
					     strerror(-err), drops_libbpf_cause(err));
	clog_info(c, "%zu drop reasons from %s; kfree_skb has %d arguments; program %s",
		  drops_reasons_count(st->reasons), st->btf_path, st->nargs, st->attach_kind);
	return 0;
}

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
}

static int drops_on_sample(void *ctx, void *data, size_t len)
{
	struct collector *c = ctx;
	struct drops_state *st = c->priv;
	struct drop_sample s;
	struct drops_row row;

	if (drops_record_decode(data, len, &s)) {
		st->invalid++;
		return 0;
	}
	drops_row_fill(st, &s, &row);
	/* A full queue is counted by the store (queue_full); never block. */
	store_submit(c->agent->store, &drops_samples_table,
		     (int64_t)s.ts_mono_ns + st->mono_to_wall_ns, &row);
	/* Budget per wakeup: a negative return stops ring_buffer__consume()
	 * (this record already consumed); the ring fd stays readable, so the
	 * loop comes back after serving everything else. */
	if (++st->consumed >= DROPS_CONSUME_BUDGET)
		return -EAGAIN;
	return 0;
}

static int drops_on_ready(struct collector *c)
{
	struct drops_state *st = c->priv;
	int n;

	st->consumed = 0;
	n = ring_buffer__consume(st->rb);
	return n < 0 && n != -EAGAIN ? n : 0;
}

/* --- start / collect ----------------------------------------------------- */

static int drops_start(struct collector *c)
{
	static const char *const labels2[] = {"reason", "protocol", NULL};
	static const char *const labels3[] = {"reason", "protocol", "netns", NULL};
	struct drops_state *st = c->priv;
	struct metrics *m = c->agent->metrics;
	libbpf_print_fn_t prev;
	int err = 0;

	st->drops = metrics_counter(m, "sysobs_packet_drops_total",
				    "Packets the kernel dropped, by drop reason (named from the "
				    "kernel's BTF) and protocol, since the collector started.",
				    st->netns_label ? labels3 : labels2);
	st->runs = metrics_counter1(m, "sysobs_drops_program_runs_total",
				    "Runs of the drops BPF program (kfree_skb events, including "
				    "not-dropped/consumed ones).");
	st->overflow =
	    metrics_counter1(m, "sysobs_drops_map_overflow_total",
			     "Drops not counted by reason because the kernel counter map "
			     "was full (raise map_entries).");
	st->samples = metrics_counter1(m, "sysobs_drop_samples_total",
				       "Sampled drop records sent by the BPF program.");
	st->lost = metrics_counter1(m, "sysobs_drop_samples_lost_total",
				    "Sampled drop records lost: the ring buffer was full.");
	st->throttled = metrics_counter1(m, "sysobs_drop_samples_throttled_total",
					 "Drops not sampled because of the sample_rate limit (or "
					 "sampling is off).");
	st->invalid_s = metrics_counter1(m, "sysobs_drop_samples_invalid_total",
					 "Ring-buffer records that did not decode.");
	st->keys = metrics_gauge1(m, "sysobs_drops_map_entries",
				  "Entries in use in the kernel counter hash (keys that missed "
				  "the per-CPU fast slots); map_entries is its size.");
	if (!st->drops || !st->runs || !st->overflow || !st->samples || !st->lost ||
	    !st->throttled || !st->invalid_s || !st->keys)
		return -ENOMEM;

	st->ksyms = drops_ksyms_load(st->kallsyms_path);
	if (!st->ksyms || !drops_ksyms_count(st->ksyms))
		clog_warn(c, "no kernel symbols from %s: drop locations stay hex",
			  st->kallsyms_path);

	st->mono_to_wall_ns = clock_wall_ns() - clock_mono_ns();
	prev = libbpf_set_print(drops_libbpf_print);
	drops_libbpf_nwarn = 0;
	st->link =
	    bpf_program__attach(!strcmp(st->attach_kind, "tp_btf") ? st->skel->progs.drops_tp_btf
								   : st->skel->progs.drops_raw_tp);
	/* attach = auto: a tp_btf program that loaded but does not attach gets
	 * the raw_tp one, as one that does not load does (drops_init). */
	if (!st->link && !strcmp(st->attach_kind, "tp_btf") &&
	    !strcmp(collector_cfg(c, "attach"), "auto")) {
		clog_warn(c, "tp_btf/kfree_skb did not attach (%s); trying raw_tp",
			  strerror(errno));
		drops_bpf__destroy(st->skel);
		st->skel = NULL;
		drops_libbpf_nwarn = 0;
		err = drops_load(st, false);
		if (err) {
			snprintf(c->why, sizeof(c->why), "load raw_tp after tp_btf: %s; libbpf: %s",
				 strerror(-err), drops_libbpf_cause(err));
			goto out_print;
		}
		st->link = bpf_program__attach(st->skel->progs.drops_raw_tp);
	}
	if (!st->link) {
		err = -errno;
		snprintf(c->why, sizeof(c->why), "attach %s/kfree_skb: %s; libbpf: %s",
			 st->attach_kind, strerror(-err), drops_libbpf_cause(err));
		goto out_print;
	}
	/* after the attach: a raw_tp fallback has maps of its own */
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.samples), drops_on_sample, c, NULL);
	if (!st->rb) {
		err = -errno;
		goto out_print;
	}
	c->fd = ring_buffer__epoll_fd(st->rb);
out_print:
	libbpf_set_print(prev);
	return err;
}

static int drops_sum_percpu(struct drops_state *st, int fd, const void *key, uint64_t *sum)
{
	if (bpf_map_lookup_elem(fd, key, st->percpu))
		return -errno;
	*sum = 0;
	for (int i = 0; i < st->ncpus; i++)
		*sum += st->percpu[i];
	return 0;
}

static int agg_cmp(const void *a, const void *b)
{
	const struct drops_agg *x = a, *y = b;
	int r;

	if (x->reason != y->reason)
		return x->reason < y->reason ? -1 : 1;
	r = strcmp(x->proto, y->proto);
	if (r)
		return r;
	return x->netns < y->netns ? -1 : x->netns > y->netns;
}

/* Module BTF may have appeared since start (openvswitch, mac80211 loaded
 * later): rescan, at most once a minute, when a subsystem value is unnamed. */
static void drops_maybe_rescan(struct drops_state *st, uint32_t reason)
{
	int64_t now = clock_mono_ns();

	if (!drops_reason_subsys_unnamed(st->reasons, reason) ||
	    now - st->last_rescan_ns < (int64_t)DROPS_RESCAN_MS * 1000000)
		return;
	st->last_rescan_ns = now;
	drops_scan_modules(st);
}

static struct drops_agg *agg_next(struct drops_state *st, size_t *n)
{
	if (*n == st->agg_cap) {
		size_t cap = st->agg_cap ? st->agg_cap * 2 : 64;
		struct drops_agg *p = realloc(st->agg, cap * sizeof(*p));

		if (!p)
			return NULL;
		st->agg = p;
		st->agg_cap = cap;
	}
	return &st->agg[(*n)++];
}

static int agg_add(struct drops_state *st, size_t *n, const struct drops_key *key, uint64_t count)
{
	struct drops_agg *a = agg_next(st, n);

	if (!a)
		return -ENOMEM;
	a->reason = key->reason;
	a->proto = drops_protocol_name(key->l3_proto, key->l4_proto);
	a->netns = st->netns_label ? key->netns : 0;
	a->count = count;
	st->events += count;
	return 0;
}

/* The fast slot table: every slot of every CPU, in one batched read when the
 * kernel supports it (v5.6 for arrays), else slot by slot. */
static int drops_read_slots(struct drops_state *st, size_t *n)
{
	int fd = bpf_map__fd(st->skel->maps.slots);
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 count = DROPS_SLOTS, out_batch = 0;
	int err;

	err =
	    bpf_map_lookup_batch(fd, NULL, &out_batch, st->slot_keys, st->slot_vals, &count, &opts);
	if (err && errno != ENOENT) {
		/* Fallback: one lookup per slot. */
		for (count = 0; count < DROPS_SLOTS; count++) {
			st->slot_keys[count] = count;
			if (bpf_map_lookup_elem(fd, &count,
						st->slot_vals + (size_t)count * st->ncpus))
				return -errno;
		}
	}
	for (__u32 i = 0; i < count; i++) {
		for (int cpu = 0; cpu < st->ncpus; cpu++) {
			const struct drops_slot *sl = &st->slot_vals[(size_t)i * st->ncpus + cpu];

			if (sl->count && (err = agg_add(st, n, &sl->key, sl->count)))
				return err;
		}
	}
	return 0;
}

/* Sums the fast slots and the hash into sysobs_packet_drops_total, one series
 * per (reason, protocol[, netns]); st->events gets the total of all drops. */
static int drops_publish_counts(struct collector *c, struct drops_state *st)
{
	int fd = bpf_map__fd(st->skel->maps.counts);
	struct drops_key key, *prev = NULL;
	size_t n = 0, n_hash = 0, i, j;
	int err;

	st->events = 0;
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		uint64_t sum;

		prev = &key;
		if (drops_sum_percpu(st, fd, &key, &sum))
			continue; /* keys are never deleted: cannot happen */
		if ((err = agg_add(st, &n, &key, sum)))
			return err;
		n_hash++;
	}
	series_set(st->keys, (double)n_hash);
	err = drops_read_slots(st, &n);
	if (err)
		return err;
	if (n)
		qsort(st->agg, n, sizeof(*st->agg), agg_cmp);
	for (i = 0; i < n; i = j) {
		char reason[DROPS_REASON_NAME_MAX], netns[16];
		const char *values[4] = {reason, st->agg[i].proto, netns, NULL};
		struct metric_series *s;
		uint64_t total = 0;

		for (j = i; j < n && !agg_cmp(&st->agg[i], &st->agg[j]); j++)
			total += st->agg[j].count;
		drops_maybe_rescan(st, st->agg[i].reason);
		drops_reason_format(st->reasons, st->agg[i].reason, reason, sizeof(reason));
		snprintf(netns, sizeof(netns), "%" PRIu32, st->agg[i].netns);
		s = metric_series(st->drops, values);
		if (!s) {
			err = -errno;
			return err ? err : -ENOMEM;
		}
		series_set(s, (double)total);
	}
	return 0;
}

static int drops_collect(struct collector *c)
{
	struct drops_state *st = c->priv;
	int fd = bpf_map__fd(st->skel->maps.stats);
	uint64_t events, sampled;
	int err;

	/* Wall clock may be stepped; samples are stamped with the latest offset. */
	st->mono_to_wall_ns = clock_wall_ns() - clock_mono_ns();
	for (uint32_t i = 0; i < DROPS_STAT_MAX; i++)
		drops_sum_percpu(st, fd, &i, &st->stat[i]);
	err = drops_publish_counts(c, st);
	if (err)
		return err;
	/* The program counts only rare events; the rest is arithmetic. */
	events = st->events + st->stat[DROPS_STAT_MAP_OVERFLOW];
	sampled = st->stat[DROPS_STAT_SAMPLES] + st->stat[DROPS_STAT_SAMPLES_LOST];
	series_set(st->runs, (double)(events + st->stat[DROPS_STAT_NOT_DROPS]));
	series_set(st->overflow, (double)st->stat[DROPS_STAT_MAP_OVERFLOW]);
	series_set(st->samples, (double)st->stat[DROPS_STAT_SAMPLES]);
	series_set(st->lost, (double)st->stat[DROPS_STAT_SAMPLES_LOST]);
	/* Counters are read one after the other: never let this go backwards. */
	if (events > sampled && events - sampled > st->not_sampled)
		st->not_sampled = events - sampled;
	series_set(st->throttled, (double)st->not_sampled);
	series_set(st->invalid_s, (double)st->invalid);
	return 0;
}

static void drops_stop(struct collector *c)
{
	struct drops_state *st = c->priv;

	if (!st)
		return;
	/* Drain what the kernel already wrote, then detach. */
	if (st->rb)
		ring_buffer__consume(st->rb);
	bpf_link__destroy(st->link);
	ring_buffer__free(st->rb);
	drops_bpf__destroy(st->skel);
	drops_ksyms_free(st->ksyms);
	drops_reasons_free(st->reasons);
	btf__free(st->vmlinux);
	free(st->percpu);
	free(st->slot_keys);
	free(st->slot_vals);
	free(st->agg);
	free(st);
	c->priv = NULL;
	c->fd = -1;
}

static const struct collector_route drops_routes[] = {
    {"GET", "/api/v1/drops", false, drops_api_get},
    {0},
};

const struct collector_ops drops_collector = {
    .name = "drops",
    .help = "packet drops by kernel drop reason (BPF on skb:kfree_skb), sampled with 5-tuples",
    .keys = drops_cfg_keys,
    .tables = drops_tables,
    .routes = drops_routes,
    .init = drops_init,
    .start = drops_start,
    .on_ready = drops_on_ready,
    .collect = drops_collect,
    .stop = drops_stop,
};
