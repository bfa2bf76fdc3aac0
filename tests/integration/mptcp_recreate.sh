#!/usr/bin/env bash
# mptcp collector: a watched namespace deleted and created again under the
# same name (`ip netns del X; ip netns add X`, as a container restart does)
# is watched again (issue 33 item 1). Before: the agent kept the old
# namespace alive through its sockets and watched it for ever; the new one's
# connections and MIB never appeared, the API showed the old inode, nothing
# was logged.
#
# [collector.mptcp] netns = /run/netns/X, reconcile = 1s. 3 connections in
# the first X; X deleted and re-added; 10 connections held in the new X.
# Expected: the API's namespace is the new inode; its live connections equal
# `ss -M` in the new X (10 clients + 10 accepted); its MPCapableSYNRX equals
# nstat there (10); the old inode has no live connection, and its MIB series
# leave /metrics after the stale grace (1 s here); the agent logs the switch and holds no more descriptors than before
# (the old namespace's sockets and files are closed: no leak).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd ss
need_cmd nstat
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

NS=sysobs-mprec-$$
PORTN=10090
netns_new "$NS" || fail "cannot create netns $NS"
OLD=$NSINUM
write_base_config collector.drops.enabled=false metrics.stale_series_grace=1s
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS
reconcile = 1s
INI
start_agent
wait_collector mptcp

live() { curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections${1:+?netns=$1}"; }
ns_ino() { live | jq -r '.namespaces[0].netns'; }
n_conns() { live "$1" | jq -r .n_connections; }
mib() { metric "sysobs_mptcp_mib_total{netns=\"$1\",counter=\"$2\"}"; }
nstat_in() { ip netns exec "$NS" nstat -az "MPTcpExt$1" | awk -v n="MPTcpExt$1" '$1 == n { print $2 }'; }
# Peers in X, their pids in PEERS (killed at exit, or when X "restarts").
PEERS=()
peers_stop() {
	local p
	for p in "${PEERS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PEERS[@]}"; do wait "$p" 2>/dev/null; done
	PEERS=()
}
on_exit peers_stop
# server NAME: mptcp_peer's server on 127.0.0.1:PORTN in X.
server() {
	ip netns exec "$NS" "$PEER" server 127.0.0.1 "$PORTN" >"$T/srv-$1.txt" 2>&1 &
	PEERS+=($!)
	wait_for 5 grep -q listening "$T/srv-$1.txt" || fail "server $1 did not listen"
}
# burst NAME N: N MPTCP connections to it, held (its stdin, a fifo opened
# read-write, never ends) until killed.
burst() {
	[ -p "$T/hold" ] || mkfifo "$T/hold"
	ip netns exec "$NS" "$PEER" burst 127.0.0.1 "$PORTN" -n "$2" -s 1 -H <>"$T/hold" >"$T/burst-$1.txt" 2>&1 &
	PEERS+=($!)
	wait_for 10 grep -q "^held $2 reached=$2" "$T/burst-$1.txt" || fail "burst $1: $(cat "$T/burst-$1.txt")"
}

server old
burst old 3
eq() { [ "$("${@:2}")" = "$1" ]; }
wait_for 5 eq 6 n_conns "$OLD" || fail "old namespace: 6 connections expected, got $(n_conns "$OLD")"
wait_for 5 eq 3 mib "$OLD" MPCapableSYNRX || fail "old MIB: $(mib "$OLD" MPCapableSYNRX)"
FD0=$(ls "/proc/$AGENT_PID/fd" | wc -l)
fds() { for f in /proc/$AGENT_PID/fd/*; do echo "${f##*/} $(readlink "$f")"; done | sort -n; }
fds >"$T/fds0"

# The container restarts: its processes end, the namespace goes, a new one
# takes the name.
peers_stop
ip netns del "$NS"
# the path gone: released (its sockets and files closed), logged
gone_logged() { grep -q "netns /run/netns/$NS (inode $OLD) is gone" "$T/agent.log"; }
wait_for 5 gone_logged || fail "the deletion was not logged"
ns_files() { fds | grep -cE 'pm_type$|/net/netstat$'; }
n_sockets() { fds | grep -c 'socket:'; }
S0=$(grep -c 'socket:' "$T/fds0")
released() { [ "$(ns_files)" = 0 ] && [ "$(n_sockets)" -le $((S0 - 2)) ]; }
wait_for 5 released || fail "the deleted namespace's files and sockets still open: $(fds | tr '\n' ' ')"
echo "agent: the namespace's files 2 -> $(ns_files), sockets $S0 -> $(n_sockets) after its deletion"
ip netns add "$NS" || fail "cannot re-create $NS"
ip -n "$NS" link set lo up
NEW=$(stat -L -c %i "/run/netns/$NS")
# Released, the old namespace is freed, and the kernel may give its inode
# number to the new one: then only what the new namespace holds is checked.
SAME=0
[ "$NEW" != "$OLD" ] || { SAME=1; echo "the new namespace reuses inode $OLD"; }
ip netns exec "$NS" sysctl -qw net.mptcp.enabled=1

wait_for 10 eq "$NEW" ns_ino || fail "the API still shows inode $(ns_ino), not the new $NEW"
server new
burst new 10
ref_conns=$(ip netns exec "$NS" ss -MHn state established | grep -c .)
ref_syn=$(nstat_in MPCapableSYNRX)
wait_for 5 eq "$ref_conns" n_conns "$NEW" || true
wait_for 5 eq "$ref_syn" mib "$NEW" MPCapableSYNRX || true
echo "FIGURE: namespace inode expected=$NEW got=$(ns_ino) (old $OLD)"
echo "FIGURE: live connections new netns ss=$ref_conns got=$(n_conns "$NEW")"
echo "FIGURE: MPCapableSYNRX new netns nstat=$ref_syn got=$(mib "$NEW" MPCapableSYNRX)"
assert_eq "live connections in the new namespace (ss -M)" 20 "$ref_conns"
assert_eq "live connections in the new namespace = ss -M" "$ref_conns" "$(n_conns "$NEW")"
assert_eq "MPCapableSYNRX of the new namespace = nstat" 10 "$ref_syn"
assert_eq "sysobs MPCapableSYNRX of the new namespace" "$ref_syn" "$(mib "$NEW" MPCapableSYNRX)"
if [ "$SAME" = 0 ]; then
	assert_eq "live connections left under the old inode" 0 "$(n_conns "$OLD")"
	old_gone() { ! curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q "netns=\"$OLD\""; }
	wait_for 5 old_gone || fail "the old namespace's series are still in /metrics: $(curl -sf "http://127.0.0.1:$PORT/metrics" | grep "netns=\"$OLD\"" | head -5)"
fi
grep -q "netns /run/netns/$NS is a new namespace (inode $NEW, was $OLD)" "$T/agent.log" ||
	fail "the switch was not logged"
# The namespace's files (pm_type, net/netstat) once, its sockets no more
# than before (an HTTP connection of the last request may still be
# closing; the store may have opened its WAL meanwhile: not the namespace's).
fds_back() { [ "$(ns_files)" = 2 ] && [ "$(n_sockets)" -le "$S0" ]; }
wait_for 5 fds_back ||
	fail "agent descriptors: $FD0 watching the old namespace, $(ls "/proc/$AGENT_PID/fd" | wc -l) watching the new one: $(fds | diff "$T/fds0" - | grep '^[<>]' | tr '\n' ' ')"
stop_agent
pass "a re-created namespace is watched again: inode, 20 live connections = ss, MPCapableSYNRX 10 = nstat, nothing left of the old one"
