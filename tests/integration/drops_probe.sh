#!/usr/bin/env bash
# drops collector, probe once, load once (issue 37 item 5): what the kernel
# lacks is probed before the one load of the BPF object, and the programs
# that need it are not loaded (bpf_program__set_autoload), as libbpf-tools
# do. An LD_PRELOAD (tests/integration/drops_refuse.c) makes bpf(2) refuse
# one feature as an older or locked-down kernel would:
#
#  A. nothing refused (this kernel): tp_btf and both namespace walks.
#  B. bpf_map_lookup_percpu_elem() refused (a kernel before 5.19): the TCP
#     counters' walk is left out and said so, the namespace walk stays.
#  C. tracing programs refused at attach (tp_btf loads but does not
#     attach): raw_tp.
#
# Each case: the object loads once (libbpf parses the kernel's BTF once per
# object load), the collector runs, and 7 NO_SOCKET drops made in a
# namespace of the test count in its series. Before, B loaded the object
# twice (a second variant without both walks) and C twice (a reload for
# raw_tp after the failed attach).
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
PRELOAD=$SYSOBS_BUILD/tests/libdrops_refuse.so
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
[ -f "$PRELOAD" ] || fail "$PRELOAD not built"

NS=sysobs-dprobe-$$
netns_new "$NS" || skip "cannot create a network namespace"
INUM=$NSINUM
# The database directory must be reachable by the user the agent becomes.
chmod 755 "$T"
write_base_config agent.user=- collector.self.enabled=false collector.drops.interval=200ms \
	collector.drops.netns_label=true
series() {
	local v
	v=$(metric "sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$INUM\"}")
	printf '%s' "${v:-0}"
}
series_is() { [ "$(series)" = "$1" ]; }
log_has() { grep -q -- "$1" "$T/agent.log" || fail "$2: no '$1' in the log: $(grep 'drops:' "$T/agent.log" | grep -v DEBUG | tail -4)"; }

# probe_case NAME REFUSE PROGRAM-LINE: the agent with SYSOBS_DROPS_REFUSE,
# its drops collector's program line (a regex), one object load, 7 drops.
probe_case() {
	[ ! -f "$T/agent.log" ] || mv "$T/agent.log" "$T/agent-$1.log.prev"
	SYSOBS_DROPS_REFUSE=$2 LD_PRELOAD=$PRELOAD start_agent --log-level debug
	wait_collector drops
	grep -q "drops: .*program $3\$" "$T/agent.log" ||
		fail "$1: program line not '$3': $(grep -o 'program .*' "$T/agent.log" | head -1)"
	assert_eq "$1: loads of the object (libbpf's kernel BTF parses)" 1 \
		"$(grep -c "libbpf: loading kernel BTF '" "$T/agent.log")"
	grep -q "loading it without\|trying raw_tp" "$T/agent.log" && fail "$1: a second variant tried"
	ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 7 -s 41300 >/dev/null
	wait_for 10 series_is 7 || fail "$1: NO_SOCKET drops in $NS: $(series), not 7"
	stop_agent
	echo "$1: $(grep -o 'drops: .*; program .*' "$T/agent.log" | head -1 | sed 's/.*; program/program/'); one load, 7 drops counted"
}

probe_case A "" "tp_btf.*, netns walk, netstat walk"
grep -q "cannot list network namespaces\|cannot read the namespaces' TCP" "$T/agent.log" &&
	fail "A: a walk missing on this kernel"

probe_case B percpu_elem "tp_btf.*, netns walk"
log_has "cannot read the namespaces' TCP counters (the kernel has no bpf_map_lookup_percpu_elem() (Linux 5.19))" B
grep -q "cannot list network namespaces" "$T/agent.log" && fail "B: the namespace walk left out too"

probe_case C tracing_attach "raw_tp, netns walk, netstat walk"
log_has "tp_btf/kfree_skb refused (Invalid argument): program raw_tp" C

pass "probe once, load once: tp_btf with both walks; without bpf_map_lookup_percpu_elem() the TCP counters' walk left out; tp_btf refused at attach -> raw_tp; each one object load, 7 drops counted"
