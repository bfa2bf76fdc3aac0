// SPDX-License-Identifier: MIT
/* [collector.drops] keys: shared by the BPF build and the no-BPF stub, so
 * one config file works with both. */
#include <unistd.h>

#include "base/config.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"

static const char *const drops_attach_choices[] = {
    [DROPS_ATTACH_AUTO] = "auto",
    [DROPS_ATTACH_TP_BTF] = "tp_btf",
    [DROPS_ATTACH_RAW_TP] = "raw_tp",
    NULL,
};

#define DROPS_KEY(f, t, def, mn, mx, help) CFG_KEY(struct drops_cfg, f, t, def, mn, mx, help)
const struct cfg_key drops_cfg_keys[] = {
    DROPS_KEY(interval, CFG_DURATION, "1s", 100, 3600000,
	      "how often the kernel counters are read into the metrics"),
    DROPS_KEY(sample_rate, CFG_U64, "100", 0, 1000000,
	      "sampled drop records per second, host-wide; split evenly over the online CPUs, so "
	      "a flood on one CPU gets that CPU's share (0 = no samples)"),
    DROPS_KEY(sample_burst, CFG_U64, "20", 1, 1000000,
	      "records a quiet host may send at once before the rate applies; split over the "
	      "online CPUs like the rate, at least 1 each"),
    DROPS_KEY(capture_bytes, CFG_U64, "128", 0, 256,
	      "packet bytes kept with a sampled drop, from its MAC header; headers only unless "
	      "capture_payload, never TCP or UDP payload (0 = no capture)"),
    DROPS_KEY(capture_payload, CFG_BOOL, "false", 0, 0,
	      "let the capture run past the packet's headers into its payload, up to "
	      "capture_bytes"),
    DROPS_KEY(stack_depth, CFG_U64, "16", 0, 24,
	      "kernel stack frames kept with a sampled drop (bpf_get_stack), folded into "
	      "function names: GET /api/v1/drops/stacks (0 = none)"),
    DROPS_KEY(map_entries, CFG_U64, "4096", 16, 1 << 20,
	      "distinct (reason, protocols, netns) counters kept in the kernel; more are "
	      "counted as sysobs_drops_map_overflow_total"),
    DROPS_KEY(ring_bytes, CFG_SIZE, "256k", 4096, 1ull << 30,
	      "BPF ring buffer size (power of two, >= page size)"),
    DROPS_KEY(netns_label, CFG_BOOL, "false", 0, 0,
	      "add a netns label (namespace inode) to sysobs_packet_drops_total"),
    DROPS_KEY(container_label, CFG_BOOL, "false", 0, 0,
	      "add a container label (the short id of the container whose socket dropped, from "
	      "its cgroup; empty for the host) to sysobs_packet_drops_total; the socket's cgroup "
	      "joins the kernel key"),
    DROPS_KEY(pod_label, CFG_BOOL, "false", 0, 0,
	      "add pod and pod_namespace labels (the Kubernetes pod whose sandbox network "
	      "namespace dropped, from the agent's name service, [kubernetes]; empty for the host "
	      "and for a namespace of no pod) to sysobs_packet_drops_total: one series per pod "
	      "and reason, docs/kubernetes.md gives the count"),
    DROPS_KEY(fast_slots, CFG_BOOL, "true", 0, 0,
	      "count drops in a per-CPU direct-mapped table in front of the hash (cheaper per "
	      "drop)"),
    CFG_KEY_CHOICE(struct drops_cfg, attach, "auto", drops_attach_choices,
		   "auto, tp_btf or raw_tp: how the program attaches to skb:kfree_skb"),
    DROPS_KEY(btf_path, CFG_STRING, "/sys/kernel/btf/vmlinux", 0, 0,
	      "kernel BTF naming the drop reasons"),
    DROPS_KEY(kallsyms, CFG_STRING, "/proc/kallsyms", 0, 0, "kernel symbols naming drop locations"),
    DROPS_KEY(record, CFG_STRING, "", 0, 0,
	      "write what the kernel gives the collector (reason names, sampled records, the "
	      "counters of each collect) to this file, for replay (docs/drops.md); a new or empty "
	      "file, never written over"),
    DROPS_KEY(record_max_size, CFG_SIZE, "64M", 1024, 128 << 20,
	      "the recording stops (logged) at the first collect that would take the file past "
	      "this size, which is not written: the file stays a whole recording (a replay reads "
	      "at most 256M)"),
    DROPS_KEY(replay, CFG_STRING, "", 0, 0,
	      "run on a recording (record = FILE) instead of the kernel: no BPF, cgroups or "
	      "namespace list, the recorded reason names and symbols; the first collect replays "
	      "the whole file"),
    {0},
};

int drops_check_config(struct collector *c)
{
	const struct drops_cfg *cfg = c->cfg;

	if (cfg->ring_bytes & (cfg->ring_bytes - 1) || cfg->ring_bytes % getpagesize())
		return collector_config_error(
		    c, "ring_bytes", "must be a power of two and a multiple of the page size");
	if (cfg->replay[0] && cfg->record[0])
		return collector_config_error(
		    c, "record", "cannot record a replay: set record or replay, not both");
	if (cfg->replay[0] && (cfg->container_label || cfg->pod_label))
		return collector_config_error(c, "replay",
					      "container_label and pod_label need the live host "
					      "(its cgroups, the pod cache); "
					      "a replay has neither");
	return 0;
}
