#!/usr/bin/env bash
# drops collector: the kernel stack of a sampled drop (bpf_get_stack in the
# sample, named from kallsyms) and GET /api/v1/drops/stacks, the folded
# stacks of the samples a filter selects with their counts. In a namespace
# of its own: 20 UDP datagrams and 5 TCP SYNs to closed ports (NO_SOCKET
# from __udp4_lib_rcv and tcp_v4_rcv, as the samples' location says). The
# stacks must name those functions as the frame that dropped (the last of
# the folded line, or the one before sk_skb_reason_drop/kfree_skb_reason),
# rooted in the receive path (ip_rcv or __netif_receive_skb), never start
# with the BPF or tracepoint frames, and count 20 and 5; the text form is
# "stack count" lines, what flame-graph tools read.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd jq
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
NS=sysobs-dstacks-$$
netns_new "$NS" || skip "cannot create a network namespace"

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.self]
enabled = false
[collector.drops]
interval = 200ms
sample_rate = 100000
sample_burst = 10000
INI
start_agent
wait_collector drops
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 40011 -s 41011 -n 20 >/dev/null || fail "udp"
for _ in 1 2 3 4 5; do ip netns exec "$NS" bash -c 'exec 3<>/dev/tcp/127.0.0.1/40012' 2>/dev/null; done
have() { [ "$(api GET "/api/v1/drops/samples?netns=$NSINUM&reason=NO_SOCKET" | jq '.data | length')" -ge 25 ]; }
wait_for 10 have || fail "fewer than 25 NO_SOCKET samples in $NS"

req GET "/api/v1/drops/stacks?reason=NO_SOCKET&netns=$NSINUM&start=-5m"
assert_eq "status" 200 "$HTTP_CODE"
echo "$BODY" | jq -r '.data[] | "  \(.count) \(.stack)"'
assert_eq "samples read" 25 "$(jq -r '.samples | tonumber' <<<"$BODY")"
# the function that dropped: the innermost frame, under the kernel's drop helper
dropper() { jq -r --arg f "$1" '[.data[] | select(.stack | test("(^|;)" + $f + "(;(sk_skb_reason_drop|kfree_skb_reason|kfree_skb))*$"))] | map(.count | tonumber) | add // 0' <<<"$BODY"; }
assert_eq "udp stacks ending in __udp4_lib_rcv" 20 "$(dropper __udp4_lib_rcv)"
assert_eq "tcp stacks ending in tcp_v4_rcv" 5 "$(dropper tcp_v4_rcv)"
assert_eq "stacks with a BPF or tracepoint frame" 0 \
	"$(jq '[.data[] | select(.stack | test("(^|;)(bpf_|__bpf_|__traceiter_)"))] | length' <<<"$BODY")"
assert_eq "stacks rooted in the receive path" 25 \
	"$(jq '[.data[] | select(.stack | test("(^|;)(ip_rcv|ip_rcv_finish|__netif_receive_skb[a-z_]*|ip_local_deliver)(;|$)")) | .count | tonumber] | add' <<<"$BODY")"
# the sample carries its stack too
assert_eq "sample stacks naming __udp4_lib_rcv" 20 \
	"$(api GET "/api/v1/drops/samples?netns=$NSINUM&port=40011" | jq '[.data[] | select(.stack | test("__udp4_lib_rcv"))] | length')"
# folded text, as flamegraph.pl takes it: "frame;frame;... count"
txt=$(in_api_netns curl -sS -H 'Accept: text/plain' \
	"http://127.0.0.1:$PORT/api/v1/drops/stacks?reason=NO_SOCKET&netns=$NSINUM&protocol=udp")
echo "$txt" | sed 's/^/  text: /'
assert_eq "text lines" 0 "$(grep -cvE '^[A-Za-z0-9_.;]+ [0-9]+$' <<<"$txt")"
assert_eq "text count for udp" 20 "$(awk '{ s += $NF } END { print s }' <<<"$txt")"
# bad input: a cursor (an aggregate has no pages), an unknown reason
req GET "/api/v1/drops/stacks?cursor=5"
assert_eq "cursor refused" 400 "$HTTP_CODE"
req GET "/api/v1/drops/stacks?reason=NOPE"
assert_eq "unknown reason refused" 400 "$HTTP_CODE"
stop_agent
pass "stacks of NO_SOCKET drops name __udp4_lib_rcv (20) and tcp_v4_rcv (5) from the receive path," \
	"without the tracing frames; folded text for flame graphs"
