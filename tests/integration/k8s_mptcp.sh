#!/usr/bin/env bash
# MPTCP between two pods, by pod name (issue 34): two pods made over CRI in
# Debian's containerd (tests/integration/k8s_lib.sh: runc, the CNI bridge,
# a busybox pause image built here), an MPTCP connection from the client
# pod to the server pod with a second subflow (a second address on the
# client pod's eth0, an `ip mptcp endpoint ... subflow` in its netns), the
# agent watching both pods' network namespaces (the paths the runtime's
# PodSandboxStatus gives) and naming them from the runtime:
#
#   A. live: GET /api/v1/mptcp/connections gives the connection under each
#      pod's name, namespace and UID (client side in the client pod, server
#      side in the server pod), with as many subflows as `ss -tni` shows
#      (tcp-ulp-mptcp) in that netns, and as many connections as `ss -M`;
#      sysobs_mptcp_netns_pod_info joins each namespace's inode to its pod;
#   B. history: mptcp_events?pod=NAME&pod_namespace=NS gives each pod's
#      events, equal (type, ids, addresses, ports, backup) to `ip mptcp
#      monitor` run in that pod's netns; mptcp_subflows?pod= gives the
#      subflow samples of both subflows on each side;
#   C. ClickHouse: drops sent into both pods and the MPTCP events, exported
#      to a real clickhouse-server: `SELECT pod, count() ... GROUP BY pod` of
#      drop_samples and of mptcp_events equals SQLite's.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_clickhouse
need_cmd ss
need_cmd sqlite3
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"
source "$HERE/k8s_lib.sh"

# --- two pods ------------------------------------------------------------------
new_uid
UID_C=$NEW_UID
SB_C=$(run_pod "mp-client-$$" shop "$UID_C") || fail "RunPodSandbox mp-client"
PODS+=("$SB_C")
new_uid
UID_S=$NEW_UID
SB_S=$(run_pod "mp-server-$$" shop "$UID_S") || fail "RunPodSandbox mp-server"
PODS+=("$SB_S")
NSP_C=$(pod_netns "$SB_C")
NSP_S=$(pod_netns "$SB_S")
# containerd makes them in /var/run/netns (= /run/netns): mptcp_topo.sh's
# helpers enter them by name
NS_A=$(basename "$NSP_C")
NS_B=$(basename "$NSP_S")
[ "$(stat -L -c %i "$NSP_C")" = "$(stat -L -c %i "/run/netns/$NS_A")" ] ||
	fail "the pod's netns $NSP_C is not /run/netns/$NS_A"
INO_C=$(stat -L -c %i "$NSP_C")
INO_S=$(stat -L -c %i "$NSP_S")
IP_C=$(pod_ip "$SB_C")
IP_S=$(pod_ip "$SB_S")
[ -n "$IP_C" ] && [ -n "$IP_S" ] || fail "no pod address ($IP_C, $IP_S)"
# the second path: a second address of the client pod (host-local gives
# addresses from .2 up), announced as a subflow endpoint
IP_C2=10.246.$NET.$((200 + $$ % 50))
ip -n "$NS_A" addr add "$IP_C2/24" dev eth0 || fail "second address in the client pod"
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" sysctl -qw net.mptcp.enabled=1
	ip -n "$ns" mptcp limits set subflow 2 add_addr_accepted 2
done
ip -n "$NS_A" mptcp endpoint add "$IP_C2" dev eth0 id 2 subflow || fail "ip mptcp endpoint"

# --- ClickHouse and the agent ----------------------------------------------------
start_clickhouse
"$SYSOBSD" --print-clickhouse-ddl | clickhouse-client --port "$CH_TCP" --multiquery ||
	fail "the DDL does not load into ClickHouse"
write_base_config kubernetes.cri_socket="$SOCK" kubernetes.refresh=2s \
	collector.mptcp.netns="$NSP_C,$NSP_S" collector.mptcp.reconcile=1s \
	collector.mptcp.subflow_history=1s \
	collector.drops.interval=200ms collector.drops.sample_rate=100000 \
	collector.drops.sample_burst=100000 collector.drops.ring_bytes=4m \
	collector.self.enabled=false
cat >>"$T/sysobsd.ini" <<INI
[export.ch]
format = clickhouse
url = http://127.0.0.1:$CH_HTTP/
database = sysobs
tables = drop_samples,mptcp_events
batch_rows = 50000
send_interval = 1s
min_backoff = 50ms
max_backoff = 500ms
INI
for ns in "$NS_A" "$NS_B"; do
	timeout 60 ip -n "$ns" mptcp monitor >"$T/mon.$ns" 2>&1 &
	on_exit "kill $! 2>/dev/null"
done
start_agent
wait_collector mptcp
pods_known() { [ "$(metric sysobs_k8s_pods)" -ge 2 ] 2>/dev/null; }
wait_for 15 pods_known || fail "the agent does not know the two pods: $(metric sysobs_k8s_pods)"

# the join of the per-namespace series (netns label) to the pods
info_of() { # INODE POD UID
	metric "sysobs_mptcp_netns_pod_info{netns=\"$1\",pod=\"$2\",pod_namespace=\"shop\",pod_uid=\"$3\"}"
}
infos() { [ "$(info_of "$INO_C" "mp-client-$$" "$UID_C")" = 1 ] && [ "$(info_of "$INO_S" "mp-server-$$" "$UID_S")" = 1 ]; }
# (the collector names a namespace at its collects: its rows from then on)
wait_for 10 infos ||
	fail "sysobs_mptcp_netns_pod_info: $(curl -sS "http://127.0.0.1:$PORT/metrics" | grep '^sysobs_mptcp_netns_pod_info')"

# --- A: the live connection under both pods -----------------------------------------
# shellcheck disable=SC2034 # (mptcp_topo.sh's helpers read it)
MP_PORT=$((20000 + $$ % 10000))
mptcp_server "$IP_S"
mptcp_client "$IP_S" 2 -t 5000
grep -q 'subflows=2' "$T/client.txt" || fail "no second subflow: $(cat "$T/client.txt")"
# the kernel's view of a pod: established MPTCP sockets, and subflows
ss_conns() { ip netns exec "$1" ss -MnH state established | wc -l; }
ss_subflows() { ip netns exec "$1" ss -tniH state established | grep -c tcp-ulp-mptcp; }
# the agent's: POD FIELD (jq over that pod's connections)
live() {
	api GET /api/v1/mptcp/connections |
		jq -r --arg p "$1" "[.data[] | select(.pod == \$p)] | $2"
}
live_match() { # POD NETNS
	[ "$(live "$1" length)" = "$(ss_conns "$2")" ] &&
		[ "$(live "$1" '[.[].subflows | length] | add')" = "$(ss_subflows "$2")" ]
}
wait_for 10 live_match "mp-client-$$" "$NS_A" ||
	fail "client pod: $(live "mp-client-$$" length) connections, $(live "mp-client-$$" '[.[].subflows | length] | add') subflows; ss: $(ss_conns "$NS_A"), $(ss_subflows "$NS_A")"
wait_for 10 live_match "mp-server-$$" "$NS_B" ||
	fail "server pod: $(live "mp-server-$$" length) connections, $(live "mp-server-$$" '[.[].subflows | length] | add') subflows; ss: $(ss_conns "$NS_B"), $(ss_subflows "$NS_B")"
assert_eq "ss -M in the client pod" 1 "$(ss_conns "$NS_A")"
assert_eq "subflows in the client pod (ss -tni)" 2 "$(ss_subflows "$NS_A")"
assert_eq "client pod: side, namespace, UID, netns" "false shop $UID_C $INO_C" \
	"$(live "mp-client-$$" '.[0] | "\(.server_side) \(.pod_namespace) \(.pod_uid) \(.netns)"')"
assert_eq "server pod: side, namespace, UID, netns" "true shop $UID_S $INO_S" \
	"$(live "mp-server-$$" '.[0] | "\(.server_side) \(.pod_namespace) \(.pod_uid) \(.netns)"')"
assert_eq "watched namespaces by pod" "mp-client-$$ mp-server-$$" \
	"$(api GET /api/v1/mptcp/connections | jq -r '[.namespaces[].pod] | sort | join(" ")')"
pass "A: the connection live under both pods, subflows = ss -tni (2 and 2), connections = ss -M"

# --- B: history by pod = ip mptcp monitor in each pod's netns -------------------------
# held past two reconciliations: each subflow sampled (subflow_history 1s)
sf_sampled() { # POD -> distinct subflows with a sample
	api GET "/api/v1/mptcp/subflows?pod=$1&pod_namespace=shop&limit=1000" |
		jq '[.data[] | "\(.saddr):\(.sport) \(.daddr):\(.dport)"] | unique | length'
}
both_sampled() { [ "$(sf_sampled "mp-client-$$")" = 2 ] && [ "$(sf_sampled "mp-server-$$")" = 2 ]; }
wait_for 15 both_sampled ||
	fail "subflow samples by pod: client $(sf_sampled "mp-client-$$"), server $(sf_sampled "mp-server-$$"), expected 2 and 2"
echo closing >&4
exec 4>&-
wait "$CLI" 2>/dev/null
CLI=
closed() { grep -qs CLOSED "$T/mon.$NS_A" && grep -qs CLOSED "$T/mon.$NS_B"; }
wait_for 10 closed || fail "no CLOSED in ip mptcp monitor"
TOK_S=$(sed -nE 's/^\[ *CREATED\] token=([0-9a-f]+).*/\1/p' "$T/mon.$NS_B" | head -1)
[ -n "$TOK_S" ] || fail "no CREATED in the server pod's monitor: $(cat "$T/mon.$NS_B")"
# compare_pod POD NETNS_NAME TOKEN_HEX: that pod's rows of the token = the monitor's
compare_pod() {
	local rows
	mptcp_norm_monitor "$T/mon.$2" "$3" >"$T/mon.norm"
	rows=$(api GET "/api/v1/mptcp/events?pod=$1&pod_namespace=shop&token=$3")
	# (backup is a JSON boolean; the monitor prints 0/1)
	jq '.data | reverse | map(if has("backup") then .backup = (if .backup then 1 else 0 end) else . end)' \
		<<<"$rows" | mptcp_norm_rows >"$T/agent.norm"
	diff -u "$T/mon.norm" "$T/agent.norm" >&2
}
same_c() { compare_pod "mp-client-$$" "$NS_A" "$TOKEN_HEX" 2>/dev/null; }
same_s() { compare_pod "mp-server-$$" "$NS_B" "$TOK_S" 2>/dev/null; }
wait_for 10 same_c || { compare_pod "mp-client-$$" "$NS_A" "$TOKEN_HEX"; fail "client pod's events differ from ip mptcp monitor"; }
wait_for 10 same_s || { compare_pod "mp-server-$$" "$NS_B" "$TOK_S"; fail "server pod's events differ from ip mptcp monitor"; }
N_C=$(wc -l <"$T/mon.norm")
# every row of a pod is of its netns, with its UID; the pod in another namespace has none
req GET "/api/v1/mptcp/events?pod=mp-client-$$&limit=1000"
assert_eq "client pod's rows: netns, UID" "$INO_C $UID_C" \
	"$(jq -r '[.data[] | "\(.netns) \(.pod_uid)"] | unique | join(",")' <<<"$BODY")"
req GET "/api/v1/mptcp/events?pod=mp-server-$$&pod_namespace=other"
assert_eq "rows of a pod of that name in another namespace" 0 "$(jq '.data | length' <<<"$BODY")"
pass "B: each pod's events = ip mptcp monitor in its netns ($(wc -l <"$T/mon.norm") and $N_C lines), subflows sampled by pod"

# --- C: ClickHouse rows by pod = SQLite's -----------------------------------------------
for _ in $(seq 1 100); do echo x >"/dev/udp/$IP_S/9"; done 2>/dev/null
for _ in $(seq 1 60); do echo x >"/dev/udp/$IP_C/9"; done 2>/dev/null
drops_of() { # POD -> NO_SOCKET samples stored under its name
	api GET "/api/v1/drops/samples?pod=$1&pod_namespace=shop&reason=NO_SOCKET&protocol=udp&limit=1000" |
		jq '.data | length'
}
drops_in() { [ "$(drops_of "mp-server-$$")" = 100 ] && [ "$(drops_of "mp-client-$$")" = 60 ]; }
wait_for 15 drops_in || fail "drops by pod: server $(drops_of "mp-server-$$"), client $(drops_of "mp-client-$$"), expected 100 and 60"
# (the host's own drops are sampled and exported too: on a busy host many;
# the comparison is of every row up to the cursor once it passed the pods')
lite() { sqlite3 -separator ' ' "file:$T/sysobs.db?mode=ro" "$1"; }
cursor() { lite "SELECT value FROM store_meta WHERE key = 'cursor.export.ch'"; }
LAST=$(lite "SELECT max(m) FROM (SELECT max(id) AS m FROM drop_samples WHERE pod LIKE 'mp-%-$$'
	UNION ALL SELECT max(id) FROM mptcp_events WHERE pod LIKE 'mp-%-$$')")
exported() { [ "$(cursor)" -ge "$LAST" ] 2>/dev/null; }
wait_for 30 exported || fail "the export did not pass row $LAST: cursor $(cursor), pending $(metric 'sysobs_export_pending_rows{destination="ch"}')"
CUR=$(cursor)
for t in drop_samples mptcp_events; do
	lite=$(lite "SELECT ifnull(pod, '-'), count(*) FROM $t WHERE id <= $CUR GROUP BY pod ORDER BY 1")
	ch=$(chq "SELECT ifNull(pod, '-') AS p, count() FROM sysobs.$t FINAL WHERE id <= $CUR GROUP BY p ORDER BY p" |
		tr '\t' ' ')
	echo "$t by pod, SQLite / ClickHouse:"$'\n'"$lite"$'\n'"---"$'\n'"$ch"
	assert_eq "$t: ClickHouse's rows by pod = SQLite's" "$lite" "$ch"
	for p in "mp-client-$$" "mp-server-$$"; do
		grep -q "^$p [1-9]" <<<"$ch" || fail "$t: no ClickHouse row of pod $p"
	done
done
assert_eq "the client pod's drops in ClickHouse" 60 \
	"$(chq "SELECT count() FROM sysobs.drop_samples FINAL WHERE pod = 'mp-client-$$' AND pod_namespace = 'shop' AND reason = 'NO_SOCKET'")"
stop_agent
pass "C: drop_samples and mptcp_events in ClickHouse by pod = SQLite's"
