#!/usr/bin/env bash
# mptcp subflow health (issue 36): what reading every subflow's tcp_info
# costs, side by side with `ss` on the same load. Needs root and kernel
# MPTCP (skips otherwise). Figures only.
#
#   bench/mptcp_subflow.sh [connections]   (default 500: 1,000 subflows)
#   BEFORE=/path/to/older/build  also runs that build's sysobsd (without
#                                subflow health) at reconcile = 1s
#   SECS=10                      seconds each agent setting is measured
#
# Holds CONNECTIONS x 2 subflows between the two namespaces of
# tests/integration/mptcp_topo.sh (mptcp_peer burst -H), then prints, in the
# client namespace:
#   - one socket dump as the collector takes it (bench_mptcp with
#     BENCH_MPTCP_DUMP=1: 4 sock_diag dumps, tcp_info and mptcp_info
#     decoded), wall and CPU ms per dump and per 1,000 subflows;
#   - `ss -tinHO` (every TCP socket with tcp_info: the subflows),
#     `ss -tiMnHO` (the same plus the MPTCP sockets) and `ss -MnHO`, wall
#     and CPU ms per run (output to /dev/null; `ip netns exec true`'s own
#     cost measured apart and taken off);
#   - the agent's CPU per second watching that namespace at reconcile = 1s,
#     without history rows and with one row per subflow every second
#     (subflow_history = 1s), and at reconcile = 1h (events only: the
#     baseline), each over 10 s;
#   - GET /api/v1/mptcp/connections with and without ?refresh=1 (its own
#     dump), wall ms.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SYSOBS_SRC:-$HERE/..}
BUILD=${SYSOBS_BUILD:-$SRC/build}
SYSOBSD=${SYSOBSD:-$BUILD/sysobsd}
PEER=$BUILD/tests/mptcp_peer
BENCH=$BUILD/bench/bench_mptcp
N=${1:-500}
SECS=${SECS:-10}
source "$SRC/tests/integration/mptcp_topo.sh"
mptcp_need
for t in "$SYSOBSD" "$PEER" "$BENCH"; do
	[ -x "$t" ] || { echo "SKIP: $t not built"; exit 77; }
done
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: needs curl, jq"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-sfbench.XXXXXX")
pids=()
cleanup() {
	local p
	exec 4>&- 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	mptcp_topo_down
	rm -rf "$T"
}
trap cleanup EXIT
mptcp_topo_up || exit 1
ulimit -n 8192 2>/dev/null
ip -n "$NS_A" mptcp limits set subflow 2 add_addr_accepted 2

ip netns exec "$NS_B" timeout 900 "$PEER" server 0.0.0.0 "$MP_PORT" >"$T/server.txt" 2>&1 &
pids+=($!)
sleep 0.3
mkfifo "$T/hold"
ip netns exec "$NS_A" timeout 900 "$PEER" burst "$MP_B1" "$MP_PORT" -n "$N" -s 2 -H -t 20000 \
	<"$T/hold" >"$T/burst.txt" 2>&1 &
pids+=($!)
exec 4>"$T/hold"
for _ in $(seq 1 600); do grep -qs '^held' "$T/burst.txt" && break; sleep 0.1; done
grep -qs '^held' "$T/burst.txt" || { echo "burst did not hold: $(cat "$T/burst.txt")"; exit 1; }
sf=$(ip netns exec "$NS_A" ss -tinHO state established "( dport = :$MP_PORT )" | grep -c tcp-ulp-mptcp)
echo "held: $(cat "$T/burst.txt"); $sf subflows in the client namespace"

cpu_ms() { # pid -> utime+stime in ms
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat" 2>/dev/null || echo 0
}
per1k() { awk -v v="$1" -v n="$sf" 'BEGIN { printf "%.2f", n ? v * 1000 / n : 0 }'; }

# 1. the collector's dump (kernel + decode), 20 rounds
out=$(ip netns exec "$NS_A" env BENCH_MPTCP_DUMP=1 SYSOBS_SRC="$SRC" "$BENCH" 1000 2>&1)
dw=$(sed -n 's/.*sock_diag dump *\([0-9.]*\) ms per dump.*/\1/p' <<<"$out")
dc=$(sed -n 's/.*; \([0-9.]*\) ms CPU in the kernel and here.*/\1/p' <<<"$out")
echo "sysobs dump (4 sock_diag dumps + decode): $dw ms wall, $dc ms CPU per dump = $(per1k "$dc") ms CPU per 1,000 subflows"

# 2. ss on the same load, 20 runs each: wall and CPU (user+sys, children)
runs() { # -> "wall_ms cpu_ms" per run of: ip netns exec NS_A args...
	local t0 t1 c
	t0=$(date +%s%N)
	c=$( { TIMEFORMAT='%U %S'; time (for _ in $(seq 1 20); do ip netns exec "$NS_A" "$@" >/dev/null; done); } 2>&1 |
		awk '{ printf "%.2f", ($1 + $2) * 1000 / 20 }')
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" -v c="$c" 'BEGIN { printf "%.2f %.2f", (b - a) / 1e6 / 20, c }'
}
read -r w0 c0 <<<"$(runs true)"
echo "ip netns exec true: $w0 ms wall, $c0 ms CPU per run (taken off below)"
ss_cost() { # label args...
	local label=$1 w c
	shift
	read -r w c <<<"$(runs ss "$@")"
	w=$(awk -v a="$w" -v b="$w0" 'BEGIN { printf "%.2f", a - b }')
	c=$(awk -v a="$c" -v b="$c0" 'BEGIN { printf "%.2f", a - b }')
	echo "$label: $w ms wall, $c ms CPU per run = $(per1k "$c") ms CPU per 1,000 subflows"
}
ss_cost "ss -tinHO" -tinHO
ss_cost "ss -tiMnHO" -tiMnHO
ss_cost "ss -MnHO (no tcp_info)" -MnHO

# 3. the agent's CPU at three settings
agent() { # label reconcile history [sysobsd]
	local label=$1 port apid c0 c1 bin=${4:-$SYSOBSD}
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
reconcile = $2
INI
	[ "$3" = - ] || echo "subflow_history = $3" >>"$T/sysobsd.ini"
	rm -f "$T/port"
	"$bin" --config "$T/sysobsd.ini" --port-file "$T/port" >"$T/$label.log" 2>&1 &
	apid=$!
	pids+=($apid)
	for _ in $(seq 1 200); do [ -s "$T/port" ] && break; sleep 0.05; done
	port=$(cat "$T/port")
	sleep 2 # start-up (its first dump) done
	c0=$(cpu_ms "$apid")
	sleep "$SECS"
	c1=$(cpu_ms "$apid")
	local rows
	rows=$(sqlite3 "file:$T/$label.db?mode=ro" "SELECT count(*) FROM mptcp_subflow_samples" 2>/dev/null || echo "?")
	printf 'agent %-34s %6.1f ms CPU per second (%s history rows)\n' "$label" \
		"$(awk -v c=$((c1 - c0)) -v s="$SECS" 'BEGIN { print c / s }')" "$rows"
	if [ "$label" = "reconcile=1s" ]; then
		local a b
		a=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/api/v1/mptcp/connections")
		b=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/api/v1/mptcp/connections?refresh=1")
		echo "GET /api/v1/mptcp/connections: $(awk -v a="$a" 'BEGIN { printf "%.1f", a * 1000 }') ms, with ?refresh=1: $(awk -v b="$b" 'BEGIN { printf "%.1f", b * 1000 }') ms"
	fi
	kill -TERM "$apid"
	wait "$apid" 2>/dev/null
}
agent "reconcile=1h (events only)" 1h 0
agent "reconcile=1s" 1s 0
agent "reconcile=1s subflow_history=1s" 1s 1s
if [ -n "${BEFORE:-}" ]; then
	agent "before: reconcile=1h" 1h - "$BEFORE/sysobsd"
	agent "before: reconcile=1s" 1s - "$BEFORE/sysobsd"
fi
