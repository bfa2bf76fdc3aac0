#!/usr/bin/env bash
# HTTP load, sysobsd beside Debian's prometheus-node-exporter in the same run:
# wrk with CONNS concurrent connections for DURATION on
#   sysobsd /metrics, sysobsd a history route (drops samples, 100 rows),
#   node_exporter /metrics,
# while UDP datagrams to a closed loopback port make drops for the drops
# collector to sample at its limit. Prints requests/s, p50/p99 latency,
# errors (socket errors + non-2xx) and peak RSS (VmHWM) of each server.
# Loopback only; every load stops by itself.
#
# Usage: bench/http_load.sh [path/to/sysobsd]
#   DURATION=30s CONNS=200 THREADS=2 DROP_PPS=20000 WEB_CONFIG=FILE
# WEB_CONFIG runs both servers with the same exporter-toolkit web-config
# (TLS/basic auth) - give wrk the credentials with WRK_AUTH=user:password.
# Needs root (BPF), wrk and prometheus-node-exporter (apt-get install wrk
# prometheus-node-exporter).
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
DURATION=${DURATION:-30s}
CONNS=${CONNS:-200}
THREADS=${THREADS:-2}
DROP_PPS=${DROP_PPS:-20000}
for c in wrk prometheus-node-exporter python3 jq; do
	command -v "$c" >/dev/null || { echo "needs $c (apt-get install ${c/python3/python3})"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (the drops collector loads BPF)"; exit 1; }

t=$(mktemp -d)
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

# sysobsd: enough connections for the load generator (all from 127.0.0.1)
cat >"$t/sysobsd.ini" <<INI
[http]
listen = 127.0.0.1:0
max_connections = $((CONNS + 56))
max_per_ip = $((CONNS + 56))
threads = 2
${WEB_CONFIG:+web_config_file = $WEB_CONFIG}
[storage]
path = $t/sysobs.db
INI
"$bin" --config "$t/sysobsd.ini" --port-file "$t/port" --log-level warn 2>"$t/sysobsd.log" &
sys_pid=$!
pids+=("$sys_pid")
for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/sysobsd.log"; exit 1; }
sys_port=$(cat "$t/port")

ne_port=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --web.max-requests="$CONNS" \
	${WEB_CONFIG:+--web.config.file="$WEB_CONFIG"} >"$t/node_exporter.log" 2>&1 &
ne_pid=$!
pids+=("$ne_pid")
for _ in $(seq 100); do
	curl -sf "${curl_auth[@]}" -o /dev/null "$scheme://127.0.0.1:$ne_port/metrics" && break
	sleep 0.1
done

# drops to sample: UDP to a port nobody listens on (NO_SOCKET), paced
closed_port=$(free_port)
secs=$(($(sed 's/s$//; s/m$/*60/' <<<"$DURATION") * 3 + 10))
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
sleep 3 # some samples in the database before the history route is loaded

hwm_mib() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rows=()
run() { # NAME PID URL
	local name=$1 pid=$2 url=$3 out rps p50 p99 sock non2xx
	out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency --timeout 10s \
		"${wrk_auth[@]}" "$url" 2>&1) || { echo "$out"; exit 1; }
	echo "$out" >"$t/wrk-${#rows[@]}.txt"
	rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	sock=$(awk -F'[ ,]+' '/Socket errors:/ { print $4 + $6 + $8 + $10 }' <<<"$out")
	non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
	rows+=("$(printf '%-28s %10s %9s %9s %7s %11s' "$name" "$rps" "$p50" "$p99" \
		"$((${sock:-0} + ${non2xx:-0}))" "$(hwm_mib "$pid")")")
}

body=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$sys_port/metrics" | wc -c)
ne_body=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$ne_port/metrics" | wc -c)
hist="$scheme://127.0.0.1:$sys_port/api/v1/drops/samples?limit=100"
hist_rows=$(curl -s "${curl_auth[@]}" "$hist" | jq '.data | length')
run "sysobsd /metrics" "$sys_pid" "$scheme://127.0.0.1:$sys_port/metrics"
run "sysobsd drops/samples" "$sys_pid" "$hist"
run "node_exporter /metrics" "$ne_pid" "$scheme://127.0.0.1:$ne_port/metrics"
sampled=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$sys_port/metrics" |
	awk '/^sysobs_drop_samples_total/ { s += $NF } END { print s + 0 }')
throttled=$(curl -s "${curl_auth[@]}" "$scheme://127.0.0.1:$sys_port/metrics" |
	awk '/^sysobs_drop_samples_throttled_total/ { s += $NF } END { print s + 0 }')

echo "wrk -c$CONNS -t$THREADS -d$DURATION, $scheme, $(nproc) CPUs shared by servers, wrk and the drop source"
echo "  sysobsd /metrics $body bytes; node_exporter /metrics $ne_body bytes; history page $hist_rows rows"
echo "  drop source: UDP to a closed port at ~$DROP_PPS/s; drop samples taken $sampled, throttled (over the sampling limit) $throttled"
echo "  node_exporter with --web.max-requests=$CONNS (its default, 40, answers 503 past 40 concurrent requests)"
printf '%-28s %10s %9s %9s %7s %11s\n' "target" "req/s" "p50" "p99" "errors" "peakRSS MiB"
printf '%s\n' "${rows[@]}"
