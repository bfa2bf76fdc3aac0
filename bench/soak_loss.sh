#!/usr/bin/env bash
# Soak: nothing lost without a count (issue 31, "Done when"). One agent, its
# database on a tmpfs of its own, drops flowing (drops_gen to a closed port,
# sampled up to 500/s) and self samples every 200 ms, exporting every row to
# two destinations: [export.ch] a real ClickHouse (Debian's 18.16, the
# shipped DDL) and [export.ot] an OTLP/HTTP logs receiver
# (tests/tools/rw_fake_receiver.py). Over MINUTES (default 12), in the
# middle, as fractions of the run:
#   20-30 %  receiver outage: ClickHouse stopped, the OTLP receiver killed;
#            both come back on the same ports;
#   40-50 %  full disk: the tmpfs filled to the last 64 KiB, then freed;
#   60 %     config change: the agent restarted with [export.ch] tables =
#            drop_samples (self_samples taken out);
#   75 %     and again with both tables (the skipped self rows are sent).
# At the end the load stops, both destinations catch up, and per destination
# it prints rows written (event rows committed: the highest id, one sequence
# over all tables, minus ids of rows refused at insert), rows sent (the
# agent's counters summed over its runs: at least once, so a batch retried
# after a failure counts again), received (ClickHouse: the distinct ids it
# holds; the OTLP receiver's bodies are not decoded, its sent count stands
# in) and rows counted lost by reason; received + lost = written is the
# claim. Rows the full disk kept out of the database never got an id: they
# are counted apart (sysobs_events_dropped_total), and printed.
# Figures only: not in the test suite (a bench, docs/DESIGN.md "bench/").
#
# Usage: bench/soak_loss.sh [--minutes N] [BUILD_DIR]   (default ./build)
set -euo pipefail
MINUTES=12
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) MINUTES=$2; shift 2 ;;
	*) SYSOBS_BUILD=$1; shift ;;
	esac
done
SYSOBS_SRC=$(cd "$(dirname "$0")/.." && pwd)
SYSOBS_BUILD=${SYSOBS_BUILD:-$SYSOBS_SRC/build}
SYSOBSD=${SYSOBSD:-$SYSOBS_BUILD/sysobsd}
export SYSOBS_SRC SYSOBS_BUILD SYSOBSD
# the integration tests' helpers: the agent, ClickHouse, metrics, cleanup
source "$SYSOBS_SRC/tests/integration/lib.sh"
set +e
need_root
need_clickhouse
need_cmd sqlite3
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF"
GEN=$SYSOBS_BUILD/tests/drops_gen
[ -x "$GEN" ] || fail "no traffic generator at $GEN (built with the tests)"
TOTAL=$((MINUTES * 60))
START=$SECONDS
DPORT=$((40000 + RANDOM % 9000))
at() { # PERCENT: sleeps until that point of the run
	local t=$((START + TOTAL * $1 / 100 - SECONDS))
	[ "$t" -le 0 ] || sleep "$t"
	echo "$(date +%T) $((100 * (SECONDS - START) / TOTAL)) %: ${2:-}"
}

mkdir -p "$T/db"
mount -t tmpfs -o size=96m "soak-loss-$$" "$T/db" || fail "cannot mount a tmpfs"
on_exit "umount -l '$T/db'"
db=$T/db/sysobs.db

start_clickhouse
"$SYSOBSD" --print-clickhouse-ddl | clickhouse-client --port "$CH_TCP" --multiquery ||
	fail "the DDL did not load"
OT_PORT=$(free_port) || fail "no free port"
otlp_up() {
	python3 "$SYSOBS_SRC/tests/tools/rw_fake_receiver.py" --port "$OT_PORT" "$T/ot.port" \
		"$T/ot.log" >>"$T/ot.out" 2>&1 &
	OT_PID=$!
	on_exit "kill $OT_PID 2>/dev/null"
	wait_for 10 test -s "$T/ot.port" || fail "the OTLP receiver did not start"
}
otlp_up

config() { # CH_TABLES
	write_base_config "storage.path=$db" storage.max_size=64M storage.snapshot_interval=1h \
		collector.self.interval=200ms collector.mptcp.enabled=false \
		collector.cachefiles.enabled=false collector.ifs.enabled=false \
		collector.drops.sample_rate=500 collector.drops.sample_burst=500 \
		export.ch.format=clickhouse "export.ch.url=http://127.0.0.1:$CH_HTTP/" \
		"export.ch.tables=$1" export.ch.min_backoff=100ms export.ch.max_backoff=2s \
		export.ch.send_interval=1s export.ot.send_interval=1s \
		export.ot.format=otlp "export.ot.url=http://127.0.0.1:$OT_PORT/v1/logs" \
		export.ot.tables=self_samples,drop_samples export.ot.min_backoff=100ms \
		export.ot.max_backoff=2s
}
load_on() {
	(while :; do "$GEN" udp -d 127.0.0.1 -p "$DPORT" -n 300 >/dev/null; sleep 1; done) &
	LOAD=$!
	on_exit "kill $LOAD 2>/dev/null"
}
load_off() { kill "$LOAD" 2>/dev/null; wait "$LOAD" 2>/dev/null; }

RUN=0
# caught_up: no row pending for either destination, no backfill left
caught_up() {
	[ "$(metric 'sysobs_export_pending_rows{destination="ch"}')" = 0 ] &&
		[ "$(metric 'sysobs_export_pending_rows{destination="ot"}')" = 0 ] &&
		! sqlite3 "file:$db?mode=ro" "SELECT key FROM store_meta WHERE key LIKE '%/backfill.%'" | grep -q .
}
# end_run: the load stopped and both destinations caught up, a write lock
# is taken on the database so that no row is committed any more (drops of
# the machine's other traffic keep coming), the counters of this run are
# read once they are published, and the agent stops under the lock (rows
# still queued are left unwritten, and the stop says how many)
end_run() {
	local try lock
	for try in 1 2 3 4 5; do
		wait_for 300 caught_up || echo "WARN: run $RUN: the destinations did not catch up"
		rm -f "$T/lock.fifo" "$T/lock.out"
		mkfifo "$T/lock.fifo"
		sqlite3 "$db" <"$T/lock.fifo" >"$T/lock.out" 2>&1 &
		lock=$!
		exec 7>"$T/lock.fifo"
		printf '.timeout 10000\nBEGIN IMMEDIATE;\nSELECT %s;\n' "'locked'" >&7
		wait_for 15 grep -q locked "$T/lock.out" || fail "no write lock: $(cat "$T/lock.out")"
		# rows committed just before the lock are sent; the counters are
		# published every second
		sleep 1.5
		wait_for 6 caught_up && { sleep 1.5 && break; }
		[ "$try" -lt 5 ] || { echo "WARN: run $((RUN + 1)): rows pending under the lock"; break; }
		echo "COMMIT;" >&7
		exec 7>&-
		wait "$lock"
	done
	RUN=$((RUN + 1))
	in_api_netns curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
		grep -E '^sysobs_(export_rows_(sent|dropped)_total|events_dropped_total|storage_errors_total|events_written_total)' \
			>"$T/counters.$RUN"
	stop_agent
	echo "COMMIT;" >&7
	exec 7>&-
	wait "$lock"
}

config self_samples,drop_samples
start_agent
load_on
at 20 "receiver outage: ClickHouse stopped, the OTLP receiver killed"
stop_clickhouse
kill "$OT_PID"
at 30 "receivers back"
start_clickhouse
rm -f "$T/ot.port"
otlp_up
at 40 "full disk: the tmpfs filled"
avail=$(($(stat -f -c '%a * %S' "$T/db")))
fallocate -l $((avail - 65536)) "$T/db/filler" || dd if=/dev/zero of="$T/db/filler" bs=64k 2>/dev/null
df -h "$T/db" | tail -1
at 50 "disk freed"
rm -f "$T/db/filler"
at 60 "config change: [export.ch] tables = drop_samples"
load_off
end_run
config drop_samples
start_agent
load_on
at 75 "config change: [export.ch] tables = self_samples, drop_samples again"
load_off
end_run
config self_samples,drop_samples
start_agent
load_on
at 100 "load off; waiting for the destinations to catch up"
load_off
end_run

# Rows written: ids are given out in one sequence, in commit order; the ids
# of rows refused at insert are counted by the agent. (Rows left in the
# queue at a stop have no id yet: the 12-minute run's 445 left no gap, its
# ClickHouse held every id up to the highest.)
maxid=$(sqlite3 "$db" "SELECT max(m) FROM (SELECT coalesce(max(id), 0) AS m FROM self_samples
	UNION ALL SELECT coalesce(max(id), 0) FROM drop_samples
	UNION ALL SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM store_meta WHERE key = 'id_floor')")
unwritten=$(cat "$T"/counters.* | awk '$1 ~ /^sysobs_events_dropped_total\{collector="",reason="insert_error"\}/ { s += $2 } END { print s + 0 }')
lost_close=$(grep -o "closing with [0-9]* rows not written" "$T/agent.log" | awk '{ s += $3 } END { print s + 0 }')
written=$((maxid - unwritten))
sum() { cat "$T"/counters.* | awk -v k="$1" 'index($1, k) == 1 { s += $2 } END { printf "%d", s }'; }
ch_rx=$(chq "SELECT uniqExact(id) FROM (SELECT id FROM sysobs.self_samples UNION ALL SELECT id FROM sysobs.drop_samples)")
echo
echo "soak: $MINUTES min, $RUN agent runs; event rows written $written (highest id $maxid, $unwritten refused at insert; $lost_close rows left in the queue at a stop, never written)"
printf '%-6s %9s %9s %9s %8s %8s %8s %8s %8s %10s %5s\n' dest written sent received refused \
	rejected too_old deleted skipped recv+lost diff
for d in ch ot; do
	sent=$(sum "sysobs_export_rows_sent_total{destination=\"$d\"")
	lost=0 cols=()
	for r in refused rejected too_old deleted skipped; do
		n=$(sum "sysobs_export_rows_dropped_total{destination=\"$d\",reason=\"$r\"")
		cols+=("$n")
		lost=$((lost + n))
	done
	# received: distinct rows the receiver holds (ClickHouse: ids); the OTLP
	# receiver's bodies are not decoded here, so its sent count stands in
	# (at least once: a batch retried after a failure counts again)
	rx=$sent
	[ "$d" != ch ] || rx=$ch_rx
	printf '%-6s %9d %9d %9s %8d %8d %8d %8d %8d %10d %5d\n' "$d" "$written" "$sent" \
		"$([ "$d" = ch ] && echo "$ch_rx" || echo -)" "${cols[@]}" $((rx + lost)) $((rx + lost - written))
done
echo "rows kept out of the database (never written, counted): $(cat "$T"/counters.* |
	awk '$1 ~ /^sysobs_events_dropped_total/ { split($1, a, "reason=\""); split(a[2], b, "\""); n[b[1]] += $2 }
		END { for (r in n) printf "%s %d  ", r, n[r] }')"
grep -E "destination changed|exported again|no longer exported|are sent \(|full disk|writing again" "$T/agent.log" |
	cut -c1-220 | sed 's/^/  log: /'
