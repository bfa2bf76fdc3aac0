#!/usr/bin/env bash
# Re-records tests/data/golden/mptcp/ (the input of golden.mptcp) on this
# kernel: sysobsd with [collector.mptcp] record = FILE watching both ends of
# a real MPTCP scenario in two namespaces it makes (the topology of
# tests/integration/mptcp_topo.sh), and `ip mptcp monitor` in each as the
# independent reference of what the kernel sent.
#
#   tests/data/golden/mptcp/record.sh [BUILD_DIR]    (root; default ./build)
#
# Writes, next to this script: events.rec (the recording; a copy into the
# fuzz corpus tests/fuzz/corpus/mptcp_rec/golden.rec), monitor-client.txt
# and monitor-server.txt (iproute2's decode of the same events). Then
# `scripts/golden.sh --update mptcp` and review the diff.
#
# Scenario: the server listens (LISTENER_CREATED); a client connects over
# path 1 and joins path 2 from its subflow endpoint (CREATED, ESTABLISHED,
# SUB_ESTABLISHED); the server announces its path-2 address (ANNOUNCED,
# another SUB_ESTABLISHED) and removes it (REMOVED, SUB_CLOSED); the client
# closes (CLOSED); a second client connects and aborts with SO_LINGER 0
# (MP_FASTCLOSE); the listener closes (LISTENER_CLOSED).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
export SYSOBSD=$BUILD/sysobsd SYSOBS_SRC=$SRC SYSOBS_BUILD=$BUILD
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/mptcp_topo.sh"
mptcp_need
PEER=$BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"

mptcp_topo_up || fail "topology setup failed"
write_base_config collector.drops.enabled=false collector.ifs.enabled=false \
	collector.cachefiles.enabled=false collector.self.enabled=false \
	kubernetes.cri_socket=off \
	"collector.mptcp.netns=/run/netns/$NS_A,/run/netns/$NS_B" \
	"collector.mptcp.record=$T/events.rec"
start_agent
wait_collector mptcp || fail "mptcp collector not running"
for side in client server; do
	ns=$NS_A
	[ $side = client ] || ns=$NS_B
	timeout 60 ip -n "$ns" mptcp monitor >"$T/monitor-$side.txt" 2>&1 &
	on_exit "kill $! 2>/dev/null"
done
sleep 0.5

mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2
sleep 0.5
ip -n "$NS_B" mptcp endpoint add "$MP_B2" dev mpb2 id 5 signal
sleep 1
ip -n "$NS_B" mptcp endpoint delete id 5
sleep 1
echo close >&4
exec 4>&-
wait "$CLI"
sleep 0.5
mptcp_client "$MP_B1" 1
echo reset >&4
exec 4>&-
wait "$CLI"
sleep 0.5
mptcp_stop_server
sleep 1
stop_agent
cp "$T/events.rec" "$T/monitor-client.txt" "$T/monitor-server.txt" "$HERE/"
cp "$T/events.rec" "$SRC/tests/fuzz/corpus/mptcp_rec/golden.rec"
echo "recorded: $(wc -c <"$HERE/events.rec") bytes"
cat "$HERE/monitor-client.txt" "$HERE/monitor-server.txt"
