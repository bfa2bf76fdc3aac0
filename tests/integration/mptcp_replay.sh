#!/usr/bin/env bash
# [collector.mptcp] record = FILE and replay = FILE end to end, on the real
# kernel: an agent watching both ends of a real MPTCP connection (two
# namespaces, tests/integration/mptcp_topo.sh: a listener, a joined
# subflow, a close, the listener closed) records their datagrams; a second
# agent, with a database of its own, replays the file. Asserted: the replay
# stores the same rows (every field but id and time) and counts the same
# events by type as the live agent did, shows the same namespaces (paths and
# inodes), and its live state ends where the live one did; an agent
# restarted with the same record key appends to the recording. Then bad
# input: the recording cut inside a record, an absurd record length, a
# missing file, record with replay, and record onto a file that is not a
# whole recording each make sysobsd exit 2 naming the key and the reason
# (the offset for a bad file), with nothing stored and no file overwritten.
# A recording stops before a record would take it past record_max_size,
# and what it holds replays.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

mptcp_topo_up || fail "topology setup failed"
# record_connection KEY=VALUE...: an agent watching both namespaces with
# the keys given, one connection with a joined subflow, closed, and its
# listener closed
record_connection() {
	write_base_config kubernetes.cri_socket=off \
		"collector.mptcp.netns=/run/netns/$NS_A,/run/netns/$NS_B" "$@"
	start_agent
	wait_collector mptcp
	mptcp_server 0.0.0.0
	mptcp_client "$MP_B1" 2
	echo close >&4
	exec 4>&-
	wait "$CLI"
	mptcp_stop_server
}
REC=$T/events.rec
record_connection "collector.mptcp.record=$REC"
# Client and server: CREATED ESTABLISHED SUB_ESTABLISHED CLOSED each, and
# the listener's two.
rows_in() { [ "$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/events?limit=100" | jq '.data | length')" = "$1" ]; }
wait_for 20 rows_in 10 || fail "live: not 10 event rows: $(api GET '/api/v1/mptcp/events?limit=100')"

# The rows without their id and time; the counters by type; the namespaces
# (without the name this host gives them: a replay's are another host's).
snapshot() {
	api GET "/api/v1/mptcp/events?limit=100" | jq -S '[.data[] | del(.id, .time)]' >"$T/$1.rows"
	curl -sf "http://127.0.0.1:$PORT/metrics" | grep '^sysobs_mptcp_events_total' >"$T/$1.counts"
	api GET /api/v1/mptcp/connections | jq -S '{n_connections, n_subflows,
		namespaces: [.namespaces[] | del(.netns_name)],
		listeners: (.listeners | length)}' >"$T/$1.live"
}
snapshot live
stop_agent
grep -q "recording the event sockets' datagrams into $REC" "$T/agent.log" ||
	fail "no log line about the recording"
[ -s "$REC" ] || fail "no recording at $REC"
# The agent restarted with the same key: the recording is appended to (its
# namespaces' WATCH records again), not overwritten.
size1=$(stat -c %s "$REC")
cp "$REC" "$T/first.rec"
start_agent
wait_collector mptcp
stop_agent
grep -q "into $REC (appended to the recording there)" "$T/agent.log" ||
	fail "the second agent did not append: $(grep recording "$T/agent.log")"
size=$(stat -c %s "$REC")
[ "$size" -gt "$size1" ] || fail "recording not appended to ($size1 -> $size bytes)"
cmp "$T/first.rec" <(head -c "$size1" "$REC") || fail "the first recording changed"

write_base_config "storage.path=$T/replay.db" kubernetes.cri_socket=off \
	"collector.mptcp.replay=$REC"
start_agent
wait_collector mptcp
wait_for 20 rows_in 10 || fail "replay: not 10 event rows: $(api GET '/api/v1/mptcp/events?limit=100')"
snapshot replay
stop_agent
for s in rows counts live; do
	diff -u "$T/live.$s" "$T/replay.$s" >&2 || fail "replay: $s differ from the live agent's"
done
assert_eq "namespaces replayed" 2 "$(jq '.namespaces | length' "$T/replay.live")"
assert_eq "CLOSED counted" 'sysobs_mptcp_events_total{type="CLOSED"} 2' \
	"$(grep -F "{type=\"CLOSED\"}" "$T/replay.counts")"

# Bad input: exit 2, the key, the reason; no database written.
refuse() {
	local what=$1 want=$2 out rc
	shift 2
	write_base_config "storage.path=$T/bad.db" kubernetes.cri_socket=off "$@"
	out=$("$SYSOBSD" --config "$T/sysobsd.ini" 2>&1)
	rc=$?
	assert_eq "$what: exit status" 2 "$rc"
	grep -q "replay\|record" <<<"$out" || fail "$what: the key is not named: $out"
	grep -qF "$want" <<<"$out" || fail "$what: no '$want' in: $out"
	[ ! -s "$T/bad.db" ] || [ "$(sqlite3 "$T/bad.db" 'select count(*) from mptcp_events' 2>/dev/null || echo 0)" = 0 ] ||
		fail "$what: rows stored"
}
size=$(stat -c %s "$REC")
head -c $((size - 3)) "$REC" >"$T/cut.rec"
refuse "cut recording" "truncated record" "collector.mptcp.replay=$T/cut.rec"
# The first record's length (after the 16-byte file header) made absurd.
cp "$REC" "$T/absurd.rec"
printf '\xff\xff\xff\x7f' | dd of="$T/absurd.rec" bs=1 seek=16 conv=notrunc status=none
refuse "absurd length" "offset 16: record length 2147483647 over the maximum 65536" \
	"collector.mptcp.replay=$T/absurd.rec"
refuse "missing file" "No such file or directory" "collector.mptcp.replay=$T/none.rec"
refuse "record with replay" "replay and record exclude each other" \
	"collector.mptcp.replay=$REC" "collector.mptcp.record=$T/again.rec"
# A file that is not a recording is never overwritten by record.
printf 'precious\n' >"$T/precious.txt"
refuse "record into another file" "exists and is not a whole recording" \
	"collector.mptcp.netns=/run/netns/$NS_A" "collector.mptcp.record=$T/precious.txt"
assert_eq "the other file" precious "$(cat "$T/precious.txt")"
# Nor is a cut recording appended to (its records after the cut would be lost).
refuse "record onto a cut recording" "truncated record" \
	"collector.mptcp.netns=/run/netns/$NS_A" "collector.mptcp.record=$T/cut.rec"
assert_eq "the cut recording" $((size - 3)) "$(stat -c %s "$T/cut.rec")"

# record_max_size: the recording stops before a record would pass it (the
# agent goes on watching), and what it holds replays.
record_connection "storage.path=$T/cap.db" "collector.mptcp.record=$T/cap.rec" \
	collector.mptcp.record_max_size=1k
capped() { grep -q "record: $T/cap.rec reached record_max_size (1024 bytes)" "$T/agent.log"; }
wait_for 10 capped || fail "the recording did not stop at 1k: $(grep record: "$T/agent.log")"
wait_for 20 rows_in 10 || fail "the agent stopped watching with the recording: $(api GET '/api/v1/mptcp/events?limit=100')"
stop_agent
cap_size=$(stat -c %s "$T/cap.rec")
[ "$cap_size" -le 1024 ] || fail "the recording is $cap_size bytes, over record_max_size 1k"
write_base_config "storage.path=$T/cap-replay.db" kubernetes.cri_socket=off \
	"collector.mptcp.replay=$T/cap.rec"
start_agent
wait_collector mptcp
has_rows() { [ "$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/events?limit=100" | jq '.data | length')" -ge 1 ]; }
wait_for 10 has_rows || fail "the capped recording replays no event"
stop_agent
pass "recorded $size bytes of a real connection in two namespaces; the replay has the same 10 rows, counters and namespaces; bad files and keys refused with exit 2; record_max_size 1k stopped a recording at $cap_size bytes, which replays"
