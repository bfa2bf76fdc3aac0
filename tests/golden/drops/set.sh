# shellcheck shell=bash
# golden.drops: the drops collector replaying a recording of this kernel
# (tests/data/golden/drops/drops.rec, made by tests/golden/drops/record.sh:
# UDP to a closed port over IPv4 and IPv6, SYNs to a closed TCP port and
# IPv4 protocol 253 in a namespace of the recorder's own, whose inode is in
# drops.info with the file's sample count, and what else the host dropped
# meanwhile, at a sample_rate of 40/s).
#
# Covered: the recording's reader; the reason names it carries (as the
# kernel's BTF gave them) and the kernel symbols naming the samples'
# locations and stacks; every ring-buffer record through
# drops_on_sample() (decode, row, exemplar, the drop_samples table and its
# routes); every collect's counters (the per-CPU fast slots, the counts hash,
# the program's statistics) through drops_publish_counts() and
# publish_series() into the sink: sysobs_packet_drops_total with the netns
# label and the collector's own counters.
# Not covered (live only, off in a replay): BTF, the BPF load and attach,
# /proc/kallsyms (but the recorded symbols), cgroup paths and container
# labels, pod labels, the kernel's namespace list (so no namespace is seen
# deleted: the retirement of gone series is integration.drops_gone's), the
# TCP counters (drops_netstat), module uevents and BTF rescans.
# Sourced by tests/golden/run.sh.
SAMPLES=$(awk '$1 == "samples" { print $2 }' "$INPUT/drops.info")
golden_config drops "collector.drops.replay=$INPUT/drops.rec" collector.drops.netns_label=true \
	collector.drops.interval=1h storage.retention=0
# Every sample of the file (fewer than 100) and their stacks.
ROUTES=("/api/v1/drops/samples?limit=100" /api/v1/drops/stacks)
# netns_name: the API names a namespace inode from this host's /run/netns
# when it serves the row (nothing recorded): a test's namespace here now
# may have the recording's inode number.
GOLDEN_JSON_DROP=(netns_name)

# Ready when every recorded sample is stored (the first collect replays
# the whole file) and the writer's counters have them.
golden_ready() {
	wait_for 20 sh -c "curl -sf http://127.0.0.1:$PORT/metrics |
		grep -qx 'sysobs_events_written_total $SAMPLES'"
}
