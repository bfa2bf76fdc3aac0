// SPDX-License-Identifier: MIT
/* [collector.drops] keys: shared by the BPF build and the no-BPF stub, so
 * one config file works with both. */
#include "agent/config.h"
#include "collectors/drops/drops.h"

const struct cfg_key drops_cfg_keys[] = {
    {"interval", "1s", "how often the kernel counters are read into the metrics"},
    {"sample_rate", "100",
     "sampled drop records per second, host-wide; split evenly over the online CPUs, so a "
     "flood on one CPU gets that CPU's share (0 = no samples)"},
    {"sample_burst", "20",
     "records a quiet host may send at once before the rate applies; split over the online CPUs "
     "like the rate, at least 1 each"},
    {"map_entries", "4096",
     "distinct (reason, protocols, netns) counters kept in the kernel; more are "
     "counted as sysobs_drops_map_overflow_total"},
    {"ring_bytes", "256k", "BPF ring buffer size (power of two, >= page size)"},
    {"netns_label", "false", "add a netns label (namespace inode) to sysobs_packet_drops_total"},
    {"fast_slots", "true",
     "count drops in a per-CPU direct-mapped table in front of the hash (cheaper per drop)"},
    {"attach", "auto", "auto, tp_btf or raw_tp: how the program attaches to skb:kfree_skb"},
    {"btf_path", "/sys/kernel/btf/vmlinux", "kernel BTF naming the drop reasons"},
    {"kallsyms", "/proc/kallsyms", "kernel symbols naming drop locations"},
    {0},
};
