#!/usr/bin/env bash
# drops collector, fragment reassembly timeouts (issue #21, item 15): the
# fragments of a queue that expires are freed in the queue's timer with
# reason FRAG_REASM_TIMEOUT; only the head has a device, the others have
# neither device nor socket (skb->dev holds the fragment tree's rbnode).
# They must count in the namespace of the fragment queue, never in netns 0
# or another one, and their samples name the receiving device there.
#
# Two namespaces of the test's own joined by a veth pair; the sender sends,
# for 20 IPv4 and 20 IPv6 datagrams, two fragments that never complete
# (drops_gen frag); the receiver's ipfrag_time / ip6frag_time is 1 s.
# Reference: bpftrace on skb:kfree_skb, FRAG_REASM_TIMEOUT events (80:
# 40 heads freed by ip_expire / ip6_frag_expire, 40 by
# inet_frag_rbtree_purge), and the receiver's IpReasmTimeout and
# Ip6ReasmTimeout (nstat): 20 each.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd nstat
need_cmd bpftrace
need_cmd jq
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
grep -qw ip_expire /proc/kallsyms || skip "no ip_expire in /proc/kallsyms"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"

A=sysobs-dfa-$$
B=sysobs-dfb-$$
netns_new "$A" || skip "cannot create a network namespace"
netns_new "$B" || skip "cannot create a network namespace"
NSB=$NSINUM
ip link add dfa$$ netns "$A" type veth peer name dfb$$ netns "$B" || skip "no veth"
ip -n "$A" addr add 10.77.0.1/24 dev dfa$$
ip -n "$B" addr add 10.77.0.2/24 dev dfb$$
ip -n "$A" addr add fd77::1/64 dev dfa$$ nodad
ip -n "$B" addr add fd77::2/64 dev dfb$$ nodad
ip -n "$A" link set dfa$$ up
ip -n "$B" link set dfb$$ up
MAC=$(ip -n "$B" -br link show dfb$$ | awk '{print $3}')
ip -n "$A" neigh replace 10.77.0.2 lladdr "$MAC" dev dfa$$
ip -n "$A" neigh replace fd77::2 lladdr "$MAC" dev dfa$$
IFB=$(ip -n "$B" -o link show dfb$$ | cut -d: -f1)
ip netns exec "$B" sysctl -q net.ipv4.ipfrag_time=1 net.ipv6.ip6frag_time=1

chmod 755 "$T"
write_base_config agent.user=- collector.self.enabled=false collector.drops.interval=200ms \
	collector.drops.netns_label=true collector.drops.sample_rate=1000 collector.drops.sample_burst=200
start_agent
wait_collector drops
W='FRAG_REASM_TIMEOUT) count in netns 0|timer_expire_entry/exit did not attach'
grep -Eq "$W" "$T/agent.log" && fail "agent: $(grep -E "$W" "$T/agent.log")"

frag_bt_start "$A"
ip netns exec "$A" "$GEN" frag -d 10.77.0.2 -n 20 >/dev/null || fail "frag v4"
ip netns exec "$A" "$GEN" frag -d fd77::2 -n 20 >/dev/null || fail "frag v6"
# timeouts TOTAL: the receiver's IpReasmTimeout + Ip6ReasmTimeout
timeouts() {
	ip netns exec "$B" nstat -az IpReasmTimeout Ip6ReasmTimeout |
		awk '$1 == "IpReasmTimeout" { a = $2 } $1 == "Ip6ReasmTimeout" { b = $2 } END { print a + 0, b + 0 }'
}
_all_expired() { read -r t4 t6 < <(timeouts) && [ $((t4 + t6)) -ge 40 ]; }
wait_for 20 _all_expired || true
sleep 0.5 # the fragments after each head are freed as its queue is
frag_bt_stop
REF=$FRAG_BT_N
read -r T4 T6 < <(timeouts)
assert_eq "receiver IpReasmTimeout" 20 "$T4"
assert_eq "receiver Ip6ReasmTimeout" 20 "$T6"
assert_ge "bpftrace FRAG_REASM_TIMEOUT events (2 per queue)" 80 "$REF"

# metrics_frag NETNS|'*': FRAG_REASM_TIMEOUT drops in that namespace's series
metrics_frag() {
	curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
		awk -v ns="netns=\"$1\"" 'index($0, "sysobs_packet_drops_total{reason=\"FRAG_REASM_TIMEOUT\"") == 1 &&
			(ns == "netns=\"*\"" || index($1, ns)) { s += $NF } END { print s + 0 }'
}
_all_counted() { [ "$(metrics_frag '*')" -ge 80 ]; }
wait_for 5 _all_counted || true
IN_B=$(metrics_frag "$NSB")
IN_0=$(metrics_frag 0)
ALL=$(metrics_frag '*')
echo "FRAG_REASM_TIMEOUT: in the receiver's namespace $IN_B, in netns 0 $IN_0, in all $ALL; bpftrace $REF"
assert_eq "FRAG_REASM_TIMEOUT in netns 0" 0 "$IN_0"
assert_eq "FRAG_REASM_TIMEOUT in the receiver's namespace (bpftrace)" "$REF" "$IN_B"
pass "80 fragments of 40 expired queues counted in the queue's namespace, none in netns 0"

req GET "/api/v1/drops/samples?reason=FRAG_REASM_TIMEOUT&limit=1000"
assert_eq "samples status" 200 "$HTTP_CODE"
NS_BAD=$(jq --arg ns "$NSB" '[.data[] | select((.netns | tostring) != $ns)] | length' <<<"$BODY")
DEV_BAD=$(jq --arg i "$IFB" --arg n "dfb$$" \
	'[.data[] | select((.ifindex | tostring) != $i or .ifname != $n)] | length' <<<"$BODY")
NS_ROWS=$(jq '.data | length' <<<"$BODY")
PURGED=$(jq '[.data[] | select(.location | startswith("inet_frag_rbtree_purge"))] | length' <<<"$BODY")
assert_ge "samples" 2 "$NS_ROWS"
assert_ge "samples of fragments freed by inet_frag_rbtree_purge" 1 "$PURGED"
assert_eq "samples in another namespace" 0 "$NS_BAD"
assert_eq "samples without the receiving device (ifindex $IFB, dfb$$)" 0 "$DEV_BAD"
pass "$NS_ROWS samples ($PURGED purged fragments): netns $NSB, device dfb$$ (ifindex $IFB)"
stop_agent
