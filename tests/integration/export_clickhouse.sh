#!/usr/bin/env bash
# The event exporter into Debian's ClickHouse (18.16), all on loopback:
#  1. the shipped DDL (deploy/clickhouse/sysobs.sql, and the build's copy the
#     package installs) is what sysobsd --print-clickhouse-ddl prints, and
#     it loads, by docs/fleet.md's curl lines too;
#  2. drop samples reach ClickHouse with the host's identity and the name of
#     their namespace (netns_name: the test's ip netns); every row of
#     SQLite up to the cursor is in ClickHouse once by key (db_id, id);
#  3. ClickHouse down while drops go on: the rows wait in the history
#     (pending, retried counted); back up, the backlog drains; a kill -9 of
#     the agent in the middle of it loses nothing and, after deduplication
#     (FINAL), duplicates nothing; the raw duplicates are at most one batch;
#  4. a destination whose database does not exist yet (404, Code: 81) keeps
#     its rows (retried, none refused) without blocking the other; once the
#     database is created, they all arrive;
#  5. two agents (hostA, hostB) into two shards, a Distributed table over
#     both: the fleet query of docs/fleet.md answers per host what each
#     agent's SQLite says.
source "$(dirname "$0")/lib.sh"

need_root
need_clickhouse
need_cmd sqlite3
need_cmd jq
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
BATCH=200
# a port of its own: drops to it are this test's, whatever else runs
DPORT=$((40000 + RANDOM % 9000))

# ---- 1. DDL ----
"$SYSOBSD" --print-clickhouse-ddl >"$T/ddl.sql" || fail "--print-clickhouse-ddl failed"
diff -u "$SYSOBS_SRC/deploy/clickhouse/sysobs.sql" "$T/ddl.sql" >&2 ||
	fail "deploy/clickhouse/sysobs.sql differs from sysobsd --print-clickhouse-ddl: regenerate it"
start_clickhouse
# docs/fleet.md's curl lines (no clickhouse-client) on the DDL the package
# installs (the build's copy), into this ClickHouse
cmp -s "$SYSOBS_BUILD/deploy/clickhouse.sql" "$T/ddl.sql" ||
	fail "the build's deploy/clickhouse.sql (the package's /usr/share/sysobs/clickhouse.sql) differs from --print-clickhouse-ddl"
load=$(awk '/^\*\*Loading it/ { f = 1 } f && /^```sh$/ { on = 1; next } on && /^```/ { exit } on' \
	"$SYSOBS_SRC/docs/fleet.md")
[[ $load == CH=* ]] || fail "no curl lines in docs/fleet.md: $load"
load=${load//\/usr\/share\/sysobs\/clickhouse.sql/$SYSOBS_BUILD/deploy/clickhouse.sql}
load=${load//http:\/\/clickhouse.example:8123\//http://127.0.0.1:$CH_HTTP/}
bash -c "set -o pipefail; $load" >"$T/curl-ddl.out" 2>&1 || fail "docs/fleet.md's curl lines: $(cat "$T/curl-ddl.out")"
n_tables=$(grep -c '^CREATE TABLE' "$T/ddl.sql")
assert_eq "tables of the sysobs database after the curl lines" "$n_tables" \
	"$(chq 'SELECT count() FROM system.tables WHERE database = '"'"'sysobs'"'"'')"
"$SYSOBSD" --print-clickhouse-ddl=two_shards >"$T/ddl-cluster.sql"
for db in sysobs shard1 shard2; do
	sed "s/\bsysobs\./$db./g; s/DATABASE IF NOT EXISTS sysobs;/DATABASE IF NOT EXISTS $db;/" \
		"$T/ddl-cluster.sql" | clickhouse-client --port "$CH_TCP" --multiquery ||
		fail "the DDL does not load into database $db"
done
assert_eq "tables of the sysobs database" 14 "$(chq 'SELECT count() FROM system.tables WHERE database = '"'"'sysobs'"'"'')"
pass "shipped DDL = --print-clickhouse-ddl; it loads into ClickHouse $(chq 'SELECT version()') by docs/fleet.md's curl lines ($n_tables tables) and with Distributed tables"

# ---- 2. rows with identity ----
# the drops happen in a namespace the host names (ip netns): its rows carry
# netns_name
NS=sysobs-ch-$$
netns_new "$NS" || fail "cannot create a network namespace"
make_drops() { ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p "$DPORT" -n "$1" >/dev/null; }
agent_config() { # INSTANCE DATABASE DB_FILE
	# a ring that holds the burst: a sample is ~1.3 KB since it carries the
	# headers and the stack (issue 35), and an ASan agent reads it slowly
	write_base_config storage.path="$3" collector.drops.sample_rate=20000 \
		collector.drops.sample_burst=20000 collector.drops.ring_bytes=4m \
		remote_write.instance="$1" \
		remote_write.external_labels="cluster=test"
	cat >>"$T/sysobsd.ini" <<-INI
		[export.ch]
		format = clickhouse
		url = http://127.0.0.1:$CH_HTTP/
		database = $2
		tables = drop_samples
		batch_rows = $BATCH
		send_interval = 1s
		min_backoff = 50ms
		max_backoff = 500ms
	INI
}
cursor() { sqlite3 "$1" "SELECT value FROM store_meta WHERE key = 'cursor.export.ch'"; }
pending() { metric 'sysobs_export_pending_rows{destination="ch"}'; }
caught_up() { [ "$(pending)" = 0 ] && [ -n "$(cursor "$DBF")" ]; }
# compare DB_FILE DATABASE WHAT: SQLite rows up to the cursor = ClickHouse's
compare() {
	local cur lite dist final
	cur=$(cursor "$1")
	lite=$(sqlite3 "$1" "SELECT count(*) FROM drop_samples WHERE id <= $cur")
	dist=$(chq "SELECT uniqExact(db_id, id) FROM $2.drop_samples WHERE id <= $cur")
	final=$(chq "SELECT count() FROM $2.drop_samples FINAL WHERE id <= $cur")
	assert_eq "$3: rows in ClickHouse by key = SQLite's (up to id $cur)" "$lite" "$dist"
	assert_eq "$3: rows after deduplication (FINAL) = SQLite's" "$lite" "$final"
	LITE=$lite
}

DBF=$T/a.db
agent_config hostA shard1 "$DBF"
# ch_dest NAME DATABASE [LINE...]: one more [export.NAME] of drop_samples
# into this ClickHouse, with LINEs ("key = value") added
ch_dest() {
	printf '[export.%s]\nformat = clickhouse\nurl = http://127.0.0.1:%s/\ndatabase = %s\n' \
		"$1" "$CH_HTTP" "$2"
	printf 'tables = drop_samples\nsend_interval = 1s\n'
	shift 2
	[ $# -eq 0 ] || printf '%s\n' "$@"
}
{
	ch_dest bad nosuchdb "batch_rows = $BATCH"
	ch_dest cap sysobs "capture = true"
	ch_dest old oldddl "capture = true"
} >>"$T/sysobsd.ini"
# a database made by an older DDL: drop_samples without its capture column
sed '/^    capture Nullable(String),$/d; s/\bsysobs\./oldddl./g; s/DATABASE IF NOT EXISTS sysobs;/DATABASE IF NOT EXISTS oldddl;/' \
	"$T/ddl.sql" | clickhouse-client --port "$CH_TCP" --multiquery || fail "the older DDL does not load"
assert_eq "capture columns in oldddl" 0 \
	"$(chq "SELECT count() FROM system.columns WHERE database = 'oldddl' AND name = 'capture'")"
start_agent
make_drops 300
wait_for 30 caught_up || fail "export did not catch up: pending $(pending); $(tail -5 "$T/agent.log")"
compare "$DBF" shard1 "online"
assert_ge "rows exported" 300 "$LITE"
row=$(chq "SELECT host, job, labels.name, labels.value, length(db_id) FROM shard1.drop_samples LIMIT 1 FORMAT JSONEachRow")
assert_eq "identity of a row" '{"host":"hostA","job":"sysobs","labels.name":["cluster"],"labels.value":["test"],"length(db_id)":"16"}' "$row"
# the same row (one of the test's drops), field by field, in SQLite and ClickHouse
id=$(sqlite3 "$DBF" "SELECT max(id) FROM drop_samples WHERE id <= $(cursor "$DBF") AND dport = $DPORT")
lite=$(sqlite3 -json "$DBF" "SELECT CAST(ts AS TEXT) AS ts, reason, protocol, saddr, daddr, CAST(sport AS TEXT) AS sport, CAST(dport AS TEXT) AS dport FROM drop_samples WHERE id = $id" | jq -c '.[0] | map_values(tostring)')
ch=$(chq "SELECT toString(ts) AS ts, reason, toString(protocol) AS protocol, saddr, daddr, toString(sport) AS sport, toString(dport) AS dport FROM shard1.drop_samples WHERE id = $id FORMAT JSONEachRow" | jq -c 'map_values(tostring)')
assert_eq "row $id in ClickHouse = in SQLite" "$lite" "$ch"
assert_eq "netns and netns_name of row $id in ClickHouse" "$NSINUM $NS" \
	"$(chq "SELECT netns, netns_name FROM shard1.drop_samples WHERE id = $id" | tr '\t' ' ')"
# packet captures: only to the destination that asks (capture = true), each
# byte as SQLite holds it
cap_caught_up() { [ "$(metric 'sysobs_export_pending_rows{destination="cap"}')" = 0 ]; }
wait_for 30 cap_caught_up || fail "[export.cap] did not catch up: $(tail -5 "$T/agent.log")"
lite_cap=$(sqlite3 "$DBF" "SELECT hex(capture) FROM drop_samples WHERE id = $id")
[ ${#lite_cap} -ge 80 ] || fail "row $id has no capture in SQLite: '$lite_cap'"
assert_eq "capture of row $id in ClickHouse (capture = true) = in SQLite" "$lite_cap" \
	"$(chq "SELECT hex(capture) FROM sysobs.drop_samples WHERE id = $id")"
assert_eq "captures sent to [export.ch] (capture off)" 0 \
	"$(chq "SELECT count() FROM shard1.drop_samples WHERE capture IS NOT NULL")"
ncap=$(chq "SELECT count() FROM sysobs.drop_samples WHERE capture IS NOT NULL AND dport = $DPORT")
assert_ge "captures of the test's drops in [export.cap]'s database" 300 "$ncap"
# a table without the column takes the rows, not their captures: said at start
old_said() { grep -q "export.old: capture = true, but oldddl.drop_samples has no column capture" "$T/agent.log"; }
wait_for 10 old_said || fail "no word of oldddl's missing capture column: $(grep export.old "$T/agent.log")"
grep -q "export.cap: capture = true, but" "$T/agent.log" && fail "[export.cap] said its column is missing"
old_rows() { [ "$(chq "SELECT count() FROM oldddl.drop_samples WHERE dport = $DPORT")" -ge 300 ]; }
wait_for 30 old_rows || fail "rows did not reach oldddl: $(chq "SELECT count() FROM oldddl.drop_samples")"
pass "online: $LITE drop samples in ClickHouse once each, with host, job and external labels; their packet captures ($((${#lite_cap} / 2)) bytes for row $id) only where capture = true, byte for byte"

# ---- 4. a database not created yet: kept, then sent ----
bad() { metric "sysobs_export_$1{destination=\"bad\"${2:-}}"; }
bad_retried() { r=$(bad rows_retried_total); [ "${r%.*}" -gt 0 ]; }
wait_for 30 bad_retried || fail "the destination without its database is not retried"
assert_eq "rows refused by the destination without its database" 0 "$(bad rows_dropped_total ',reason="refused"')"
assert_eq "rows it sent" 0 "$(bad rows_sent_total)"
assert_ge "rows it keeps" 300 "$(bad pending_rows)"
grep -q 'export.bad: .*Code: 81' "$T/agent.log" || fail "the 404's reason is not in the log"
sed "s/\bsysobs\./nosuchdb./g; s/DATABASE IF NOT EXISTS sysobs;/DATABASE IF NOT EXISTS nosuchdb;/" \
	"$T/ddl.sql" | clickhouse-client --port "$CH_TCP" --multiquery || fail "cannot create nosuchdb"
bad_drained() { [ "$(bad pending_rows)" = 0 ]; }
wait_for 30 bad_drained || fail "the kept rows were not sent once the database existed: pending $(bad pending_rows)"
bcur=$(sqlite3 "$DBF" "SELECT value FROM store_meta WHERE key = 'cursor.export.bad'")
blite=$(sqlite3 "$DBF" "SELECT count(*) FROM drop_samples WHERE id <= $bcur")
assert_eq "rows in the late database = SQLite's (up to id $bcur)" "$blite" \
	"$(chq "SELECT uniqExact(db_id, id) FROM nosuchdb.drop_samples WHERE id <= $bcur")"
assert_eq "rows refused" 0 "$(bad rows_dropped_total ',reason="refused"')"
pass "a database not created yet (404, Code: 81): rows kept and retried, none refused; created, all $blite arrived"

# ---- 3. outage, backlog, kill -9 ----
stop_clickhouse
make_drops 3000
retried() { r=$(metric 'sysobs_export_rows_retried_total{destination="ch"}'); [ "${r%.*}" -gt 0 ]; }
wait_for 20 retried || fail "no retry while ClickHouse is down"
backlog() { p=$(pending); [ "${p:-0}" -ge 2000 ]; }
wait_for 20 backlog || fail "no backlog while ClickHouse is down: pending $(pending)"
before=$(pending)
sent0=$(metric 'sysobs_export_rows_sent_total{destination="ch"}')
start_clickhouse
some_sent() { s=$(metric 'sysobs_export_rows_sent_total{destination="ch"}'); [ "${s%.*}" -gt "${sent0%.*}" ]; }
wait_for 30 some_sent || fail "nothing sent after ClickHouse came back"
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
AGENT_PID=
mid=$(cursor "$DBF")
start_agent
wait_for 60 caught_up || fail "backlog not drained after the restart: pending $(pending)"
compare "$DBF" shard1 "after outage and kill -9"
raw=$(chq "SELECT count() FROM shard1.drop_samples WHERE id <= $(cursor "$DBF")")
dups=$((raw - LITE))
echo "FIGURE: backlog $before rows; kill -9 at cursor $mid; raw rows $raw, distinct $LITE, duplicates $dups"
[ "$dups" -le "$BATCH" ] || fail "a crash resent more than one batch: $dups duplicates (batch $BATCH)"
pass "outage of ClickHouse with $before rows pending, kill -9 during the drain: nothing lost, $dups raw duplicates (<= one batch), none after FINAL"
stop_agent

# ---- 5. two hosts, two shards, one fleet query ----
DBA=$DBF DBB=$T/b.db
agent_config hostB shard2 "$DBB"
start_agent
B_PID=$AGENT_PID B_PORT=$PORT
on_exit "kill -9 $B_PID 2>/dev/null"
agent_config hostA shard1 "$DBA"
start_agent
n0A=$(sqlite3 "$DBA" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT")
n0B=$(sqlite3 "$DBB" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT")
make_drops 500
# each agent has its samples committed, then sent
# (or counted the records its BPF ring buffer had no room for: a slow,
# sanitizer-built reader loses a few)
have_drops() {
	local lost
	lost=$(PORT=$3 metric sysobs_drop_samples_lost_total)
	[ $(($(sqlite3 "$1" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT") + ${lost:-0})) -ge $(($2 + 500)) ]
}
wait_for 30 have_drops "$DBA" "$n0A" "$PORT" || fail "hostA did not record the 500 drops"
wait_for 30 have_drops "$DBB" "$n0B" "$B_PORT" || fail "hostB did not record the 500 drops"
lostA=$(metric sysobs_drop_samples_lost_total)
lostB=$(PORT=$B_PORT metric sysobs_drop_samples_lost_total)
echo "FIGURE: ring-buffer records lost (counted): hostA ${lostA:-0}, hostB ${lostB:-0}"
# caught up past the 500: the pending gauge alone may still say the 0 of
# the turn before they were committed (a turn a send_interval)
sent_all() {
	local c
	c=$(cursor "$DBF")
	[ -n "$c" ] && [ "$c" -ge "$(sqlite3 "$DBF" "SELECT max(id) FROM drop_samples WHERE dport = $DPORT")" ]
}
DBF=$DBA
wait_for 30 sent_all || fail "hostA did not catch up"
PORT_A=$PORT PORT=$B_PORT DBF=$DBB
wait_for 30 sent_all || fail "hostB did not catch up"
PORT=$PORT_A
# docs/fleet.md: "which hosts dropped packets to this address, and why", per host
for h in A B; do
	eval "db=\$DB$h lost=\${lost$h:-0}"
	cur=$(cursor "$db")
	want=$(sqlite3 "$db" "SELECT count(*) FROM drop_samples WHERE daddr = '127.0.0.1' AND dport = $DPORT AND id <= $cur")
	got=$(chq "SELECT uniqExact(db_id, id) FROM sysobs.drop_samples_all WHERE host = 'host$h' AND daddr = '127.0.0.1' AND dport = $DPORT AND id <= $cur")
	assert_eq "fleet query over the Distributed table: drops to 127.0.0.1:$DPORT of host$h" "$want" "$got"
	[ $((want + lost)) -ge 500 ] || fail "host$h: $want drops (and $lost lost) to 127.0.0.1:$DPORT up to id $cur; rows: $(sqlite3 "$db" "SELECT count(*), max(id), sum(dport = $DPORT) FROM drop_samples"); $(grep -c . "$T/agent.log") log lines"
done
hosts=$(chq "SELECT groupUniqArray(host) FROM sysobs.drop_samples_all" | tr -d '[]')
assert_eq "hosts in the Distributed table" "'hostA','hostB'" "$(tr ',' '\n' <<<"$hosts" | sort | paste -sd,)"
kill -TERM "$B_PID"
wait "$B_PID" || fail "hostB's agent exited with $? after SIGTERM"
stop_agent
pass "two agents into two shards: the Distributed table's fleet query matches each host's SQLite"
