#!/usr/bin/env bash
# mptcp collector over IPv6, and the resync at start: the two-path topology
# gets IPv6 addresses and the server announces its path-2 address (signal
# endpoint id 5; IPv6, unlike IPv4, does not treat an unrouted destination of
# a device-bound socket as on-link, so the second path needs the announce).
# One IPv6 MPTCP connection: ANNOUNCED and the second subflow to the announced
# address are checked in the live state and against `ip mptcp monitor`; then
# the agent restarts while the connection is up and must rebuild it (both
# subflows, ids, addresses) from sock_diag before any event arrives; the
# CLOSED seen by the second run completes the history.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

A1=fd00:231:1::1 B1=fd00:231:1::2 A2=fd00:231:2::1 B2=fd00:231:2::2
mptcp_topo_up || fail "topology setup failed"
ip -n "$NS_A" addr add $A1/64 dev mpa1 nodad || fail "ipv6 address"
ip -n "$NS_A" addr add $A2/64 dev mpa2 nodad
ip -n "$NS_B" addr add $B1/64 dev mpb1 nodad
ip -n "$NS_B" addr add $B2/64 dev mpb2 nodad
ip -n "$NS_B" mptcp endpoint add $B2 dev mpb2 id 5 signal || fail "ipv6 signal endpoint"

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS_A
INI
start_agent
timeout 120 ip -n "$NS_A" mptcp monitor >"$T/monitor.txt" 2>&1 &
MON=$!
on_exit "kill $MON 2>/dev/null"
sleep 0.5

mptcp_server ::
mptcp_client "$B1" 2
grep -q 'subflows=2' "$T/client.txt" || fail "no second IPv6 subflow: $(cat "$T/client.txt")"

check_live() { # expect_resynced
	local b c sf
	b=$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections") || return 1
	c=$(jq -c --argjson t "$TOKEN" '.data[] | select(.token == $t)' <<<"$b")
	[ -n "$c" ] && [ "$(jq -r '.subflows | length' <<<"$c")" = 2 ] || return 1
	[ "$(jq -r .family <<<"$c")" = ipv6 ] && [ "$(jq -r .saddr <<<"$c")" = $A1 ] &&
		[ "$(jq -r .daddr <<<"$c")" = $B1 ] && [ "$(jq -r .resynced <<<"$c")" = "$1" ] || return 1
	sf=$(jq -c --arg a $A2 '.subflows[] | select(.saddr == $a)' <<<"$c")
	[ -n "$sf" ] && [ "$(jq -r .rem_id <<<"$sf")" = 5 ] && [ "$(jq -r .daddr <<<"$sf")" = $B2 ] &&
		[ "$(jq -r .family <<<"$sf")" = ipv6 ] || return 1
	SF_LOC_ID=$(jq -r .loc_id <<<"$sf")
	sf=$(jq -c --arg a $A1 '.subflows[] | select(.saddr == $a)' <<<"$c")
	[ -n "$sf" ] && [ "$(jq -r .loc_id <<<"$sf")" = 0 ]
}
wait_for 5 check_live false || fail "live IPv6 connection wrong: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections")"
LIVE_LOC_ID=$SF_LOC_ID
api GET /api/v1/mptcp/connections >"$T/body"
assert_eq "announced address" "5 $B2 $MP_PORT null" \
	"$(jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .addresses[0] | "\(.id) \(.addr) \(.port) \(.removed)"' "$T/body")"

# Restart: the new agent learns the connection from sock_diag at start.
stop_agent
start_agent
wait_for 5 check_live true || fail "IPv6 connection not resynced at start: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections")"
assert_eq "path-2 local id from sock_diag = from events" "$LIVE_LOC_ID" "$SF_LOC_ID"
assert_eq "gauge subflows after resync at start" 2 "$(metric sysobs_mptcp_subflows)"

# The server marks its announced address backup (MP_PRIO: SUB_PRIORITY here),
# then withdraws it (RM_ADDR: REMOVED, and the subflow to it closes).
ip -n "$NS_B" mptcp endpoint change id 5 backup || fail "endpoint change"
backup_seen() {
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -e --argjson t "$TOKEN" --arg a $A2 \
		'.data[] | select(.token == $t) | .subflows[] | select(.saddr == $a and .backup == true)' >/dev/null
}
wait_for 5 backup_seen || fail "SUB_PRIORITY not applied: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections")"
ip -n "$NS_B" mptcp endpoint delete id 5 || fail "endpoint delete"
removed_seen() {
	local b
	b=$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections") || return 1
	jq -e --argjson t "$TOKEN" '.data[] | select(.token == $t) |
		select((.subflows | length) == 1 and (.addresses[] | select(.id == 5 and .removed != null)))' <<<"$b" >/dev/null
}
wait_for 5 removed_seen || fail "REMOVED/SUB_CLOSED not applied: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections")"

echo close >&4
exec 4>&-
wait "$CLI"
no_conn() {
	[ "$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -r .n_connections)" = 0 ]
}
wait_for 5 no_conn || fail "connection still live after close"
sleep 0.5
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null

api GET "/api/v1/mptcp/events?token=$TOKEN_HEX" >"$T/body"
assert_eq "history status" 200 "$HTTP_CODE"
assert_eq "history across both runs" \
	"CREATED,ESTABLISHED,ANNOUNCED,SUB_ESTABLISHED,SUB_PRIORITY,REMOVED,SUB_CLOSED,CLOSED" \
	"$(jq -r '[.data | reverse | .[].type] | join(",")' "$T/body")"
r=$(jq -c '.data | reverse | .[4]' "$T/body")
assert_eq "SUB_PRIORITY backup" true "$(jq -r .backup <<<"$r")"
assert_eq "SUB_PRIORITY rem_id" 5 "$(jq -r .rem_id <<<"$r")"
r=$(jq -c '.data | reverse | .[5]' "$T/body")
assert_eq "REMOVED rem_id" 5 "$(jq -r .rem_id <<<"$r")"
r=$(jq -c '.data | reverse | .[6]' "$T/body")
assert_eq "SUB_CLOSED daddr" $B2 "$(jq -r .daddr <<<"$r")"
r=$(jq -c '.data | reverse | .[2]' "$T/body")
assert_eq "ANNOUNCED rem_id" 5 "$(jq -r .rem_id <<<"$r")"
assert_eq "ANNOUNCED daddr" $B2 "$(jq -r .daddr <<<"$r")"
assert_eq "ANNOUNCED dport" "$MP_PORT" "$(jq -r .dport <<<"$r")"
r=$(jq -c '.data | reverse | .[3]' "$T/body")
assert_eq "SUB_ESTABLISHED saddr" $A2 "$(jq -r .saddr <<<"$r")"
assert_eq "SUB_ESTABLISHED daddr" $B2 "$(jq -r .daddr <<<"$r")"
assert_eq "SUB_ESTABLISHED family" 10 "$(jq -r .family <<<"$r")"
assert_eq "SUB_ESTABLISHED rem_id" 5 "$(jq -r .rem_id <<<"$r")"
assert_eq "SUB_ESTABLISHED loc_id" "$LIVE_LOC_ID" "$(jq -r .loc_id <<<"$r")"
# Same ids, addresses and ports as ip mptcp monitor printed (saddr6=/daddr6=).
hex=$(printf '%08x' "$TOKEN")
mon=$(grep "token=$hex" "$T/monitor.txt" | grep SF_ESTABLISHED)
[ -n "$mon" ] || fail "monitor did not see SF_ESTABLISHED: $(cat "$T/monitor.txt")"
for kv in "saddr6=$A2" "daddr6=$B2" "sport=$(jq -r .sport <<<"$r")" "dport=$(jq -r .dport <<<"$r")" \
	"locid=$LIVE_LOC_ID" "remid=5"; do
	grep -q " $kv" <<<"$mon" || fail "monitor line lacks $kv: $mon"
done
mon=$(grep "token=$hex" "$T/monitor.txt" | grep ANNOUNCED)
for kv in "daddr6=$B2" "remid=5" "dport=$MP_PORT"; do
	grep -q " $kv" <<<"$mon" || fail "monitor ANNOUNCED line lacks $kv: $mon"
done
assert_eq "monitor events for the token" 8 "$(grep -c "token=$hex" "$T/monitor.txt")"
# Every event, every field, against the monitor.
mptcp_norm_monitor "$T/monitor.txt" "$hex" >"$T/mon.norm"
# (backup is a JSON boolean; the monitor prints 0/1)
jq '.data | reverse | map(if has("backup") then .backup = (if .backup then 1 else 0 end) else . end)' \
	"$T/body" | mptcp_norm_rows >"$T/agent.norm"
diff -u "$T/mon.norm" "$T/agent.norm" >&2 || fail "agent events differ from ip mptcp monitor"
mon=$(grep "token=$hex" "$T/monitor.txt" | grep SF_PRIO)
for kv in "saddr6=$A2" "daddr6=$B2" "backup=1" "remid=5"; do
	grep -q " $kv" <<<"$mon" || fail "monitor SF_PRIO line lacks $kv: $mon"
done
stop_agent
pass "mptcp over IPv6: live state, ANNOUNCED/SUB_ESTABLISHED/SUB_PRIORITY/REMOVED/SUB_CLOSED with fields equal to ip mptcp monitor, resync from sock_diag at start (v6 dump), history across restarts (/api/v1/mptcp/events?token=N)"
