#!/usr/bin/env bash
# HTTP load, sysobsd beside Debian's prometheus-node-exporter in the same run,
# both on their shipped defaults (sysobsd [http] max_connections = 64,
# threads = 2; node_exporter --web.max-requests = 40): for each of CONNS, a
# fresh pair, and wrk with that many connections for DURATION on
#   sysobsd /metrics, sysobsd a history route (drops samples, 100 rows),
#   node_exporter /metrics,
# while UDP datagrams to a closed loopback port make drops for the drops
# collector to sample at its limit. Prints successful (2xx) requests/s,
# p50/p99 latency, errors (socket errors + non-2xx) and peak RSS (VmHWM) of
# each server, the ratio of sysobsd's successful requests/s on /metrics to
# node_exporter's, and how fast sysobsd's /healthz answers after the load.
# TUNED=1 adds a labelled pair per CONNS with sysobsd's max_connections and
# max_per_ip at CONNS + 56 and node_exporter's --web.max-requests at CONNS.
# Loopback only; every load stops by itself.
#
# Usage: bench/http_load.sh [path/to/sysobsd]
#   DURATION=10s CONNS="64 200 1000" THREADS=2 DROP_PPS=20000 TUNED=0 WEB_CONFIG=FILE
# WEB_CONFIG runs both servers with the same exporter-toolkit web-config
# (TLS/basic auth) - give wrk the credentials with WRK_AUTH=user:password.
# Needs root (BPF), wrk and prometheus-node-exporter (apt-get install wrk
# prometheus-node-exporter).
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64 200 1000}
TUNED=${TUNED:-0}
THREADS=${THREADS:-2}
DROP_PPS=${DROP_PPS:-20000}
for c in wrk prometheus-node-exporter python3 jq; do
	command -v "$c" >/dev/null || { echo "needs $c (apt-get install ${c/python3/python3})"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (the drops collector loads BPF)"; exit 1; }

t=$(mktemp -d)
# the agent drops to [agent] user (sysobs, else nobody) after start-up: its
# database directory must stay writable for it
chmod 711 "$t"
mkdir -m 1777 "$t/db"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((10000 + RANDOM % 22000)) # below the ephemeral range (32768-)
		! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return; }
	done
	return 1
}

scheme=http
curl_auth=()
wrk_auth=()
if [ -n "${WEB_CONFIG:-}" ]; then
	scheme=https
	curl_auth=(-k)
	if [ -n "${WRK_AUTH:-}" ]; then
		curl_auth+=(-u "$WRK_AUTH")
		wrk_auth=(-H "Authorization: Basic $(printf %s "$WRK_AUTH" | base64 -w0)")
	fi
fi

# start_sysobsd NAME [MAXCONN]: the shipped [http] defaults unless MAXCONN
start_sysobsd() {
	cat >"$t/$1.ini" <<INI
[http]
listen = 127.0.0.1:0
${2:+max_connections = $2}
${2:+max_per_ip = $2}
${WEB_CONFIG:+web_config_file = $WEB_CONFIG}
[storage]
path = $t/db/$1.db
INI
	rm -f "$t/port"
	"$bin" --config "$t/$1.ini" --port-file "$t/port" --log-level warn 2>"$t/$1.log" &
	sys_pid=$!
	pids+=("$sys_pid")
	for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
	[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/$1.log"; exit 1; }
	sys_port=$(cat "$t/port")
}

# start_ne [MAXREQ]: node_exporter on its defaults unless MAXREQ
start_ne() {
	ne_port=$(free_port)
	prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" \
		${1:+--web.max-requests="$1"} ${WEB_CONFIG:+--web.config.file="$WEB_CONFIG"} \
		>"$t/node_exporter.log" 2>&1 &
	ne_pid=$!
	pids+=("$ne_pid")
	for _ in $(seq 100); do
		curl -sf "${curl_auth[@]}" -o /dev/null "$scheme://127.0.0.1:$ne_port/metrics" && break
		sleep 0.1
	done
}

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }

# drops to sample: UDP to a port nobody listens on (NO_SOCKET), paced
closed_port=$(free_port)
n_conns=$(wc -w <<<"$CONNS")
secs=$(($(sed 's/s$//; s/m$/*60/' <<<"$DURATION") * 3 * n_conns * (TUNED + 1) + 30 * n_conns))
python3 - "$closed_port" "$DROP_PPS" "$secs" <<'PY' &
import socket, sys, time
port, pps, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + secs
batch = max(1, pps // 100)
while time.monotonic() < end:
    t0 = time.monotonic()
    for _ in range(batch):
        s.sendto(b"x", ("127.0.0.1", port))
    time.sleep(max(0, 0.01 - (time.monotonic() - t0)))
PY
pids+=("$!")

hwm_mib() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
declare -A ok_rps
rows=()
run() { # NAME PID URL CONNS
	local name=$1 pid=$2 url=$3 c=$4 out reqs p50 p99 sock non2xx secs ok
	out=$(wrk -t"$THREADS" -c"$c" -d"$DURATION" --latency --timeout 10s \
		"${wrk_auth[@]}" "$url" 2>&1) || { echo "$out"; exit 1; }
	echo "$out" >"$t/wrk-${#rows[@]}.txt"
	reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
	secs=$(awk '/requests in/ { sub(/s,$/, "", $4); print $4 }' <<<"$out")
	p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	sock=$(awk -F'[ ,]+' '/Socket errors:/ { print $4 + $6 + $8 + $10 }' <<<"$out")
	non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
	ok=$(awk -v r="${reqs:-0}" -v n="${non2xx:-0}" -v s="$secs" \
		'BEGIN { printf "%.0f", (r - n) / s }')
	ok_rps["$name $c"]=$ok
	rows+=("$(printf '%-34s %6s %10s %9s %9s %8s %11s' "$name" "$c" "$ok" "$p50" "$p99" \
		"$((${sock:-0} + ${non2xx:-0}))" "$(hwm_mib "$pid")")")
}

# one_set LABEL SYS_MAXCONN NE_MAXREQ CONNS: a fresh sysobsd and
# node_exporter, side by side at CONNS connections
ratios=()
one_set() {
	local label=$1 c=$4 served ratio
	start_sysobsd "sysobsd$c${label:+-tuned}" "$2"
	start_ne "$3"
	sleep 3 # some samples in the database before the history route is loaded
	run "sysobsd /metrics$label" "$sys_pid" "$scheme://127.0.0.1:$sys_port/metrics" "$c"
	run "sysobsd drops/samples$label" "$sys_pid" \
		"$scheme://127.0.0.1:$sys_port/api/v1/drops/samples?limit=100" "$c"
	run "node_exporter /metrics$label" "$ne_pid" "$scheme://127.0.0.1:$ne_port/metrics" "$c"
	served=$(curl -s -o /dev/null -w '%{http_code} in %{time_total} s' --max-time 5 \
		"${curl_auth[@]}" "$scheme://127.0.0.1:$sys_port/healthz")
	ratio=$(awk -v a="${ok_rps["sysobsd /metrics$label $c"]}" \
		-v b="${ok_rps["node_exporter /metrics$label $c"]}" \
		'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "inf (node_exporter: none ok)" }')
	ratios+=("$(printf '%-9s %5s conns: sysobsd / node_exporter ok req/s on /metrics = %s; sysobsd /healthz after: %s' \
		"${label:-default}" "$c" "$ratio" "$served")")
	stop_pid "$sys_pid"
	stop_pid "$ne_pid"
}

for c in $CONNS; do
	one_set "" "" "" "$c"
	[ "$TUNED" = 1 ] && one_set " (tuned)" $((c + 56)) "$c" "$c"
done
start_sysobsd sizes
start_ne
sleep 2
body=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$sys_port/metrics" | wc -c)
ne_body=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$ne_port/metrics" | wc -c)
hist_rows=$(curl -s "${curl_auth[@]}" \
	"$scheme://127.0.0.1:$sys_port/api/v1/drops/samples?limit=100" | jq '.data | length')

echo "wrk -t$THREADS -d$DURATION per row, $scheme, $(nproc) CPUs shared by the servers, wrk and the drop source"
echo "  sysobsd /metrics $body bytes; node_exporter /metrics $ne_body bytes; history page $hist_rows rows; drops at ~$DROP_PPS/s"
echo "  defaults: sysobsd [http] max_connections = 64, threads = 2; node_exporter --web.max-requests = 40 (503 past it)"
[ "$TUNED" = 1 ] && echo "  (tuned): sysobsd max_connections = max_per_ip = conns + 56; node_exporter --web.max-requests = conns"
echo "  ok req/s: 2xx answers per second; errors: socket errors (connect, read, write, timeout) + non-2xx"
printf '%-34s %6s %10s %9s %9s %8s %11s\n' "target" "conns" "ok req/s" "p50" "p99" "errors" "peakRSS MiB"
printf '%s\n' "${rows[@]}"
printf '%s\n' "${ratios[@]}"
