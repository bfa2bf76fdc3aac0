#!/usr/bin/env bash
# mptcp collector: the live state against the kernel's own view, case by
# case, each generated in the two-path topology (tests/integration/
# mptcp_topo.sh) with the agent watching both namespaces, `ip mptcp monitor`
# on both as the reference for events (flags included), and `ss -M` / the
# TCP socket dump (what mptcp_diag and the subflow ULP info say) as the
# reference for what is live. Every case is checked again after a resync
# (the agent restarted: state rebuilt from sock_diag).
#
#   1. dual-stack listener: an IPv6 server socket accepts IPv4 subflows
#      (v4-mapped); after a resync a subflow's SUB_CLOSED must still match:
#      the subflow gauge equals the kernel's subflow count.
#   2. half-close: the client shuts its write side down (FIN_WAIT2, the
#      server CLOSE_WAIT) and still holds the socket: live on both sides,
#      also after a resync, and its CLOSED later matches.
#   2b. both directions shut down, both users still hold their sockets: the
#      connections are in CLOSE (6.18) and still live (CLOSED comes at
#      close()): kept at resync and by the reconciliation.
#   3. fallback: an MPTCP client against a plain TCP server: the kernel
#      sends only CLOSED; a resync must not count it live.
#   4. MP_FASTCLOSE: the client closes with SO_LINGER 0; the server side
#      gets neither SUB_CLOSED nor CLOSED. The periodic reconciliation with
#      the socket dump (reconcile = 1s here) removes it and counts it.
#   5. failed join: the server rejects path 2's SYN+MP_JOIN with a TCP RST
#      (nft); the client gets SUB_CLOSED error=111 without SUB_ESTABLISHED:
#      counted as a join failure by errno, not as unmatched; the fallback's
#      CLOSED (3.) counts as a client fallback.
#   6. backup, side and FLAGS: the client marks its path-2 endpoint backup
#      (MP_PRIO: the server gets SUB_PRIORITY backup=1, the peer's bit); after
#      a resync each side's backup is what its events said; after a restart
#      each connection's side and start time are its CREATED row's (the
#      agent's history); without history each side comes from the initial
#      subflow's flags in the dump (ss: M server, Mm client), the start is
#      absent, not the restart time; CREATED rows
#      carry server_side and deny_join_id0 decoded from FLAGS (the server
#      sets net.mptcp.allow_join_initial_addr_port=0: the client's CREATED
#      has flags=1), equal to ip mptcp monitor.
#   7. subflow lifetime histogram: one connection with two subflows held
#      about 1.5 s on both sides: 4 observations in the (1, 2] s bucket whose
#      sum equals the history's ESTABLISHED/SUB_ESTABLISHED -> CLOSED times;
#      subflows only a resync saw (2.) are not observed.
#   8. MIB: every MPTcpExt counter of both namespaces in /metrics
#      (sysobs_mptcp_mib_total{netns,counter}, MPCurrEstab as the gauge
#      sysobs_mptcp_mib_current) equals `nstat -az` in that namespace, after all the
#      traffic above (fast closes, failed joins, fallbacks included).
#
# Each check prints "FIGURE: name expected=.. got=..". MPTCP_TRUTH_SOFT=1
# makes failed checks non-fatal (to measure an older build), the test still
# exits 1 at the end if any failed.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
need_cmd ss
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

NFAIL=0
# check NAME EXPECTED ACTUAL
check() {
	echo "FIGURE: $1 expected=$2 got=$3"
	if [ "$2" != "$3" ]; then
		NFAIL=$((NFAIL + 1))
		[ "${MPTCP_TRUTH_SOFT:-0}" = 1 ] || fail "$1: expected '$2', got '$3'"
	fi
}

mptcp_topo_up || fail "topology setup failed"
INO_A=$(stat -L -c %i "/run/netns/$NS_A")
INO_B=$(stat -L -c %i "/run/netns/$NS_B")
write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS_A,/run/netns/$NS_B
reconcile = 1s
INI

# The kernel's view of one namespace: live MPTCP connections (ss -M, not
# listening, not fallen back to TCP) and their subflows (TCP sockets with the
# mptcp ULP, established or half-closed, owned by a connection).
real_conns() {
	ip netns exec "$1" ss -MHnaeiO 2>/dev/null | awk '$1 != "LISTEN" && !/fallback/ &&
		(/ino:[1-9]/ || $1 == "ESTAB" || $1 == "CLOSE-WAIT" || $1 == "SYN-RECV")' | grep -c .
}
real_subflows() {
	ip netns exec "$1" ss -tHn -O -i -e state established state close-wait state fin-wait-1 \
		state fin-wait-2 state last-ack state closing 2>/dev/null | grep "tcp-ulp-mptcp" | grep -vc 'ino:0 '
}
gauge_conns() { curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$1" | jq -r .n_connections; }
gauge_subflows() { curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$1" | jq -r .n_subflows; }
# until_eq TIMEOUT_S EXPECTED CMD...: waits until CMD prints EXPECTED; prints what it printed last.
until_eq() {
	local t=$1 want=$2 got
	shift 2
	local end=$((SECONDS + t))
	while :; do
		got=$("$@")
		[ "$got" = "$want" ] || [ $SECONDS -ge "$end" ] || { sleep 0.1; continue; }
		echo "$got"
		return 0
	done
}

# Events of one token from `ip mptcp monitor`, flags kept: "TYPE k=v ...".
norm_monitor() {
	grep "token=$2" "$1" | sed -E 's/^\[ *([A-Z_]+)\] /\1 /' |
		sed -E 's/^SF_PRIO /SUB_PRIORITY /; s/^SF_/SUB_/; s/saddr[46]=/saddr=/; s/daddr[46]=/daddr=/' |
		awk '{ out = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "token") out = out " " $i }; print out }'
}
# The same from the agent's history rows (newest first in .data).
norm_rows() {
	jq -r '.data | reverse | .[] | [.type,
		(if .rem_id != null then "remid=\(.rem_id)" else empty end),
		(if .loc_id != null then "locid=\(.loc_id)" else empty end),
		(if .saddr != null then "saddr=\(.saddr)" else empty end),
		(if .daddr != null then "daddr=\(.daddr)" else empty end),
		(if .sport != null then "sport=\(.sport)" else empty end),
		(if .dport != null then "dport=\(.dport)" else empty end),
		(if .backup != null then "backup=\(if .backup then 1 else 0 end)" else empty end),
		(if .error != null and .error != 0 then "error=\(.error)" else empty end),
		(if .if_idx != null and .if_idx != 0 then "ifindex=\(.if_idx)" else empty end),
		(if .flags != null and .flags != 0 then "flags=\(.flags)" else empty end)
		] | join(" ")'
}
# compare_monitor MONFILE NETNS_INO TOKEN: the agent's history of TOKEN equals the monitor's.
compare_monitor() {
	local hex
	hex=$(printf '%08x' "$3")
	norm_monitor "$1" "$hex" >"$T/mon.norm"
	api GET "/api/v1/mptcp/events?netns=$2&token=$hex" | norm_rows >"$T/agent.norm"
	diff -u "$T/mon.norm" "$T/agent.norm" >&2
}
token_of() { sed -n 's/^token=\([0-9]*\).*/\1/p' "$1"; }
# The peer's token is the client's; the server side has its own.
# Tokens here are decimal (the API's "token" and mptcp_client's line); a query
# takes the printed form, 8 hex digits: an 8-digit decimal would read as hex.
server_token() { # -> the token of the only live connection of NS_B in the agent
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$INO_B" | jq -r '.data[0].token // empty'
}

start_monitors() {
	timeout 120 ip -n "$NS_A" mptcp monitor >"$T/monA.txt" 2>&1 &
	on_exit "kill $! 2>/dev/null"
	timeout 120 ip -n "$NS_B" mptcp monitor >"$T/monB.txt" 2>&1 &
	on_exit "kill $! 2>/dev/null"
	sleep 0.3
}
client_say() { echo "$1" >&4; }
client_end() { exec 4>&-; wait "$CLI" 2>/dev/null; CLI=; }
restart_agent() { stop_agent; start_agent; }

start_monitors
start_agent

# ---- 1. dual-stack listener: v4-mapped subflows ---------------------------
mptcp_server ::
mptcp_client "$MP_B1" 2 -t 3000
grep -q 'subflows=2' "$T/client.txt" || fail "no second subflow: $(cat "$T/client.txt")"
TOK_A=$(token_of "$T/client.txt")
until_eq 5 1 gauge_conns "$INO_B" >/dev/null
TOK_B=$(server_token)
[ -n "$TOK_B" ] || fail "server connection not seen"
sf=$(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$INO_B" | jq -r '[.data[0].subflows[] | "\(.family) \(.saddr)"] | sort | join(",")')
check "dual-stack: server subflows in one form (ipv4)" "ipv4 $MP_B1,ipv4 $MP_B1" "$sf"
restart_agent # resync: the state is rebuilt from sock_diag
check "dual-stack: subflows after resync (real $(real_subflows "$NS_B"))" 2 "$(until_eq 5 2 gauge_subflows "$INO_B")"
# The client withdraws its path-2 endpoint: the subflow closes on both sides.
ip -n "$NS_A" mptcp endpoint delete id 2 || fail "endpoint delete"
real=$(until_eq 5 1 real_subflows "$NS_B")
check "dual-stack: real server subflows after SUB_CLOSED" 1 "$real"
check "dual-stack: subflow gauge after SUB_CLOSED = real" "$real" "$(until_eq 5 "$real" gauge_subflows "$INO_B")"
client_say close
client_end
check "dual-stack: connections after CLOSED" 0 "$(until_eq 5 0 gauge_conns "$INO_B")"
check "dual-stack: unmatched events" 0 "$(metric sysobs_mptcp_unmatched_events_total)"
sleep 0.3
compare_monitor "$T/monB.txt" "$INO_B" "$TOK_B" || check "dual-stack: server events = ip mptcp monitor" same differ
mptcp_stop_server
ip -n "$NS_A" mptcp endpoint add $MP_A2 dev mpa2 id 2 subflow || fail "endpoint re-add"

# ---- 2. half-closed connection -------------------------------------------
mptcp_server 0.0.0.0 -k
mptcp_client "$MP_B1" 2 -t 3000
TOK_A=$(token_of "$T/client.txt")
client_say shut
wait_for 5 grep -q '^shut' "$T/client.txt" || fail "client did not shut down"
wait_for 5 bash -c "ip netns exec $NS_A ss -MHn state fin-wait-2 | grep -q ." || fail "client not in FIN_WAIT2"
restart_agent
check "half-close: client connections after resync (real $(real_conns "$NS_A"))" 1 "$(until_eq 5 1 gauge_conns "$INO_A")"
check "half-close: server connections after resync (real $(real_conns "$NS_B"))" 1 "$(until_eq 5 1 gauge_conns "$INO_B")"
check "half-close: client subflows after resync (real $(real_subflows "$NS_A"))" 2 "$(gauge_subflows "$INO_A")"
sleep 2.5 # two reconciliations: nothing to correct
check "half-close: connections after reconciliations" 1 "$(gauge_conns "$INO_A")"
client_say close
client_end
check "half-close: client connections after CLOSED" 0 "$(until_eq 5 0 gauge_conns "$INO_A")"
check "half-close: unmatched events" 0 "$(metric sysobs_mptcp_unmatched_events_total)"
mptcp_stop_server
check "half-close: server connections after its close" 0 "$(until_eq 5 0 gauge_conns "$INO_B")"
check "half-close: lifetimes observed of subflows only a resync saw" 0 "$(metric sysobs_mptcp_subflow_lifetime_seconds_count)"
compare_monitor "$T/monA.txt" "$INO_A" "$TOK_A" || check "half-close: client events = ip mptcp monitor" same differ

# ---- 2b. both directions shut down, sockets held ------------------------------
mptcp_server 0.0.0.0 -S
mptcp_client "$MP_B1" 2 -t 3000
TOK_A=$(token_of "$T/client.txt")
client_say shut
wait_for 5 grep -q '^shut' "$T/client.txt" || fail "client did not shut down"
wait_for 5 bash -c "ip netns exec $NS_A ss -MHn state close | grep -q ." || fail "client connection not in CLOSE"
restart_agent
check "both shut: client connections after resync (real $(real_conns "$NS_A"))" 1 "$(until_eq 5 1 gauge_conns "$INO_A")"
check "both shut: server connections after resync (real $(real_conns "$NS_B"))" 1 "$(until_eq 5 1 gauge_conns "$INO_B")"
sleep 2.5 # two reconciliations: nothing to correct
check "both shut: connections after reconciliations" "1 1" "$(gauge_conns "$INO_A") $(gauge_conns "$INO_B")"
check "both shut: corrections" 0 "$(metric_sum sysobs_mptcp_reconcile_corrections_total 'kind=')"
client_say close
client_end
check "both shut: client connections after CLOSED" 0 "$(until_eq 5 0 gauge_conns "$INO_A")"
mptcp_stop_server
check "both shut: server connections after CLOSED" 0 "$(until_eq 5 0 gauge_conns "$INO_B")"
check "both shut: unmatched + fallback-classified" "0 0" "$(metric sysobs_mptcp_unmatched_events_total) $(metric sysobs_mptcp_client_fallbacks_total)"
sleep 0.3
compare_monitor "$T/monA.txt" "$INO_A" "$TOK_A" || check "both shut: client events = ip mptcp monitor" same differ

# ---- 3. fallback to TCP ----------------------------------------------------
mptcp_server 0.0.0.0 -T
mptcp_client "$MP_B1" 2 -t 3000
wait_for 5 bash -c "ip netns exec $NS_A ss -MHni | grep -q fallback" || fail "no fallback connection"
restart_agent
check "fallback: client connections after resync (real MPTCP $(real_conns "$NS_A"))" 0 "$(until_eq 3 0 gauge_conns "$INO_A")"
client_say close
client_end
check "fallback: client connections after close" 0 "$(until_eq 3 0 gauge_conns "$INO_A")"
check "fallback: CLOSED without CREATED counted as client fallback" 1 "$(until_eq 3 1 metric sysobs_mptcp_client_fallbacks_total)"
check "fallback: unmatched events" 0 "$(metric sysobs_mptcp_unmatched_events_total)"
sleep 0.3
mon=$(grep -c '^\[ *CLOSED\]' "$T/monA.txt")
api GET "/api/v1/mptcp/events?netns=$INO_A&type=CLOSED" >"$T/body"
check "fallback: CLOSED events (agent history = ip mptcp monitor)" "$mon" "$(jq '.data | length' "$T/body")"
hex=$(grep '^\[ *CLOSED\]' "$T/monA.txt" | tail -1 | sed -E 's/.*token=([0-9a-f]+).*/\1/')
check "fallback: CLOSED token = monitor's" "$((16#$hex))" "$(jq -r '.data[0].token' "$T/body")"
mptcp_stop_server

# ---- 4. MP_FASTCLOSE ---------------------------------------------------------
before=$(metric 'sysobs_mptcp_reconcile_corrections_total{kind="connection_removed"}')
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2 -t 3000
until_eq 5 1 gauge_conns "$INO_B" >/dev/null
client_say reset
client_end
real=$(until_eq 5 0 real_conns "$NS_B")
check "fastclose: real server connections" 0 "$real"
check "fastclose: server connections (reconciled)" "$real" "$(until_eq 6 "$real" gauge_conns "$INO_B")"
check "fastclose: server subflows (reconciled)" 0 "$(gauge_subflows "$INO_B")"
after=$(metric 'sysobs_mptcp_reconcile_corrections_total{kind="connection_removed"}')
check "fastclose: corrections counted" 1 "$((${after:-0} - ${before:-0}))"
check "fastclose: client connections after its close" 0 "$(until_eq 3 0 gauge_conns "$INO_A")"
MPTCP_FASTCLOSE_RX=$(ip netns exec "$NS_B" nstat -az MPTcpExtMPFastcloseRx | awk '/MPTcpExt/ {print $2}')
check "fastclose: kernel counted MP_FASTCLOSE received" 1 "$([ "${MPTCP_FASTCLOSE_RX:-0}" -ge 1 ] && echo 1 || echo 0)"
mptcp_stop_server

# ---- 5. failed join ------------------------------------------------------
need_cmd nft
ip netns exec "$NS_B" nft -f - <<NFT || fail "nft rule"
table inet sysobs_join {
	chain input {
		type filter hook input priority 0;
		iifname "mpb2" tcp flags syn reject with tcp reset
	}
}
NFT
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2 -t 3000 # path 2's join is refused: the client reports 1 subflow
TOK_A=$(token_of "$T/client.txt")
wait_for 5 grep -q "SF_CLOSED.*token=$(printf %08x "$TOK_A")" "$T/monA.txt" || fail "no SF_CLOSED for the join: $(cat "$T/monA.txt")"
mon=$(grep "SF_CLOSED.*token=$(printf %08x "$TOK_A")" "$T/monA.txt")
grep -q 'error=111' <<<"$mon" || fail "monitor SF_CLOSED without error=111: $mon"
check "failed join: join_failures_total{errno=ECONNREFUSED}" 1 "$(until_eq 3 1 metric 'sysobs_mptcp_join_failures_total{errno="ECONNREFUSED"}')"
check "failed join: unmatched events" 0 "$(metric sysobs_mptcp_unmatched_events_total)"
real=$(real_subflows "$NS_A")
check "failed join: client subflows (real $real)" 1 "$(gauge_subflows "$INO_A")"
restart_agent
check "failed join: client subflows after resync" "$real" "$(until_eq 5 "$real" gauge_subflows "$INO_A")"
client_say close
client_end
mptcp_stop_server
ip netns exec "$NS_B" nft delete table inet sysobs_join
sleep 0.3
compare_monitor "$T/monA.txt" "$INO_A" "$TOK_A" || check "failed join: client events = ip mptcp monitor" same differ

# ---- 5b. joins the server's limits reject (issue 21, item 18) -----------------
# `ip mptcp limits set subflows 0` on the server: the kernel refuses the
# join at its third ACK (MPTcpExtMPJoinRejected); the client reports
# SUB_ESTABLISHED then SUB_CLOSED with neither error nor reset_reason (ip
# mptcp monitor), the server no event. The agent counts the rejections from
# the server netns's MIB: join_failures_total{errno="rejected"}, at 0 from
# the start (it was absent before, the alert could not fire), then equal
# to the server's MPJoinRejected.
JF='sysobs_mptcp_join_failures_total{errno="rejected"}'
check "rejected join: join_failures{rejected} at 0 before any" 0 "$(metric "$JF")"
for e in none ECONNREFUSED ETIMEDOUT; do
	check "join_failures{errno=$e} exported before its first failure" 1 \
		"$([ -n "$(metric "sysobs_mptcp_join_failures_total{errno=\"$e\"}")" ] && echo 1 || echo 0)"
done
rej0=$(ip netns exec "$NS_B" nstat -az MPTcpExtMPJoinRejected | awk '/MPTcpExt/ { print $2 }')
jf0=$(metric "$JF")
ip -n "$NS_B" mptcp limits set subflow 0 add_addr_accepted 2
mptcp_server 0.0.0.0
for i in 1 2 3; do
	mptcp_client "$MP_B1" 2 -t 3000
	TOK_A=$(token_of "$T/client.txt")
	wait_for 5 grep -q "SF_CLOSED.*token=$(printf %08x "$TOK_A")" "$T/monA.txt" ||
		fail "rejected join $i: no SF_CLOSED on the client: $(grep "token=$(printf %08x "$TOK_A")" "$T/monA.txt")"
	client_say close
	client_end
done
mptcp_stop_server
ip -n "$NS_B" mptcp limits set subflow 2 add_addr_accepted 2
rej=$(($(ip netns exec "$NS_B" nstat -az MPTcpExtMPJoinRejected | awk '/MPTcpExt/ { print $2 }') - ${rej0:-0}))
mon=$(grep "SF_CLOSED" "$T/monA.txt" | tail -3)
echo "rejected joins: server MPJoinRejected +$rej; client SF_CLOSED lines: $mon"
check "rejected join: server MPJoinRejected (nstat)" 3 "$rej"
check "rejected join: client SF_CLOSED carry no error (monitor)" 0 "$(grep -c 'error=' <<<"$mon")"
jf_delta() { echo $(($(metric "$JF") - ${jf0:-0})); }
check "rejected join: join_failures_total{errno=rejected} = MPJoinRejected" "$rej" "$(until_eq 5 "$rej" jf_delta)"

# ---- 6. backup, side, FLAGS --------------------------------------------------
live_sf() { # NETNS_INO SADDR_OR_DADDR FIELD -> the field of the subflow with that address
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$1" |
		jq -r --arg a "$2" "[.data[0].subflows[] | select(.saddr == \$a or .daddr == \$a) | .$3] | if length > 0 then first else \"none\" end"
}
live_conn() { # NETNS_INO FIELD
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$1" | jq -r ".data[0] | if has(\"$2\") then .$2 else \"absent\" end"
}
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2 -t 3000
TOK_A=$(token_of "$T/client.txt")
until_eq 5 1 gauge_conns "$INO_B" >/dev/null
TOK_B=$(server_token)
check "side: client connection server_side (from events)" false "$(live_conn "$INO_A" server_side)"
check "side: server connection server_side (from events)" true "$(live_conn "$INO_B" server_side)"
ip -n "$NS_A" mptcp endpoint change id 2 backup || fail "endpoint change"
wait_for 5 grep -q "SF_PRIO.*token=$(printf %08x "$TOK_B").*backup=1" "$T/monB.txt" || fail "no SF_PRIO backup=1 on the server: $(cat "$T/monB.txt")"
check "backup: server path-2 subflow (events)" true "$(until_eq 3 true live_sf "$INO_B" "$MP_A2" backup)"
created_a=$(live_conn "$INO_A" created)
created_b=$(live_conn "$INO_B" created)
restart_agent
check "backup: server path-2 subflow after resync (monitor backup=1)" true "$(until_eq 5 true live_sf "$INO_B" "$MP_A2" backup)"
check "backup: client path-2 subflow after resync (its events: backup=0)" false "$(until_eq 5 false live_sf "$INO_A" "$MP_A2" backup)"
# The dump says neither side nor start: the agent's history (CREATED rows) does.
check "side: client connection server_side after restart (history)" false "$(until_eq 5 false live_conn "$INO_A" server_side)"
check "side: server connection server_side after restart (history)" true "$(live_conn "$INO_B" server_side)"
check "start: client connection created after restart (history)" "$created_a" "$(live_conn "$INO_A" created)"
check "start: server connection created after restart (history)" "$created_b" "$(live_conn "$INO_B" created)"
# Without history (a new database): each side from the initial subflow's
# flags (ss -ti: server M, client Mm), no start.
stop_agent
mkdir "$T/db.keep" && mv "$T"/sysobs.db* "$T/db.keep/"
start_agent
check "side: resynced server connection, no history (subflow flags M)" true "$(until_eq 5 true live_conn "$INO_B" server_side)"
check "side: resynced client connection, no history (subflow flags Mm)" false "$(until_eq 5 false live_conn "$INO_A" server_side)"
check "start: resynced connection, no history" absent "$(live_conn "$INO_B" created)"
stop_agent
rm -f "$T"/sysobs.db* && mv "$T"/db.keep/* "$T/" && rmdir "$T/db.keep"
start_agent
client_say close
client_end
mptcp_stop_server
ip -n "$NS_A" mptcp endpoint change id 2 nobackup
sleep 0.3
compare_monitor "$T/monB.txt" "$INO_B" "$TOK_B" || check "backup: server events = ip mptcp monitor" same differ
api GET "/api/v1/mptcp/events?netns=$INO_B&token=$(printf %08x "$TOK_B")&type=CREATED" >"$T/body"
check "flags: server CREATED server_side/deny_join_id0/flags" "true false 2" "$(jq -r '.data[0] | "\(.server_side) \(.deny_join_id0) \(.flags)"' "$T/body")"
# The server denies joins to its initial address: FLAGS bit 0 on the client.
ip netns exec "$NS_B" sysctl -qw net.mptcp.allow_join_initial_addr_port=0 || fail "sysctl"
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 1 -t 3000
TOK_A=$(token_of "$T/client.txt")
client_say close
client_end
mptcp_stop_server
ip netns exec "$NS_B" sysctl -qw net.mptcp.allow_join_initial_addr_port=1
sleep 0.3
grep -q "CREATED.*token=$(printf %08x "$TOK_A").*flags=1" "$T/monA.txt" || fail "monitor: client CREATED without flags=1: $(grep "token=$(printf %08x "$TOK_A")" "$T/monA.txt")"
api GET "/api/v1/mptcp/events?netns=$INO_A&token=$(printf %08x "$TOK_A")&type=CREATED" >"$T/body"
check "flags: client CREATED server_side/deny_join_id0/flags" "false true 1" "$(jq -r '.data[0] | "\(.server_side) \(.deny_join_id0) \(.flags)"' "$T/body")"
compare_monitor "$T/monA.txt" "$INO_A" "$TOK_A" || check "flags: client events = ip mptcp monitor" same differ

# ---- 7. subflow lifetime histogram ------------------------------------------
H=sysobs_mptcp_subflow_lifetime_seconds
h_count0=$(metric "${H}_count") h_sum0=$(metric "${H}_sum")
h_le1_0=$(metric "${H}_bucket{le=\"1\"}") h_le2_0=$(metric "${H}_bucket{le=\"2\"}")
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2 -t 3000
TOK_A=$(token_of "$T/client.txt")
until_eq 5 1 gauge_conns "$INO_B" >/dev/null
TOK_B=$(server_token)
sleep 1.5
client_say close
client_end
mptcp_stop_server
until_eq 5 0 gauge_conns "$INO_B" >/dev/null
check "lifetime: observations" 4 "$(( $(metric "${H}_count") - h_count0 ))"
check "lifetime: observations <= 1 s" 0 "$(( $(metric "${H}_bucket{le=\"1\"}") - h_le1_0 ))"
check "lifetime: observations <= 2 s" 4 "$(( $(metric "${H}_bucket{le=\"2\"}") - h_le2_0 ))"
ts() { date -d "$1" +%s.%N; }
hist_sum=0
for tk in "$INO_A:$TOK_A" "$INO_B:$TOK_B"; do
	api GET "/api/v1/mptcp/events?netns=${tk%%:*}&token=$(printf %08x "${tk##*:}")" >"$T/body"
	closed=$(ts "$(jq -r '.data[] | select(.type == "CLOSED") | .time' "$T/body")")
	for t in $(jq -r '.data[] | select(.type == "ESTABLISHED" or .type == "SUB_ESTABLISHED") | .time' "$T/body"); do
		hist_sum=$(echo "$hist_sum + $closed - $(ts "$t")" | bc -l)
	done
done
got=$(echo "$(metric "${H}_sum") - $h_sum0" | bc -l)
check "lifetime: sum = history's (established -> CLOSED), to 10 us" 1 "$(echo "d = $got - $hist_sum; if (d < 0) d = -d; d < 0.00001" | bc -l)"
echo "lifetime: sum $got s, from the history $hist_sum s"

# ---- 8. MPTcpExt MIB = nstat ---------------------------------------------------
sleep 1.5 # one collect (every reconcile period, 1 s here) after the last traffic
curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/metrics.txt" || fail "metrics"
for ns in "$NS_A:$INO_A" "$NS_B:$INO_B"; do
	name=${ns%%:*} ino=${ns##*:}
	ip netns exec "$name" nstat -asz 2>/dev/null | awk '$1 ~ /^MPTcpExt/ { sub(/^MPTcpExt/, "", $1); print $1, $2 }' |
		sort >"$T/nstat.$ino"
	awk -v ino="$ino" 'match($0, /^sysobs_mptcp_mib(_total|_current)\{netns="[0-9]+",counter="[A-Za-z0-9_]+"\} /) {
			split($0, a, "\""); if (a[2] == ino) print a[4], $2 }' "$T/metrics.txt" | sort >"$T/agent_mib.$ino"
	check "mib: $name counters in /metrics = nstat ($(wc -l <"$T/nstat.$ino") counters)" same \
		"$(diff -q "$T/nstat.$ino" "$T/agent_mib.$ino" >/dev/null && echo same || diff "$T/nstat.$ino" "$T/agent_mib.$ino" | head -5 | tr '\n' ' ')"
done
check "mib: server MPFastcloseRx > 0" 1 "$(awk '$1 == "MPFastcloseRx" { print ($2 > 0) }' "$T/agent_mib.$INO_B")"
check "mib: client MPCapableFallbackSYNACK > 0" 1 "$(awk '$1 == "MPCapableFallbackSYNACK" { print ($2 > 0) }' "$T/agent_mib.$INO_A")"

stop_agent
[ "$NFAIL" = 0 ] || fail "$NFAIL checks failed"
pass "mptcp live state = kernel: MPTcpExt MIB = nstat, dual-stack v4-mapped subflows, half-close, fallback, MP_FASTCLOSE (reconciled), failed join by errno, backup bit, unknown side, FLAGS decoded, each across a resync"
