#!/usr/bin/env bash
# mptcp collector, live path: the event rate sysobsd sustains during a burst
# of MPTCP connections, side by side with `ip mptcp monitor > /dev/null` on the
# same namespace in the same run. Needs root and kernel MPTCP (skips
# otherwise). Figures only.
#
#   bench/mptcp_live.sh [connections] [parallel clients]   (default 4000, 1)
#
# Runs the burst (2 subflows per connection, 50 at a time per client, the
# clients in parallel) against an agent
# watching the client namespace, once with the default 4 MiB receive buffer
# and once with the kernel default (rmem_default, what ip mptcp monitor
# gets). Per run it prints the client-side event rate, the events the agent
# received and stored, its overruns, and whether ip mptcp monitor overran
# (iproute2 prints "netlink receive error ... No buffer space" on ENOBUFS),
# and the CPU time each listener spent during the burst.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SYSOBS_SRC:-$HERE/..}
BUILD=${SYSOBS_BUILD:-$SRC/build}
SYSOBSD=${SYSOBSD:-$BUILD/sysobsd}
PEER=$BUILD/tests/mptcp_peer
N=${1:-4000}
P=${2:-1}
source "$SRC/tests/integration/mptcp_topo.sh"
mptcp_need
for t in "$SYSOBSD" "$PEER"; do
	[ -x "$t" ] || { echo "SKIP: $t not built"; exit 77; }
done
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: needs curl, jq"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-mpbench.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	mptcp_topo_down
	rm -rf "$T"
}
trap cleanup EXIT
mptcp_topo_up || exit 1
ulimit -n 8192 2>/dev/null

ip netns exec "$NS_B" timeout 600 "$PEER" server 0.0.0.0 "$MP_PORT" >"$T/server.txt" 2>&1 &
pids+=($!)
sleep 0.3
rmem_default=$(ip netns exec "$NS_A" cat /proc/sys/net/core/rmem_default)

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2 }'; }
events_received() {
	curl -s "http://127.0.0.1:$1/metrics" |
		awk '$1 ~ /^sysobs_mptcp_events_total\{/ { s += $2 } END { print s + 0 }'
}

cpu_ms() { # pid -> utime+stime in ms
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat" 2>/dev/null || echo 0
}

run() { # label rcvbuf
	local label=$1 rcvbuf=$2 port apid mon out ms rc rows ev ov mon_err a0 m0 a1 m1 t0 t1 i bp gen
	cat >"$T/sysobsd.ini" <<INI
[agent]
user = root
[http]
listen = 127.0.0.1:0
[storage]
path = $T/$label.db
batch_ms = 50
[collector.mptcp]
netns = /run/netns/$NS_A
rcvbuf = $rcvbuf
INI
	rm -f "$T/port"
	"$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port" >"$T/$label.log" 2>&1 &
	apid=$!
	pids+=($apid)
	for _ in $(seq 1 200); do [ -s "$T/port" ] && break; sleep 0.05; done
	port=$(cat "$T/port")
	ip -n "$NS_A" mptcp monitor >/dev/null 2>"$T/$label.mon.err" &
	mon=$!
	pids+=($mon)
	sleep 0.5
	a0=$(cpu_ms "$apid")
	m0=$(cpu_ms "$mon")
	t0=$(date +%s%N)
	bp=()
	for ((i = 0; i < P; i++)); do
		ip netns exec "$NS_A" timeout 600 "$PEER" burst "$MP_B1" "$MP_PORT" -n $((N / P)) -s 2 -b 50 \
			-t 5000 >"$T/$label.burst.$i" 2>&1 &
		bp+=($!)
	done
	rc=0
	for i in "${bp[@]}"; do wait "$i" || rc=$?; done
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	out="$(cat "$T/$label".burst.* | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } } END { printf "connections=%d reached=%d failed=%d", s["connections"], s["reached"], s["failed"] }') clients=$P"
	sleep 2
	a1=$(cpu_ms "$apid")
	m1=$(cpu_ms "$mon")
	ev=$(events_received "$port")
	ov=$(metric "$port" sysobs_mptcp_overruns_total)
	rows=$(sqlite3 "file:$T/$label.db?mode=ro" "SELECT count(*) FROM mptcp_events" 2>/dev/null || echo "?")
	kill "$mon" 2>/dev/null
	wait "$mon" 2>/dev/null
	mon_err=$(grep -c "No buffer space" "$T/$label.mon.err")
	kill -TERM "$apid"
	wait "$apid" 2>/dev/null
	printf '%-22s rcvbuf=%-8s %s (rc %s)\n' "$label" "$rcvbuf" "$out" "$rc"
	# Generated on the client side: CREATED, ESTABLISHED, CLOSED per
	# connection, SUB_ESTABLISHED per connection that reached 2 subflows.
	gen=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } } END { print 3 * s["connections"] + s["reached"] }' "$T/$label".burst.*)
	printf '%-22s events generated: %s in %s ms = %s events/s\n' "" "$gen" "$ms" \
		"$(awk -v e="$gen" -v ms="$ms" 'BEGIN { if (ms > 0) printf "%.0f", e / (ms / 1000); else print "?" }')"
	printf '%-22s sysobsd: %s events received, %s rows stored, %s overruns, %s ms CPU\n' \
		"" "$ev" "$rows" "$ov" $((a1 - a0))
	printf '%-22s ip mptcp monitor >/dev/null: %s overruns, %s ms CPU\n' "" "$mon_err" $((m1 - m0))
}

echo "mptcp live burst: $N connections x 2 subflows, $P clients in parallel, 50 at a time each, client netns watched"
echo "(each connection is 4 events on the client side: CREATED, ESTABLISHED, SUB_ESTABLISHED, CLOSED)"
run "sysobsd-4MiB" 4194304
run "sysobsd-rmem_default" "$rmem_default"
