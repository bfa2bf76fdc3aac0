#!/usr/bin/env bash
# Steady state under load: the agent with the shipped defaults (embedded
# config: every collector this host supports, drops sample_rate 100/s)
# plus remote_write to a local Prometheus (--web.enable-remote-write-receiver)
# and the event export ([export.bench], OTLP/HTTP logs of every event table
# to tests/tools/rw_fake_receiver.py on loopback), for DURATION seconds of
#   - ~100k UDP drops/s (drops_gen to a closed port in a private network
#     namespace: one NO_SOCKET drop each),
#   - 10 scrapes/s of /metrics.
# Every 30 s (INTERVAL) a row: VmRSS, VmHWM, CPU% of one core (user + system
# over the interval), open fds, threads, drops/s counted, remote_write
# samples sent, event rows exported. At the end: flat or not (VmRSS and fds over the second half:
# range and least-squares slope). Prints figures, asserts nothing.
# Needs root (BPF, netns), prometheus, a build with tests (drops_gen).
#
#   bench/steady_state.sh [DURATION seconds, default 600]
#   SYSOBS_BUILD=build RATE=100000 SCRAPES=10 INTERVAL=30 bench/steady_state.sh 600
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${SYSOBS_BUILD:-build}
SYSOBSD=${SYSOBSD:-$BUILD/sysobsd}
GEN=$BUILD/tests/drops_gen
DURATION=${1:-600}
RATE=${RATE:-100000}
SCRAPES=${SCRAPES:-10}
INTERVAL=${INTERVAL:-30}

skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (BPF, netns)"
for x in "$SYSOBSD" "$GEN"; do [ -x "$x" ] || skip "$x not built"; done
source bench/lib/prom_receiver.sh
NS=sysobs-bench-steady-$$
gen_pid=
scrape_pid=
recv_pid=
steady_cleanup() {
	[ -z "$gen_pid" ] || kill "$gen_pid" 2>/dev/null
	[ -z "$scrape_pid" ] || kill "$scrape_pid" 2>/dev/null
	[ -z "$recv_pid" ] || kill "$recv_pid" 2>/dev/null
	wait $gen_pid $scrape_pid $recv_pid 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	cleanup
}
trap steady_cleanup EXIT
ip netns add "$NS" || skip "cannot create a network namespace"
ip -n "$NS" link set lo up
# The database directory must be reachable by the user the agent becomes.
chmod 755 "$t"
prom_receiver_start
# The event export's receiver: answers 200 (then 204) to every request.
python3 tests/tools/rw_fake_receiver.py "$t/otlp.port" "$t/otlp.log" 200 >"$t/otlp.out" 2>&1 &
recv_pid=$!
for _ in $(seq 100); do [ -s "$t/otlp.port" ] && break; sleep 0.1; done
[ -s "$t/otlp.port" ] || { echo "OTLP receiver did not start"; cat "$t/otlp.out"; exit 1; }

cat >"$t/sysobsd.ini" <<INI
[http]
listen = 127.0.0.1:0
[storage]
path = $t/sysobs.db
[remote_write]
url = http://127.0.0.1:$pport/api/v1/write
[export.bench]
format = otlp
url = http://127.0.0.1:$(cat "$t/otlp.port")/v1/logs
INI
"$SYSOBSD" --config "$t/sysobsd.ini" --port-file "$t/port" --log-level warn 2>"$t/agent.log" &
pid=$!
for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/agent.log"; exit 1; }
url="http://127.0.0.1:$(cat "$t/port")/metrics"
sleep 2

metric() { curl -s "$url" | awk -v s="$1" '$1 == s { v = $2 } END { print v == "" ? 0 : v }'; }
drops_total() {
	curl -s "$url" | awk '/^sysobs_packet_drops_total\{/ { s += $NF } END { printf "%.0f", s }'
}
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -r "$RATE" -t "$DURATION" >/dev/null &
gen_pid=$!
(
	period=$(awk -v n="$SCRAPES" 'BEGIN { printf "%.3f", 1 / n }')
	while :; do
		curl -s -o /dev/null "$url"
		sleep "$period"
	done
) &
scrape_pid=$!

echo "kernel $(uname -r), $(nproc) CPUs; $DURATION s of ~$RATE drops/s, $SCRAPES scrapes/s," \
	"remote_write to Prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }'), event export (OTLP)"
printf '%6s %9s %9s %6s %5s %5s %10s %12s %10s %8s\n' t_s rss_mib hwm_mib cpu% fds thr drops/s rw_samples exp_rows exp_pend
t0=$(date +%s.%N)
k0=$(cpu_ticks)
d0=$(drops_total)
: >"$t/rows"
elapsed=0
while [ "$(awk -v e="$elapsed" -v d="$DURATION" 'BEGIN { print (e < d) }')" = 1 ]; do
	sleep "$INTERVAL"
	kill -0 "$pid" 2>/dev/null || { echo "sysobsd exited"; tail "$t/agent.log"; exit 1; }
	t1=$(date +%s.%N)
	k1=$(cpu_ticks)
	d1=$(drops_total)
	elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
	rss=$(status_kb VmRSS)
	row=$(awk -v e="$elapsed" -v rss="$rss" -v hwm="$(status_kb VmHWM)" \
		-v k="$((k1 - k0))" -v hz="$hz" -v iv="$INTERVAL" \
		-v fds="$(find /proc/"$pid"/fd -mindepth 1 -maxdepth 1 | wc -l)" \
		-v thr="$(status_kb Threads)" -v dd="$((d1 - d0))" \
		-v rw="$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}')" \
		-v ex="$(metric 'sysobs_export_rows_sent_total{destination="bench"}')" \
		-v ep="$(metric 'sysobs_export_pending_rows{destination="bench"}')" 'BEGIN {
		printf "%6d %9.1f %9.1f %6.1f %5d %5d %10.0f %12.0f %10.0f %8.0f\n", e, rss / 1024,
			hwm / 1024, 100 * k / hz / iv, fds, thr, dd / iv, rw, ex, ep
	}')
	echo "$row"
	echo "$row" >>"$t/rows"
	k0=$k1
	d0=$d1
done

# Flat or not: the second half's VmRSS and fds, range and slope.
awk -v dur="$DURATION" '
	$1 >= dur / 2 { n++; x[n] = $1; y[n] = $2; f[n] = $5 }
	END {
		if (n < 2) { print "too few rows for a verdict"; exit }
		lo = hi = y[1]; flo = fhi = f[1]
		for (i = 1; i <= n; i++) {
			sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i]
			if (y[i] < lo) lo = y[i]; if (y[i] > hi) hi = y[i]
			if (f[i] < flo) flo = f[i]; if (f[i] > fhi) fhi = f[i]
		}
		slope = (n * sxy - sx * sy) / (n * sxx - sx * sx) * 3600
		flat = hi - lo <= 1.0 && fhi - flo <= 2
		printf "second half (%d rows): VmRSS %.1f..%.1f MiB (slope %+.2f MiB/h), fds %d..%d: %s\n",
			n, lo, hi, slope, flo, fhi, flat ? "flat" : "NOT flat"
	}' "$t/rows"
