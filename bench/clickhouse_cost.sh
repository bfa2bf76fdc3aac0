#!/usr/bin/env bash
# ClickHouse's CPU per exported row at several [export.NAME] settings
# (docs/fleet.md, "Events at fleet scale": the shipped send_interval and
# batch_rows are chosen from this table). One clickhouse-server (Debian's,
# on free loopback ports, the DDL of --print-clickhouse-ddl loaded), AGENTS
# sysobsd agents on this host (each in a UTS namespace of its own, host name
# chcost-N, its own database; only the drops collector), all sampling the
# same NO_SOCKET drops (drops_gen at RATE datagrams/s to a closed loopback
# port) at a fixed [collector.drops] sample_rate, and exporting them to the
# one ClickHouse ([export.ch] format clickhouse, gzip as shipped).
#
# For each SETTINGS entry (send_interval/batch_rows): the agents start
# afresh, run WARM_S, then over RUN_S: rows arriving in ClickHouse
# (count() of sysobs.drop_samples), INSERTs (system.events InsertQuery),
# and ClickHouse's CPU (utime + stime of its process, /proc/PID/stat),
# less its idle CPU (measured first, IDLE_S with no agent). The table:
# CPU % of a core, per agent, per 1,000 rows, and the cores 10,000 hosts at
# that setting would take (linear: per-agent CPU x HOSTS).
# Usage: bench/clickhouse_cost.sh [path/to/sysobsd]
#   (AGENTS=2 RUN_S=90 WARM_S=35 IDLE_S=30 RATE=1000 SAMPLE_RATE=100 HOSTS=10000
#    SETTINGS="1s/1000 10s/5000 30s/20000" env)
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
GEN=${SYSOBS_BUILD:-$(dirname "$bin")}/tests/drops_gen
AGENTS=${AGENTS:-2}
RUN_S=${RUN_S:-90}
WARM_S=${WARM_S:-35}
IDLE_S=${IDLE_S:-30}
RATE=${RATE:-1000}
SAMPLE_RATE=${SAMPLE_RATE:-100}
HOSTS=${HOSTS:-10000}
SETTINGS=${SETTINGS:-"1s/1000 10s/5000 30s/20000"}

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (BPF)"; exit 0; }
for c in clickhouse-server clickhouse-client curl unshare bc; do
	command -v "$c" >/dev/null || { echo "SKIP: needs $c"; exit 0; }
done
[ -x "$bin" ] || { echo "no sysobsd at $bin" >&2; exit 1; }
[ -x "$GEN" ] || { echo "no traffic generator at $GEN (built with the tests)" >&2; exit 1; }

t=$(mktemp -d)
apids=() ch_pid='' gen_pid=''
stop_agents() {
	for p in "${apids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${apids[@]}"; do wait "$p" 2>/dev/null || true; done
	apids=()
}
cleanup() {
	set +e
	[ -z "$gen_pid" ] || kill "$gen_pid" 2>/dev/null
	stop_agents
	[ -z "$ch_pid" ] || { kill "$ch_pid"; sleep 2; kill -9 "$ch_pid"; } 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % 22000))
		port_free "$p" && { echo "$p"; return 0; }
	done
	return 1
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)

ch_http=$(free_port) ch_tcp=$(free_port)
mkdir -p "$t/ch/data" "$t/ch/tmp"
cat >"$t/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$t/ch/server.log</log><errorlog>$t/ch/err.log</errorlog><console>0</console></logger>
  <http_port>$ch_http</http_port><tcp_port>$ch_tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$t/ch/data/</path><tmp_path>$t/ch/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
EOF
(cd "$t/ch" && exec clickhouse-server --config-file="$t/ch/config.xml") >"$t/ch/stdout" 2>&1 &
ch_pid=$!
chq() { curl -sS --max-time 60 "http://127.0.0.1:$ch_http/" --data-binary "$1"; }
for _ in $(seq 300); do [ "$(curl -sf --max-time 2 "http://127.0.0.1:$ch_http/ping")" = "Ok." ] && break; sleep 0.2; done
"$bin" --print-clickhouse-ddl | clickhouse-client --port "$ch_tcp" --multiquery
c0=$(ticks "$ch_pid")
sleep "$IDLE_S"
idle=$(echo "($(ticks "$ch_pid") - $c0) / $tck / $IDLE_S" | bc -l)

dport=$((40000 + RANDOM % 9000))
"$GEN" udp -d 127.0.0.1 -p "$dport" -r "$RATE" -t 100000 -n 1000000000 >/dev/null 2>&1 &
gen_pid=$!

start_agents() { # SEND_INTERVAL BATCH_ROWS RUN
	for i in $(seq 1 "$AGENTS"); do
		mkdir -p "$t/$3/a$i"
		cat >"$t/$3/a$i/a.ini" <<-INI
			[agent]
			user = root
			[http]
			listen = 127.0.0.1:0
			[storage]
			path = $t/$3/a$i/sysobs.db
			[collector.mptcp]
			enabled = false
			[collector.ifs]
			enabled = false
			[collector.cachefiles]
			enabled = false
			[collector.drops]
			sample_rate = $SAMPLE_RATE
			[export.ch]
			format = clickhouse
			url = http://127.0.0.1:$ch_http/
			tables = drop_samples
			send_interval = $1
			batch_rows = $2
		INI
		unshare --uts sh -c 'hostname "$0" && exec "$@"' "chcost-$3-$i" \
			"$bin" --config "$t/$3/a$i/a.ini" --port-file "$t/$3/a$i/port" --log-level warn \
			2>>"$t/$3/a$i/agent.log" &
		apids+=($!)
	done
	for i in $(seq 1 "$AGENTS"); do
		for _ in $(seq 600); do [ -s "$t/$3/a$i/port" ] && break; sleep 0.1; done
		[ -s "$t/$3/a$i/port" ] || { echo "agent $i did not start: $(tail -3 "$t/$3/a$i/agent.log")" >&2; exit 1; }
	done
}
# INSERTs ClickHouse ran (its own profile event counter)
inserts() { chq "SELECT sum(value) FROM system.events WHERE event = 'InsertQuery'"; }

echo "ClickHouse $(chq 'SELECT version()'), $AGENTS agents, drops at $RATE/s sampled at $SAMPLE_RATE/s per agent, idle ClickHouse $(printf %.2f "$(echo "$idle * 100" | bc -l)") % of a core"
printf '%-14s %8s %10s %12s %14s %16s %18s\n' "send/batch" "rows/s" "INSERTs/s" "CH % core" "CH %/agent" "CH ms/1k rows" "cores @ $HOSTS hosts"
run=0
for s in $SETTINGS; do
	run=$((run + 1))
	start_agents "${s%/*}" "${s#*/}" "r$run"
	sleep "$WARM_S"
	r0=$(chq 'SELECT count() FROM sysobs.drop_samples') q0=$(inserts) c0=$(ticks "$ch_pid")
	sleep "$RUN_S"
	r1=$(chq 'SELECT count() FROM sysobs.drop_samples') q1=$(inserts) c1=$(ticks "$ch_pid")
	stop_agents
	cpu=$(echo "($c1 - $c0) / $tck / $RUN_S - $idle" | bc -l)
	rows=$(echo "($r1 - $r0) / $RUN_S" | bc -l)
	per_k=nan
	[ "$(echo "$rows > 0" | bc)" = 0 ] || per_k=$(echo "$cpu * 1000000 / $rows" | bc -l)
	printf '%-14s %8.1f %10.2f %12.2f %14.2f %16.2f %18.0f\n' "$s" "$rows" \
		"$(echo "($q1 - $q0) / $RUN_S" | bc -l)" "$(echo "$cpu * 100" | bc -l)" \
		"$(echo "$cpu * 100 / $AGENTS" | bc -l)" "$per_k" "$(echo "$cpu / $AGENTS * $HOSTS" | bc -l)"
	sleep 5 # ClickHouse settles (merges of the last parts) before the next
done
