/* SPDX-License-Identifier: MIT */
/*
 * The drops collector's config, history row and table, shared by drops.c,
 * drops_keys.c (its config keys, also built without BPF) and the tests.
 * The history is served by the API's generic route from the table's
 * descriptor (GET /api/v1/drops/samples).
 */
#ifndef SYSOBS_DROPS_COLLECTOR_H
#define SYSOBS_DROPS_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/drops/drops_capture.h"
#include "collectors/sink.h"
#include "storage/table.h"

/* [collector.drops], parsed by the agent from drops_cfg_keys. */
enum drops_attach { DROPS_ATTACH_AUTO, DROPS_ATTACH_TP_BTF, DROPS_ATTACH_RAW_TP };

struct drops_cfg {
	uint64_t interval; /* ms */
	uint64_t sample_rate, sample_burst, map_entries;
	uint64_t ring_bytes;
	uint64_t capture_bytes; /* <= DROPS_CAPTURE_MAX; 0 off */
	uint64_t stack_depth;	/* <= DROPS_STACK_MAX; 0 off */
	bool netns_label, container_label, pod_label, fast_slots, capture_payload;
	unsigned attach; /* enum drops_attach */
	const char *btf_path, *kallsyms;
	/* "" none: a recording to write (what the kernel gave), or to run
	 * on instead of the kernel (drops_recfile.h, docs/drops.md) */
	const char *record, *replay;
	uint64_t record_max_size; /* bytes */
};

#define DROPS_ROW_CAPTURE_MAX 256 /* DROPS_CAPTURE_MAX of bpf/drops.h */
#define DROPS_STACK_TEXT      512 /* a folded stack in the row, cut at the outer end */

/* One row of drop_samples (see drops_cols); -1 / "" bind as NULL. */
struct drops_row {
	char reason[64];
	uint32_t reason_code;
	char location[96]; /* "sym+0xoff [module]" or hex */
	int32_t ifindex;
	char ifname[16];
	uint32_t netns;
	char l3[8];
	char protocol[8];
	char saddr[46];
	char daddr[46];
	int32_t sport, dport;
	int16_t icmp_type, icmp_code;
	int16_t tcp_flags;
	uint32_t len;
	uint32_t cpu;
	bool truncated;
	bool fragment;
	uint64_t cgroup_id;    /* cgroup v2 id of the socket, 0 none */
	char cgroup[104];      /* its path under the cgroup2 root, cut from the left */
	char container[65];    /* the container id the path carries */
	uint64_t netns_cookie; /* net->net_cookie of netns: which namespace of that inode */
	/* The kernel stack of the drop, folded: "outermost;...;innermost"
	 * function names (drops_stack.h), "" when none. */
	char stack[DROPS_STACK_TEXT];
	/* The capture as a Linux cooked v2 frame (drops_capture.h), and that
	 * frame's length before capture_bytes cut it (0: no capture). */
	COL_BLOB_FIELD(DROPS_SLL2_HDR_LEN + DROPS_ROW_CAPTURE_MAX) capture;
	uint32_t orig_len;
	/* Kubernetes names from the agent's cache (sink_pod()), "" unknown:
	 * by the container id, else the pod sandbox's netns */
	SINK_POD_ROW_FIELDS;
	char container_name[64];
};

extern const struct event_table drops_samples_table;
struct cfg_key;
extern const struct cfg_key drops_cfg_keys[];
struct collector;
/* What the key types cannot say (ring_bytes a power of two, whole pages):
 * the collector's check_config, in both builds. */
int drops_check_config(struct collector *c);

#endif
