#!/usr/bin/env bash
# Re-records the golden.drops input, tests/data/golden/drops/drops.rec, on
# the running kernel (root, BTF, bpftrace):
#
#   SYSOBS_BUILD=build bash tests/golden/drops/record.sh
#   scripts/golden.sh --update drops     # then: the golden files from it
#
# The real sysobsd with [collector.drops] record = FILE, while drops_gen makes
# drops in a network namespace of this script's own: UDP to a closed port
# (NO_SOCKET, over IPv4 and IPv6), SYNs to a closed TCP port (NO_SOCKET),
# IPv4 packets of protocol 253 (IP_NOPROTO). The recording holds whatever
# else the host dropped in those seconds too (the collector sees every
# namespace). bpftrace on skb:kfree_skb is the independent reference: the
# namespace's drops by reason it counted must be what sysobsd, replaying
# the new file, shows under that namespace's netns label. Beside the file,
# drops.info: that namespace's inode, and how many samples the file has.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export SYSOBS_SRC=$PWD SYSOBS_BUILD=${SYSOBS_BUILD:-$PWD/build}
SYSOBS_BUILD=$(cd "$SYSOBS_BUILD" && pwd)
export SYSOBSD=$SYSOBS_BUILD/sysobsd SYSOBS_TEST_DATA=$SYSOBS_SRC/tests/data
OUT=${DROPS_REC_OUT:-$SYSOBS_SRC/tests/data/golden/drops/drops.rec}
set +e
source tests/integration/lib.sh

need_root
need_cmd bpftrace
need_cmd jq
GEN=$SYSOBS_BUILD/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
NS=sysobs-grec-$$
netns_new "$NS" || fail "cannot create a network namespace"

# The reference: kfree_skb events whose device is in $NS, by reason value.
bpftrace -e "tracepoint:skb:kfree_skb {
	\$skb = (struct sk_buff *)args->skbaddr;
	if (\$skb->dev != 0 && \$skb->dev->nd_net.net->ns.inum == $NSINUM) {
		@[args->reason] = count();
	}
}" >"$T/bt.out" 2>&1 &
BT_PID=$!
on_exit "kill -KILL $BT_PID 2>/dev/null"
wait_for 30 grep -q Attaching "$T/bt.out" || fail "bpftrace did not attach: $(head -3 "$T/bt.out")"
sleep 1 # "Attaching" is printed before the attach itself

config() { # config KEY=VALUE...: drops alone, its labels as golden.drops has them
	local off=() c
	for c in self mptcp ifs cachefiles; do off+=("collector.$c.enabled=false"); done
	write_base_config "${off[@]}" storage.snapshot_interval=0 kubernetes.cri_socket=off \
		collector.drops.netns_label=true "$@"
}
config "collector.drops.record=$T/drops.rec" collector.drops.sample_rate=40 collector.drops.interval=500ms \
	collector.drops.sample_burst=40
start_agent
wait_collector drops
gen() { ip netns exec "$NS" "$GEN" "$@" >/dev/null || fail "drops_gen $*"; }
gen udp -d 127.0.0.1 -p 9 -n 12
gen udp -d ::1 -p 9 -n 5
gen tcp -d 127.0.0.1 -p 9 -n 3
gen proto -d 127.0.0.1 -p 253 -n 4
ns_total() { metric_sum sysobs_packet_drops_total "netns=\"$NSINUM\""; }
# 12 + 5 + 4, and each SYN at least once (retransmits may add)
wait_for 20 sh -c "[ \$(curl -s http://127.0.0.1:$PORT/metrics | awk -v l='netns=\"$NSINUM\"' \
	'index(\$0, \"sysobs_packet_drops_total{\") == 1 && index(\$1, l) { s += \$NF } END { print s + 0 }') -ge 24 ]" ||
	fail "the namespace's drops did not reach /metrics: $(ns_total)"
sleep 1 # one more collect: the counters after the last sample
stop_agent
bt_interrupt "$BT_PID"
grep '^@\[' "$T/bt.out" | sed 's/^@\[\([0-9]*\)\]: \([0-9]*\)/\1 \2/' | sort >"$T/bt.tab"

# The reference against the replay of the new recording.
config "collector.drops.replay=$T/drops.rec"
rm -f "$T/sysobs.db"
start_agent
wait_for 20 sh -c "curl -s http://127.0.0.1:$PORT/metrics | grep -q '^sysobs_packet_drops_total'" ||
	fail "the replay published no drops: $(tail -5 "$T/agent.log")"
FORMAT=/sys/kernel/tracing/events/skb/kfree_skb/format
[ -r "$FORMAT" ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
while read -r value count; do
	name=$(grep -o "{ $value, \"[A-Z_0-9]*\" }" "$FORMAT" | sed 's/.*"\(.*\)".*/\1/')
	[ -n "$name" ] || fail "reason $value not in $FORMAT"
	got=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk -v r="reason=\"$name\"" \
		-v n="netns=\"$NSINUM\"" 'index($0, "sysobs_packet_drops_total{") == 1 &&
		index($1, r) && index($1, n) { s += $NF } END { print s + 0 }')
	assert_eq "$name drops in $NS: sysobsd's replay vs bpftrace" "$count" "$got"
	echo "$name: bpftrace $count, replay $got"
done <"$T/bt.tab"
[ -s "$T/bt.tab" ] || fail "bpftrace counted nothing in $NS"
stop_agent
samples=$(grep -o 'replaying [^:]*: [0-9]* samples' "$T/agent.log" | awk '{ print $3 }')
# golden.drops asks for every sample on one page of 100
[ "$samples" -lt 100 ] || fail "$samples samples: more than golden.drops pages (100); record again"
mkdir -p "$(dirname "$OUT")"
cp "$T/drops.rec" "$OUT"
printf 'netns %s\nsamples %s\n' "$NSINUM" "$samples" >"${OUT%.rec}.info"
pass "recorded $(stat -c %s "$OUT") bytes to $OUT (namespace $NS, inode $NSINUM)"
