#!/usr/bin/env bash
# mptcp collector, live path: the event rate sysobsd sustains during a burst
# of MPTCP connections, side by side with `ip mptcp monitor > /dev/null` on the
# same namespace in the same run. Needs root and kernel MPTCP (skips
# otherwise). Figures only.
#
#   bench/mptcp_live.sh [connections]      (default 2000 per run)
#
# Runs the burst (2 subflows per connection, 50 at a time) against an agent
# watching the client namespace, once with the default 4 MiB receive buffer
# and once with the kernel default (rmem_default, what ip mptcp monitor
# gets). Per run it prints the client-side event rate, the events the agent
# received and stored, its overruns, and whether ip mptcp monitor overran
# (iproute2 prints "netlink receive error ... No buffer space" on ENOBUFS).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SYSOBS_SRC:-$HERE/..}
BUILD=${SYSOBS_BUILD:-$SRC/build}
SYSOBSD=${SYSOBSD:-$BUILD/sysobsd}
PEER=$BUILD/tests/mptcp_peer
N=${1:-2000}
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

run() { # label rcvbuf
	local label=$1 rcvbuf=$2 port apid mon out ms rc rows ev ov mon_err
	cat >"$T/sysobsd.ini" <<INI
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
	timeout 600 ip -n "$NS_A" mptcp monitor >/dev/null 2>"$T/$label.mon.err" &
	mon=$!
	pids+=($mon)
	sleep 0.5
	out=$(ip netns exec "$NS_A" timeout 600 "$PEER" burst "$MP_B1" "$MP_PORT" -n "$N" -s 2 -b 50 -t 5000)
	rc=$?
	sleep 2
	ms=$(sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' <<<"$out")
	ev=$(events_received "$port")
	ov=$(metric "$port" sysobs_mptcp_overruns_total)
	rows=$(sqlite3 "file:$T/$label.db?mode=ro" "SELECT count(*) FROM mptcp_events" 2>/dev/null || echo "?")
	kill "$mon" 2>/dev/null
	wait "$mon" 2>/dev/null
	mon_err=$(grep -c "No buffer space" "$T/$label.mon.err")
	kill -TERM "$apid"
	wait "$apid" 2>/dev/null
	printf '%-22s rcvbuf=%-8s %s (rc %s)\n' "$label" "$rcvbuf" "$out" "$rc"
	printf '%-22s client-side event rate: %s events/s over %s ms\n' "" \
		"$(awk -v e="$ev" -v ms="$ms" 'BEGIN { if (ms > 0) printf "%.0f", e / (ms / 1000); else print "?" }')" "$ms"
	printf '%-22s sysobsd: %s events received, %s rows stored, %s overruns | ip mptcp monitor >/dev/null: %s overruns\n' \
		"" "$ev" "$rows" "$ov" "$mon_err"
}

echo "mptcp live burst: $N connections x 2 subflows, 50 at a time, client netns watched"
echo "(each connection is 4 events on the client side: CREATED, ESTABLISHED, SUB_ESTABLISHED, CLOSED)"
run "sysobsd-4MiB" 4194304
run "sysobsd-rmem_default" "$rmem_default"
