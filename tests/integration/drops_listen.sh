#!/usr/bin/env bash
# drops collector, what kfree_skb does not see (issue #21, item 14): SYNs a
# full listen queue refuses are freed with consume_skb(), so they never
# show in sysobs_packet_drops_total; the kernel counts them in TcpExt
# ListenDrops / ListenOverflows of the namespace. The agent, unprivileged
# after its start, exports those per namespace
# (sysobs_tcp_listen_drops_total{netns}, sysobs_tcp_listen_overflows_total)
# read by a BPF walk of the kernel's namespace list.
#
# A namespace of the test's own, created after the agent dropped its
# privileges; a listener with backlog 1 that never accepts; 300 connects
# (drops_gen synflood, SYN retransmits included). Reference: nstat in the
# namespace (TcpExtListenDrops, TcpExtListenOverflows), which must be > 0.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd nstat
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"

chmod 755 "$T"
write_base_config agent.user=- collector.self.enabled=false collector.drops.interval=200ms \
	collector.drops.netns_label=true metrics.stale_series_grace=2s
start_agent
wait_collector drops
wait_for 10 grep -q 'without capabilities' "$T/agent.log" ||
	fail "the agent did not drop its privileges"
grep -q "cannot read the namespaces' TCP counters" "$T/agent.log" &&
	fail "agent: $(grep "TCP counters" "$T/agent.log")"

NS=sysobs-dlisten-$$
netns_new "$NS" || skip "cannot create a network namespace"
ip netns exec "$NS" "$GEN" synflood -d 127.0.0.1 -p 5555 -n 300 >/dev/null || fail "synflood"
read -r REF_D REF_O < <(ip netns exec "$NS" nstat -az TcpExtListenDrops TcpExtListenOverflows |
	awk '$1 == "TcpExtListenDrops" { d = $2 } $1 == "TcpExtListenOverflows" { o = $2 }
		END { print d + 0, o + 0 }')
assert_ge "nstat TcpExtListenDrops in the namespace" 1 "$REF_D"
m() { local v; v=$(metric "$1{netns=\"$NSINUM\"}"); printf '%s' "${v:-0}"; }
_same() { [ "$(m sysobs_tcp_listen_drops_total)" = "$REF_D" ] &&
	[ "$(m sysobs_tcp_listen_overflows_total)" = "$REF_O" ]; }
wait_for 5 _same || true
GOT_D=$(m sysobs_tcp_listen_drops_total)
GOT_O=$(m sysobs_tcp_listen_overflows_total)
KF=$(metric_sum sysobs_packet_drops_total "netns=\"$NSINUM\"")
echo "ListenDrops: nstat $REF_D, sysobs $GOT_D; ListenOverflows: nstat $REF_O, sysobs $GOT_O; kfree_skb drops in the namespace: $KF"
assert_eq "sysobs_tcp_listen_drops_total (nstat TcpExtListenDrops)" "$REF_D" "$GOT_D"
assert_eq "sysobs_tcp_listen_overflows_total (nstat TcpExtListenOverflows)" "$REF_O" "$GOT_O"
pass "listen drops of a namespace created after the privilege drop: $GOT_D, as nstat says"

ip netns del "$NS"
_gone() { ! curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
	grep -q "^sysobs_tcp_listen_drops_total{netns=\"$NSINUM\"}"; }
# gone from the kernel's list, the series are declared gone and leave
# /metrics after [metrics] stale_series_grace (2 s here; 5 min by default,
# so the last increments are scraped)
t_del=$SECONDS
wait_for 30 _gone || fail "the deleted namespace's sysobs_tcp_listen_drops_total stayed 30 s (grace 2 s)"
echo "FIGURE: the deleted namespace's series left /metrics after $((SECONDS - t_del)) s"
pass "the deleted namespace's series left /metrics"
stop_agent
