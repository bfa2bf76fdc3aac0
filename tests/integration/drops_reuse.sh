#!/usr/bin/env bash
# drops collector, a dead namespace's series under a reused inode number
# (issue 33 item 4): 300 NO_SOCKET drops in namespace P (nstat UdpNoPorts
# 300), P deleted and its death seen (the series keeps 300 for the grace,
# 5 min here), then a new namespace gets P's inode number and drops nothing
# (nstat UdpNoPorts 0 there). The series must leave /metrics at the collect
# whose walk finds the inode live under another cookie; before, it showed
# P's 300 under the new namespace's label for the whole grace.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd nstat
need_cmd lsns
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"

NS=sysobs-dreuse-$$
EXTRA=()
cleanup_extra() { local n; for n in "${EXTRA[@]}"; do ip netns del "$n" 2>/dev/null; done; }
on_exit cleanup_extra
val() { local v; v=$(metric "$1"); printf '%s' "${v:-0}"; }
series() { metric "sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$1\"}"; }
series_is() { [ "$(series "$1")" = "$2" ]; }
noports() { ip netns exec "$1" nstat -az UdpNoPorts | awk '$1 == "UdpNoPorts" { print $2 }'; }

write_base_config metrics.stale_series_grace=5m collector.self.enabled=false \
	collector.drops.interval=200ms collector.drops.netns_label=true
start_agent
wait_collector drops

# Namespaces deleted just before (earlier tests') free their inode numbers
# as their cleanup runs, and a new namespace takes the lowest free one: wait
# (up to 60 s) until the kernel's list holds only the namespaces of
# processes and /run/netns, so that P's number is the one freed next.
reference_netns() {
	{
		lsns -t net -n -o NS
		for f in /run/netns/*; do stat -L -c %i "$f"; done
	} | sort -u | wc -l
}
settled() { [ "$(val sysobs_drops_netns_live)" = "$(reference_netns)" ]; }
wait_for 60 settled || true
netns_new "$NS-p" || skip "cannot create a network namespace"
P=$NSINUM
ip netns exec "$NS-p" "$GEN" udp -d 127.0.0.1 -p 9 -n 300 -s 41100 >/dev/null || fail "traffic"
assert_eq "nstat UdpNoPorts in P" 300 "$(noports "$NS-p")"
wait_for 5 series_is "$P" 300 || fail "series of P ($P): '$(series "$P")', not 300"
gone0=$(val sysobs_drops_netns_gone_total)
ip netns del "$NS-p"
gone_seen() { [ "$(val sysobs_drops_netns_gone_total)" -gt "$gone0" ]; }
wait_for 5 gone_seen || fail "the deletion of P was not seen"
assert_eq "P's series in its grace" 300 "$(series "$P")"

# The kernel gives the lowest free inode number once P's cleanup has freed
# it: namespaces are made until one gets it (bounded: 150, 60 s).
t0=$SECONDS
got=
for i in $(seq 1 150); do
	n=$NS-n$i
	ip netns add "$n" || break
	EXTRA+=("$n")
	if [ "$(stat -L -c %i "/run/netns/$n")" = "$P" ]; then
		got=$n
		break
	fi
	[ $((SECONDS - t0)) -lt 60 ] || break
	sleep 0.2
done
[ -n "$got" ] || skip "inode $P not reused by $i namespaces in $((SECONDS - t0)) s (another namespace took it, or the kernel had not freed it)"
ip -n "$got" link set lo up
echo "inode $P reused by the $i-th namespace made, after $((SECONDS - t0)) s"
assert_eq "nstat UdpNoPorts in the new namespace" 0 "$(noports "$got")"
absent() { [ -z "$(series "$P")" ]; }
wait_for 3 absent || true
echo "FIGURE: NO_SOCKET series of inode $P after the reuse: expected=absent (new namespace: 0 drops, nstat 0) got=$(series "$P")"
absent || fail "the dead namespace's 300 drops still show under inode $P, now a live namespace with 0 drops: '$(series "$P")'"
# the new namespace's own drops count from 0 under the label
ip netns exec "$got" "$GEN" udp -d 127.0.0.1 -p 9 -n 7 -s 41100 >/dev/null || fail "traffic"
wait_for 5 series_is "$P" 7 || fail "the new namespace's series: '$(series "$P")', not 7 (nstat $(noports "$got"))"
echo "FIGURE: new namespace's NO_SOCKET nstat=$(noports "$got") got=$(series "$P")"
stop_agent
pass "a dead namespace's series under a reused inode leaves /metrics at once; the new namespace counts from 0 (7 = nstat)"
