#!/usr/bin/env bash
# mptcp collector end to end, on the real kernel: two namespaces joined by two
# veth pairs (tests/integration/mptcp_topo.sh), the agent watching the client
# namespace, `ip mptcp monitor` listening on the same namespace as a
# reference. One MPTCP connection gets a second subflow on path 2; path 2's
# link goes down (the subflow times out: SUB_CLOSED error 110); the
# connection closes. Asserted: the exact event sequence and fields in the
# history (GET /api/v1/mptcp/events?token=N), the same events and fields as
# ip mptcp monitor, the live state over REST (GET /api/v1/mptcp/connections)
# before/after, metrics.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

mptcp_topo_up || fail "topology setup failed"
# Short TCP retransmission budget on the client: a subflow whose link went
# down times out in seconds, not minutes.
ip netns exec "$NS_A" sysctl -qw net.ipv4.tcp_retries2=1

# A third, idle namespace with the userspace path manager: the agent must
# warn about it once (KERNEL.md trap) and watch it without trouble.
NS_C=sysobs-mp-$$-c
ip netns add "$NS_C" || fail "cannot create $NS_C"
on_exit "ip netns del $NS_C 2>/dev/null"
if ip netns exec "$NS_C" sysctl -qw net.mptcp.pm_type=1 2>/dev/null; then
	PM_TYPE_TEST=1
else
	PM_TYPE_TEST=0
	echo "note: net.mptcp.pm_type not settable here; userspace-PM warning not tested"
fi

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS_A,/run/netns/$NS_C
INI
start_agent
if [ "$PM_TYPE_TEST" = 1 ]; then
	wait_for 5 grep -q "netns /run/netns/$NS_C.*pm_type=1" "$T/agent.log" ||
		fail "no warning about net.mptcp.pm_type=1 in $NS_C"
	assert_eq "pm_type warning once" 1 "$(grep -c "pm_type=1" "$T/agent.log")"
	grep -q "netns /run/netns/$NS_A.*pm_type=1" "$T/agent.log" && fail "warned about $NS_A"
fi
NETNS_INO=$(stat -L -c %i "/run/netns/$NS_A")

# Reference listener on the same namespace, started before any traffic.
timeout 120 ip -n "$NS_A" mptcp monitor >"$T/monitor.txt" 2>&1 &
MON=$!
on_exit "kill $MON 2>/dev/null"
# The agent joined the group at start; the monitor needs a moment.
sleep 0.5

wait_for 10 curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" -o /dev/null ||
	fail "connections route not answering"
api GET /api/v1/mptcp/connections >"$T/body"; body=$(cat "$T/body")
assert_eq "connections route status" 200 "$HTTP_CODE"
assert_eq "watched netns" "$NETNS_INO" "$(jq -r '.namespaces[0].netns' <<<"$body")"
assert_eq "no connection yet" 0 "$(jq -r '.n_connections' <<<"$body")"

mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2
grep -q 'subflows=2' "$T/client.txt" || fail "second subflow not established: $(cat "$T/client.txt")"
# One connection's history: its rows of mptcp_events, newest first.
history() { api GET "/api/v1/mptcp/events?token=$TOKEN_HEX$1"; }

# Live state: one connection, two subflows (initial + path 2).
conn_ok() {
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" |
		jq -e --argjson t "$TOKEN" '.data[] | select(.token == $t) | select(.subflows | length == 2)' >/dev/null
}
wait_for 5 conn_ok || fail "live state does not show token $TOKEN with 2 subflows: $(api GET /api/v1/mptcp/connections)"
api GET /api/v1/mptcp/connections >"$T/body"; body=$(cat "$T/body")
c=$(jq --argjson t "$TOKEN" '.data[] | select(.token == $t)' <<<"$body")
assert_eq "conn saddr" "$MP_A1" "$(jq -r .saddr <<<"$c")"
assert_eq "conn daddr" "$MP_B1" "$(jq -r .daddr <<<"$c")"
assert_eq "conn dport" "$MP_PORT" "$(jq -r .dport <<<"$c")"
assert_eq "conn established" true "$(jq -r .established <<<"$c")"
assert_eq "conn client side" false "$(jq -r .server_side <<<"$c")"
assert_eq "conn netns" "$NETNS_INO" "$(jq -r .netns <<<"$c")"
assert_eq "token hex" "$TOKEN_HEX" "$(jq -r .token_hex <<<"$c")"
assert_eq "conn family" ipv4 "$(jq -r .family <<<"$c")"
[[ $(jq -r .created <<<"$c") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z$ ]] ||
	fail "created is not RFC 3339 with 9 fractional digits: $c"
assert_eq "live counts" '[1,2,false]' "$(jq -c '[.n_connections, .n_subflows, .truncated]' <<<"$body")"
assert_eq "namespace overruns (int64 as a string)" '"0"' "$(jq -c '.namespaces[0].overruns' <<<"$body")"
sf2=$(jq -c --arg a "$MP_A2" '.subflows[] | select(.saddr == $a)' <<<"$c")
[ -n "$sf2" ] || fail "no subflow from $MP_A2 in live state: $c"
assert_eq "subflow 2 loc_id" 2 "$(jq -r .loc_id <<<"$sf2")"
assert_eq "subflow 2 rem_id" 0 "$(jq -r .rem_id <<<"$sf2")"
assert_eq "subflow 2 daddr" "$MP_B1" "$(jq -r .daddr <<<"$sf2")"
assert_eq "subflow 2 backup" false "$(jq -r .backup <<<"$sf2")"
IFIDX=$(ip netns exec "$NS_A" cat /sys/class/net/mpa2/ifindex)
assert_eq "subflow 2 if_idx" "$IFIDX" "$(jq -r .if_idx <<<"$sf2")"
SF2_SPORT=$(jq -r .sport <<<"$sf2")
assert_eq "gauge connections" 1 "$(metric sysobs_mptcp_connections)"
assert_eq "gauge subflows" 2 "$(metric sysobs_mptcp_subflows)"
# History of the live connection (its span is still open); the writer
# commits in batches, so give it a moment.
live_history() {
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/events?token=$TOKEN_HEX" >"$T/body" &&
		[ "$(jq -r '[.data | reverse | .[].type] | join(",")' "$T/body")" = \
			"CREATED,ESTABLISHED,SUB_ESTABLISHED" ]
}
wait_for 5 live_history || fail "live history: $(cat "$T/body")"

# Path 2 goes down; data queued on the connection makes the subflow time out.
ip -n "$NS_A" link set mpa2 down
echo send >&4
sub_closed() {
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" |
		jq -e --argjson t "$TOKEN" '.data[] | select(.token == $t) | select(.subflows | length == 1)' >/dev/null
}
wait_for 40 sub_closed || fail "SUB_CLOSED of path 2 not seen within 40 s: $(api GET /api/v1/mptcp/connections)"
api GET /api/v1/mptcp/connections >"$T/body"; body=$(cat "$T/body")
c=$(jq --argjson t "$TOKEN" '.data[] | select(.token == $t)' <<<"$body")
assert_eq "remaining subflow is the initial one" "$MP_A1" "$(jq -r '.subflows[0].saddr' <<<"$c")"
assert_eq "gauge subflows after SUB_CLOSED" 1 "$(metric sysobs_mptcp_subflows)"

echo close >&4
exec 4>&-
wait "$CLI"
no_conn() {
	[ "$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -r .n_connections)" = 0 ]
}
wait_for 5 no_conn || fail "connection still live after close"
assert_eq "gauge connections after CLOSED" 0 "$(metric sysobs_mptcp_connections)"
assert_eq "gauge subflows after CLOSED" 0 "$(metric sysobs_mptcp_subflows)"
assert_eq "lifetime histogram count" 2 "$(metric sysobs_mptcp_subflow_lifetime_seconds_count)"
sleep 0.5
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null

# History by token (newest first from the API; reversed here).
history "&netns=$NETNS_INO&limit=100" >"$T/body"; hist=$(cat "$T/body")
assert_eq "history status" 200 "$HTTP_CODE"
hist=$(jq '.data | reverse' <<<"$hist")
seq=$(jq -r '[.[].type] | join(",")' <<<"$hist")
assert_eq "event sequence" "CREATED,ESTABLISHED,SUB_ESTABLISHED,SUB_CLOSED,CLOSED" "$seq"
# Paging: 5 events, limit 5 is the last page; limit 4 names a cursor whose
# page holds the one event left (CREATED), and is the last.
assert_eq "limit=5: no next page" '""' "$(history "&limit=5" | jq -c .next_cursor)"
cur=$(history "&limit=4" | jq -r .next_cursor)
[ -n "$cur" ] || fail "limit=4 of 5 events gave no next_cursor"
assert_eq "page 2" '["CREATED"] ""' \
	"$(history "&limit=4&cursor=$cur" | jq -c '[.data[].type], .next_cursor' | tr '\n' ' ' | sed 's/ $//')"
# The type filter, case-insensitive; one row of each type here.
assert_eq "type filter" '["SUB_CLOSED"]' "$(history "&type=sub_closed" | jq -c '[.data[].type]')"
# Rows: id an int64 string, time RFC 3339 with 9 fractional digits, no ts.
r=$(jq -c '.[0]' <<<"$hist")
[ "$(jq -r '.id | type' <<<"$r")" = string ] || fail "id is not an int64 string: $r"
[[ $(jq -r .time <<<"$r") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z$ ]] ||
	fail "time is not RFC 3339 with 9 fractional digits: $r"
assert_eq "no ts field" false "$(jq 'has("ts")' <<<"$r")"
row() { jq -c ".[$1]" <<<"$hist"; }
r=$(row 0)
assert_eq "CREATED saddr" "$MP_A1" "$(jq -r .saddr <<<"$r")"
assert_eq "CREATED daddr" "$MP_B1" "$(jq -r .daddr <<<"$r")"
assert_eq "CREATED dport" "$MP_PORT" "$(jq -r .dport <<<"$r")"
assert_eq "CREATED family" 2 "$(jq -r .family <<<"$r")"
assert_eq "CREATED netns" "$NETNS_INO" "$(jq -r .netns <<<"$r")"
assert_eq "CREATED server_side" false "$(jq -r .server_side <<<"$r")"
CPORT=$(jq -r .sport <<<"$r")
r=$(row 2)
assert_eq "SUB_ESTABLISHED saddr" "$MP_A2" "$(jq -r .saddr <<<"$r")"
assert_eq "SUB_ESTABLISHED daddr" "$MP_B1" "$(jq -r .daddr <<<"$r")"
assert_eq "SUB_ESTABLISHED loc_id" 2 "$(jq -r .loc_id <<<"$r")"
assert_eq "SUB_ESTABLISHED rem_id" 0 "$(jq -r .rem_id <<<"$r")"
assert_eq "SUB_ESTABLISHED sport" "$SF2_SPORT" "$(jq -r .sport <<<"$r")"
assert_eq "SUB_ESTABLISHED backup" false "$(jq -r .backup <<<"$r")"
assert_eq "SUB_ESTABLISHED if_idx" "$IFIDX" "$(jq -r .if_idx <<<"$r")"
r=$(row 3)
assert_eq "SUB_CLOSED saddr" "$MP_A2" "$(jq -r .saddr <<<"$r")"
assert_eq "SUB_CLOSED sport" "$SF2_SPORT" "$(jq -r .sport <<<"$r")"
assert_eq "SUB_CLOSED error (ETIMEDOUT)" 110 "$(jq -r .error <<<"$r")"
r=$(row 4)
assert_eq "CLOSED token" "$TOKEN" "$(jq -r .token <<<"$r")"
assert_eq "CLOSED has no address" null "$(jq -r .saddr <<<"$r")"

# Same events, same fields as ip mptcp monitor (iproute2's own decoder).
mptcp_norm_monitor "$T/monitor.txt" "$TOKEN_HEX" >"$T/mon.norm"
# (backup is a JSON boolean; the monitor prints 0/1)
jq 'map(if has("backup") then .backup = (if .backup then 1 else 0 end) else . end)' <<<"$hist" |
	mptcp_norm_rows >"$T/agent.norm"
if ! diff -u "$T/mon.norm" "$T/agent.norm" >"$T/norm.diff"; then
	cat "$T/monitor.txt" >&2
	cat "$T/norm.diff" >&2
	fail "agent events differ from ip mptcp monitor"
fi
[ "$(wc -l <"$T/mon.norm")" = 5 ] || fail "monitor saw $(wc -l <"$T/mon.norm") events for the token, expected 5"

# Metrics by type (the server namespace is not watched, the third is idle:
# exactly these).
assert_eq "events_total CREATED" 1 "$(metric 'sysobs_mptcp_events_total{type="CREATED"}')"
assert_eq "events_total SUB_ESTABLISHED" 1 "$(metric 'sysobs_mptcp_events_total{type="SUB_ESTABLISHED"}')"
assert_eq "events_total SUB_CLOSED" 1 "$(metric 'sysobs_mptcp_events_total{type="SUB_CLOSED"}')"
assert_eq "events_total CLOSED" 1 "$(metric 'sysobs_mptcp_events_total{type="CLOSED"}')"
assert_eq "overruns" 0 "$(metric sysobs_mptcp_overruns_total)"
assert_eq "unknown events" 0 "$(metric sysobs_mptcp_unknown_events_total)"

# Errors: a token that is no u32 in a printed form is a 400 (the forms:
# integration.mptcp_ids), an unknown token an empty page; the old per-token
# route is gone; the events route lists ours.
api GET /api/v1/mptcp/events?token=notatoken >/dev/null
assert_eq "bad token status" 400 "$HTTP_CODE"
api GET "/api/v1/mptcp/events?token=0x$TOKEN_HEX" >/dev/null
assert_eq "0x token status" 200 "$HTTP_CODE"
api GET /api/v1/mptcp/events?token=4294967296 >/dev/null
assert_eq "token above u32 status" 400 "$HTTP_CODE"
api GET /api/v1/mptcp/events?type=BOGUS >/dev/null
assert_eq "unknown type status" 400 "$HTTP_CODE"
assert_eq "unknown token" '[]' "$(api GET "/api/v1/mptcp/events?token=$(printf %08x $(((TOKEN + 1) % 4294967296)))" | jq -c .data)"
api GET "/api/v1/mptcp/connections/$TOKEN" >/dev/null
assert_eq "old history route" 404 "$HTTP_CODE"
api GET '/api/v1/mptcp/connections?limt=5' >/dev/null
assert_eq "live view, unknown parameter" 400 "$HTTP_CODE"
api GET '/api/v1/mptcp/connections?netns=x' >/dev/null
assert_eq "live view, bad netns" 400 "$HTTP_CODE"
api GET "/api/v1/mptcp/events?token=$TOKEN_HEX&sinse=0" >/dev/null
assert_eq "history, unknown parameter" 400 "$HTTP_CODE"
assert_eq "live view in protobuf" "200 application/x-protobuf" \
	"$(curl -sS -o "$T/pb" -w '%{http_code} %{content_type}' -H 'Accept: application/x-protobuf' \
		"http://127.0.0.1:$PORT/api/v1/mptcp/connections")"
api GET "/api/v1/events?collector=mptcp&limit=100" >"$T/body"; ev=$(cat "$T/body")
assert_eq "events route status" 200 "$HTTP_CODE"
n=$(jq '[.. | objects | select(.table? == "mptcp_events")] | length' <<<"$ev")
assert_ge "mptcp rows in /api/v1/events" 5 "$n"

stop_agent

# Config: a netns that is neither "self" nor an absolute path is a config
# error (exit 2, naming file:line); a namespace that does not exist makes the
# collector unavailable with the path as the reason, and the agent runs on.
cat >"$T/bad.ini" <<INI
[http]
listen = 127.0.0.1:0
[storage]
path = $T/bad.db
[collector.mptcp]
netns = self, relative/name
[agent]
user = root
INI
refused "a bad netns value" "bad.ini:6" --config "$T/bad.ini"
write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/sysobs-mp-$$-missing
INI
start_agent
api GET /api/v1/collectors >"$T/body"
assert_eq "collector state with a missing netns" UNAVAILABLE \
	"$(jq -r '.data[] | select(.name == "mptcp") | .state' "$T/body")"
jq -r '.data[] | select(.name == "mptcp") | .reason' "$T/body" | grep -q "sysobs-mp-$$-missing" ||
	fail "reason does not name the missing netns: $(cat "$T/body")"
api GET /api/v1/mptcp/connections >/dev/null
assert_eq "live route of an unavailable collector" 503 "$HTTP_CODE"
assert_eq "collector_up" 0 "$(metric 'sysobs_collector_up{collector="mptcp"}')"
stop_agent
[ "$PM_TYPE_TEST" = 1 ] && assert_eq "pm_type warning still once" 1 "$(grep -c "pm_type=1" "$T/agent.log")"
pass "mptcp: CREATED/ESTABLISHED/SUB_ESTABLISHED(path 2, ids, ifindex)/SUB_CLOSED(link down, error 110)/CLOSED with fields equal to ip mptcp monitor; live state and gauges before/after; history by token (/api/v1/mptcp/events); config errors and a missing netns"
