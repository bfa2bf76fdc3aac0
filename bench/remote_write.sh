#!/usr/bin/env bash
# remote_write to a local Prometheus (--web.enable-remote-write-receiver):
# the catch-up after an outage, measured on a backlog of metric history
# written straight into the database (SERIES series x POINTS samples, the
# newest POINTS seconds, as a long outage leaves it), for a few batch sizes.
# Prints per batch size: samples/s sent, the sender thread's CPU time per
# 100k samples (getrusage(RUSAGE_THREAD), sysobs_remote_write_cpu_seconds_total),
# bytes per sample on the wire, and the agent's peak RSS.
# Usage: bench/remote_write.sh [path/to/sysobsd]   (SERIES, POINTS, BATCHES env)
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
SERIES=${SERIES:-1000}
POINTS=${POINTS:-300}
BATCHES=${BATCHES:-"500 2000 10000"}
source "$(dirname "$0")/lib/prom_receiver.sh"
prom_receiver_start

metric() {
	curl -s "http://127.0.0.1:$(cat "$t/port")/metrics" | awk -v s="$1" '$1 == s { print $2 }'
}
start() {
	rm -f "$t/port"
	"$bin" --config "$t/a.ini" --port-file "$t/port" --log-level warn 2>>"$t/agent.log" &
	pid=$!
	for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
}
stop() {
	kill "$pid"
	wait "$pid" || true
	pid=
}

total=$((SERIES * POINTS))
echo "backlog: $SERIES series x $POINTS samples = $total samples (an outage of" \
	"$((POINTS * 15 / 60)) min at a 15 s snapshot interval for $SERIES series)"
printf '%-8s %12s %14s %14s %12s %12s\n' batch samples/s "cpu_ms/100k" bytes/sample \
	"elapsed_s" "peak_rss_MiB"
run=0
for batch in $BATCHES; do
	run=$((run + 1))
	rm -f "$t/sysobs.db"*
	# user = root: the scratch directory is root's (as in remote_write_fleet.sh)
	cat >"$t/a.ini" <<INI
[agent]
user = root
[http]
listen = 127.0.0.1:0
[storage]
path = $t/sysobs.db
snapshot_interval = 0
[remote_write]
url = http://127.0.0.1:$pport/api/v1/write
batch_samples = $batch
external_labels = bench_run=r$run
max_age = 1d
INI
	# The schema comes from the agent; the backlog from SQL. The first
	# start has url set too, so stop it before it sends anything.
	sed 's/^url = .*/url =/' "$t/a.ini" >"$t/init.ini"
	rm -f "$t/port"
	"$bin" --config "$t/init.ini" --port-file "$t/port" --log-level warn 2>>"$t/agent.log" &
	pid=$!
	for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
	stop
	now_ns=$(($(date +%s) * 1000000000))
	sqlite3 "$t/sysobs.db" <<SQL
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $SERIES)
INSERT INTO metric_series(name, labels)
SELECT 'bench_rw_value', '{idx="' || i || '",kind="bench"}' FROM s;
WITH RECURSIVE p(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM p WHERE k < $POINTS - 1)
INSERT INTO metric_samples(series_id, ts, value)
SELECT m.id, $now_ns - ($POINTS - p.k) * 1000000000, p.k * 1.5 + m.id
FROM p, metric_series m WHERE m.name = 'bench_rw_value' ORDER BY p.k, m.id;
SQL
	start
	peak=0
	t0=
	while :; do
		sent=$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}')
		r=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
		[ "$r" -le "$peak" ] || peak=$r
		# The clock starts at the first accepted batch (not at start-up).
		if [ -z "$t0" ] && [ "${sent:-0}" -gt 0 ]; then
			t0=$(date +%s.%N)
			s0=$sent
		fi
		[ "${sent:-0}" -lt "$total" ] || break
		sleep 0.02
	done
	t1=$(date +%s.%N)
	sleep 1.2 # the cpu counter is published after the turn
	cpu=$(metric 'sysobs_remote_write_cpu_seconds_total{destination="remote_write"}')
	bytes=$(metric 'sysobs_remote_write_bytes_sent_total{destination="remote_write"}')
	sent=$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}')
	failed=$(metric 'sysobs_remote_write_samples_failed_total{destination="remote_write"}')
	stop
	[ "${failed:-0}" = 0 ] || echo "warning: $failed samples refused by Prometheus"
	el=$(echo "$t1 - $t0" | bc -l)
	printf '%-8s %12.0f %14.1f %14.2f %12.2f %12.1f\n' "$batch" \
		"$(echo "($sent - $s0) / $el" | bc -l)" "$(echo "$cpu * 1000 * 100000 / $sent" | bc -l)" \
		"$(echo "$bytes / $sent" | bc -l)" "$el" "$(echo "$peak / 1024" | bc -l)"
done
got=$(curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode \
	'query=count_over_time(bench_rw_value{idx="1",bench_run="r1"}[1h])' |
	sed -n 's/.*"value":\[[^,]*,"\([0-9]*\)".*/\1/p')
echo "Prometheus holds ${got:-?} samples of series idx=1 of run 1 (expected $POINTS)"
