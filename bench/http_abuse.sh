#!/usr/bin/env bash
# The cheap attacks of issue 30, sysobsd beside Debian's
# prometheus-node-exporter in one run, both on their shipped defaults, one
# server at a time (same machine, same client). For each case it prints
# what a well-behaved client got meanwhile:
#   slow_get   64 connections: a GET header with Content-Length: 65536, then
#              a body byte every 2 s; a fresh /metrics every 0.2 s
#   slow_post  300 connections trickling a POST body (node_exporter has no
#              POST route: it reads the body all the same); fresh /metrics
#   idle_load  2000 idle connections beside wrk -c1000 on /metrics for
#              DURATION: ok requests/s (and the same wrk alone, before), a
#              fresh liveness probe (/healthz; node_exporter /) meanwhile
#   c4000_root wrk -c4000 on / (the status page; node_exporter's landing
#              page): ok requests/s, socket errors (resets and read errors)
#   guess      both with the same web-config (basic_auth_users, bcrypt cost
#              10): 64 connections guessing passwords from 127.0.0.9, an
#              authenticated /metrics from 127.0.0.1 whose pair is cached
# The bad-request soak (growth under abuse) is bench/http_abuse_soak.sh.
#
# Usage: bench/http_abuse.sh [path/to/sysobsd]   DURATION=10 (seconds)
# Needs root (the collectors load BPF), python3, wrk, prometheus-node-exporter.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-${SYSOBSD:-$here/build/sysobsd}}
DURATION=${DURATION:-10}
TOOL="$here/tests/tools/http_pressure.py"
for c in wrk prometheus-node-exporter python3 jq; do
	command -v "$c" >/dev/null || { echo "needs $c"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (the collectors load BPF)"; exit 1; }
ulimit -n 65536 2>/dev/null || true

t=$(mktemp -d)
chmod 711 "$t"
mkdir -m 1777 "$t/db"
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((10000 + RANDOM % 22000))
		! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return; }
	done
	return 1
}

python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' >"$t/hash"
printf 'basic_auth_users:\n  prometheus: %s\n' "$(cat "$t/hash")" >"$t/web.yml"

# start SERVER [WEBCONFIG]: sets port and pid
start() {
	port=$(free_port)
	if [ "$1" = sysobsd ]; then
		"$bin" --listen "127.0.0.1:$port" --db "$t/db/s$port.db" --log-level warn \
			${2:+--web.config.file "$2"} 2>>"$t/sysobsd.log" &
	else
		prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
			${2:+--web.config.file="$2"} 2>>"$t/node_exporter.log" &
	fi
	pid=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null ${2:+-u prometheus:s3cret} "http://127.0.0.1:$port/metrics" && break
		sleep 0.1
	done
	sleep 1
}
stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
probe_fmt() { # JSON PATH
	jq -r --arg p "$2" '.[$p] | "p50 \(.p50_ms) ms, p95 \(.p95_ms) ms, max \(.max_ms) ms, \(.statuses | to_entries | map("\(.value)x\(.key)") | join(" "))"' <<<"$1"
}
wrk_ok() { # wrk output: ok requests/s and socket errors
	awk '/Requests\/sec/ { rps = $2 } /requests in/ { n = $1 } /Non-2xx/ { bad = $NF }
		/Socket errors/ { gsub(",", ""); err = $4 + $6 + $8 + $10 }
		/Duration|requests in/ { for (i = 1; i <= NF; i++) if ($i == "in") d = $(i + 1) }
		END { d += 0; if (d == 0) d = 1; printf "%.0f ok req/s, %d socket errors, %d non-2xx", (n - bad) / d, err, bad }'
}

printf '%-11s %-14s %s\n' case server result
for srv in sysobsd node_exporter; do
	live=/healthz
	[ "$srv" = sysobsd ] || live=/
	start "$srv"
	out=$(python3 "$TOOL" --port "$port" --slow-body 64 --slow-body-request get --probe /metrics \
		--duration "$DURATION" --warmup 1)
	printf '%-11s %-14s /metrics %s\n' slow_get "$srv" "$(probe_fmt "$out" /metrics)"
	out=$(python3 "$TOOL" --port "$port" --slow-body 300 --slow-body-request post --probe /metrics \
		--duration "$DURATION" --warmup 1)
	printf '%-11s %-14s /metrics %s\n' slow_post "$srv" "$(probe_fmt "$out" /metrics)"
	alone=$(wrk -t2 -c1000 -d"${DURATION}s" "http://127.0.0.1:$port/metrics" 2>&1 | wrk_ok)
	python3 "$TOOL" --port "$port" --idle 2000 --probe "$live" --duration "$((DURATION + 2))" \
		--warmup 1 >"$t/idle.json" &
	ppid=$!
	sleep 2
	loaded=$(wrk -t2 -c1000 -d"${DURATION}s" "http://127.0.0.1:$port/metrics" 2>&1 | wrk_ok)
	wait "$ppid"
	printf '%-11s %-14s wrk -c1000 alone: %s; beside 2000 idle: %s; %s %s\n' idle_load "$srv" \
		"$alone" "$loaded" "$live" "$(probe_fmt "$(cat "$t/idle.json")" "$live")"
	printf '%-11s %-14s %s\n' c4000_root "$srv" \
		"$(wrk -t2 -c4000 -d"${DURATION}s" "http://127.0.0.1:$port/" 2>&1 | wrk_ok)"
	stop
	start "$srv" "$t/web.yml"
	curl -s -o /dev/null -u prometheus:s3cret "http://127.0.0.1:$port/metrics"
	python3 "$TOOL" --port "$port" --guess 64 --guess-from 127.0.0.9 \
		--duration "$((DURATION + 3))" --warmup 0 >"$t/guess.json" &
	gpid=$!
	sleep 3
	out=$(python3 "$TOOL" --port "$port" --probe /metrics --auth prometheus:s3cret \
		--duration "$DURATION" --warmup 0)
	wait "$gpid"
	printf '%-11s %-14s authenticated /metrics %s; guesses: %s\n' guess "$srv" \
		"$(probe_fmt "$out" /metrics)" \
		"$(jq -r '.guess.statuses | to_entries | map("\(.value)x\(.key)") | join(" ")' "$t/guess.json")"
	stop
done
