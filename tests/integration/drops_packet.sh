#!/usr/bin/env bash
# drops collector, AF_PACKET receive drops (issue 33 item 2): a packet socket
# whose receive buffer is full loses packets (PACKET_STATISTICS tp_drops,
# tcpdump's "dropped by kernel"), but the skb is shared, so kfree_skb does
# not fire and sysobs_packet_drops_total never shows them.
# sysobs_packet_socket_drops_total{netns} reads each socket's own count
# (sk_drops, what packet_diag's SK_MEMINFO_DROPS shows) through the
# namespace walk, for every namespace.
#
# In a namespace of the test's own: an AF_PACKET socket on lo with the
# smallest receive buffer, never read; 2000 UDP datagrams over lo. Reference:
# the socket's own PACKET_STATISTICS (tp_drops), read once (it resets) after
# the traffic. Expected: the namespace's series equals tp_drops, and keeps
# that value after the socket is closed (a counter); a second socket's
# drops add to it.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd python3
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"

NS=sysobs-dpkt-$$
netns_new "$NS" || skip "cannot create a network namespace"
INO=$NSINUM

write_base_config collector.self.enabled=false collector.drops.interval=200ms
start_agent
wait_collector drops
grep -q "cannot read the namespaces' TCP counters" "$T/agent.log" &&
	fail "agent: $(grep "cannot read the namespaces' TCP counters" "$T/agent.log")"

# packet_sock N: an unread AF_PACKET socket on lo, N datagrams sent over lo;
# prints "drops=<tp_drops> packets=<tp_packets>" and holds the socket until
# SIGTERM.
packet_sock() {
	exec ip netns exec "$NS" python3 -c '
import signal, socket, struct, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
s.bind(("lo", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 0))
for i in range(int(sys.argv[1])):
    u.sendto(b"x" * 200, r.getsockname())
PACKET_STATISTICS = 6
packets, drops = struct.unpack("II", s.getsockopt(263, PACKET_STATISTICS, 8))
print("drops=%d packets=%d" % (drops, packets), flush=True)
signal.sigwait([signal.SIGTERM])
' "$1"
}
metric_psk() { metric "sysobs_packet_socket_drops_total{netns=\"$INO\"}"; }
is() { [ "$("${@:2}")" = "$1" ]; }

packet_sock 2000 >"$T/p1.txt" 2>&1 &
P1=$!
on_exit "kill $P1 2>/dev/null"
wait_for 10 grep -q drops= "$T/p1.txt" || fail "packet socket: $(cat "$T/p1.txt")"
D1=$(sed -n 's/^drops=\([0-9]*\).*/\1/p' "$T/p1.txt")
echo "socket 1: $(cat "$T/p1.txt")"
assert_ge "tp_drops of the unread packet socket" 1 "$D1"
wait_for 5 is "$D1" metric_psk || true
echo "FIGURE: AF_PACKET drops, socket 1: PACKET_STATISTICS tp_drops=$D1 sysobs=$(metric_psk) packet_drops_total(all)=$(metric_sum sysobs_packet_drops_total "netns=\"$INO\"")"
assert_eq "sysobs_packet_socket_drops_total = tp_drops" "$D1" "$(metric_psk)"

# closed: the counter keeps what the socket counted
kill "$P1"
wait "$P1" 2>/dev/null
no_packet_socket() { ! ip netns exec "$NS" ss -0 -H -a | grep -q .; }
wait_for 5 no_packet_socket || fail "the packet socket is still open: $(ip netns exec "$NS" ss -0 -a)"
sleep 0.6 # three walks
assert_eq "after the socket closed (a counter never goes back)" "$D1" "$(metric_psk)"

packet_sock 1000 >"$T/p2.txt" 2>&1 &
P2=$!
on_exit "kill $P2 2>/dev/null"
wait_for 10 grep -q drops= "$T/p2.txt" || fail "packet socket 2: $(cat "$T/p2.txt")"
D2=$(sed -n 's/^drops=\([0-9]*\).*/\1/p' "$T/p2.txt")
wait_for 5 is $((D1 + D2)) metric_psk || true
echo "FIGURE: AF_PACKET drops, sockets 1 (closed) + 2: tp_drops=$D1+$D2 sysobs=$(metric_psk)"
assert_eq "the namespace's total: both sockets' tp_drops" $((D1 + D2)) "$(metric_psk)"
stop_agent
pass "AF_PACKET receive drops = PACKET_STATISTICS ($D1, then $D1 + $D2 with the first socket closed)"
