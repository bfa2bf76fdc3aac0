#!/usr/bin/env bash
# Events at fleet scale (docs/fleet.md, "Events at fleet scale"): AGENTS
# sysobsd agents on this machine, each in a network namespace and a UTS
# namespace of its own (hostname fleet-N: the default identity, gethostname(),
# is what tells their rows apart), each with its own database and its own
# drops flowing (drops_gen at RATE datagrams/s to a closed port inside its
# namespace: NO_SOCKET drops), all exporting their event rows to one
# ClickHouse ([export.ch], keys at their defaults) and pushing their metrics
# to one Prometheus ([remote_write]). The agents run with the shipped
# defaults otherwise, and as root ([agent] user = root: the simplest for a
# bench; integration.privsep covers the agent that drops root).
#
# The namespaces reach the receivers through one bridge in the root
# namespace, $BR at 10.250.0.1/16, and a veth pair each (agent N at
# 10.250.x.y/16); ClickHouse and Prometheus listen on 10.250.0.1 (and
# ClickHouse on 127.0.0.1 for its client), nothing on 0.0.0.0. The bridge,
# the veths, the namespaces, the processes and the scratch directory are
# removed at exit, failed or not.
#
# What the kernel does: skb:kfree_skb is host-wide, so every agent sees the
# drops of every namespace (labelled by netns) and samples them up to its
# [collector.drops] sample_rate (default 100/s); its rows are capped by that,
# whatever RATE is. Every agent's BPF program runs on every drop of the host.
#
# Agents start one after the other (each parses BTF and loads its BPF
# programs, ~1 s of CPU), the whole start bounded by START_TIMEOUT; an agent
# that does not come up, or memory running short (MemAvailable under
# MIN_AVAIL_MB), ends the start and the bench runs with the agents up so far,
# saying so. After WARM_S, over RUN_S: rows/s arriving in ClickHouse (counted
# by key), per agent, bytes per row on the wire, agent CPU per 10k rows
# (the exporter thread; the whole process), ClickHouse's and Prometheus's CPU,
# remote_write samples/s; then the linear extrapolation to HOSTS hosts.
# Usage: bench/export_fleet.sh [path/to/sysobsd]
#   (AGENTS, RUN_S, RATE, HOSTS, WARM_S, START_TIMEOUT, MIN_AVAIL_MB env)
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
GEN=${SYSOBS_BUILD:-$(dirname "$bin")}/tests/drops_gen
AGENTS=${AGENTS:-50}
RUN_S=${RUN_S:-60}
RATE=${RATE:-200}
HOSTS=${HOSTS:-10000}
WARM_S=${WARM_S:-20}
START_TIMEOUT=${START_TIMEOUT:-900}
MIN_AVAIL_MB=${MIN_AVAIL_MB:-512}
BR=sobfl-br
NSP=sobfl- # namespaces sobfl-N, root-side veths sobflN
GW=10.250.0.1

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespaces, veths, BPF)"; exit 0; }
for c in clickhouse-server clickhouse-client prometheus jq curl unshare nsenter ip bc; do
	command -v "$c" >/dev/null || { echo "SKIP: needs $c"; exit 0; }
done
[ -r /sys/kernel/btf/vmlinux ] || { echo "SKIP: kernel without BTF"; exit 0; }
[ -x "$bin" ] || { echo "no sysobsd at $bin" >&2; exit 1; }
[ -x "$GEN" ] || { echo "no traffic generator at $GEN (built with the tests)" >&2; exit 1; }
{ [ "$AGENTS" -ge 1 ] && [ "$AGENTS" -le 2000 ]; } || { echo "AGENTS: 1-2000" >&2; exit 1; }
if ip link show "$BR" >/dev/null 2>&1 || ip -4 -o addr show | grep -q ' 10\.250\.'; then
	echo "$BR or an address in 10.250.0.0/16 exists already (another run?)" >&2
	exit 1
fi

t=$(mktemp -d)
apids=() gpids=() up=0 ch_pid='' prom_pid=''
cleanup() {
	set +e
	for p in "${gpids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${apids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 100); do
		alive=0
		for p in "${apids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1 && break; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${apids[@]}" "${gpids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in $ch_pid $prom_pid; do kill "$p" 2>/dev/null; done
	for _ in $(seq 100); do # ClickHouse 18.16 may take long to stop: 10 s, then -9
		kill -0 "$ch_pid" 2>/dev/null || kill -0 "$prom_pid" 2>/dev/null || break
		sleep 0.1
	done
	for p in $ch_pid $prom_pid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for i in $(seq 1 "$AGENTS"); do ip netns del "$NSP$i" 2>/dev/null; done
	ip link del "$BR" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

addr() { echo "10.250.$(($1 / 200 + 1)).$(($1 % 200 + 10))"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
now() { date +%s.%N; }
port_free() { ! (exec 3<>"/dev/tcp/$GW/$1") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % 22000)) # below the ephemeral range (32768-)
		port_free "$p" && { echo "$p"; return 0; }
	done
	return 1
}

# ---- the bridge and the receivers ----
ip link add "$BR" type bridge
ip addr add "$GW/16" dev "$BR"
ip link set "$BR" up
ch_http=$(free_port) ch_tcp=$(free_port) pport=$(free_port)
mkdir -p "$t/ch/data" "$t/ch/tmp"
cat >"$t/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$t/ch/server.log</log><errorlog>$t/ch/err.log</errorlog><console>0</console></logger>
  <http_port>$ch_http</http_port><tcp_port>$ch_tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host><listen_host>$GW</listen_host>
  <path>$t/ch/data/</path><tmp_path>$t/ch/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
EOF
(cd "$t/ch" && exec clickhouse-server --config-file="$t/ch/config.xml") >"$t/ch/stdout" 2>&1 &
ch_pid=$!
echo "global: {}" >"$t/prom.yml"
prometheus --config.file="$t/prom.yml" --storage.tsdb.path="$t/prom" \
	--web.listen-address="$GW:$pport" --web.enable-remote-write-receiver >"$t/prom.log" 2>&1 &
prom_pid=$!
for _ in $(seq 300); do [ "$(curl -sf --max-time 2 "http://127.0.0.1:$ch_http/ping")" = "Ok." ] && break; sleep 0.2; done
# queries over HTTP: curl is much lighter than clickhouse-client on a busy box
chq() { curl -sS --max-time 60 "http://127.0.0.1:$ch_http/" --data-binary "$1"; }
for _ in $(seq 300); do [ "$(curl -sf --max-time 2 "http://127.0.0.1:$ch_http/ping")" = "Ok." ] && break; sleep 0.2; done
"$bin" --print-clickhouse-ddl | clickhouse-client --port "$ch_tcp" --multiquery
for _ in $(seq 150); do curl -sf --max-time 2 -o /dev/null "http://$GW:$pport/-/ready" && break; sleep 0.2; done
curl -sf --max-time 2 -o /dev/null "http://$GW:$pport/-/ready" || { echo "prometheus not ready: $(tail -3 "$t/prom.log")" >&2; exit 1; }
# the receivers' CPU with no agent yet (ClickHouse's background threads)
IDLE_S=${IDLE_S:-10}
ic0=$(awk '{ print $14 + $15 }' "/proc/$ch_pid/stat") ip0=$(awk '{ print $14 + $15 }' "/proc/$prom_pid/stat")
sleep "$IDLE_S"
ch_idle=$(echo "($(awk '{ print $14 + $15 }' "/proc/$ch_pid/stat") - $ic0) / $(getconf CLK_TCK) / $IDLE_S" | bc -l)
prom_idle=$(echo "($(awk '{ print $14 + $15 }' "/proc/$prom_pid/stat") - $ip0) / $(getconf CLK_TCK) / $IDLE_S" | bc -l)
echo "ClickHouse $(chq 'SELECT version()') on $GW:$ch_http, Prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }') on $GW:$pport"

# ---- the agents, one after the other ----
dport=$((40000 + RANDOM % 9000))
mem_avail() { awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo; }
mem0=$(mem_avail)
start0=$(now)
why="all started" failed=0 ags=()
for i in $(seq 1 "$AGENTS"); do
	ns=$NSP$i
	if [ "$(mem_avail)" -lt "$MIN_AVAIL_MB" ]; then why="MemAvailable under $MIN_AVAIL_MB MiB"; break; fi
	if [ "$(echo "$(now) - $start0 > $START_TIMEOUT" | bc)" = 1 ]; then why="START_TIMEOUT ${START_TIMEOUT}s reached"; break; fi
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip link add "sobfl$i" type veth peer name eth0 netns "$ns"
	ip link set "sobfl$i" master "$BR" up
	ip -n "$ns" addr add "$(addr "$i")/16" dev eth0
	ip -n "$ns" link set eth0 up
	mkdir "$t/a$i"
	cat >"$t/a$i/a.ini" <<-INI
		[agent]
		user = root
		[http]
		listen = 127.0.0.1:0
		[storage]
		path = $t/a$i/sysobs.db
		[remote_write]
		url = http://$GW:$pport/api/v1/write
		[export.ch]
		format = clickhouse
		url = http://$GW:$ch_http/
	INI
	ta=$(now)
	# nsenter and unshare exec (no --fork): $! is the agent itself
	nsenter --net="/run/netns/$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "fleet-$i" \
		"$bin" --config "$t/a$i/a.ini" --port-file "$t/a$i/port" --log-level warn \
		2>>"$t/a$i/agent.log" &
	apids+=($!)
	ok=0
	for _ in $(seq 300); do
		[ -s "$t/a$i/port" ] && { ok=1; break; }
		kill -0 "${apids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	if [ $ok = 0 ]; then # said, and the next one tried; 3 such: the start ends
		echo "agent $i did not start within 30 s: $(tail -5 "$t/a$i/agent.log" | tr '\n' ' ')"
		kill -9 "${apids[-1]}" 2>/dev/null || true
		unset 'apids[-1]'
		failed=$((failed + 1))
		if [ $failed = 3 ]; then why="3 agents did not start"; break; fi
		continue
	fi
	up=$((up + 1))
	ags+=("$i")
	dur=$(echo "$(now) - $ta" | bc)
	[ "$i" != 1 ] || first_s=$dur
	last_s=$dur
done
start_s=$(echo "$(now) - $start0" | bc)
[ "$up" -ge 1 ] || { echo "no agent started: $why" >&2; exit 1; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
rss=0
for p in "${apids[@]}"; do rss=$((rss + $(rss_kb "$p"))); done
printf "%d of %d agents up in %.0f s (%s; the first in %.1f s, the last in %.1f s); agents' RSS %.0f MiB (%.1f each), MemAvailable %d -> %d MiB\n" \
	"$up" "$AGENTS" "$start_s" "$why" "$first_s" "$last_s" "$(echo "$rss / 1024" | bc -l)" "$(echo "$rss / 1024 / $up" | bc -l)" "$mem0" "$(mem_avail)"
[ "$(cat "/proc/${apids[0]}/comm")" = sysobsd ] || { echo "pid ${apids[0]} is not the agent" >&2; exit 1; }

# ---- drops in every namespace ----
for i in "${ags[@]}"; do
	nsenter --net="/run/netns/$NSP$i" "$GEN" udp -d 127.0.0.1 -p "$dport" -r "$RATE" \
		-t "$((WARM_S + RUN_S + 900))" >/dev/null 2>&1 & # until the exit: killed then
	gpids+=($!)
done
sleep "$WARM_S"

# ---- measure ----
# agent_snap N: each agent's /proc CPU ticks and /metrics read together (in
# parallel over the agents), then summed: ratios per row stay exact however
# long the scrape of 50 agents takes on a busy box.
agent_snap() {
	local i j ps=()
	for j in "${!ags[@]}"; do
		i=${ags[j]}
		(
			awk '{ print "proc_ticks", $14 + $15 }' "/proc/${apids[j]}/stat"
			nsenter --net="/run/netns/$NSP$i" curl -s --max-time 30 \
				"http://127.0.0.1:$(cat "$t/a$i/port")/metrics"
		) >"$t/m$1.$i" &
		ps+=($!)
	done
	wait "${ps[@]}"
	for i in "${ags[@]}"; do cat "$t/m$1.$i"; done | awk '
		function is(n) { return $1 == n || index($1, n "{") == 1 }
		$1 == "proc_ticks" { pt += $2 }
		$1 == "sysobs_export_rows_sent_total{destination=\"ch\"}" { r += $2 }
		$1 == "sysobs_export_bytes_sent_total{destination=\"ch\"}" { b += $2 }
		$1 == "sysobs_export_cpu_seconds_total{destination=\"ch\"}" { c += $2 }
		$1 == "sysobs_export_rows_retried_total{destination=\"ch\"}" { rt += $2 }
		$1 == "sysobs_export_pending_rows{destination=\"ch\"}" { p += $2 }
		$1 == "sysobs_export_lag_seconds{destination=\"ch\"}" { if ($2 > lag) lag = $2 }
		$1 == "sysobs_remote_write_samples_sent_total{destination=\"remote_write\"}" { s += $2 }
		$1 == "sysobs_remote_write_bytes_sent_total{destination=\"remote_write\"}" { sb += $2 }
		is("sysobs_packet_drops_total") { d += $2 }
		is("sysobs_drop_samples_total") { ds += $2 }
		is("sysobs_drop_samples_throttled_total") { dt += $2 }
		is("sysobs_drop_samples_lost_total") { dl += $2 }
		END { printf "%d %d %d %.6f %d %d %.1f %d %d %d %d %d %d\n", pt, r, b, c, rt, p, lag, s, sb, d, ds, dt, dl }'
}
recv_cpu() { # ClickHouse's and Prometheus's ticks, host busy and total ticks
	echo "$(cpu_ticks "$ch_pid") $(cpu_ticks "$prom_pid") $(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)"
}
ch_events() { chq "SELECT event, value FROM system.events WHERE event IN ('InsertQuery', 'InsertedRows', 'InsertedBytes', 'FailedInsertQuery')"; }
ev() { awk -v e="$1" '$1 == e { v = $2 } END { print v + 0 }' "$2"; }
prom_appended() {
	curl -s --max-time 10 "http://$GW:$pport/metrics" | awk '$1 == "prometheus_tsdb_head_samples_appended_total" || $1 ~ /^prometheus_tsdb_head_samples_appended_total\{/ { s += $2 } END { printf "%d\n", s }'
}

# The window [T0, T1] is the receivers' /proc reads; the rows of it are
# counted afterwards, by their own timestamps (ts) and by key, once the
# agents caught up: no scrape's duration enters the rows/s.
T0=$(now)
read -r pc0 pp0 hb0 ht0 <<<"$(recv_cpu)"
ch_events >"$t/ev0"
pr0=$(prom_appended)
ta0=$(now)
read -r pa0 r0 b0 c0 rt0 _ _ s0 sb0 d0 ds0 dt0 dl0 <<<"$(agent_snap 0)"
ta0=$(echo "($ta0 + $(now)) / 2" | bc -l)
sleep "$(echo "$RUN_S - ($(now) - $T0)" | bc -l | awk '{ print ($1 > 1 ? $1 : 1) }')"
T1=$(now)
read -r pc1 pp1 hb1 ht1 <<<"$(recv_cpu)"
ch_events >"$t/ev1"
pr1=$(prom_appended)
ta1=$(now)
read -r pa1 r1 b1 c1 rt1 pend lag s1 sb1 d1 ds1 dt1 dl1 <<<"$(agent_snap 1)"
ta1=$(echo "($ta1 + $(now)) / 2" | bc -l)
el=$(echo "$T1 - $T0" | bc -l)
ela=$(echo "$ta1 - $ta0" | bc -l)
fails=$(($(ev FailedInsertQuery "$t/ev1") - $(ev FailedInsertQuery "$t/ev0")))
# rows of the window: until every agent has sent its rows older than T1 (up to 60 s)
caught=0
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ]; do
	n=0
	for i in "${ags[@]}"; do # its oldest unsent row is younger than T1
		nsenter --net="/run/netns/$NSP$i" curl -s --max-time 10 "http://127.0.0.1:$(cat "$t/a$i/port")/metrics" |
			awk -v max="$(echo "$(now) - $T1 - 1" | bc -l)" '$1 == "sysobs_export_lag_seconds{destination=\"ch\"}" && $2 < max { ok = 1 } END { exit !ok }' && n=$((n + 1))
	done
	[ "$n" = "$up" ] && { caught=1; sleep 3; break; } # + a send_interval or two
	sleep 1
done
w="ts >= toInt64($T0 * 1e9) AND ts < toInt64($T1 * 1e9)"
keys=$(chq "SELECT sum(n) FROM ($(chq "SELECT name FROM system.tables WHERE database = 'sysobs'" |
	sed "s/.*/SELECT uniqExact(host, db_id, id) AS n FROM sysobs.& WHERE $w/" | paste -sd'|' | sed 's/|/ UNION ALL /g'))")
read -r nhosts hmin hmed hmax <<<"$(chq "SELECT uniqExact(db_id, id) AS n FROM sysobs.drop_samples WHERE $w GROUP BY host ORDER BY n" |
	awk '{ v[NR] = $1 } END { printf "%d %d %d %d", NR, v[1], v[int((NR + 1) / 2)], v[NR] }')"
read -r raw dkeys <<<"$(chq "SELECT count(), uniqExact(host, db_id, id) FROM sysobs.drop_samples WHERE $w")"
netns_seen=$(chq "SELECT uniqExact(netns) FROM sysobs.drop_samples WHERE host = 'fleet-${ags[0]}' AND dport = $dport")
parts=$(chq "SELECT count() FROM system.parts WHERE database = 'sysobs' AND active")
rss=0
for p in "${apids[@]}"; do rss=$((rss + $(rss_kb "$p"))); done
ncpu=$(nproc)
chlast=$(tail -n 1 "$t/ch/err.log" 2>/dev/null | cut -c1-200)
awk -v up="$up" -v run="$el" -v elch="$el" -v elm="$ela" -v elp="$el" -v caught="$caught" -v raw="$raw" -v dkeys="$dkeys" -v rate="$RATE" -v hosts="$HOSTS" -v tck="$tck" -v ncpu="$ncpu" \
	-v keys="$keys" -v rows="$((r1 - r0))" -v bytes="$((b1 - b0))" -v ecpu="$(echo "$c1 - $c0" | bc -l)" \
	-v acpu="$((pa1 - pa0))" -v chcpu="$((pc1 - pc0))" -v prcpu="$((pp1 - pp0))" \
	-v hbusy="$((hb1 - hb0))" -v htot="$((ht1 - ht0))" -v retried="$((rt1 - rt0))" \
	-v pend="$pend" -v lag="$lag" -v rws="$((s1 - s0))" -v rwb="$((sb1 - sb0))" -v app="$((pr1 - pr0))" \
	-v drops="$((d1 - d0))" -v dsamp="$((ds1 - ds0))" -v dthr="$((dt1 - dt0))" -v dlost="$((dl1 - dl0))" \
	-v ins="$(($(ev InsertQuery "$t/ev1") - $(ev InsertQuery "$t/ev0")))" \
	-v insrows="$(($(ev InsertedRows "$t/ev1") - $(ev InsertedRows "$t/ev0")))" \
	-v insbytes="$(($(ev InsertedBytes "$t/ev1") - $(ev InsertedBytes "$t/ev0")))" -v fails="$fails" -v chlast="$chlast" \
	-v nhosts="$nhosts" -v hmin="$hmin" -v hmed="$hmed" -v hmax="$hmax" -v netns="$netns_seen" \
	-v parts="$parts" -v rss="$rss" -v chidle="$ch_idle" -v pridle="$prom_idle" 'BEGIN {
	printf "%d agents (own netns + UTS, hostname fleet-N), %d drops/s each into a closed port, default config; %.0f s measured after a warm-up\n", up, rate, run
	printf "  host CPU busy                     %.0f%% of %d cores (agents, receivers, traffic, and whatever else runs here)\n", 100 * hbusy / htot, ncpu
	printf "  agents RSS                        %.0f MiB in all, %.1f MiB each\n", rss / 1024, rss / 1024 / up
	printf "  drops each agent saw (host-wide)  %.0f/s (%d x %d sent); samples %.1f/s, throttled by sample_rate %.0f/s, lost (ring full) %.1f/s\n", drops / up / elm, up, rate, dsamp / up / elm, dthr / up / elm, dlost / up / elm
	printf "  namespaces in one agent'"'"'s rows   %d (kfree_skb is host-wide: each agent samples every namespace'"'"'s drops, up to sample_rate = 100/s)\n", netns
	printf "  rows/s into ClickHouse (by key)   %.0f, all tables, rows with ts in the window%s; drop_samples %.0f/s (%d raw rows: %d duplicates)\n", keys / elch, caught ? "" : " (agents NOT caught up: an undercount)", dkeys / elch, raw, raw - dkeys
	printf "    per agent (host)                %d hosts, drop_samples rows/s min/median/max %.1f/%.1f/%.1f\n", nhosts, hmin / elch, hmed / elch, hmax / elch
	printf "  rows sent (agents count)          %.0f/s, retried %.1f/s, pending at the end %d, oldest unsent %.1f s\n", rows / elm, retried / elm, pend, lag
	printf "  bytes per row on the wire         %.1f (gzip'"'"'d JSONEachRow bodies, headers not counted); ClickHouse reads %.0f B/row uncompressed\n", bytes / rows, insbytes / insrows
	printf "  INSERTs/s into ClickHouse         %.1f (%.0f rows each), %.2f/s failed; %d active parts at the end\n", ins / elch, insrows / ins, fails / elch, parts
	if (fails > 0) printf "    ClickHouse'"'"'s last error: %s\n", chlast
	printf "  exporter thread CPU               %.0f ms per 10k rows\n", ecpu * 1e3 * 1e4 / rows
	printf "  whole agent CPU                   %.0f ms per 10k rows (%.1f%% of a core per agent: collectors, snapshots, remote_write, HTTP included)\n", acpu / tck * 1e3 * 1e4 / rows, 100 * acpu / tck / elm / up
	chc = chcpu / tck / run; prc = prcpu / tck / run; kr = keys / elch; sr = rws / elm
	printf "  ClickHouse CPU                    %.3f cores (idle before the agents: %.3f); above idle %.0f ms per 10k rows, %.1f ms per INSERT\n", chc, chidle, (chc - chidle) * 1e3 * 1e4 / kr, (chc - chidle) * 1e3 * elch / ins
	printf "  remote_write                      %.0f samples/s sent (%.1f per agent), %.1f B/sample; Prometheus appended %.0f/s\n", sr, sr / up, rwb / rws, app / elp
	printf "  Prometheus CPU                    %.3f cores (idle: %.3f); above idle %.0f ms per 100k samples\n", prc, pridle, (prc - pridle) * 1e3 * 1e5 / sr
	r = kr / up; s = sr / up
	printf "%d hosts, each like these (linear extrapolation of the figures above):\n", hosts
	printf "  rows/s into ClickHouse            %.0f (%d x %.1f)\n", hosts * r, hosts, r
	printf "  bytes on the wire                 %.2f MB/s (%.1f Mbit/s, %.0f GB/day)\n", hosts * r * bytes / rows / 1e6, hosts * r * bytes / rows * 8 / 1e6, hosts * r * bytes / rows * 86400 / 1e9
	printf "  INSERTs/s                         %.0f (%.0f rows each; ClickHouse advises about one a second per table: more need a Buffer table or a batching tier in front)\n", hosts * ins / elch / up, insrows / ins
	printf "  ClickHouse CPU                    %.0f cores (CPU above idle per row times the rows: assumes the same rows per INSERT)\n", hosts * r * (chc - chidle) / kr
	printf "  agent CPU for the export          %.1f cores across the fleet (%.1f ms per host per second)\n", hosts * r * ecpu / rows, r * ecpu / rows * 1e3
	printf "  remote_write samples/s            %.0f, Prometheus CPU %.1f cores (above idle, per sample)\n", hosts * s, hosts * s * (prc - pridle) / sr
}'
