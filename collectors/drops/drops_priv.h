/* SPDX-License-Identifier: MIT */
/*
 * The drops collector's state, shared by its parts: drops.c (load,
 * attach, samples, lifecycle), drops_counts.c (the kernel's counters ->
 * sysobs_packet_drops_total, and the retirement of counters whose network
 * namespace or cgroup is gone), drops_samples.c (ring-buffer records ->
 * rows), drops_source.c and drops_replay.c (where the counters are read
 * from: the BPF maps, or a recording). Private to collectors/drops/.
 */
#ifndef SYSOBS_DROPS_PRIV_H
#define SYSOBS_DROPS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include <bpf/libbpf.h>

#include "bpf/drops.h"
#include "bpf/netstat.h"
#include "collectors/bpf_util.h"

struct collector;
struct drops_cfg;
struct drops_cgroups;
struct drops_counts;
struct drops_netstat;
struct drops_watch;
struct drops_ksyms;
struct drops_recorder;
struct drop_sample;
struct drops_replay;
struct drops_state;
struct drops_reasons;
struct netns_live;
struct sink_family;
struct sink_series;

/* The two programs on skb:kfree_skb: one is loaded (drops_prog_name()). */
enum drops_prog {
	DROPS_PROG_TP_BTF,
	DROPS_PROG_RAW_TP,
};

/*
 * Where the counting path reads the kernel's maps (enum drops_map_id of
 * drops_recfile.h): the BPF maps themselves (drops_source_live,
 * drops_source.c: recorded as read when [collector.drops] record is set),
 * or a recording's snapshot of them (drops_source_replay, drops_replay.c).
 * Per-CPU values: st->ncpus of them.
 */
struct drops_source {
	/* The counts hash's key after prev (NULL: the first): 0, -ENOENT
	 * past the last. */
	int (*next_key)(struct drops_state *st, const struct drops_key *prev,
			struct drops_key *key);
	/* The per-CPU values of a key of a map: 0 or -errno. */
	int (*lookup)(struct drops_state *st, uint32_t map, const void *key, void *vals);
	/* A counts hash key taken out, with its final per-CPU values. */
	int (*take)(struct drops_state *st, const struct drops_key *key, uint64_t *vals);
	/* The slot table: DROPS_SLOTS keys and their per-CPU slots; *count read. */
	int (*slots)(struct drops_state *st, __u32 *keys, struct drops_slot *vals, __u32 *count);
};
extern const struct drops_source drops_source_live, drops_source_replay;

struct drops_state {
	const struct drops_cfg *cfg;
	const struct drops_source *src;
	struct drops_recorder *rec;  /* record = FILE, NULL: not recording */
	struct drops_replay *replay; /* replay = FILE, NULL: the live kernel */
	struct drops_bpf *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	struct bpf_util_btf btf; /* vmlinux during init only */
	struct drops_reasons *reasons;
	struct drops_ksyms *ksyms;
	struct drops_cgroups *cgroups; /* NULL: no cgroup2 (ids only) */
	struct netns_live *live;       /* the kernel's netns list, NULL: unknown */
	struct drops_counts *counts;   /* drops_counts.c */
	struct drops_netstat *netstat; /* drops_netstat.c, NULL: unavailable */
	uint32_t mib_idx[NETSTAT_N];   /* its LINUX_MIB_* values from BTF */
	enum drops_prog prog;	       /* the kfree_skb program loaded */

	int nargs;			     /* kfree_skb tracepoint arguments */
	uint64_t frag_free_lo, frag_free_hi; /* skb_release_data() text, 0 unknown */
	bool has_rdonly_cast;
	bool has_udp_destruct;		     /* fentry on udp_destruct_common() loads */
	bool sockctx;			     /* ... and loaded */
	bool walks;			     /* the namespace walk loads with the object */
	bool netstat_walk;		     /* ... and the TCP counters' walk */
	uint64_t sock_free_lo, sock_free_hi; /* udp_destruct_common() text */
	uint64_t frag_expire_fn[DROPS_FRAG_EXPIRE_FNS]; /* fragment queue timers, 0 unknown */
	bool frag_timers;				/* some known: timer pair loaded */
	struct bpf_link *timer_links[2];		/* timer_expire_entry, _exit */
	uint64_t net_cleanup_fn;	/* cleanup_net: a namespace exit's purge, 0 unknown */
	struct bpf_link *work_links[2]; /* workqueue_execute_start, _end */
	struct bpf_link *sock_links[2];
	int ncpus;	  /* possible CPUs: per-CPU value arrays */
	uint64_t *percpu; /* ncpus values */

	int64_t mono_to_wall_ns;
	int64_t last_rescan_ns;
	/* Module load/unload (drops_uevent.h); NULL: the DROPS_RESCAN_MS poll. */
	struct drops_watch *watch;
	int watch_err; /* errno when it did not open */
	int ksyms_fd;  /* kallsyms, open since init (addresses: see drops_ksym.h) */
	struct collector *c;
	struct sink_series *rescans[2]; /* DROPS_RESCAN_UEVENT, DROPS_RESCAN_POLL */
	struct sink_series *uevents[4]; /* module, other, rejected, overrun */
	uint64_t uevents_seen;
	uint64_t invalid;  /* undecodable ring-buffer records */
	unsigned consumed; /* records handled in this on_ready */
	uint64_t stat[DROPS_STAT_MAX];
	uint64_t events;      /* drops counted (slots, hash, retired), last collect */
	uint64_t not_sampled; /* drops neither sampled nor lost */

	struct sink_family *drops;
	struct sink_series *runs, *overflow, *samples, *lost, *throttled, *invalid_s, *keys;
	struct sink_series *folded, *recursion, *netns_live_s, *netns_gone_s;
};

/* drops.c */
/* A per-CPU map's value of key (through st->src), summed. */
int drops_sum_percpu(struct drops_state *st, uint32_t map, const void *key, uint64_t *sum);
void drops_maybe_rescan(struct drops_state *st, uint32_t reason);
/* The families and series start registers, in both modes; 0 or -ENOMEM. */
int drops_start_series(struct collector *c, struct drops_state *st);
/* One collect's reads and publishing (what a replay repeats per COLLECT). */
int drops_collect_once(struct collector *c, struct drops_state *st);

/* drops_source.c: the recording of what the live source reads. */
/* Opens cfg->record and writes the reason names; 0 or -errno. */
int drops_record_open(struct drops_state *st, const char *path);
void drops_record_reasons(struct drops_state *st);
/* A ring-buffer record as received; then, once decoded, the symbols its
 * location and stack name (each once per recording). */
void drops_record_sample(struct drops_state *st, const void *data, size_t len);
void drops_record_syms(struct drops_state *st, const struct drop_sample *s);
void drops_record_close(struct drops_state *st);
/* Ends a collect's snapshot; a write error is warned once and ends the
 * recording. */
void drops_record_collect(struct collector *c, struct drops_state *st);

/* drops_replay.c: replay = FILE instead of the kernel. init: the file read
 * and checked whole (a bad one is a config error naming the record), the
 * reason names it carries; collect: every COLLECT of the file not replayed
 * yet, its samples first (the first collect replays the whole file). */
int drops_replay_init(struct collector *c, struct drops_state *st);
int drops_replay_collect(struct collector *c, struct drops_state *st);
void drops_replay_free(struct drops_replay *rp); /* accepts NULL */

/* drops_samples.c: the reason names ?reason= checks (a snapshot per
 * (re)scan; all freed at stop), and the ring buffer's record callback
 * (ctx: the collector). */
struct drops_reasons;
void drops_names_publish(const struct drops_reasons *r);
void drops_names_free_all(void);
int drops_on_sample(void *ctx, void *data, size_t len);

/* drops_counts.c: NULL on ENOMEM. */
struct drops_counts *drops_counts_new(int ncpus);
void drops_counts_free(struct drops_counts *k); /* accepts NULL */
/* Publishes sysobs_packet_drops_total and the counters' self metrics;
 * st->events gets every drop counted so far. 0 or -errno. */
int drops_publish_counts(struct collector *c, struct drops_state *st);
/* The namespace of that cookie was seen deleted (its series retired). */
bool drops_counts_netns_gone(const struct drops_counts *k, uint64_t cookie);

/* drops_netstat.c: the namespaces' TCP counters kfree_skb does not see.
 * open takes the loaded walk (prog_fd; when it is not loaded, -ENOENT for
 * no LINUX_MIB_* indices, else any -errno) and
 * its .bss table, runs it once and registers the families; NULL (warned)
 * when it cannot. publish accepts NULL. */
struct drops_netstat *drops_netstat_open(struct collector *c, int prog_fd,
					 const struct netstat_ns *table,
					 const struct netstat_psk *psk, const __u32 *npsk);
/* The LINUX_MIB_* values of the running kernel; 0 or -ENOENT (idx[0] is
 * UINT32_MAX then). */
struct btf;
int drops_netstat_indices(const struct btf *btf, uint32_t idx[NETSTAT_N]);
int drops_netstat_publish(struct collector *c, struct drops_netstat *ns);
void drops_netstat_close(struct drops_netstat *ns); /* accepts NULL */

#endif
