#!/usr/bin/env bash
# mptcp collector under load, on the real kernel, watching both namespaces of
# the two-path topology (two event sockets in one epoll fd).
#
# 1. 1,000 MPTCP connections with 2 subflows each, opened and closed as fast
#    as possible (50 at a time). Without overrun, every event is in the
#    history: per namespace and type exactly what `ip mptcp monitor` saw on
#    the client side, and the same counts on the server side; live state
#    ends empty. With overruns, they are counted and the live state is
#    still right (empty) after the resync.
# 2. Forced overrun: the agent restarted with a 4 KiB receive buffer and
#    SIGSTOPped while 300 connections x 2 subflows open and stay open. After
#    SIGCONT it must count overruns, resync from sock_diag and show exactly
#    those 300 connections with 2 subflows in each namespace plus the
#    server's listener; then, after they close, none.
# 3. Subflow reset: the client's path-2 subflow of a held connection killed
#    with `ss -K`; its RST carries MP_TCPRST, so the server's SUB_CLOSED has
#    RESET_REASON 0: sysobs_mptcp_subflow_resets_total{reason="unspec"} 1 and
#    the reason in the server token's history.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
need_cmd sqlite3
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"
ulimit -n 8192 2>/dev/null
N=${MPTCP_BURST_N:-1000}
HOLD=${MPTCP_HOLD_N:-300}

mptcp_topo_up || fail "topology setup failed"
INO_A=$(stat -L -c %i "/run/netns/$NS_A")
INO_B=$(stat -L -c %i "/run/netns/$NS_B")

# The server namespace is named the other way the config allows: through a
# process living in it.
ip netns exec "$NS_B" sleep 600 &
HOLDER=$!
on_exit "kill $HOLDER 2>/dev/null"
write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS_A, /proc/$HOLDER/ns/net
INI
cp "$T/sysobsd.ini" "$T/base.ini"
start_agent

MP_TIMEOUT=300 mptcp_server 0.0.0.0

timeout 200 ip -n "$NS_A" mptcp monitor >"$T/monitor.txt" 2>&1 &
MON=$!
on_exit "kill $MON 2>/dev/null"
sleep 0.5

# ---- 1. open/close burst --------------------------------------------------
ip netns exec "$NS_A" timeout 200 "$PEER" burst "$MP_B1" "$MP_PORT" -n "$N" -s 2 -b 50 -t 5000 \
	>"$T/burst.txt" 2>&1
rc=$?
cat "$T/burst.txt"
[ $rc = 0 ] || [ $rc = 3 ] || fail "burst client failed (rc $rc)"
grep -q "connections=$N " "$T/burst.txt" || fail "burst did not open $N connections"

# Settle: history rows stop growing.
db_count() { sqlite3 "file:$T/sysobs.db?mode=ro" "SELECT count(*) FROM mptcp_events" 2>/dev/null; }
prev=-1
for _ in $(seq 1 100); do
	cur=$(db_count)
	[ "$cur" = "$prev" ] && [ -n "$cur" ] && break
	prev=$cur
	sleep 0.3
done
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null

overruns=$(metric sysobs_mptcp_overruns_total)
echo "phase 1: overruns=$overruns history_rows=$(db_count)"
no_conn() {
	[ "$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -r .n_connections)" = 0 ]
}
wait_for 10 no_conn || fail "live state not empty after the burst"
assert_eq "gauge connections after burst" 0 "$(metric sysobs_mptcp_connections)"
assert_eq "gauge subflows after burst" 0 "$(metric sysobs_mptcp_subflows)"

count() { # netns type
	sqlite3 "file:$T/sysobs.db?mode=ro" \
		"SELECT count(*) FROM mptcp_events WHERE netns = $1 AND type = '$2'"
}
mon_count() { grep -c "^\[ *$1\]" "$T/monitor.txt"; }
if [ "$overruns" = 0 ]; then
	for t in CREATED ESTABLISHED SUB_ESTABLISHED CLOSED; do
		m=$t
		[ $t = SUB_ESTABLISHED ] && m=SF_ESTABLISHED
		a=$(count "$INO_A" $t)
		mc=$(mon_count $m)
		echo "client $t: agent=$a monitor=$mc server=$(count "$INO_B" $t)"
		assert_eq "client-side $t vs ip mptcp monitor" "$mc" "$a"
	done
	for t in CREATED ESTABLISHED CLOSED; do
		assert_eq "client $t" "$N" "$(count "$INO_A" $t)"
		assert_eq "server $t" "$N" "$(count "$INO_B" $t)"
	done
	reached=$(sed -n 's/.*reached=\([0-9]*\).*/\1/p' "$T/burst.txt")
	assert_ge "client SUB_ESTABLISHED" "$reached" "$(count "$INO_A" SUB_ESTABLISHED)"
	assert_eq "server SUB_ESTABLISHED = client's" "$(count "$INO_A" SUB_ESTABLISHED)" \
		"$(count "$INO_B" SUB_ESTABLISHED)"
	assert_eq "unmatched events" 0 "$(metric sysobs_mptcp_unmatched_events_total)"
	assert_eq "server LISTENER_CREATED" 1 "$(count "$INO_B" LISTENER_CREATED)"
	assert_eq "listener in live state" "$MP_PORT" \
		"$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$INO_B" | jq -r '.listeners[0].port')"
	# History by token among 8,000 rows: the middle client connection.
	tok=$(sqlite3 "file:$T/sysobs.db?mode=ro" "SELECT token FROM mptcp_events WHERE netns = $INO_A AND type = 'CREATED' ORDER BY id LIMIT 1 OFFSET $((N / 2))")
	api GET "/api/v1/mptcp/events?token=$(printf %08x "$tok")&netns=$INO_A" >"$T/body"
	assert_eq "history of token $tok" "CREATED,ESTABLISHED,SUB_ESTABLISHED,CLOSED" \
		"$(jq -r '[.data | reverse | .[].type] | join(",")' "$T/body")"
	assert_eq "lifetime observations (2 subflows x 2 sides)" \
		$((2 * $(count "$INO_A" SUB_ESTABLISHED) + 2 * N)) \
		"$(metric sysobs_mptcp_subflow_lifetime_seconds_count)"
	pass "burst: $N connections x 2 subflows, no overrun, every event stored, same as ip mptcp monitor"
else
	assert_ge "resyncs after overruns" 1 "$(metric sysobs_mptcp_resyncs_total)"
	pass "burst: $N connections x 2 subflows, $overruns overruns counted, live state right after resync"
fi
stop_agent

# ---- 2. forced overrun, resync of held connections ------------------------
cp "$T/base.ini" "$T/sysobsd.ini"
sed -i 's|^netns = .*|&\nrcvbuf = 4k|' "$T/sysobsd.ini"
start_agent
kill -STOP "$AGENT_PID"
on_exit "kill -CONT $AGENT_PID 2>/dev/null"
mkfifo "$T/hold"
ip netns exec "$NS_A" timeout 200 "$PEER" burst "$MP_B1" "$MP_PORT" -n "$HOLD" -s 2 -H -t 10000 \
	<"$T/hold" >"$T/hold.txt" 2>&1 &
HCLI=$!
on_exit "kill $HCLI 2>/dev/null"
exec 5>"$T/hold"
wait_for 60 grep -q '^held' "$T/hold.txt" || { kill -CONT "$AGENT_PID"; fail "held connections not up"; }
cat "$T/hold.txt"
grep -q "held $HOLD reached=$HOLD failed=0" "$T/hold.txt" ||
	{ kill -CONT "$AGENT_PID"; fail "not every held connection got 2 subflows"; }
kill -CONT "$AGENT_PID"

resynced() {
	local b
	b=$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections") || return 1
	[ "$(jq --argjson a "$INO_A" '[.data[] | select(.netns == $a and (.subflows | length) == 2)] | length' <<<"$b")" = "$HOLD" ] &&
		[ "$(jq --argjson b "$INO_B" '[.data[] | select(.netns == $b and (.subflows | length) == 2)] | length' <<<"$b")" = "$HOLD" ] &&
		[ "$(jq -r .n_connections <<<"$b")" = $((2 * HOLD)) ]
}
wait_for 30 resynced || fail "live state after overrun is not $HOLD+$HOLD connections with 2 subflows: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -c '{n_connections, n_subflows, namespaces}')"
ov=$(metric sysobs_mptcp_overruns_total)
assert_ge "overruns counted" 1 "$ov"
assert_ge "resyncs" 2 "$(metric sysobs_mptcp_resyncs_total)"
assert_eq "gauge connections" $((2 * HOLD)) "$(metric sysobs_mptcp_connections)"
assert_eq "gauge subflows" $((4 * HOLD)) "$(metric sysobs_mptcp_subflows)"
# Filters of the live route: one namespace, a capped answer.
api GET "/api/v1/mptcp/connections?netns=$INO_B" >"$T/body"
assert_eq "netns filter" "$HOLD $((2 * HOLD)) $HOLD false" \
	"$(jq -r '"\(.n_connections) \(.n_subflows) \(.data | length) \(.truncated)"' "$T/body")"
api GET "/api/v1/mptcp/connections?limit=10" >"$T/body"
assert_eq "limit" "$((2 * HOLD)) 10 true" \
	"$(jq -r '"\(.n_connections) \(.data | length) \(.truncated)"' "$T/body")"
api GET "/api/v1/mptcp/connections?limit=0" >/dev/null
assert_eq "bad limit" 400 "$HTTP_CODE"
api GET /api/v1/mptcp/connections >"$T/body"
assert_eq "server listener after resync" 1 \
	"$(jq --argjson b "$INO_B" "[.listeners[] | select(.netns == \$b and .port == $MP_PORT)] | length" "$T/body")"
# Subflow details from sock_diag: client subflows use ids 0 and 2, path 2's
# source address, the right interface.
IFIDX=$(ip netns exec "$NS_A" cat /sys/class/net/mpa2/ifindex)
assert_eq "client path-2 subflows (loc_id 2, $MP_A2, if $IFIDX)" "$HOLD" \
	"$(jq --argjson a "$INO_A" --arg s "$MP_A2" --argjson i "$IFIDX" \
		'[.data[] | select(.netns == $a) | .subflows[] | select(.loc_id == 2 and .saddr == $s and .if_idx == $i)] | length' "$T/body")"
echo close >&5
exec 5>&-
wait "$HCLI"
wait_for 30 no_conn || fail "live state not empty after the held connections closed: $(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" | jq -c '{n_connections, n_subflows}')"
assert_eq "gauge subflows at the end" 0 "$(metric sysobs_mptcp_subflows)"
echo "phase 2: overruns=$(metric sysobs_mptcp_overruns_total) resyncs=$(metric sysobs_mptcp_resyncs_total)"
stop_agent
pass_overrun="forced overrun: $ov overruns counted, live state resynced from sock_diag to $HOLD+$HOLD connections x 2 subflows, then empty"

# ---- 3. subflow reset by reason -------------------------------------------
cp "$T/base.ini" "$T/sysobsd.ini"
start_agent
assert_eq "no resets yet" 0 "$(metric 'sysobs_mptcp_subflow_resets_total{reason="unspec"}')"
mkfifo "$T/rctl"
ip netns exec "$NS_A" timeout 60 "$PEER" client "$MP_B1" "$MP_PORT" -s 2 <"$T/rctl" >"$T/rcli.txt" 2>&1 &
RCLI=$!
on_exit "kill $RCLI 2>/dev/null"
exec 6>"$T/rctl"
wait_for 10 grep -q '^token=.*subflows=2' "$T/rcli.txt" || fail "reset phase: no 2-subflow connection"
ip netns exec "$NS_A" ss -K -t src "$MP_A2" >/dev/null 2>&1 || skip "ss -K unsupported (CONFIG_INET_DIAG_DESTROY)"
reset_seen() { [ "$(metric 'sysobs_mptcp_subflow_resets_total{reason="unspec"}')" = 1 ]; }
wait_for 10 reset_seen || fail "no reset counted: $(curl -s "http://127.0.0.1:$PORT/metrics" | grep resets_total)"
echo close >&6
exec 6>&-
wait "$RCLI"
reset_row() {
	stok=$(sqlite3 "file:$T/sysobs.db?mode=ro" "SELECT token FROM mptcp_events WHERE netns = $INO_B AND type = 'SUB_CLOSED' AND reset_reason IS NOT NULL ORDER BY id DESC LIMIT 1" 2>/dev/null)
	[ -n "$stok" ]
}
# The writer commits in batches: wait for the row.
wait_for 5 reset_row || fail "no server SUB_CLOSED with a reset reason in the history"
api GET "/api/v1/mptcp/events?token=$(printf %08x "$stok")&netns=$INO_B&type=SUB_CLOSED" >"$T/body"
r=$(jq -c '[.data[] | select(.type == "SUB_CLOSED")][0]' "$T/body")
assert_eq "reset reason" 0 "$(jq -r .reset_reason <<<"$r")"
assert_eq "reset reason name" unspec "$(jq -r .reset_reason_name <<<"$r")"
assert_eq "reset error (ECONNRESET)" 104 "$(jq -r .error <<<"$r")"
assert_eq "reset subflow peer address" "$MP_A2" "$(jq -r .daddr <<<"$r")"
stop_agent
pass "$pass_overrun"
pass "subflow reset: counted by reason (unspec) and stored with its reason"
