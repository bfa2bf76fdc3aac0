#!/usr/bin/env bash
# mptcp collector: the side of a connection the agent learns from the socket
# dump alone (a restart without history) is the kernel's own word, the
# initial subflow's flags (`ss -ti`: M = the peer's MP_CAPABLE, m = our own
# request, only on the end that connected), not "its local port is a local
# listener's" (issue 33 item 5).
#
# In one namespace of its own: MPTCP listeners on ports P and Q (SO_REUSEPORT),
# a client bound to 127.0.0.1:P (SO_REUSEPORT) connected to Q, and a plain
# client connected to P, all established before the agent starts with an
# empty database. Expected, beside ss: the client bound to P is the client
# (false; before: true, P being a listener's port), its accepted end on Q the
# server (true); the plain client false (before: absent), its accepted end on
# P true.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd ss
need_cmd python3

NS=sysobs-mpside-$$
netns_new "$NS" || fail "cannot create netns $NS"
ip netns exec "$NS" sysctl -qw net.mptcp.enabled=1

# The peers: prints "P Q E" once the two connections are up, holds them
# until SIGTERM.
ip netns exec "$NS" python3 -c '
import signal, socket
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
MP = 262
def sock():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, MP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return s
lp, lq = sock(), sock()
lp.bind(("127.0.0.1", 0)); lp.listen(8)
lq.bind(("127.0.0.1", 0)); lq.listen(8)
p, q = lp.getsockname()[1], lq.getsockname()[1]
bound = sock(); bound.bind(("127.0.0.1", p)); bound.connect(("127.0.0.1", q))
a1, _ = lq.accept()
plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM, MP); plain.connect(("127.0.0.1", p))
a2, _ = lp.accept()
for s, t in ((bound, a1), (plain, a2)):
    s.send(b"x"); t.recv(1); t.send(b"y"); s.recv(1)
print(p, q, plain.getsockname()[1], flush=True)
signal.sigwait([signal.SIGTERM])
' >"$T/ports" 2>"$T/peer.err" &
PEER_PID=$!
on_exit "kill $PEER_PID; wait $PEER_PID"
wait_for 10 test -s "$T/ports" || fail "peers not up: $(cat "$T/peer.err")"
read -r P Q E <"$T/ports"

# The reference: ss's subflow flags of each local port's socket.
ss_flags() { # LPORT RPORT -> the tcp-ulp-mptcp flags of that subflow
	ip netns exec "$NS" ss -tHni state established "( sport = :$1 and dport = :$2 )" |
		grep -o 'tcp-ulp-mptcp flags:[A-Za-z]*' | sed 's/.*flags://'
}
assert_eq "ss: client bound to P (to Q)" Mmec "$(ss_flags "$P" "$Q")"
assert_eq "ss: server end on Q" Mec "$(ss_flags "$Q" "$P")"
assert_eq "ss: plain client (to P)" Mmec "$(ss_flags "$E" "$P")"
assert_eq "ss: server end on P" Mec "$(ss_flags "$P" "$E")"

write_base_config collector.drops.enabled=false
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS
INI
start_agent
wait_collector mptcp
side() { # SPORT DPORT -> server_side of that connection ("absent" if unknown)
	curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$NSINUM" |
		jq -r --argjson s "$1" --argjson d "$2" '[.data[] | select(.sport == $s and .dport == $d) |
			if has("server_side") then .server_side else "absent" end] | if length > 0 then first else "none" end'
}
n_conns() { curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$NSINUM" | jq -r .n_connections; }
four() { [ "$(n_conns)" = 4 ]; }
wait_for 10 four || fail "expected 4 connections, got $(n_conns)"
for c in "$P $Q false" "$Q $P true" "$E $P false" "$P $E true"; do
	set -- $c
	echo "FIGURE: side sport=$1 dport=$2 ss=$(ss_flags "$1" "$2") expected=$3 got=$(side "$1" "$2")"
done
curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections?netns=$NSINUM" >"$T/live.json"
assert_eq "client bound to a listener's port (ss Mm)" false "$(side "$P" "$Q")"
assert_eq "its server end (ss M)" true "$(side "$Q" "$P")"
assert_eq "plain client (ss Mm)" false "$(side "$E" "$P")"
assert_eq "its server end (ss M)" true "$(side "$P" "$E")"
stop_agent
pass "side without history from the kernel's subflow flags: a client bound to a listener's port is the client"
