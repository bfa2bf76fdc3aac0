#!/usr/bin/env bash
# drops collector: module BTF and kallsyms follow module loads through the
# kernel's uevents (NETLINK_KOBJECT_UEVENT, group 1), not a poll, with the
# agent unprivileged (user nobody or sysobs, no capabilities, seccomp).
#
# A module load is announced as add@/module/<name> from the kernel (port id
# 0). This project's kernel has no loadable modules (CONFIG_MODULES off: no
# /sys/module/*/uevent to write "add" to), so the announcements are sent
# the one other way the kernel broadcasts them: root writes the message to
# the kernel's uevent socket, and lib/kobject_uevent.c
# (uevent_net_rcv_skb -> uevent_net_broadcast) sends it to group 1 as its
# own, port id 0, SEQNUM appended, exactly as a module load's. Asserted:
#   - quiet: no rescan over 3 s (neither cause), nothing read;
#   - a real kernel uevent of another subsystem (change on /sys/bus/...)
#     and a kernel-sent net device add: not even read (socket filter); an
#     object below a module: read, no rescan;
#   - one module add: exactly one rescan, kallsyms re-read with addresses
#     (the fd opened before the privilege drop);
#   - two module uevents in quick succession: exactly one more;
#   - a forged add@/module/ from a user space socket (root may send to
#     group 1; its port id is not 0): rejected, no rescan;
#   - kernel-sent but malformed (no ACTION; ACTION disagreeing with the
#     header): rejected, no rescan;
#   - 1000 announcements into a stopped agent: the bounded receive buffer
#     overflows, the overrun is counted, one rescan follows;
#   - the ring buffer behind the same epoll fd still delivers samples;
#   - without the socket (refused through LD_PRELOAD, as a sandbox may):
#     the fallback poll, said once in the log, samples still delivered.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd python3
need_cmd jq
need_cmd ip
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"

cat >"$T/uevent.py" <<'PY'
# uevent.py kernel|user STRING... [--next STRING...]: one uevent datagram of
# these NUL-terminated strings ($REPEAT times), then the next one's, back
# to back from one process. kernel: through the kernel's uevent socket, which
# broadcasts it to group 1 with port id 0 (needs CAP_SYS_ADMIN). user:
# straight to group 1 from this socket (needs CAP_NET_ADMIN; port id != 0).
import os, socket, struct, sys
NETLINK_KOBJECT_UEVENT = 15
NLM_F_REQUEST, NLM_F_ACK, NLMSG_MIN_TYPE = 1, 4, 0x10
msgs, cur = [], []
for a in sys.argv[2:] + ["--next"]:
    if a == "--next":
        msgs.append(b"".join(x.encode() + b"\0" for x in cur))
        cur = []
    else:
        cur.append(a)
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_KOBJECT_UEVENT)
s.bind((0, 0))
for data, seq in ((d, q) for d in msgs for q in range(int(os.environ.get("REPEAT", "1")))):
    if sys.argv[1] == "kernel":
        hdr = struct.pack("=IHHII", 16 + len(data), NLMSG_MIN_TYPE, NLM_F_REQUEST | NLM_F_ACK,
                          seq + 1, 0)
        s.sendto(hdr + data, (0, 0))
        err = struct.unpack_from("=i", s.recv(4096), 16)[0]
        if err:
            sys.exit("kernel refused the uevent: " + os.strerror(-err))
    else:
        s.sendto(data, (0, 1))
PY
send() { python3 "$T/uevent.py" "$@" || fail "uevent.py $*"; }
# module_send kernel|user ACTION NAME: the announcement of a module load
# (add) or unload (remove), as the kernel writes it
module_send() { send "$1" "$2@/module/$3" "ACTION=$2" "DEVPATH=/module/$3" "SUBSYSTEM=module"; }
# modules_send kernel|user ACTION NAME ACTION NAME: two announcements from
# one process, back to back (two python starts could be a second apart on a
# loaded machine, past the agent's settle time)
modules_send() {
	send "$1" "$2@/module/$3" "ACTION=$2" "DEVPATH=/module/$3" "SUBSYSTEM=module" --next \
		"$4@/module/$5" "ACTION=$4" "DEVPATH=/module/$5" "SUBSYSTEM=module"
}

NS=sysobs-modw-$$
netns_new "$NS" || skip "cannot create a network namespace"

chmod 755 "$T"
write_base_config agent.user=- agent.seccomp=kill collector.self.enabled=false \
	collector.drops.interval=200ms collector.drops.sample_rate=100000 collector.drops.sample_burst=10000
start_agent
wait_collector drops
wait_for 10 grep -q 'without capabilities' "$T/agent.log" || fail "the agent did not drop privileges"
uid=$(awk '$1 == "Uid:" { print $2 }' "/proc/$AGENT_PID/status")
[ "$uid" != 0 ] || fail "agent still uid 0"
grep -q 'no kernel uevents' "$T/agent.log" && fail "uevent socket not opened: $(grep 'no kernel uevents' "$T/agent.log")"

rescans() { local v; v=$(metric "sysobs_drops_btf_rescans_total{cause=\"$1\"}"); printf '%s' "${v:-x}"; }
uevents() { local v; v=$(metric "sysobs_drops_uevents_total{result=\"$1\"}"); printf '%s' "${v:-x}"; }
counts() {
	echo "rescans uevent=$(rescans uevent) poll=$(rescans poll);" \
		"uevents module=$(uevents module) other=$(uevents other)" \
		"rejected=$(uevents rejected) overrun=$(uevents overrun)"
}
# expect WHAT RESCANS MODULE OTHER REJECTED: the counters (poll, overrun 0)
expect() {
	local got
	got=$(counts)
	echo "$1: $got"
	assert_eq "$1" "rescans uevent=$2 poll=0; uevents module=$3 other=$4 rejected=$5 overrun=0" \
		"$got"
}
# The debounce is 1 s from the first announcement; 1.6 s covers it.
settle() { sleep 1.6; }

# Quiet: nothing rescans, nothing is read, for 3 s.
expect "at start" 0 0 0 0
sleep 3
expect "after 3 quiet seconds" 0 0 0 0

# Uevents of other subsystems never reach the agent (other stays 0: the
# socket filter drops them): a real one (the kernel's own
# kobject_uevent_env, for a synthetic change on a bus) and a kernel-sent net
# device add.  A module message for an object below a module passes the
# filter and is read, but is not a load: other 1, no rescan.
echo change >/sys/bus/container/uevent || fail "cannot write /sys/bus/container/uevent"
send kernel "add@/devices/virtual/net/sysobsmw0" "ACTION=add" \
	"DEVPATH=/devices/virtual/net/sysobsmw0" "SUBSYSTEM=net" "INTERFACE=sysobsmw0"
settle
expect "after a bus change and a net device add" 0 0 0 0
send kernel "add@/module/sysobs_mw_e/holders" "ACTION=add" \
	"DEVPATH=/module/sysobs_mw_e/holders" "SUBSYSTEM=module"
settle
expect "after add@/module/sysobs_mw_e/holders" 0 0 1 0

# One module load: one rescan, kallsyms re-read with its addresses.
module_send kernel add sysobs_mw_a
settle
expect "after one module add" 1 1 1 0
line=$(grep 'module loaded or unloaded' "$T/agent.log" | tail -1)
echo "agent: ${line#*drops: }"
syms=$(sed -n 's/.*, \([0-9]*\) kernel symbols.*/\1/p' <<<"$line")
assert_ge "kernel symbols re-read as uid $uid" 1000 "${syms:-0}"

# Two in quick succession (a module and its dependency): one rescan.
modules_send kernel add sysobs_mw_b remove sysobs_mw_a
settle
expect "after two module uevents at once" 2 3 1 0
sleep 1
expect "a second later" 2 3 1 0

# Forged: add@/module/ sent to group 1 by a user space socket (root).
module_send user add sysobs_mw_forged
# Kernel-sent, malformed: no ACTION; ACTION disagreeing with the header.
send kernel "add@/module/sysobs_mw_c" "DEVPATH=/module/sysobs_mw_c" "SUBSYSTEM=module"
send kernel "add@/module/sysobs_mw_d" "ACTION=remove" "DEVPATH=/module/sysobs_mw_d" \
	"SUBSYSTEM=module"
settle
expect "after a forged and two malformed module messages" 2 3 1 3

# 1000 announcements while the agent is stopped: its bounded receive buffer
# overflows, the kernel says so (ENOBUFS): counted, one rescan for all.
kill -STOP "$AGENT_PID"
REPEAT=1000 module_send kernel add sysobs_mw_flood
kill -CONT "$AGENT_PID"
settle
got=$(counts)
echo "after 1000 module adds into a stopped agent: $got"
flood=$(($(uevents module) - 3))
[ "$(uevents overrun)" -ge 1 ] || fail "no overrun counted: $got"
[ "$flood" -ge 1 ] && [ "$flood" -lt 1000 ] || fail "module uevents read of the 1000: $flood"
assert_eq "rescans after the flood" 3 "$(rescans uevent)"
assert_eq "poll rescans after the flood" 0 "$(rescans poll)"

# The ring buffer, behind the same epoll fd: a datagram to a closed port in
# the test's namespace is sampled.
ip netns exec "$NS" bash -c 'echo x >/dev/udp/127.0.0.1/9' 2>/dev/null || true
# has_sample PORT: a NO_SOCKET sample of a datagram to PORT is stored
has_sample() { [ "$(api GET "/api/v1/drops/samples?port=$1&reason=NO_SOCKET&limit=5" | jq '.data | length')" -ge 1 ]; }
wait_for 10 has_sample 9 || fail "no NO_SOCKET sample of the datagram to port 9"

stop_agent
pass "unprivileged (uid $uid): 0 rescans in 3 quiet s; other subsystems' uevents not read;" \
	"1 module add -> 1 rescan ($syms symbols re-read); 2 at once -> 1; forged (user port id)" \
	"and malformed kernel-sent messages rejected (3), no rescan; 1000 into a stopped agent:" \
	"$flood read, overrun counted, 1 rescan; ring samples still delivered"

# Without the uevent socket (a sandbox that refuses it; here an LD_PRELOAD
# that fails that one socket): the poll, said once; a module uevent changes
# nothing; the ring buffer is the collector's fd again.
PRELOAD=${SYSOBS_BUILD:?}/tests/libdrops_nouevent.so
[ -f "$PRELOAD" ] || fail "$PRELOAD not built"
mv "$T/agent.log" "$T/agent-uevent.log"
LD_PRELOAD=$PRELOAD start_agent
wait_collector drops
assert_eq "'no kernel uevents' lines in the log" 1 "$(grep -c 'no kernel uevents' "$T/agent.log")"
grep 'no kernel uevents' "$T/agent.log" | sed 's/.*drops: /agent: /'
module_send kernel add sysobs_mw_f
settle
got="rescans uevent=$(rescans uevent) poll=$(rescans poll); uevents module=$(uevents module)"
echo "without uevents, after a module add: $got"
assert_eq "without uevents" "rescans uevent=0 poll=0; uevents module=x" "$got"
ip netns exec "$NS" bash -c 'echo x >/dev/udp/127.0.0.1/10' 2>/dev/null || true
wait_for 10 has_sample 10 || fail "no NO_SOCKET sample of the datagram to port 10 without uevents"
stop_agent
pass "without the uevent socket: the poll, said once; no uevent rescan; samples delivered"
