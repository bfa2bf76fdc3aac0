#!/usr/bin/env bash
# Benchmark of the drops collector, on a real drop stream (UDP datagrams to a
# closed port in a private network namespace, one NO_SOCKET drop each):
#
#  1. per-event cost of the agent's BPF program and of bpftrace's
#     'tracepoint:skb:kfree_skb { @[args->reason] = count(); }' attached at
#     the same time, from the kernel's run statistics (BPF_ENABLE_STATS,
#     run_time_ns / run_cnt), side by side;
#  2. sysobsd's CPU (user + system) at the highest drop rate the generator
#     reaches here (the issue asks for >= 300,000/s; this 2-core host, also
#     running the agent, reached 144-185k/s);
#  3. the largest sampled-record rate stored with no loss (ring buffer,
#     event queue and SQLite writer all keeping up).
#
# Prints figures, asserts nothing. Needs root, bpftrace, and a build with
# tests (drops_gen) and benchmarks (bench_drops_stats).
#
#   SYSOBS_BUILD=build bash bench/drops.sh   [SECONDS per phase, default 5]
#   COST_ONLY=1 ... runs part 1 only
#   REPEAT=N ... part 1 in N phases (default 3), with the median and range
#   COST_SAMPLE_RATE=R ... the agent's sample_rate in part 1 (default 100;
#                          0 = counters only, no sampling check per drop)
#   DROPS_EXTRA='container_label = true' ... adds lines to [collector.drops]
set -uo pipefail

BUILD=${SYSOBS_BUILD:-build}
SYSOBSD=${SYSOBSD:-$BUILD/sysobsd}
GEN=$BUILD/tests/drops_gen
STATS=$BUILD/bench/bench_drops_stats
SECS=${1:-5}
REPEAT=${REPEAT:-3}
COST_SAMPLE_RATE=${COST_SAMPLE_RATE:-100}

skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (BPF, netns)"
for x in "$SYSOBSD" "$GEN" "$STATS"; do [ -x "$x" ] || skip "$x not built"; done
command -v bpftrace >/dev/null || skip "needs bpftrace"
command -v bpftool >/dev/null || skip "needs bpftool"
command -v jq >/dev/null || skip "needs jq"
command -v sqlite3 >/dev/null || skip "needs sqlite3"
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF"

T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-bench-drops.XXXXXX")
NS=sysobs-bench-drops-$$
AGENT_PID=
BT_PID=
cleanup() {
	[ -n "$BT_PID" ] && kill -INT "$BT_PID" 2>/dev/null && wait "$BT_PID" 2>/dev/null
	[ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$NS" || skip "cannot create a network namespace"
ip -n "$NS" link set lo up
NSINUM=$(stat -L -c %i "/run/netns/$NS")
# bpftrace reads tracepoint formats from tracefs.
[ -d /sys/kernel/tracing/events ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null

start_agent() {	# start_agent SAMPLE_RATE [BURST]
	rm -f "$T"/db* "$T/port"
	cat >"$T/sysobsd.ini" <<INI
[agent]
user = root
[http]
listen = 127.0.0.1:0
[storage]
path = $T/db
[collector.self]
enabled = false
[collector.drops]
netns_label = true
sample_rate = $1
sample_burst = ${2:-20}
${DROPS_EXTRA:+$DROPS_EXTRA}
INI
	"$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port" >>"$T/agent.log" 2>&1 &
	AGENT_PID=$!
	for _ in $(seq 1 200); do
		[ -s "$T/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$T/port" 2>/dev/null) || {
		tail "$T/agent.log"
		exit 1
	}
	for _ in $(seq 1 100); do
		state=$(curl -s "http://127.0.0.1:$PORT/api/v1/collectors" |
			jq -r '.data[] | select(.name == "drops") | .state')
		[ "${state,,}" = running ] && return 0
		sleep 0.1
	done
	echo "drops collector not running"
	tail "$T/agent.log"
	exit 1
}
stop_agent() {
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	AGENT_PID=
}
metric() {
	curl -s "http://127.0.0.1:$PORT/metrics" |
		awk -v s="$1" '$1 == s { v = $2 } END { print v == "" ? 0 : v }'
}
ns_drops() { metric "sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$NSINUM\"}"; }
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }	# utime+stime
prog_id() {	# prog_id TYPE NAME -> newest program id
	bpftool prog show -j | jq -r --arg t "$1" --arg n "$2" \
		'[.[] | select(.type == $t and .name == $n) | .id] | max // empty'
}

echo "kernel $(uname -r), $(nproc) CPUs, $SECS s per measurement, load average $(cut -d" " -f1-3 /proc/loadavg)"

# --- 1. per-event cost, side by side ------------------------------------------
start_agent "$COST_SAMPLE_RATE"
ours=$(prog_id tracing drops_tp_btf)
[ -n "$ours" ] || ours=$(prog_id raw_tracepoint drops_raw_tp)
bpftrace -e 'tracepoint:skb:kfree_skb { @[args->reason] = count(); }' >"$T/bpftrace.out" 2>&1 &
BT_PID=$!
for _ in $(seq 1 100); do
	bt=$(prog_id tracepoint kfree_skb)
	[ -n "$bt" ] && break
	sleep 0.2
done
[ -n "$bt" ] || skip "bpftrace program did not attach: $(head -3 "$T/bpftrace.out")"
echo
echo "== 1. per-event cost on the same drop stream (BPF_ENABLE_STATS; stats add their own overhead)"
# One phase is noisy on a shared VM (+-15 ns for the agent's program from
# one phase to the next); REPEAT phases give the median and the range.
for r in $(seq 1 "$REPEAT"); do
	[ "$REPEAT" = 1 ] || echo "-- phase $r of $REPEAT"
	"$STATS" --baseline "$ours:sysobs drops (tp_btf)" "$bt:bpftrace tracepoint" -- \
		ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -t "$SECS" | tee "$T/cost.txt"
	ns_ours=$(awk '/^sysobs drops/ { print $NF }' "$T/cost.txt")
	ns_bt=$(awk '/^bpftrace/ { print $NF }' "$T/cost.txt")
	ns_base=$(awk '/^baseline/ { print $NF }' "$T/cost.txt")
	echo "$ns_ours $ns_bt $ns_base" >>"$T/phases.txt"
	awk -v a="$ns_ours" -v b="$ns_bt" -v f="$ns_base" 'BEGIN {
		if (b > 0) printf "ratio sysobs/bpftrace: %.2f (aim <= 0.5)\n", a / b
		if (b > f) printf "above the baseline floor: sysobs %.1f ns, bpftrace %.1f ns, ratio %.2f\n", a - f, b - f, (a - f) / (b - f)
	}'
done
kill -INT "$BT_PID"
wait "$BT_PID" 2>/dev/null
BT_PID=
if [ "$REPEAT" -gt 1 ]; then
	# median and range of each column and of the ratio, over the phases
	awk '$2 > 0 && $3 > 0 { print $1, $2, $3, $1 / $2, $1 / $3 }' "$T/phases.txt" >"$T/cols.txt"
	echo "over $(wc -l <"$T/cols.txt") phases (median, min..max):"
	i=0
	# ratio sysobs/floor: the one-counter program on the same tp_btf
	# tracepoint (issue #23 aims at <= 1.3)
	for name in "sysobs ns/event" "bpftrace ns/event" "baseline ns/event" "ratio sysobs/bpftrace" \
		"ratio sysobs/floor"; do
		i=$((i + 1))
		awk -v c=$i '{ print $c }' "$T/cols.txt" | sort -g | awk -v name="$name" '
			{ v[NR] = $1 }
			END {
				if (!NR) exit
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "  %-24s %8.2f  %.2f..%.2f\n", name, m, v[1], v[NR]
			}'
	done
fi
stop_agent
# COST_ONLY=1: the side-by-side cost only (before/after comparisons)
[ "${COST_ONLY:-0}" = 1 ] && exit 0

# --- 2. user CPU of sysobsd at >= 300k drops/s ----------------------------------
echo
echo "== 2. sysobsd CPU at a sustained drop rate (sample_rate 100/s, bpftrace detached)"
start_agent 100
c0=$(ns_drops)
k0=$(cpu_ticks "$AGENT_PID")
t0=$(date +%s.%N)
# One sender per CPU: a single one tops out near 300k/s on loopback.
pids=()
for _ in $(seq 1 "$(nproc)"); do
	ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -t "$SECS" >/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
t1=$(date +%s.%N)
k1=$(cpu_ticks "$AGENT_PID")
sleep 1.5	# one more collect interval for the final counter
c1=$(ns_drops)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v k0="$k0" -v k1="$k1" \
	-v hz="$(getconf CLK_TCK)" 'BEGIN {
	el = t1 - t0
	printf "drops: %d in %.2f s = %.0f drops/s\n", c1 - c0, el, (c1 - c0) / el
	printf "sysobsd CPU (user+sys, /proc/PID/stat): %.3f s = %.2f%% of one core\n",
		(k1 - k0) / hz, 100 * (k1 - k0) / hz / el
}'
stop_agent

# --- 3. largest sampled-record rate stored without loss -------------------------
echo
echo "== 3. sampled records: rate limit vs records stored ($SECS s flood each, default ring 256 KiB)"
printf "%12s %12s %10s %12s %10s %10s %s\n" sample_rate sent/s lost queue_full sent stored verdict
best=0
for rate in 1000 5000 20000 50000 100000 200000; do
	start_agent "$rate" $((rate / 10))
	s0=$(metric sysobs_drop_samples_total)
	l0=$(metric sysobs_drop_samples_lost_total)
	t0=$(date +%s.%N)
	ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -t "$SECS" >/dev/null
	t1=$(date +%s.%N)
	sleep 1
	s1=$(metric sysobs_drop_samples_total)
	l1=$(metric sysobs_drop_samples_lost_total)
	q=$(metric 'sysobs_events_dropped_total{reason="queue_full"}')
	stop_agent
	stored=$(sqlite3 "$T/db" "SELECT count(*) FROM drop_samples")
	sent=$((s1 - s0))
	verdict=lossless
	if [ $((l1 - l0)) -gt 0 ] || [ "${q%.*}" -gt 0 ] || [ "$stored" -lt "$sent" ]; then
		verdict=LOSS
	else
		best=$(awk -v s="$sent" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", s / (b - a) }')
	fi
	printf "%12d %12.0f %10d %12d %10d %10d %s\n" "$rate" \
		"$(awk -v s="$sent" -v a="$t0" -v b="$t1" 'BEGIN { print s / (b - a) }')" \
		$((l1 - l0)) "${q%.*}" "$sent" "$stored" "$verdict"
	[ "$verdict" = LOSS ] && break
done
echo "largest sampled-record rate stored without loss: ~$best records/s"
