#!/usr/bin/env bash
# Data path before and after, side by side in one run: the tree at $OLD
# (default 46347ae, the commit before the declarative-table / one history
# handler redesign) against the working tree's build.
#
#  1. lines of code (C files and headers, wc -l) in collectors/, storage/,
#     api/ (and agent/ for context, where code moved to), with the largest
#     files of each;
#  2. ingest events/s: bench_ingest built from $OLD and from the tree, same
#     arguments, alternated old, new, old, new, ... so load hits both alike;
#  3. newest-100 latency on a 5,000,000-row drop_samples table. One database:
#     schema made by the old sysobsd, rows by a sqlite3 recursive-CTE INSERT
#     (realistic reasons, locations, 5-tuples), plus ~10,000 rows in each
#     other event table with interleaved ids; one copy per daemon, both up at
#     once on their own loopback port, only the drops collector enabled (the
#     old one serves /api/v1/drops only while it is on; the new reason filter
#     needs the kernel's reason names). Old /api/v1/drops?limit=100 against
#     new /api/v1/drops/samples?limit=100 (JSON and protobuf), the same with
#     reason=NO_SOCKET, and /api/v1/events?limit=100 on both; p50/p99 over
#     $REQS sequential requests each. Twice:
#       3a. the database as generated, sqlite_stat1 empty (as a database that
#           grew within one daemon run: both daemons ANALYZE only through
#           PRAGMA optimize at shutdown);
#       3b. after ANALYZE on both copies.
#     The plan SQLite gives the old drops statement is printed for each: it
#     is what separates the two.
#  4. per table route, JSON vs protobuf size of a 1000-row page and the cost
#     per row, server side (sysobs_http_request_duration_seconds: mean at
#     limit=1000 minus mean at limit=1, over 999; old pages for comparison),
#     then bench_pbjson (encoding alone).
#
# Client: curl, one process per series, every request on the same kept-alive
# connection (a config file with one url per request; -w prints
# %{time_total} per transfer), the same for both daemons. Series are run in
# two chunks, alternating old and new. A series whose first request takes
# longer than SERIES_BUDGET/REQS runs only as many requests as fit in
# SERIES_BUDGET seconds (at least 3; the "reqs" column says how many): the
# old route needs ~9 s per request in 3a. "server" columns are the daemons'
# own histogram (_sum/_count delta over the series): request headers to
# response queued, i.e. query + encoding, without the socket.
#
# $OLD is built from `git archive $OLD` in the temp dir (no worktree, the
# repository is not touched); every file, process and port is temporary and
# removed on exit. Prints figures, asserts nothing. Needs root (the drops
# collector loads BPF), sqlite3, curl, jq, cmake, git.
#
#   SYSOBS_BUILD=build-b bash bench/data_path.sh
#
# Environment: SYSOBS_BUILD (build of the tree, default build; sysobsd,
# bench/bench_ingest, bench/bench_pbjson), OLD (commit, default 46347ae),
# DROP_ROWS (default 5000000), REQS (per latency series, default 500),
# REQS_PAGE (per 1000-row series, default 100), SERIES_BUDGET (seconds,
# default 30), INGEST_ROWS (default 1000000), INGEST_ROUNDS (default 3).
# About 5 minutes on 2 cores, most of it the old route in 3a.
set -uo pipefail

SRC=${SYSOBS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${SYSOBS_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
OLD=${OLD:-46347ae}
DROP_ROWS=${DROP_ROWS:-5000000}
REQS=${REQS:-500}
REQS_PAGE=${REQS_PAGE:-100}
INGEST_ROWS=${INGEST_ROWS:-1000000}
INGEST_ROUNDS=${INGEST_ROUNDS:-3}
SERIES_BUDGET=${SERIES_BUDGET:-30}

skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (the drops collector loads BPF)"
for x in sqlite3 curl jq cmake git tar; do command -v $x >/dev/null || skip "needs $x"; done
for x in sysobsd bench/bench_ingest; do [ -x "$BUILD/$x" ] || skip "$BUILD/$x not built"; done
git -C "$SRC" rev-parse -q --verify "$OLD^{commit}" >/dev/null || skip "no commit $OLD in $SRC"

T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-bench-datapath.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$T" || exit 1

T_START=$(date +%s.%N)
elapsed() { awk -v a="$T_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f s", b - a }'; }
section() { echo; echo "== $* [at $(elapsed)]"; }

NEW_DESC="working tree $(git -C "$SRC" rev-parse --short HEAD)+$(git -C "$SRC" status --porcelain -- agent api collectors storage | wc -l) changed files"
echo "data path: $OLD (old) vs $NEW_DESC (new, $BUILD)"
echo "kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), SQLite $(sqlite3 --version | cut -d' ' -f1), $(curl --version | head -1 | cut -d' ' -f1-2)"

# ---- old tree: sources and build ---------------------------------------------
OSRC=$T/old/src OBUILD=$T/old/build
mkdir -p "$OSRC"
git -C "$SRC" archive "$OLD" | tar -x -C "$OSRC" || { echo "git archive $OLD failed"; exit 1; }

# ---- 1. lines of code ----------------------------------------------------------
section "1. lines of code (*.c, *.h; wc -l): $OLD vs working tree"
loc() {	# loc ROOT DIR -> "lines path" per file
	(cd "$1" && find "$2" -type f \( -name '*.c' -o -name '*.h' \) -print0 |
		xargs -0 -r wc -l | awk '$2 != "total" { print $1, $2 }')
}
printf "%-12s %8s %8s   %8s %8s   %8s\n" dir "files" "lines" "files" "lines" "delta"
printf "%-12s %17s   %17s\n" "" "($OLD)" "(now)"
to=0 tn=0
for d in collectors storage api agent; do
	loc "$OSRC" "$d" | sort -rn >"$T/loc.old.$d"
	loc "$SRC" "$d" | sort -rn >"$T/loc.new.$d"
	fo=$(wc -l <"$T/loc.old.$d") fn=$(wc -l <"$T/loc.new.$d")
	lo=$(awk '{ s += $1 } END { print s + 0 }' "$T/loc.old.$d")
	ln=$(awk '{ s += $1 } END { print s + 0 }' "$T/loc.new.$d")
	note=
	[ "$d" = agent ] && note="  (context: not in the total)" || { to=$((to + lo)); tn=$((tn + ln)); }
	printf "%-12s %8d %8d   %8d %8d   %+8d (%+.1f%%)%s\n" "$d/" "$fo" "$lo" "$fn" "$ln" \
		$((ln - lo)) "$(awk -v a="$lo" -v b="$ln" 'BEGIN { print a ? 100 * (b - a) / a : 0 }')" "$note"
done
printf "%-12s %8s %8d   %8s %8d   %+8d (%+.1f%%)\n" "total" "" "$to" "" "$tn" $((tn - to)) \
	"$(awk -v a="$to" -v b="$tn" 'BEGIN { print a ? 100 * (b - a) / a : 0 }')"
echo
echo "largest files (lines path), $OLD | now:"
for d in collectors storage api agent; do
	echo "  $d/"
	paste -d'|' <(head -6 "$T/loc.old.$d" | awk '{ printf "%6d %-40s\n", $1, $2 }') \
		<(head -6 "$T/loc.new.$d" | awk '{ printf " %6d %s\n", $1, $2 }') | sed 's/^/    /'
done
echo "  files only in $OLD: $(comm -23 <(awk '{ print $2 }' "$T"/loc.old.{collectors,storage,api} | sort) \
	<(awk '{ print $2 }' "$T"/loc.new.{collectors,storage,api} | sort) | tr '\n' ' ')"
echo "  files only now:  $(comm -13 <(awk '{ print $2 }' "$T"/loc.old.{collectors,storage,api} | sort) \
	<(awk '{ print $2 }' "$T"/loc.new.{collectors,storage,api} | sort) | tr '\n' ' ')"

section "building $OLD (sysobsd, bench_ingest) in $OBUILD"
t0=$(date +%s.%N)
if ! { cmake -S "$OSRC" -B "$OBUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$T/old-build.log" 2>&1 &&
	cmake --build "$OBUILD" -j"$(nproc)" --target sysobsd bench_ingest >>"$T/old-build.log" 2>&1; }; then
	tail -20 "$T/old-build.log"
	echo "building $OLD failed"
	exit 1
fi
echo "built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (RelWithDebInfo, as $BUILD is: $(awk -F= '/^CMAKE_BUILD_TYPE/ { print $2 }' "$BUILD/CMakeCache.txt" 2>/dev/null))"

# ---- 2. ingest -------------------------------------------------------------------
section "2. ingest: bench_ingest $INGEST_ROWS {drain,max}, $INGEST_ROUNDS rounds alternating old, new"
ingest_parse() {	# bench_ingest output -> "key value"
	awk '
	/^store_submit:/ { print "submit_cold_ns/event", $2; print "submit_warm_ns/event", $7 }
	/^(drain|max) / {
		b = $2; sub(/batch_rows=/, "", b)
		for (i = 1; i <= NF; i++)
			if ($i == "events/s") v = $(i - 1)
			else if ($i == "events/CPU-s") c = $(i - 1)
		print $1 "_batch" b "_events/s", v
		if ($1 == "drain") print $1 "_batch" b "_events/CPU-s", c
	}'
}
for r in $(seq 1 "$INGEST_ROUNDS"); do
	for side in old new; do
		[ $side = old ] && bin=$OBUILD/bench/bench_ingest || bin=$BUILD/bench/bench_ingest
		{
			TMPDIR=$T "$bin" "$INGEST_ROWS" drain
			TMPDIR=$T "$bin" "$INGEST_ROWS" max
		} >"$T/ingest.$side.$r.txt" 2>&1 || echo "($side round $r: bench_ingest exit $?)"
		ingest_parse <"$T/ingest.$side.$r.txt" | sed "s/^/$side $r /" >>"$T/ingest.all"
	done
done
printf "%-30s %s | %s | new/old (medians)\n" "figure" "old: rounds.. median" "new: rounds.. median"
awk -v R="$INGEST_ROUNDS" '
function med(a, n,   i, j, t, b) {
	for (i = 1; i <= n; i++) b[i] = a[i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
	return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
{
	if (!($3 in seen)) { seen[$3] = 1; order[++nk] = $3 }
	v[$3, $1, $2] = $4
}
END {
	for (k = 1; k <= nk; k++) {
		key = order[k]; line = sprintf("%-30s", key)
		for (s = 0; s < 2; s++) {
			side = s ? "new" : "old"
			for (r = 1; r <= R; r++) { x[r] = v[key, side, r]; line = line sprintf(" %9.1f", x[r]) }
			m[side] = med(x, R); line = line sprintf("  %9.1f%s", m[side], s ? "" : " |")
		}
		printf "%s | %.3f\n", line, m["old"] ? m["new"] / m["old"] : 0
	}
}' "$T/ingest.all"
grep -h "^bench_ingest:" "$T/ingest.old.1.txt" | sed "s/^/  old: /"
grep -h "^bench_ingest:" "$T/ingest.new.1.txt" | sed "s/^/  new: /"

# ---- 3. the 5 M-row database and both daemons --------------------------------
section "3. newest-100 latency on $DROP_ROWS drop_samples rows"
# daemon_conf DB [drops on|off]
daemon_conf() {
	cat <<INI
[http]
listen = 127.0.0.1:0
[storage]
path = $1
retention = 0
max_size = 0
[collector.self]
enabled = false
[collector.cachefiles]
enabled = false
[collector.mptcp]
enabled = false
[collector.ifs]
enabled = false
[collector.drops]
enabled = ${2:-true}
sample_rate = 1
sample_burst = 2
INI
}
# start_daemon NAME BINARY DB [drops enabled] -> sets PORT_<NAME>, PID_<NAME>
start_daemon() {
	local name=$1 bin=$2 db=$3 pid port t0
	daemon_conf "$db" "${4:-true}" >"$T/$name.ini"
	t0=$(date +%s.%N)
	rm -f "$T/$name.port"
	"$bin" --config "$T/$name.ini" --port-file "$T/$name.port" >"$T/$name.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 600); do
		[ -s "$T/$name.port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	port=$(cat "$T/$name.port" 2>/dev/null)
	if [ -z "$port" ]; then
		echo "$name sysobsd did not start:"
		tail -20 "$T/$name.log"
		exit 1
	fi
	printf -v "PORT_$name" %s "$port"
	printf -v "PID_$name" %s "$pid"
	printf -v "UP_$name" %s "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
	local up_var=UP_$name
	if awk -v u="${!up_var}" 'BEGIN { exit !(u > 5) }'; then
		echo "$name sysobsd took ${!up_var} s to listen (load average $(cut -d' ' -f1-3 /proc/loadavg)); its log so far:"
		sed 's/^/  /' "$T/$name.log"
	fi
}
stop_daemon() {	# stop_daemon PID
	kill -TERM "$1" && wait "$1"
	local keep=()
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# Schema as the old sysobsd makes it (the new one upgrades its copy on
# start, as it would a user's database).
start_daemon seed "$OBUILD/sysobsd" "$T/seed.db" false
stop_daemon "$PID_seed"

# Ids 1..TOTAL: x % 500 = 0..3 go to the four other event tables (~0.8%),
# the rest to drop_samples; ts 1 ms apart ending now. Values as the kernel
# gives them: drop reasons weighted (NO_SOCKET 30%), their locations and
# protocols, IPv4/IPv6 5-tuples, tcp_flags on TCP only, NULLs where a
# collector writes NULL.
TOTAL=$(( (DROP_ROWS * 500 + 495) / 496 ))
T0=$(( $(date +%s) * 1000000000 - TOTAL * 1000000 ))
cat >"$T/gen.sql" <<'SQL'
.bail on
PRAGMA journal_mode=DELETE;
PRAGMA synchronous=OFF;
PRAGMA cache_size=-262144;
BEGIN;
DROP INDEX IF EXISTS drop_samples_ts;
CREATE TEMP TABLE rs(k INTEGER PRIMARY KEY, reason TEXT, code INTEGER, location TEXT, proto TEXT);
WITH RECURSIVE b(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM b WHERE k < 99)
INSERT INTO rs SELECT k,
 CASE WHEN k < 30 THEN 'NO_SOCKET' WHEN k < 42 THEN 'TCP_INVALID_SEQUENCE'
      WHEN k < 57 THEN 'NOT_SPECIFIED' WHEN k < 67 THEN 'NETFILTER_DROP'
      WHEN k < 75 THEN 'TCP_OLD_DATA' WHEN k < 82 THEN 'TCP_RESET' WHEN k < 87 THEN 'SOCKET_FILTER'
      WHEN k < 92 THEN 'OTHERHOST' WHEN k < 96 THEN 'PKT_TOO_SMALL' ELSE 'NEIGH_FAILED' END,
 CASE WHEN k < 30 THEN 3 WHEN k < 42 THEN 42 WHEN k < 57 THEN 2 WHEN k < 67 THEN 8 WHEN k < 75 THEN 44
      WHEN k < 82 THEN 41 WHEN k < 87 THEN 9 WHEN k < 92 THEN 11 WHEN k < 96 THEN 5 ELSE 62 END,
 CASE WHEN k < 18 THEN '__udp4_lib_rcv+0x6c0' WHEN k < 30 THEN 'tcp_v4_rcv+0x1a8'
      WHEN k < 42 THEN 'tcp_validate_incoming+0x128' WHEN k < 57 THEN 'sk_stream_kill_queues+0x50'
      WHEN k < 67 THEN 'nf_hook_slow+0xa8' WHEN k < 75 THEN 'tcp_data_queue+0x8f4'
      WHEN k < 82 THEN 'tcp_validate_incoming+0x2b0' WHEN k < 87 THEN 'sk_filter_trim_cap+0x1e0'
      WHEN k < 92 THEN 'ip_rcv_core+0x2d0' WHEN k < 96 THEN 'udp_queue_rcv_one_skb+0x3c'
      ELSE 'neigh_invalidate+0x8c' END,
 CASE WHEN k < 18 THEN 'udp' WHEN k < 57 THEN 'tcp' WHEN k < 62 THEN 'udp' WHEN k < 82 THEN 'tcp'
      WHEN k < 96 THEN 'udp' ELSE NULL END
FROM b;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :total)
INSERT INTO drop_samples(id, ts, reason, reason_code, location, ifindex, ifname, netns, l3,
  protocol, saddr, daddr, sport, dport, icmp_type, icmp_code, tcp_flags, len, cpu)
SELECT x, :t0 + x * 1000000 + (x * 7919) % 1000000, rs.reason, rs.code, rs.location,
  CASE WHEN x % 10 = 0 THEN 1 ELSE 2 END, CASE WHEN x % 10 = 0 THEN 'lo' ELSE 'eth0' END,
  CASE WHEN x % 50 = 0 THEN 4026532411 ELSE 4026531840 END,
  CASE WHEN rs.proto IS NULL THEN NULL WHEN x % 8 = 0 THEN 'ipv6' ELSE 'ipv4' END, rs.proto,
  CASE WHEN rs.proto IS NULL THEN NULL
       WHEN x % 8 = 0 THEN printf('2001:db8:%x::%x', (x >> 8) % 65536, x % 65536)
       ELSE printf('10.%d.%d.%d', (x >> 16) % 256, (x >> 8) % 256, x % 250 + 1) END,
  CASE WHEN rs.proto IS NULL THEN NULL WHEN x % 8 = 0 THEN '2001:db8::1' ELSE '192.168.100.23' END,
  CASE WHEN rs.proto IS NULL THEN NULL ELSE 32768 + (x * 31) % 28000 END,
  CASE WHEN rs.proto IS NULL THEN NULL
       WHEN rs.proto = 'udp' THEN (CASE x % 3 WHEN 0 THEN 53 WHEN 1 THEN 9 ELSE 4789 END)
       ELSE (CASE x % 4 WHEN 0 THEN 80 WHEN 1 THEN 8443 ELSE 443 END) END,
  NULL, NULL,
  CASE WHEN rs.proto = 'tcp' THEN (CASE x % 5 WHEN 0 THEN 2 WHEN 1 THEN 4 WHEN 2 THEN 17 ELSE 16 END) END,
  40 + (x * 2654435761) % 1461, x % 2
FROM c JOIN rs ON rs.k = (x * 2654435761) % 100
WHERE x % 500 >= 4;
CREATE INDEX drop_samples_ts ON drop_samples(ts);

WITH RECURSIVE c(x) AS (SELECT 500 UNION ALL SELECT x + 500 FROM c WHERE x + 500 <= :total)
INSERT INTO self_samples(id, ts, cpu_seconds, rss_bytes, open_fds, threads, queue_depth)
SELECT x, :t0 + x * 1000000, x * 0.00004, 11800000 + (x * 37) % 900000, 21 + x % 3, 6, x % 40 FROM c;

WITH RECURSIVE c(x) AS (SELECT 501 UNION ALL SELECT x + 500 FROM c WHERE x + 500 <= :total)
INSERT INTO mptcp_events(id, ts, netns, type, token, family, saddr, daddr, sport, dport, loc_id,
  rem_id, backup, error, flags, timeout, if_idx, reset_reason, reset_flags, server_side, unknown_attrs)
SELECT x, :t0 + x * 1000000, 4026531840, t.type, (x / 3000 * 2654435761) % 4294967296, 2,
  CASE WHEN t.type = 'ANNOUNCED' THEN NULL ELSE '10.0.0.1' END, '10.0.1.2',
  CASE WHEN t.type = 'ANNOUNCED' THEN NULL ELSE 40000 + (x / 3000) % 20000 END,
  CASE WHEN t.type = 'ANNOUNCED' THEN NULL ELSE 443 END,
  CASE WHEN t.type LIKE 'SUB_%' THEN 1 ELSE 0 END, CASE WHEN t.type IN ('SUB_ESTABLISHED', 'SUB_CLOSED', 'ANNOUNCED') THEN 1 END,
  CASE WHEN t.type LIKE 'SUB_%' THEN 0 END, CASE WHEN t.type = 'SUB_CLOSED' THEN 104 END,
  NULL, NULL, CASE WHEN t.type LIKE 'SUB_%' THEN 2 END, NULL, NULL,
  CASE WHEN t.type IN ('CREATED', 'ESTABLISHED') THEN 0 END, NULL
FROM c JOIN (SELECT 0 AS k, 'CREATED' AS type UNION ALL SELECT 1, 'ESTABLISHED'
  UNION ALL SELECT 2, 'ANNOUNCED' UNION ALL SELECT 3, 'SUB_ESTABLISHED'
  UNION ALL SELECT 4, 'SUB_CLOSED' UNION ALL SELECT 5, 'CLOSED') t ON t.k = (x / 500) % 6;

WITH RECURSIVE c(x) AS (SELECT 502 UNION ALL SELECT x + 500 FROM c WHERE x + 500 <= :total)
INSERT INTO ifs_scans(id, ts, duration_ns, device, test, cpu, core, package, status, details,
  error_code, error_name, retryable, chunk_num, chunk_stop_index, image_version, batch,
  requested_by, scan_id, decoded, reason)
SELECT x, :t0 + x * 1000000, 180000000 + (x * 13) % 40000000, 'intel_ifs_0', 'scan', x % 2, x % 2, 0,
  CASE WHEN x % 97 = 0 THEN 'untested' ELSE 'pass' END,
  CASE WHEN x % 97 = 0 THEN '0x100000001' ELSE '0x8000' END,
  CASE WHEN x % 97 = 0 THEN 1 ELSE 0 END,
  CASE WHEN x % 97 = 0 THEN 'SCAN_NOT_COMPLETED_INTERRUPT' ELSE 'NO_ERROR' END,
  CASE WHEN x % 97 = 0 THEN 1 ELSE 0 END, CASE WHEN x % 97 = 0 THEN 1 ELSE 8 END, 8, '0x2a', 1,
  'scheduler', x / 1000, '{"control_error":0,"signature_error":0}', NULL FROM c;

WITH RECURSIVE c(x) AS (SELECT 503 UNION ALL SELECT x + 500 FROM c WHERE x + 500 <= :total)
INSERT INTO cachefiles_slow(id, ts, op, volume, object_id, object_debug_id, offset, length,
  latency_seconds, result, pid, comm)
SELECT x, :t0 + x * 1000000, CASE WHEN x % 7 = 0 THEN 'open' ELSE 'read' END,
  'erofs,nydus-image-' || (x % 5), x % 200, 1000 + x % 20000, (x % 4096) * 131072,
  CASE WHEN x % 7 = 0 THEN 0 ELSE 131072 END, 0.1 + (x % 400) * 0.001, 0, 4242, 'nydusd' FROM c;
COMMIT;
PRAGMA journal_mode=WAL;
SQL
t0=$(date +%s.%N)
if ! sqlite3 -cmd ".parameter set :total $TOTAL" -cmd ".parameter set :t0 $T0" "$T/seed.db" \
	<"$T/gen.sql" >"$T/gen.log" 2>&1; then
	cat "$T/gen.log"
	exit 1
fi
t1=$(date +%s.%N)
sqlite3 "$T/seed.db" "SELECT 'rows: ' || (SELECT count(*) FROM drop_samples) || ' drop_samples ('
	|| (SELECT count(*) FROM drop_samples WHERE reason = 'NO_SOCKET') || ' NO_SOCKET), '
	|| (SELECT count(*) FROM self_samples) || ' self_samples, '
	|| (SELECT count(*) FROM mptcp_events) || ' mptcp_events, '
	|| (SELECT count(*) FROM ifs_scans) || ' ifs_scans, '
	|| (SELECT count(*) FROM cachefiles_slow) || ' cachefiles_slow'"
echo "database generated in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (sqlite3 CLI, recursive CTE), $(($(stat -c %s "$T/seed.db") / 1048576)) MiB"
cp "$T/seed.db" "$T/old.db" && cp "$T/seed.db" "$T/new.db" && rm -f "$T"/seed.db*
sqlite3 "$T/old.db" .schema >"$T/schema.before"

# The old drops route's statement (collectors/drops/drops_api.c at 46347ae)
# and the plan SQLite gives it, bound as a newest-page request binds it.
OLD_DROPS_SQL="SELECT id, ts, reason, reason_code, location, ifindex, ifname, netns, l3, protocol,
 saddr, daddr, sport, dport, icmp_type, icmp_code, tcp_flags, len, cpu FROM drop_samples
 WHERE id < ?1 AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR reason = ?4)
 AND (?5 IS NULL OR protocol = ?5) AND (?6 IS NULL OR saddr = ?6 OR daddr = ?6)
 AND (?7 IS NULL OR sport = ?7 OR dport = ?7) AND (?9 IS NULL OR netns = ?9)
 ORDER BY id DESC LIMIT ?8"
old_plan() {	# old_plan DB
	sqlite3 -cmd ".parameter set ?1 9223372036854775807" -cmd ".parameter set ?2 0" \
		-cmd ".parameter set ?3 9223372036854775807" -cmd ".parameter set ?8 101" \
		"$1" "EXPLAIN QUERY PLAN $OLD_DROPS_SQL" | grep -v '^QUERY PLAN' | sed 's/^[|`]--//' | paste -sd';'
}

# start_both: both daemons on their copies, each on its own loopback port.
start_both() {
	start_daemon old "$OBUILD/sysobsd" "$T/old.db"
	start_daemon new "$BUILD/sysobsd" "$T/new.db"
	local side port_var st
	for side in old new; do
		port_var=PORT_$side
		st=
		for _ in $(seq 1 100); do
			st=$(curl -s "http://127.0.0.1:${!port_var}/api/v1/collectors" |
				jq -r '.data[] | select(.name == "drops") | .state' 2>/dev/null)
			[ "${st,,}" = running ] && break
			sleep 0.1
		done
		printf -v "STATE_$side" %s "${st:-unknown}"
	done
	echo "old sysobsd on port $PORT_old (listening after $UP_old s), new on port $PORT_new (after $UP_new s); drops collector: old $STATE_old, new $STATE_new"
}
stop_both() {
	stop_daemon "$PID_old"
	stop_daemon "$PID_new"
}

ERRORS=$T/errors
: >"$ERRORS"
# hist PORT ROUTE -> "sum count" of sysobs_http_request_duration_seconds
hist() {
	curl -s "http://127.0.0.1:$1/metrics" | awk -v r="$2" '
	index($0, "sysobs_http_request_duration_seconds_sum{route=\"" r "\"}") == 1 { s = $2 }
	index($0, "sysobs_http_request_duration_seconds_count{route=\"" r "\"}") == 1 { c = $2 }
	END { printf "%.9f %d\n", s, c }'
}
# fetch PORT PATH ACCEPT N OUT: N sequential GETs on one connection,
# appends "code bytes time_total" per request to OUT; the server's histogram
# delta for the route goes to OUT.srv ("sum count" lines).
fetch() {
	local port=$1 path=$2 acc=$3 n=$4 out=$5 h0 h1 i
	for ((i = 0; i < n; i++)); do
		printf 'url = "http://127.0.0.1:%s%s"\noutput = "/dev/null"\n' "$port" "$path"
	done >"$T/curl.cfg"
	h0=$(hist "$port" "${path%%\?*}")
	curl -s -K "$T/curl.cfg" -H "Accept: $acc" -w '%{http_code} %{size_download} %{time_total}\n' >>"$out"
	h1=$(hist "$port" "${path%%\?*}")
	echo "$h0 $h1" | awk '{ print $3 - $1, $4 - $2 }' >>"$out.srv"
}
# series ID SIDE PATH FORMAT: declares one series for run_series.
SER=()
series() { SER+=("$1|$2|$3|$4"); }
# run_series N CHUNKS: one probe request per series (its status is checked,
# a failure reported once with its body), 20 warm-up requests, then N
# requests of each in CHUNKS rounds, alternating the series within a round.
# A series whose probe takes longer than SERIES_BUDGET / N runs only as many
# requests as fit in SERIES_BUDGET seconds (at least 3); the table says how
# many.
declare -A NREQ
run_series() {
	local n=$1 chunks=$2 c s id side path fmt port_var acc code t k
	for c in $(seq 0 "$chunks"); do
		for s in "${SER[@]}"; do
			IFS='|' read -r id side path fmt <<<"$s"
			port_var=PORT_$side
			[ "$fmt" = pb ] && acc=application/x-protobuf || acc=application/json
			if [ "$c" = 0 ]; then
				rm -f "$T/s.$id" "$T/s.$id.srv"
				read -r code t < <(curl -s -o "$T/body" -w '%{http_code} %{time_total}\n' \
					-H "Accept: $acc" "http://127.0.0.1:${!port_var}$path")
				[ "$code" = 200 ] ||
					echo "$side $fmt GET $path -> HTTP $code: $(head -c 400 "$T/body" | tr -d '\0')" >>"$ERRORS"
				k=$(awk -v t="$t" -v n="$n" -v b="$SERIES_BUDGET" 'BEGIN {
					k = t > 0 ? int(b / t) : n; print (k > n ? n : (k < 3 ? 3 : k)) }')
				NREQ[$id]=$k
				if [ "$k" = "$n" ]; then
					fetch "${!port_var}" "$path" "$acc" 20 "$T/warm"
					rm -f "$T/warm" "$T/warm.srv"
				fi
			else
				k=${NREQ[$id]}
				fetch "${!port_var}" "$path" "$acc" $(((k + chunks - 1) / chunks)) "$T/s.$id"
			fi
		done
	done
}
# stats ID -> "reqs p50 p99 mean server_mean bytes non200" (ms)
stats() {
	local f=$T/s.$1
	awk '{ print $3 }' "$f" | sort -g >"$f.sorted"
	awk -v srv="$(awk '{ s += $1; c += $2 } END { printf "%.9f", c ? s / c : -1 }' "$f.srv")" '
	NR == FNR { t[++n] = $1; next }
	{ sz[FNR] = $2; if ($1 != 200) bad++; sum += $3 }
	END {
		i50 = int(n * 0.50 + 0.999999); i99 = int(n * 0.99 + 0.999999)
		printf "%d %.3f %.3f %.3f %.3f %d %d\n", n, t[i50] * 1000, t[i99] * 1000,
			sum / n * 1000, srv * 1000, sz[int((FNR + 1) / 2)], bad
	}' "$f.sorted" "$f"
}
print_series_header() {
	printf "  %-4s %-52s %-5s %5s %9s %9s %9s %9s %8s %6s\n" side request fmt reqs "p50 ms" "p99 ms" \
		"mean ms" "server ms" bytes non200
}
print_series() {	# print_series ID...
	local id side path fmt s want
	for want in "$@"; do
		for s in "${SER[@]}"; do
			IFS='|' read -r id side path fmt <<<"$s"
			[ "$id" = "$want" ] || continue
			read -r n p50 p99 mean srv bytes bad <<<"$(stats "$id")"
			printf "  %-4s %-52s %-5s %5d %9.3f %9.3f %9.3f %9.3f %8d %6d\n" "$side" "GET $path" "$fmt" \
				"$n" "$p50" "$p99" "$mean" "$srv" "$bytes" "$bad"
		done
	done
}
newest_series() {
	SER=()
	series a.old old "/api/v1/drops?limit=100" json
	series a.new new "/api/v1/drops/samples?limit=100" json
	series a.newpb new "/api/v1/drops/samples?limit=100" pb
	series b.old old "/api/v1/drops?reason=NO_SOCKET&limit=100" json
	series b.new new "/api/v1/drops/samples?reason=NO_SOCKET&limit=100" json
	series b.newpb new "/api/v1/drops/samples?reason=NO_SOCKET&limit=100" pb
	series c.old old "/api/v1/events?limit=100" json
	series c.new new "/api/v1/events?limit=100" json
	series c.newpb new "/api/v1/events?limit=100" pb
	run_series "$REQS" 2
	print_series_header
	print_series a.old a.new a.newpb b.old b.new b.newpb c.old c.new c.newpb
}

echo "client: curl $(curl --version | head -1 | cut -d' ' -f2), one kept-alive connection per series, $REQS sequential requests per series (2 chunks, series alternated; a series whose first request takes over $SERIES_BUDGET s / $REQS runs what fits in $SERIES_BUDGET s, at least 3: see reqs); p50/p99/mean of %{time_total}; server = mean of the daemon's own request histogram"

echo
echo "-- 3a. database as generated: sqlite_stat1 empty (a database that grew within one daemon run; PRAGMA optimize runs at shutdown)"
echo "old drops statement plan: $(old_plan "$T/old.db")"
start_both
if ! diff -q "$T/schema.before" <(sqlite3 "$T/new.db" .schema) >/dev/null; then
	echo "the new sysobsd upgraded its copy's schema:"
	diff "$T/schema.before" <(sqlite3 "$T/new.db" .schema) | grep '^>' | cut -c1-160 | sed 's/^/  /'
fi
newest_series
stop_both

echo
echo "-- 3b. after ANALYZE on both copies (statistics as PRAGMA optimize leaves them after a restart)"
t0=$(date +%s.%N)
sqlite3 "$T/old.db" "ANALYZE" && sqlite3 "$T/new.db" "ANALYZE"
echo "ANALYZE took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s for both; old drops statement plan now: $(old_plan "$T/old.db")"
start_both
newest_series

# ---- 4. per table route: JSON vs protobuf, cost per row ----------------------
section "4. per table route: 1000-row page, JSON vs protobuf, cost per row"
ROUTES=(
	"drops|/api/v1/drops/samples|/api/v1/drops"
	"self|/api/v1/self/samples|/api/v1/events?collector=self"
	"mptcp|/api/v1/mptcp/events|/api/v1/events?collector=mptcp"
	"ifs|/api/v1/ifs/scans|/api/v1/events?collector=ifs"
	"cachefiles|/api/v1/cachefiles/slow|/api/v1/events?collector=cachefiles"
	"events|/api/v1/events|/api/v1/events"
)
SER=()
for r in "${ROUTES[@]}"; do
	IFS='|' read -r name np op <<<"$r"
	sep='?'
	case $op in *\?*) sep='&' ;; esac
	for lim in 1 1000; do
		series "p.$name.$lim.old" old "$op${sep}limit=$lim" json
		series "p.$name.$lim.new" new "$np?limit=$lim" json
		series "p.$name.$lim.newpb" new "$np?limit=$lim" pb
	done
done
run_series "$REQS_PAGE" 2
rows_in() {	# rows_in PORT PATH: rows in the JSON page
	curl -s "http://127.0.0.1:$1$2" | jq '.data | length' 2>/dev/null || echo -1
}
echo "sizes of one limit=1000 page (bytes; rows counted in the JSON), and server time (ms, mean of $REQS_PAGE requests) at limit=1 and limit=1000:"
printf "  %-10s %6s %9s | %6s %9s %9s %6s | %8s %8s %8s | %8s %8s %8s\n" route "rows" "old json" \
	"rows" "new json" "new pb" "pb/js" "old 1" "json 1" "pb 1" "old 1000" "json 1000" "pb 1000"
for r in "${ROUTES[@]}"; do
	IFS='|' read -r name np op <<<"$r"
	sep='?'
	case $op in *\?*) sep='&' ;; esac
	for k in old new newpb; do
		for lim in 1 1000; do
			read -r _ "p50_${k}_$lim" _ _ "srv_${k}_$lim" "b_${k}_$lim" _ <<<"$(stats "p.$name.$lim.$k")"
		done
	done
	ro=$(rows_in "$PORT_old" "$op${sep}limit=1000")
	rn=$(rows_in "$PORT_new" "$np?limit=1000")
	printf "  %-10s %6d %9d | %6d %9d %9d %6.2f | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f\n" "$name" \
		"$ro" "$b_old_1000" "$rn" "$b_new_1000" "$b_newpb_1000" \
		"$(awk -v a="$b_newpb_1000" -v b="$b_new_1000" 'BEGIN { print b ? a / b : 0 }')" \
		"$srv_old_1" "$srv_new_1" "$srv_newpb_1" "$srv_old_1000" "$srv_new_1000" "$srv_newpb_1000"
	echo "$name $ro $rn $srv_old_1 $srv_old_1000 $srv_new_1 $srv_new_1000 $srv_newpb_1 $srv_newpb_1000" \
		"$p50_old_1 $p50_old_1000 $p50_new_1 $p50_new_1000 $p50_newpb_1 $p50_newpb_1000" >>"$T/perrow"
done
echo
echo "cost per row in microseconds (SQLite read + row message + encoding): server = (histogram mean at limit=1000 - at limit=1) / (rows - 1); client = the same with curl's p50 (includes the transfer):"
printf "  %-10s %10s %10s %10s | %10s %10s %10s\n" route "server old" "new json" "new pb" "client old" "new json" "new pb"
awk 'function r(ms, n) { return n > 1 ? ms / (n - 1) * 1000 : 0 }
{ printf "  %-10s %10.2f %10.2f %10.2f | %10.2f %10.2f %10.2f\n", $1, r($5 - $4, $2), r($7 - $6, $3),
	r($9 - $8, $3), r($11 - $10, $2), r($13 - $12, $3), r($15 - $14, $3) }' "$T/perrow"
echo "(the old /api/v1/events rows are per table JSON as store_query_events built them; old per-collector pages are /api/v1/events?collector=NAME)"
echo
if [ -x "$BUILD/bench/bench_pbjson" ]; then
	echo "bench_pbjson (encoding alone, no SQLite, no HTTP):"
	"$BUILD/bench/bench_pbjson" 2>&1 | sed 's/^/  /'
else
	echo "bench_pbjson: not built in $BUILD"
fi

section "failures"
if [ -s "$ERRORS" ]; then cat "$ERRORS"; else echo "none: every request answered 200"; fi
for side in old new; do
	pid_var=PID_$side
	kill -0 "${!pid_var}" 2>/dev/null || echo "$side sysobsd exited during the run: $(tail -3 "$T/$side.log")"
	n=$(grep -c -E ' (error|warn) ' "$T/$side.log")
	[ "$n" -gt 0 ] && { echo "$side sysobsd log, $n warnings/errors:"; grep -E ' (error|warn) ' "$T/$side.log" | head -5 | sed 's/^/  /'; }
done
echo
echo "data_path.sh: total run time $(elapsed)"
