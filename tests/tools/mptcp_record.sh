#!/usr/bin/env bash
# Records real MPTCP path-manager event messages from this kernel into
# tests/data/mptcp/ (the decoder's unit-test data and fuzz corpus).
#
#   tests/tools/mptcp_record.sh BUILD_DIR OUT_DIR
#
# Scenario, in two fresh namespaces (see tests/integration/mptcp_topo.sh):
# listener created; one IPv4 connection with a second subflow (client
# endpoint); the server announces then removes a second address; the client
# marks its endpoint backup (MP_PRIO); close; listener closed; an IPv6
# connection over loopback. Client side recorded in OUT/client, server side in
# OUT/server; the sock_diag replies (the resync's input) while the first
# connection is up in OUT/diag-client and OUT/diag-server.
# The unit tests assert the tokens, ports and addresses of the committed
# recordings: after re-recording, update them (tests/unit/test_mptcp_*.c).
set -u
BUILD=${1:?build dir}
OUT=${2:?output dir}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../integration/mptcp_topo.sh"
mptcp_need
PEER=$BUILD/tests/mptcp_peer
CAP=$BUILD/tests/mptcp_capture
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	exec 4>&- 2>/dev/null
	rm -f "$OUT/.ctl"
	mptcp_topo_down
}
trap cleanup EXIT
mptcp_topo_up || exit 1
mkdir -p "$OUT/client" "$OUT/server"
ip netns exec "$NS_A" timeout 60 "$CAP" "$OUT/client" >"$OUT/client.txt" &
pids+=($!)
ip netns exec "$NS_B" timeout 60 "$CAP" "$OUT/server" >"$OUT/server.txt" &
pids+=($!)
for _ in $(seq 1 50); do
	grep -q ready "$OUT/client.txt" 2>/dev/null && grep -q ready "$OUT/server.txt" 2>/dev/null && break
	sleep 0.1
done

ip netns exec "$NS_B" timeout 60 "$PEER" server 0.0.0.0 "$MP_PORT" >/dev/null &
srv=$!
pids+=($srv)
sleep 0.3
mkfifo "$OUT/.ctl"
ip netns exec "$NS_A" timeout 60 "$PEER" client "$MP_B1" "$MP_PORT" <"$OUT/.ctl" &
cli=$!
pids+=($cli)
exec 4>"$OUT/.ctl"
sleep 1
ip -n "$NS_B" mptcp endpoint add "$MP_B2" dev mpb2 id 5 signal
sleep 1
ip -n "$NS_A" mptcp endpoint change id 2 backup
sleep 0.5
mkdir -p "$OUT/diag-client" "$OUT/diag-server"
ip netns exec "$NS_A" "$CAP" --diag "$OUT/diag-client"
ip netns exec "$NS_B" "$CAP" --diag "$OUT/diag-server"
ip -n "$NS_B" mptcp endpoint delete id 5
sleep 1
echo close >&4
exec 4>&-
wait "$cli"
sleep 0.5
kill "$srv"
wait "$srv" 2>/dev/null
sleep 0.5
# IPv6 over loopback inside the client namespace.
ip netns exec "$NS_A" timeout 20 "$PEER" server ::1 "$MP_PORT" >/dev/null &
srv6=$!
pids+=($srv6)
sleep 0.3
echo close | ip netns exec "$NS_A" timeout 10 "$PEER" client ::1 "$MP_PORT" -s 1 >/dev/null
sleep 0.5
kill "$srv6"
wait "$srv6" 2>/dev/null
sleep 0.5
echo "--- client"
cat "$OUT/client.txt"
echo "--- server"
cat "$OUT/server.txt"
