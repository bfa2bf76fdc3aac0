// SPDX-License-Identifier: MIT
/*
 * The "drops" collector: packet drops by reason from the skb:kfree_skb
 * tracepoint (bpf/drops.bpf.c).
 *
 *   init     kernel BTF -> reason names and tracepoint arity; probe what
 *            the kernel lacks (drops_probe), open the BPF object, set its
 *            knobs and autoload, load it once (tp_btf, else raw_tp). Missing
 *            BTF, a tracepoint without the reason argument, or no permission
 *            to load BPF make the collector "unavailable" with that reason.
 *            The module uevent socket (drops_uevent.h) opens before the
 *            module BTF scan; kallsyms stays open for re-reads.
 *   start    attach, ring buffer: c->fd is the module watch's epoll fd
 *            (ring buffer, uevent socket, debounce timer), or the ring
 *            buffer's own where uevents cannot be read.
 *   collect  every interval: sum the per-CPU counters into
 *            sysobs_packet_drops_total{reason,protocol[,netns]} (kernel
 *            totals, so sink_set) and the program's own health counters.
 *   on_ready drain sampled records into the drop_samples table
 *            (drops_samples.c: the table, its rows); after a
 *            module load/unload, rescan module BTF and re-read kallsyms.
 * The counters are read through st->src (drops_source.c: the BPF maps,
 * written to a recording as read with record = FILE); with replay = FILE
 * init reads a recording instead of the kernel and the first collect
 * replays it (drops_replay.c), nothing of the above touching the kernel.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "bpf/drops.h"
#include "bpf/drops.skel.h"
#include "collectors/bpf_util.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_cgroup.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_recfile.h"
#include "collectors/drops/drops_uevent.h"
#include "collectors/netns_live.h"

#define DROPS_RESCAN_MS 60000 /* without uevents: poll for unnamed subsystem reasons */
#define DROPS_SETTLE_MS 1000  /* module uevent -> rescan: a burst gives one */

#include "collectors/drops/drops_priv.h"

/* --- metrics ------------------------------------------------------------- */

enum {
	DROPS_M_RUNS,
	DROPS_M_OVERFLOW,
	DROPS_M_SAMPLES,
	DROPS_M_LOST,
	DROPS_M_THROTTLED,
	DROPS_M_INVALID,
	DROPS_M_MAP_ENTRIES,
	DROPS_M_FRAG_FOLDED,
	DROPS_M_RECURSION,
	DROPS_M_NETNS_LIVE,
	DROPS_M_NETNS_GONE,
};

static const struct metric_desc drops_metrics[] = {
    [DROPS_M_RUNS] = {"sysobs_drops_program_runs_total",
		      "Runs of the drops BPF program (kfree_skb events, including "
		      "not-dropped/consumed ones).",
		      METRIC_KIND_COUNTER},
    [DROPS_M_OVERFLOW] = {"sysobs_drops_map_overflow_total",
			  "Drops not counted by reason because the kernel counter map "
			  "was full (raise map_entries).",
			  METRIC_KIND_COUNTER},
    [DROPS_M_SAMPLES] = {"sysobs_drop_samples_total",
			 "Sampled drop records sent by the BPF program.", METRIC_KIND_COUNTER},
    [DROPS_M_LOST] = {"sysobs_drop_samples_lost_total",
		      "Sampled drop records lost: the ring buffer was full.", METRIC_KIND_COUNTER},
    [DROPS_M_THROTTLED] = {"sysobs_drop_samples_throttled_total",
			   "Drops not sampled because of the sample_rate limit (or "
			   "sampling is off).",
			   METRIC_KIND_COUNTER},
    [DROPS_M_INVALID] = {"sysobs_drop_samples_invalid_total",
			 "Ring-buffer records that did not decode.", METRIC_KIND_COUNTER},
    [DROPS_M_MAP_ENTRIES] = {"sysobs_drops_map_entries",
			     "Entries in use in the kernel counter hash (keys that missed "
			     "the per-CPU fast slots); map_entries is its size.",
			     METRIC_KIND_GAUGE},
    [DROPS_M_FRAG_FOLDED] = {"sysobs_drops_fragments_folded_total",
			     "kfree_skb events of frag_list members (the other fragments of a "
			     "reassembled IP datagram, GRO frag_list segments) freed with their "
			     "head: not drops of their own; the head's event is the drop, or "
			     "the delivery.",
			     METRIC_KIND_COUNTER},
    [DROPS_M_RECURSION] = {"sysobs_drops_recursion_misses_total",
			   "kfree_skb events the kernel did not run the drops program for because "
			   "it was already running on that CPU (bpf_prog_info.recursion_misses): "
			   "drops missing from every counter.",
			   METRIC_KIND_COUNTER},
    [DROPS_M_NETNS_LIVE] = {"sysobs_drops_netns_live",
			    "Network namespaces in the kernel's list at the last collect (the "
			    "walk that tells which namespaces' drop counters are gone).",
			    METRIC_KIND_GAUGE},
    [DROPS_M_NETNS_GONE] = {"sysobs_drops_netns_gone_total",
			    "Deleted network namespaces whose drop counters were retired "
			    "(series gone with netns_label; kernel keys freed).",
			    METRIC_KIND_COUNTER},
    {0},
};

/*
 * How module BTF and kallsyms follow module loads, registered at start (the
 * uevent family only when the socket opened).
 */
enum { DROPS_RESCAN_UEVENT, DROPS_RESCAN_POLL };
static const char *const drops_rescan_causes[] = {"uevent", "poll"};
static const char *const drops_uevent_results[] = {"module", "other", "rejected", "overrun"};
static const char *const drops_cause_label[] = {"cause", NULL};
static const char *const drops_result_label[] = {"result", NULL};
static const struct metric_desc drops_watch_metrics[2] = {
    {"sysobs_drops_btf_rescans_total",
     "Rescans of module BTF for drop reason names: cause=\"uevent\" after the kernel announced "
     "a module load or unload (kallsyms is re-read with it), cause=\"poll\" where uevents "
     "cannot be read (at most once a minute while a subsystem reason is unnamed).",
     METRIC_KIND_COUNTER, drops_cause_label},
    {"sysobs_drops_uevents_total",
     "Messages on the drops collector's kernel uevent socket: result=\"module\" module "
     "load/unload announcements, \"other\" other kernel uevents past the socket filter (it "
     "passes only add@/module/ and remove@/module/), \"rejected\" not sent by the kernel or "
     "malformed, \"overrun\" receive buffer overflows (each may have lost an announcement: a "
     "rescan follows).",
     METRIC_KIND_COUNTER, drops_result_label},
};

/*
 * sysobs_packet_drops_total, with the labels its config asks for: netns
 * (netns_label), container (container_label), pod and pod_namespace
 * (pod_label), in any combination. The label set
 * depends on the config, which ops->metrics cannot say (the agent registers
 * those before init, as declared), so the collector registers the one its
 * config asks for at start.
 */
static const char *const drops_total_labels[8][7] = {
    {"reason", "protocol", NULL},
    {"reason", "protocol", "netns", NULL},
    {"reason", "protocol", "container", NULL},
    {"reason", "protocol", "netns", "container", NULL},
    {"reason", "protocol", "pod", "pod_namespace", NULL},
    {"reason", "protocol", "netns", "pod", "pod_namespace", NULL},
    {"reason", "protocol", "container", "pod", "pod_namespace", NULL},
    {"reason", "protocol", "netns", "container", "pod", "pod_namespace", NULL},
};
#define DROPS_TOTAL_HELP                                                                           \
	"Packets the kernel dropped, by drop reason (named from the kernel's BTF) and protocol, "  \
	"since the collector started."
#define DROPS_TOTAL(i)                                                                             \
	{                                                                                          \
		"sysobs_packet_drops_total", DROPS_TOTAL_HELP, METRIC_KIND_COUNTER,                \
		    drops_total_labels[i]                                                          \
	}
static const struct metric_desc drops_total_metric[8] = {
    DROPS_TOTAL(0), DROPS_TOTAL(1), DROPS_TOTAL(2), DROPS_TOTAL(3),
    DROPS_TOTAL(4), DROPS_TOTAL(5), DROPS_TOTAL(6), DROPS_TOTAL(7),
};

static const struct event_table *const drops_tables[] = {&drops_samples_table, NULL};

/* --- init ---------------------------------------------------------------- */

/* Adds subsystem reason names from every module BTF next to vmlinux
 * (/sys/kernel/btf/<module>): openvswitch, mac80211, ... are modules.
 * Returns how many names were added. */
static int drops_scan_modules(struct drops_state *st)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct btf *base = st->btf.vmlinux;
	struct dirent *e;
	char *slash;
	int added = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", st->cfg->btf_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	d = opendir(dir[0] ? dir : "/");
	if (!d)
		return 0;
	/* a rescan after init parses vmlinux again (not kept: ~6 MiB) */
	if (!base && !(base = btf__parse(st->cfg->btf_path, NULL))) {
		closedir(d);
		return 0;
	}
	while ((e = readdir(d))) {
		struct btf *mod;
		int n;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, slash + 1))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		mod = btf__parse_split(path, base);
		if (!mod)
			continue;
		n = drops_reasons_add_btf(st->reasons, mod);
		if (n > 0)
			added += n;
		btf__free(mod);
	}
	closedir(d);
	if (base != st->btf.vmlinux)
		btf__free(base);
	return added;
}

/* The fragment queues' timer functions, whose running timer names the
 * namespace of a FRAG_REASM_TIMEOUT drop (bpf/drops.bpf.c). */
static void frag_expiries_find(struct collector *c, struct drops_state *st)
{
	static const char *const fns[DROPS_FRAG_EXPIRE_FNS] = {
	    "ip_expire", "ip6_frag_expire", "nf_ct_frag6_expire", "lowpan_frag_expire"};
	uint64_t hi;
	int n = 0;

	for (int i = 0; i < DROPS_FRAG_EXPIRE_FNS; i++)
		if (!drops_ksyms_range(st->ksyms, fns[i], &st->frag_expire_fn[i], &hi))
			n++;
		else
			st->frag_expire_fn[i] = 0;
	st->frag_timers = n > 0;
	if (!n)
		clog_warn(c, "ip_expire and ip6_frag_expire not in kallsyms: fragment reassembly "
			     "timeouts (FRAG_REASM_TIMEOUT) count in netns 0");
	/* The work that runs a deleted namespace's exit (its queue purge). */
	if (drops_ksyms_range(st->ksyms, "cleanup_net", &st->net_cleanup_fn, &hi)) {
		st->net_cleanup_fn = 0;
		clog_warn(c, "cleanup_net not in kallsyms: fragments pending when their "
			     "namespace is deleted (FRAG_REASM_TIMEOUT) count in netns 0");
	}
}

static const char *drops_prog_name(enum drops_prog prog)
{
	return prog == DROPS_PROG_TP_BTF ? "tp_btf" : "raw_tp";
}

static struct bpf_program *drops_kfree_skb_prog(const struct drops_state *st)
{
	return st->prog == DROPS_PROG_TP_BTF ? st->skel->progs.drops_tp_btf
					     : st->skel->progs.drops_raw_tp;
}

/* Opens the BPF object, sets autoload from the probes (drops_probe()):
 * the kfree_skb program st->prog, the fentry/fexit pair on
 * udp_destruct_common() with st->sockctx, the walks with st->walks and
 * st->netstat_walk, and loads it: the one load. */
static int drops_load(struct drops_state *st)
{
	const struct drops_cfg *cfg = st->cfg;
	LIBBPF_OPTS(bpf_object_open_opts, oo,
		    .btf_custom_path = bpf_util_btf_custom_path(cfg->btf_path));
	long ncpu_online = sysconf(_SC_NPROCESSORS_ONLN);
	struct drops_bpf *skel;
	int err;

	skel = drops_bpf__open_opts(&oo);
	if (!skel)
		return -errno;
	bpf_program__set_autoload(skel->progs.drops_tp_btf, st->prog == DROPS_PROG_TP_BTF);
	bpf_program__set_autoload(skel->progs.drops_raw_tp, st->prog == DROPS_PROG_RAW_TP);
	bpf_program__set_autoload(skel->progs.drops_baseline, false);
	bpf_program__set_autoload(skel->progs.drops_timer_entry, st->frag_timers);
	bpf_program__set_autoload(skel->progs.drops_timer_exit, st->frag_timers);
	bpf_program__set_autoload(skel->progs.drops_work_start, st->net_cleanup_fn != 0);
	bpf_program__set_autoload(skel->progs.drops_work_end, st->net_cleanup_fn != 0);
	skel->rodata->net_cleanup_fn = st->net_cleanup_fn;
	bpf_program__set_autoload(skel->progs.drops_udp_destruct_enter, st->sockctx);
	bpf_program__set_autoload(skel->progs.drops_udp_destruct_exit, st->sockctx);
	if (st->sockctx) {
		skel->rodata->sock_free_lo = st->sock_free_lo;
		skel->rodata->sock_free_len = st->sock_free_hi - st->sock_free_lo;
	}
	/* The namespace walks ride in this object (bpf/CMakeLists.txt): run
	 * by test_run, never attached. */
	bpf_program__set_autoload(skel->progs.netns_walk, st->walks);
	bpf_program__set_autoload(skel->progs.netstat_walk, st->netstat_walk);
	skel->rodata->ncpus = (__u32)st->ncpus;
	memcpy((void *)skel->rodata->mib_idx, st->mib_idx, sizeof(st->mib_idx));
	skel->rodata->has_rx_sk = st->nargs >= 4;
	skel->rodata->use_slots = cfg->fast_slots;
	skel->rodata->key_cgroup = cfg->container_label;
	skel->rodata->has_rdonly_cast = st->has_rdonly_cast;
	skel->rodata->capture_bytes = (__u32)cfg->capture_bytes;
	skel->rodata->capture_payload = cfg->capture_payload;
	skel->rodata->stack_depth = (__u32)cfg->stack_depth;
	for (int i = 0; i < DROPS_FRAG_EXPIRE_FNS; i++)
		skel->rodata->frag_expire_fn[i] = st->frag_expire_fn[i];
	if (st->frag_free_hi) {
		skel->rodata->frag_free_lo = st->frag_free_lo;
		skel->rodata->frag_free_len = st->frag_free_hi - st->frag_free_lo;
	}
	if (cfg->sample_rate) {
		/* Host-wide rate split evenly over the online CPUs' buckets. */
		uint64_t per_cpu_burst;

		if (ncpu_online < 1)
			ncpu_online = 1;
		per_cpu_burst = cfg->sample_burst / ncpu_online;
		if (!per_cpu_burst)
			per_cpu_burst = 1;
		skel->rodata->sample_cost_ns = 1000000000ull * ncpu_online / cfg->sample_rate;
		skel->rodata->sample_burst_ns = skel->rodata->sample_cost_ns * per_cpu_burst;
	}
	if ((err = bpf_map__set_max_entries(skel->maps.counts, cfg->map_entries)) ||
	    (err = bpf_map__set_max_entries(skel->maps.samples, cfg->ring_bytes)))
		goto err_destroy;
	err = drops_bpf__load(skel);
	if (err)
		goto err_destroy;
	st->skel = skel;
	return 0;

err_destroy:
	drops_bpf__destroy(skel);
	return err;
}

/* The two walks of the kernel's namespace list in the loaded object: the
 * live namespaces (netns_live) and their TCP counters (drops_netstat).
 * Either may be missing (warned); drops_walks_close() before the object
 * goes. */
static void drops_walks_open(struct collector *c, struct drops_state *st)
{
	int netstat_fd = -EOPNOTSUPP; /* no bpf_map_lookup_percpu_elem() */
	char why[512];

	if (st->netstat_walk)
		netstat_fd = bpf_program__fd(st->skel->progs.netstat_walk);
	else if (st->walks && st->mib_idx[0] == UINT32_MAX)
		netstat_fd = -ENOENT; /* not loaded: no LINUX_MIB_* indices */
	st->netstat = drops_netstat_open(c, netstat_fd, st->skel->bss->netstat, st->skel->bss->psk,
					 &st->skel->bss->npsk);
	snprintf(why, sizeof(why), "the kernel has no bpf_loop() (Linux 5.17)");
	if (st->walks)
		st->live = netns_live_new(bpf_program__fd(st->skel->progs.netns_walk),
					  st->skel->bss->live_netns, st->skel->bss->live_cookie,
					  why, sizeof(why));
	if (!st->live)
		clog_warn(c,
			  "cannot list network namespaces (%s): counters of deleted namespaces are "
			  "never retired (their series stay, their kernel keys fill map_entries)",
			  why);
}

static void drops_walks_close(struct drops_state *st)
{
	netns_live_close(st->live);
	st->live = NULL;
	drops_netstat_close(st->netstat);
	st->netstat = NULL;
}

/*
 * Probe once, load once (as libbpf-tools do): what the kernel lacks is
 * known before the object loads, and the programs that need it do not
 * load. tp_btf on kfree_skb must load and attach (else raw_tp, with
 * attach = auto); the fentry pair needs BPF trampolines, so it rides only
 * with tp_btf; the namespace walks need bpf_loop() (v5.17) in a raw_tp
 * program (run by test_run), the TCP counters' walk also
 * bpf_map_lookup_percpu_elem() (v5.19). Each probe is a tiny program: the
 * object's load parses the kernel's BTF (~0.15 s), a probe does not.
 */
static void drops_probe(struct collector *c, struct drops_state *st)
{
	int err = 0;

	st->prog = st->cfg->attach == DROPS_ATTACH_RAW_TP ? DROPS_PROG_RAW_TP : DROPS_PROG_TP_BTF;
	if (st->cfg->attach == DROPS_ATTACH_AUTO &&
	    (err = bpf_util_tp_btf_probe(&st->btf, "kfree_skb"))) {
		st->prog = DROPS_PROG_RAW_TP;
		if (err != -EPERM) /* the load says so */
			clog_warn(c, "tp_btf/kfree_skb refused (%s): program raw_tp",
				  strerror(-err));
	}
	err = bpf_util_fentry_probe(&st->btf, "udp_destruct_common");
	st->has_udp_destruct = !err;
	/* Info, not a warning: an optional refinement every start on such a
	 * kernel would repeat (issue 32); the drops are counted either way. */
	if (err && err != -ENOENT)
		clog_info(c,
			  "fentry/fexit on udp_destruct_common refused (%s): datagrams a closed "
			  "UDP socket never read count in netns 0",
			  strerror(-err));
	st->walks = bpf_util_has_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_loop);
	st->netstat_walk =
	    st->walks && st->mib_idx[0] != UINT32_MAX &&
	    bpf_util_has_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_map_lookup_percpu_elem);
}

/* What the kernel's BTF tells: the tracepoint's arguments, the drop
 * reasons, the kfuncs and fentry targets, the MIB indexes. The parsed BTF
 * (~6 MiB) is gone before libbpf parses its own copy for CO-RE. */
static int drops_init_btf(struct collector *c, struct drops_state *st)
{
	const struct drops_cfg *cfg = st->cfg;
	int err;

	err = bpf_util_btf_load(&st->btf, cfg->btf_path, NULL);
	if (err == -ENOENT)
		return collector_unavailable(c, -ENODEV,
					     "no kernel BTF at %s (%s): kernel built without "
					     "CONFIG_DEBUG_INFO_BTF",
					     cfg->btf_path, strerror(errno));
	if (err)
		return collector_unavailable(c, -ENODEV, "cannot parse kernel BTF %s: %s",
					     cfg->btf_path, strerror(-err));
	st->nargs = drops_btf_kfree_skb_nargs(st->btf.vmlinux);
	if (!bpf_util_has_tp_btf(&st->btf, "kfree_skb") || st->nargs < 0)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "kernel has no skb:kfree_skb tracepoint in BTF");
	if (st->nargs < 3)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "skb:kfree_skb has no reason argument (%d arguments; "
					     "needs Linux 5.17 or later)",
					     st->nargs);
	st->reasons = drops_reasons_new(st->btf.vmlinux);
	if (!st->reasons)
		return collector_unavailable(
		    c, -EOPNOTSUPP, "kernel BTF has no enum skb_drop_reason: %s", strerror(errno));
	/* The uevent socket before the scan: a module loaded from here on is
	 * in its queue (start adds it to the collector's fd). */
	st->watch = drops_watch_new(DROPS_SETTLE_MS);
	if (!st->watch)
		st->watch_err = errno;
	drops_scan_modules(st);
	drops_names_publish(st->reasons);
	/* bpf_rdonly_cast() (v6.2) lets tp_btf read packet bytes without a
	 * helper call; kfuncs are FUNCs in the kernel's BTF. */
	st->has_rdonly_cast = bpf_util_btf_has(&st->btf, "bpf_rdonly_cast", BTF_KIND_FUNC);
	if (drops_netstat_indices(st->btf.vmlinux, st->mib_idx))
		st->mib_idx[0] = UINT32_MAX; /* drops_netstat_open() says so */
	drops_probe(c, st);
	/* Names are copied out: not part of the idle agent. */
	bpf_util_btf_free(&st->btf);

	return 0;
}

/* Kernel text the program needs before the load (skb_release_data()
 * tells frag_list members from drops: bpf/drops.bpf.c, frag_free_lo). */
static void drops_init_ksyms(struct collector *c, struct drops_state *st)
{
	const struct drops_cfg *cfg = st->cfg;
	int err;

	st->ksyms_fd = open(cfg->kallsyms, O_RDONLY | O_CLOEXEC);
	st->ksyms = st->ksyms_fd >= 0 ? drops_ksyms_read_fd(st->ksyms_fd) : NULL;
	if (!st->ksyms || !drops_ksyms_count(st->ksyms))
		clog_warn(c, "no kernel symbols from %s: drop locations stay hex", cfg->kallsyms);
	err =
	    drops_ksyms_range(st->ksyms, "skb_release_data", &st->frag_free_lo, &st->frag_free_hi);
	if (err) {
		st->frag_free_lo = st->frag_free_hi = 0;
		clog_warn(c,
			  "skb_release_data not found in %s (%s): each extra fragment of a "
			  "reassembled packet counts as a NOT_SPECIFIED drop",
			  cfg->kallsyms, strerror(-err));
	}
	if (drops_ksyms_range(st->ksyms, "udp_destruct_common", &st->sock_free_lo,
			      &st->sock_free_hi))
		st->sock_free_lo = st->sock_free_hi = 0;
	frag_expiries_find(c, st);
	/* The table (~2.4 MiB) would sit under libbpf's own vmlinux BTF parse
	 * (~12 MiB), start-up's peak: read again after the load (~40 ms). */
	drops_ksyms_free(st->ksyms);
	st->ksyms = NULL;
}

/* The one load of what drops_probe() found, its failure told as the
 * missing feature or permission it is (no second variant). */
static int drops_init_load(struct collector *c, struct drops_state *st)
{
	int err;

	/* fentry needs BPF trampolines: only next to the tp_btf program */
	st->sockctx = st->prog == DROPS_PROG_TP_BTF && st->has_udp_destruct && st->sock_free_hi;
	bpf_util_load_begin(c->ops->name);
	err = drops_load(st);
	bpf_util_load_end();
	/* The verifier also answers EACCES (a refused pointer access): only
	 * without the capabilities is it a permission problem. */
	if (err == -EPERM || (err == -EACCES && !bpf_util_have_caps()))
		return collector_unavailable(
		    c, err,
		    "no permission to load BPF (needs CAP_BPF and CAP_PERFMON, "
		    "or CAP_SYS_ADMIN): %s; libbpf: %s",
		    strerror(-err), bpf_util_load_cause(err));
	if (err == -EACCES)
		return collector_unavailable(c, -EOPNOTSUPP,
					     "the kernel's verifier refused the BPF program: %s; "
					     "libbpf: %s",
					     strerror(-err), bpf_util_load_cause(err));
	/* -EINVAL would read as a config error to the agent: a program this
	 * kernel's verifier refuses is a missing feature. */
	if (err)
		return collector_unavailable(c, err == -EINVAL ? -EOPNOTSUPP : err,
					     "cannot load the BPF program: %s; libbpf: %s",
					     strerror(-err), bpf_util_load_cause(err));
	return 0;
}

static int drops_init(struct collector *c)
{
	const struct drops_cfg *cfg = c->cfg;
	struct drops_state *st;
	int err;

	/* ring_bytes: drops_check_config() ran before */
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	c->priv = st;
	st->cfg = cfg;
	st->src = &drops_source_live;
	st->ksyms_fd = -1;
	c->interval_ms = cfg->interval;
	if (cfg->replay[0])
		return drops_replay_init(c, st);

	err = drops_init_btf(c, st);
	if (err)
		return err;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus < 1)
		return collector_unavailable(c, -ENODEV, "cannot count possible CPUs");
	st->percpu = calloc(st->ncpus, sizeof(*st->percpu));
	st->counts = drops_counts_new(st->ncpus);
	if (!st->percpu || !st->counts)
		return -ENOMEM;

	drops_init_ksyms(c, st);
	err = drops_init_load(c, st);
	if (err)
		return err;
	clog_info(c, "%zu drop reasons from %s; kfree_skb has %d arguments; program %s%s%s%s",
		  drops_reasons_count(st->reasons), cfg->btf_path, st->nargs,
		  drops_prog_name(st->prog), st->sockctx ? ", fentry udp_destruct_common" : "",
		  st->walks ? ", netns walk" : "", st->netstat_walk ? ", netstat walk" : "");
	/* Run unprivileged later (test_run): loaded with the capabilities. */
	drops_walks_open(c, st);
	if (st->ksyms_fd >= 0)
		st->ksyms = drops_ksyms_read_fd(st->ksyms_fd);
	if (cfg->record[0] && (err = drops_record_open(st, cfg->record)))
		return collector_config_error(c, "record", "cannot create it: %s%s", strerror(-err),
					      err == -EEXIST ? " (a recording never writes over a "
							       "file: move it or name another)"
							     : "");
	return 0;
}

/*
 * Module BTF again (subsystem reason names of a module loaded since); after
 * a uevent, kallsyms too: a loaded module's symbols, or the addresses an
 * unloaded one freed. Both block the loop for tens of milliseconds (a ~6
 * MiB vmlinux BTF parse, a ~5 MiB kallsyms read): only after a module came
 * or went, or in the fallback poll.
 */
static void drops_rescan(struct drops_state *st, int cause)
{
	int64_t t0 = clock_mono_ns();
	int added = drops_scan_modules(st);

	/* a snapshot only when names changed: older ones live until stop */
	if (added > 0) {
		drops_names_publish(st->reasons);
		drops_record_reasons(st);
	}
	if (cause == DROPS_RESCAN_UEVENT && st->ksyms_fd >= 0) {
		struct drops_ksyms *k = drops_ksyms_read_fd(st->ksyms_fd);

		/* never an empty table for a full one (a failed read) */
		if (k && drops_ksyms_count(k)) {
			drops_ksyms_free(st->ksyms);
			st->ksyms = k;
		} else {
			drops_ksyms_free(k);
		}
	}
	st->last_rescan_ns = clock_mono_ns();
	sink_add(st->c->sink, st->rescans[cause], 1);
	if (cause == DROPS_RESCAN_UEVENT)
		clog_info(st->c,
			  "module loaded or unloaded: module BTF rescanned (%d new reason names), "
			  "%zu kernel symbols, in %lld ms",
			  added, drops_ksyms_count(st->ksyms),
			  (long long)((st->last_rescan_ns - t0) / 1000000));
}

/* The watch's counters into sysobs_drops_uevents_total, when they moved. */
static void drops_publish_uevents(struct drops_state *st)
{
	const struct drops_uevent_stats *u = drops_watch_stats(st->watch);
	uint64_t seen = u->module + u->other + u->rejected + u->overrun;

	if (seen == st->uevents_seen)
		return;
	st->uevents_seen = seen;
	sink_set(st->c->sink, st->uevents[0], (double)u->module);
	sink_set(st->c->sink, st->uevents[1], (double)u->other);
	sink_set(st->c->sink, st->uevents[2], (double)u->rejected);
	sink_set(st->c->sink, st->uevents[3], (double)u->overrun);
}

static int drops_on_ready(struct collector *c)
{
	struct drops_state *st = c->priv;
	int n;

	/* c->fd is the watch's epoll fd: one epoll_wait() says whether a
	 * module came or went; the ring is consumed either way (a no-op
	 * when empty), as without the watch. */
	if (st->watch) {
		bool due = drops_watch_due(st->watch);

		drops_publish_uevents(st);
		if (due)
			drops_rescan(st, DROPS_RESCAN_UEVENT);
	}
	st->consumed = 0;
	n = ring_buffer__consume(st->rb);
	return n < 0 && n != -EAGAIN ? n : 0;
}

/* --- start / collect ----------------------------------------------------- */

/*
 * Module loads and unloads as kernel uevents, with the ring buffer behind
 * one epoll fd; without them (a sandbox that refuses the netlink socket)
 * the once-a-minute poll of drops_maybe_rescan(), said once here.
 */
static void drops_watch_start(struct collector *c, struct drops_state *st)
{
	struct sink_family *f = sink_family(c->sink, &drops_watch_metrics[0]);

	for (int i = 0; i < 2; i++) {
		const char *v[2] = {drops_rescan_causes[i], NULL};

		st->rescans[i] = sink_series(c->sink, f, v);
	}
	if (st->watch && drops_watch_add(st->watch, c->fd)) {
		st->watch_err = errno;
		drops_watch_free(st->watch);
		st->watch = NULL;
	}
	if (!st->watch) {
		clog_warn(c,
			  "no kernel uevents (%s): module BTF is rescanned at most once a minute "
			  "while a subsystem drop reason is unnamed, and kallsyms is not re-read "
			  "after a module load",
			  strerror(st->watch_err));
		if (st->ksyms_fd >= 0)
			close(st->ksyms_fd);
		st->ksyms_fd = -1;
		return;
	}
	f = sink_family(c->sink, &drops_watch_metrics[1]);
	for (int i = 0; i < 4; i++) {
		const char *v[2] = {drops_uevent_results[i], NULL};

		st->uevents[i] = sink_series(c->sink, f, v);
		sink_set(c->sink, st->uevents[i], 0);
	}
	c->fd = drops_watch_fd(st->watch);
}

/* The kfree_skb program drops_probe() chose (its attach was probed: a
 * failure here is said, with libbpf's cause, not worked around). 0, or
 * -errno with c->why said. */
static int drops_attach_main(struct collector *c, struct drops_state *st)
{
	int err;

	st->link = bpf_program__attach(drops_kfree_skb_prog(st));
	if (!st->link) {
		err = -errno;
		snprintf(c->why, sizeof(c->why), "attach %s/kfree_skb: %s; libbpf: %s",
			 drops_prog_name(st->prog), strerror(-err), bpf_util_load_cause(err));
		return err;
	}
	return 0;
}

/* A pair of programs that bracket a kernel function or work item: the exit
 * before the entry (and the reverse at stop), so an entry is never without
 * its exit; both or neither. Optional: a failure is said, not returned. */
static void drops_attach_pair(struct collector *c, struct bpf_program *exit,
			      struct bpf_program *entry, struct bpf_link *links[2],
			      const char *what, const char *without)
{
	links[1] = bpf_program__attach(exit);
	if (links[1])
		links[0] = bpf_program__attach(entry);
	if (links[0] && links[1])
		return;
	clog_warn(c, "%s did not attach (%s): %s", what, strerror(errno), without);
	bpf_link__destroy(links[0]);
	bpf_link__destroy(links[1]);
	links[0] = links[1] = NULL;
}

int drops_start_series(struct collector *c, struct drops_state *st)
{
	const struct drops_cfg *cfg = st->cfg;
	struct sink *k = c->sink;

	st->c = c;
	st->drops =
	    sink_family(k, &drops_total_metric[cfg->netns_label | cfg->container_label << 1 |
					       cfg->pod_label << 2]);
	if (!st->drops) /* by its config: not one of ops->metrics */
		return -ENOMEM;
	st->runs = collector_series1(c, DROPS_M_RUNS);
	st->overflow = collector_series1(c, DROPS_M_OVERFLOW);
	st->samples = collector_series1(c, DROPS_M_SAMPLES);
	st->lost = collector_series1(c, DROPS_M_LOST);
	st->throttled = collector_series1(c, DROPS_M_THROTTLED);
	st->invalid_s = collector_series1(c, DROPS_M_INVALID);
	st->keys = collector_series1(c, DROPS_M_MAP_ENTRIES);
	st->folded = collector_series1(c, DROPS_M_FRAG_FOLDED);
	st->recursion = collector_series1(c, DROPS_M_RECURSION);
	st->netns_live_s = collector_series1(c, DROPS_M_NETNS_LIVE);
	st->netns_gone_s = collector_series1(c, DROPS_M_NETNS_GONE);
	return 0;
}

static int drops_start(struct collector *c)
{
	struct drops_state *st = c->priv;
	int err = drops_start_series(c, st);

	if (err || st->replay) /* a replay reads no ring buffer: its collect does it all */
		return err;
	st->cgroups = drops_cgroups_new(NULL);
	if (!st->cgroups)
		clog_warn(c,
			  "no cgroup2 mount in /proc/self/mountinfo (%s): samples carry the cgroup "
			  "id only",
			  strerror(errno));
	st->mono_to_wall_ns = clock_wall_ns() - clock_mono_ns();
	bpf_util_load_begin(c->ops->name);
	err = drops_attach_main(c, st);
	if (err)
		goto out_load_end;
	/* The namespace of unread datagrams freed at close (bpf/drops.bpf.c,
	 * struct drops_sockctx): without it they count in netns 0. */
	if (st->sockctx)
		drops_attach_pair(c, st->skel->progs.drops_udp_destruct_exit,
				  st->skel->progs.drops_udp_destruct_enter, st->sock_links,
				  "fentry/fexit udp_destruct_common",
				  "datagrams a closed UDP socket never read count in netns 0");
	/* The namespace of fragment queues that time out (bpf/drops.bpf.c,
	 * fragctx). */
	if (st->frag_timers)
		drops_attach_pair(c, st->skel->progs.drops_timer_exit,
				  st->skel->progs.drops_timer_entry, st->timer_links,
				  "timer:timer_expire_entry/exit",
				  "fragment reassembly timeouts count in netns 0");
	/* The namespace of fragments a namespace's exit purges (netexit). */
	if (st->net_cleanup_fn)
		drops_attach_pair(
		    c, st->skel->progs.drops_work_end, st->skel->progs.drops_work_start,
		    st->work_links, "workqueue:workqueue_execute_start/end",
		    "fragments pending when their namespace is deleted count in netns 0");
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.samples), drops_on_sample, c, NULL);
	if (!st->rb) {
		err = -errno;
		goto out_load_end;
	}
	c->fd = ring_buffer__epoll_fd(st->rb);
	drops_watch_start(c, st);
out_load_end:
	bpf_util_load_end();
	return err;
}

int drops_sum_percpu(struct drops_state *st, uint32_t map, const void *key, uint64_t *sum)
{
	int err = st->src->lookup(st, map, key, st->percpu);

	if (err)
		return err;
	*sum = 0;
	for (int i = 0; i < st->ncpus; i++)
		*sum += st->percpu[i];
	return 0;
}

/* Module BTF may have appeared since start (openvswitch, mac80211 loaded
 * later). With the uevent watch, a module load triggers the rescan (in
 * drops_on_ready); without it: at most once a minute, when a subsystem
 * value is unnamed. */
void drops_maybe_rescan(struct drops_state *st, uint32_t reason)
{
	if (st->watch || st->replay || !drops_reason_subsys_unnamed(st->reasons, reason) ||
	    clock_mono_ns() - st->last_rescan_ns < (int64_t)DROPS_RESCAN_MS * 1000000)
		return;
	drops_rescan(st, DROPS_RESCAN_POLL);
}

/*
 * A tracing program is not run for an event that arrives while it already
 * runs on that CPU (a drop in an NMI during the program, say): the kernel
 * counts it in the program's recursion_misses and nothing else does, so
 * the counters are exact only while this stays 0.
 */
static void drops_publish_recursion(struct collector *c, struct drops_state *st)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	struct bpf_program *prog;

	if (!st->skel)
		return;
	prog = drops_kfree_skb_prog(st);
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return;
	sink_set(c->sink, st->recursion, (double)info.recursion_misses);
}

int drops_collect_once(struct collector *c, struct drops_state *st)
{
	uint64_t events, sampled;
	int err;

	for (uint32_t i = 0; i < DROPS_STAT_MAX; i++)
		drops_sum_percpu(st, DROPS_MAP_STATS, &i, &st->stat[i]);
	err = drops_publish_counts(c, st);
	if (err)
		return err;
	if ((err = drops_netstat_publish(c, st->netstat)))
		return err;
	/* The program counts only rare events; the rest is arithmetic. */
	events = st->events + st->stat[DROPS_STAT_MAP_OVERFLOW];
	sampled = st->stat[DROPS_STAT_SAMPLES] + st->stat[DROPS_STAT_SAMPLES_LOST];
	sink_set(
	    c->sink, st->runs,
	    (double)(events + st->stat[DROPS_STAT_NOT_DROPS] + st->stat[DROPS_STAT_FRAG_MEMBERS]));
	sink_set(c->sink, st->folded, (double)st->stat[DROPS_STAT_FRAG_MEMBERS]);
	drops_publish_recursion(c, st);
	sink_set(c->sink, st->overflow, (double)st->stat[DROPS_STAT_MAP_OVERFLOW]);
	sink_set(c->sink, st->samples, (double)st->stat[DROPS_STAT_SAMPLES]);
	sink_set(c->sink, st->lost, (double)st->stat[DROPS_STAT_SAMPLES_LOST]);
	/* Counters are read one after the other: never let this go backwards. */
	if (events > sampled && events - sampled > st->not_sampled)
		st->not_sampled = events - sampled;
	sink_set(c->sink, st->throttled, (double)st->not_sampled);
	sink_set(c->sink, st->invalid_s, (double)st->invalid);
	return 0;
}

static int drops_collect(struct collector *c)
{
	struct drops_state *st = c->priv;
	int err;

	if (st->replay)
		return drops_replay_collect(c, st);
	/* Wall clock may be stepped; samples are stamped with the latest offset. */
	st->mono_to_wall_ns = clock_wall_ns() - clock_mono_ns();
	err = drops_collect_once(c, st);
	if (!err && st->rec)
		drops_record_collect(c, st);
	return err;
}

static void drops_stop(struct collector *c)
{
	struct drops_state *st = c->priv;

	if (!st)
		return;
	/* Drain what the kernel already wrote, then detach. */
	if (st->rb)
		ring_buffer__consume(st->rb);
	bpf_link__destroy(st->timer_links[0]);
	bpf_link__destroy(st->timer_links[1]);
	bpf_link__destroy(st->work_links[0]); /* start before end */
	bpf_link__destroy(st->work_links[1]);
	bpf_link__destroy(st->sock_links[0]);
	bpf_link__destroy(st->sock_links[1]);
	bpf_link__destroy(st->link);
	drops_watch_free(st->watch);
	ring_buffer__free(st->rb);
	if (st->ksyms_fd >= 0)
		close(st->ksyms_fd);
	drops_walks_close(st); /* they read the object's .bss */
	drops_bpf__destroy(st->skel);
	drops_ksyms_free(st->ksyms);
	drops_cgroups_free(st->cgroups);
	drops_reasons_free(st->reasons);
	drops_names_free_all();
	bpf_util_btf_free(&st->btf);
	free(st->percpu);
	drops_counts_free(st->counts);
	drops_record_close(st);
	drops_replay_free(st->replay);
	free(st);
	c->priv = NULL;
	c->fd = -1;
}

const struct collector_ops drops_collector = {
    .name = "drops",
    .help = "packet drops by kernel drop reason (BPF on skb:kfree_skb), sampled with 5-tuples",
    .keys = drops_cfg_keys,
    .cfg_size = sizeof(struct drops_cfg),
    .metrics = drops_metrics,
    .tables = drops_tables,
    .check_config = drops_check_config,
    .init = drops_init,
    .start = drops_start,
    .on_ready = drops_on_ready,
    .collect = drops_collect,
    .stop = drops_stop,
};
