#!/usr/bin/env bash
# drops collector, counters whose object is gone (issues #10 and #14): the
# agent, unprivileged after its start, reads the kernel's own list of
# network namespaces (bpf/netns.bpf.c) and retires the counters of a
# namespace that is gone; with container_label, those of a container whose
# cgroup was removed.
#
#  A. netns_label = true, fast slots: the series of a deleted namespace stays
#     for [metrics] stale_series_grace with its final value, then leaves
#     /metrics and sysobs_series_removed_total{collector="drops"} counts it;
#     a new namespace that reuses the inode number counts from 0, also when
#     the agent did not see the old one die before (reuse_unseen).
#  B. netns_label = true, hash only (fast_slots = false): the kernel keys of
#     the deleted namespace are freed (sysobs_drops_map_entries goes down).
#  C. netns_label = false: the (reason, protocol) total never goes back when
#     the keys of a deleted namespace are freed.
#  D. container_label = true: SOCKET_RCVBUFF drops of sockets in two cgroups
#     the test makes (docker-<id>.scope) and in the test's own (no
#     container) count in container="<short id>" series and the host's, as
#     many as the kernel's UdpRcvbufErrors in the namespace (nstat) says;
#     when one container's cgroup is removed its series leaves after the
#     grace, the other's stays.
#  (A kernel without the walks' helpers: integration.drops_probe.)
#
# Reference for the list: the namespaces of every process (lsns) and every
# bind mount in /run/netns, the two ways namespaces are held on this host.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd lsns
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"

NS=sysobs-dnetns-$$
# ns_new NAME: netns_new, or skip; the inode in NSINUM
ns_new() { netns_new "$1" || skip "cannot create a network namespace"; }
ns_del() { ip netns del "$1" 2>/dev/null || true; }
# nosock NS N: N UDP datagrams to a closed port (NO_SOCKET drops) in NS
nosock() { ip netns exec "$1" "$GEN" udp -d 127.0.0.1 -p 9 -n "$2" -s 41100 >/dev/null; }

# The database directory must be reachable by the user the agent becomes.
chmod 755 "$T"
# agent_config LABEL FAST_SLOTS [CONTAINER_LABEL]
agent_config() {
	write_base_config agent.user=- metrics.stale_series_grace=3s collector.self.enabled=false \
		collector.drops.interval=200ms "collector.drops.netns_label=$1" \
		"collector.drops.fast_slots=$2" "collector.drops.container_label=${3:-false}"
}
start_drops_agent() { # [sysobsd flags...]
	start_agent "$@"
	wait_collector drops
	wait_for 10 grep -q 'without capabilities' "$T/agent.log" ||
		fail "the agent did not drop its privileges"
	grep -q "cannot list network namespaces" "$T/agent.log" &&
		fail "agent: $(grep 'cannot list network namespaces' "$T/agent.log")"
	return 0
}
val() { local v; v=$(metric "$1"); printf '%s' "${v:-0}"; }
series() { val "sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$1\"}"; }
has_series() { metrics_body | grep -q "^sysobs_packet_drops_total{.*netns=\"$1\""; }
metrics_body() { curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics"; }
settle() { sleep 0.8; } # four collect intervals
# series_is INODE N / total_ge N: for wait_for (evaluated at every try)
series_is() { [ "$(series "$1")" = "$2" ]; }
total_ge() { [ "$(total)" -ge "$1" ]; }
# reuse_unseen NAME: a namespace deleted and its inode number given to a new
# one while the agent is stopped (SIGSTOP), so that one collect finds the
# keys of both. The kernel gives the lowest free inode number
# (proc_alloc_inum(), an IDA) once the old namespace's cleanup work has
# freed it; lower free numbers (namespaces of earlier tests) go first. So,
# once the kernel's list has no namespace still being torn down, new
# namespaces are made until one gets it (at most 100 in 30 s, kept until
# the end so they do not free theirs). The new namespace's series must count
# its own drops only (5), not the old one's 20 as well (25: what
# inode-keyed counters showed), and its samples must carry a new cookie.
reuse_unseen() {
	local old new i j c_old c_new
	ns_new "$1-old"
	old=$NSINUM
	nosock "$1-old" 20
	wait_for 5 series_is "$old" 20 || fail "series of $1-old: $(series "$old"), not 20"
	c_old=$(cookies "$old")
	wait_for 70 live_is_ref || true
	gone0=$(val sysobs_drops_netns_gone_total)
	kill -STOP "$AGENT_PID"
	ns_del "$1-old"
	local t0=$SECONDS
	for i in $(seq 1 200); do
		ns_new "$1-n$i"
		new=$NSINUM
		[ "$new" = "$old" ] || [ $((SECONDS - t0)) -ge 60 ] && break
		sleep 0.3
	done
	if [ "$new" != "$old" ]; then
		# Another process's namespace took it, or the kernel's cleanup
		# of namespaces (one worker for all) is held up by others': the
		# case cannot be made here, which says nothing of the agent.
		kill -CONT "$AGENT_PID"
		inode_in_use "$old" && why="another process's namespace took it" ||
			why="the kernel had not freed it"
		echo "SKIP-PART: inode $old not reused by $i namespaces made in $((SECONDS - t0)) s: $why"
		for j in $(seq 1 "$i"); do ns_del "$1-n$j"; done
		wait_for 70 live_is_ref || true
		return 0
	fi
	nosock "$1-n$i" 5
	kill -CONT "$AGENT_PID"
	wait_for 5 gone_counted || fail "deletion of $1-old not seen: gone_total $(val sysobs_drops_netns_gone_total), series of inode $old: $(series "$old") (the new namespace made 5 drops)"
	settle
	echo "inode $old reused by the namespace made $i-th while the agent was stopped: series $(series "$old") (the new namespace's 5; inode-keyed: 25)"
	assert_eq "reused inode $old: the new namespace's drops only" 5 "$(series "$old")"
	has_new_cookie() { c_new=$(cookies "$old"); [ "$c_new" -gt "$c_old" ]; }
	wait_for 5 has_new_cookie || fail "samples of inode $old: $c_new distinct cookies, as many as before the reuse"
	echo "samples of inode $old: $c_old distinct cookies before the reuse, $c_new after"
	for j in $(seq 1 "$i"); do ns_del "$1-n$j"; done
	wait_for 70 live_is_ref || true
}
# inode_in_use INODE: a namespace of another process or /run/netns has it
inode_in_use() {
	lsns -t net -n -o NS | grep -qx "$1" && return 0
	for f in /run/netns/*; do [ "$(stat -L -c %i "$f")" = "$1" ] && return 0; done
	return 1
}
# cookies INODE: how many namespaces (cookies) the samples of that inode name
cookies() {
	api GET "/api/v1/drops/samples?netns=$1&limit=1000" | jq -r '[.data[].netns_cookie] | unique | length'
}
reference_netns() {
	{
		lsns -t net -n -o NS
		for f in /run/netns/*; do stat -L -c %i "$f"; done
	} | sort -u | wc -l
}

# --- A. label, fast slots: grace, removal, reuse --------------------------------
agent_config true true
# With libbpf's debug lines: the walks ride in the drops object, so its one
# load is the agent's one parse of the kernel BTF by libbpf (issue #23:
# each parse is ~11 MiB at start-up's peak; three loads before).
start_drops_agent --log-level debug
assert_eq "libbpf's kernel BTF loads at start-up (one object)" 1 \
	"$(grep -c "libbpf: loading kernel BTF '" "$T/agent.log")"
ns_new "$NS-a"
A=$NSINUM
# a namespace deleted just before (another test's) stays in the kernel's
# list until its cleanup work has run, and while TIME_WAIT sockets of it
# live (up to 60 s: drops_cases leaves some): equal within 70 s
# (both read in the same try: a re-read after the wait raced with a
# namespace of another process coming or going, 3 vs 4 in a CI rehearsal)
live_is_ref() {
	ref=$(reference_netns)
	live=$(val sysobs_drops_netns_live)
	[ "$live" = "$ref" ]
}
wait_for 70 live_is_ref || true
echo "namespaces: the kernel's list $live, processes and /run/netns $ref"
assert_eq "namespaces listed (the kernel's list vs lsns + /run/netns)" "$ref" "$live"
nosock "$NS-a" 20
wait_for 5 series_is "$A" 20 || fail "series of $NS-a: $(series "$A"), not 20"
gone0=$(val sysobs_drops_netns_gone_total)
removed0=$(val 'sysobs_series_removed_total{collector="drops"}')
ns_del "$NS-a"
t_del=$SECONDS
gone_counted() { [ "$(val sysobs_drops_netns_gone_total)" -gt "$gone0" ]; }
wait_for 5 gone_counted || fail "deletion of $NS-a not seen: gone_total $(val sysobs_drops_netns_gone_total)"
assert_eq "netns gone counted once" $((gone0 + 1)) "$(val sysobs_drops_netns_gone_total)"
assert_eq "final value kept during the grace" 20 "$(series "$A")"
wait_for 10 sh -c "! curl -sS --max-time 5 http://127.0.0.1:$PORT/metrics | grep -q 'netns=\"$A\"'" ||
	fail "series of the deleted $NS-a still in /metrics after $((SECONDS - t_del)) s (grace 3 s)"
echo "series of deleted $NS-a ($A) left /metrics after $((SECONDS - t_del)) s"
removed=$(($(val 'sysobs_series_removed_total{collector="drops"}') - removed0))
assert_ge "series removed counted" 1 "$removed"
ns_new "$NS-b"
B=$NSINUM
nosock "$NS-b" 5
wait_for 5 series_is "$B" 5 || fail "series of $NS-b ($B): $(series "$B"), not 5"
if [ "$B" = "$A" ]; then
	echo "$NS-b reused inode $A: counts from 0 (5, not 25)"
else
	echo "$NS-b got inode $B (not a reuse of $A): 5 drops"
fi
ns_del "$NS-b"
reuse_unseen "$NS-r"
stop_agent

# --- B. label, hash only: the kernel keys are freed -----------------------------
agent_config true false
start_drops_agent
ns_new "$NS-c"
C=$NSINUM
nosock "$NS-c" 7
wait_for 5 series_is "$C" 7 || fail "series of $NS-c: $(series "$C"), not 7"
keys0=$(val sysobs_drops_map_entries)
ns_del "$NS-c"
keys_down() { [ "$(val sysobs_drops_map_entries)" -lt "$keys0" ]; }
wait_for 5 keys_down || fail "kernel keys of $NS-c not freed: map entries $keys0 -> $(val sysobs_drops_map_entries)"
echo "hash: map entries $keys0 -> $(val sysobs_drops_map_entries) after deleting $NS-c"
assert_eq "final value of $NS-c (hash)" 7 "$(series "$C")"
reuse_unseen "$NS-h"
stop_agent

# --- C. no label: totals never go back -------------------------------------------
rm -f "$T/sysobs.db"*
agent_config false false
start_drops_agent
total() { val 'sysobs_packet_drops_total{reason="NO_SOCKET",protocol="udp"}'; }
ns_new "$NS-c"
C=$NSINUM
nosock "$NS-c" 11
wait_for 5 total_ge 11 || fail "NO_SOCKET udp total $(total) < 11"
settle
before=$(total)
keys0=$(val sysobs_drops_map_entries)
ns_del "$NS-c"
wait_for 5 keys_down || fail "kernel keys of $NS-c not freed (no label)"
settle
after=$(total)
echo "no label: NO_SOCKET udp total $before before, $after after the keys of $NS-c were freed"
assert_ge "total never goes back" "$before" "$after"
ns_new "$NS-c"
C2=$NSINUM
nosock "$NS-c" 4
wait_for 5 total_ge $((after + 4)) || fail "total after 4 more: $(total), expected >= $((after + 4))"
stop_agent

# --- D. container label ------------------------------------------------------------
need_cmd nstat
CG2=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG2" ] || skip "no cgroup2 mount"
CGP=$CG2/sysobs-dgone-$$
ID1=$(printf 'sysobs-a%d' $$ | sha256sum | cut -c1-64)
ID2=$(printf 'sysobs-b%d' $$ | sha256sum | cut -c1-64)
mkdir -p "$CGP/docker-$ID1.scope" "$CGP/docker-$ID2.scope" || fail "cannot create cgroups in $CGP"
on_exit "rmdir $CGP/docker-$ID1.scope $CGP/docker-$ID2.scope $CGP 2>/dev/null"
rm -f "$T/sysobs.db"*
agent_config false true true
start_drops_agent
ns_new "$NS-d"
D=$NSINUM
# rcvbuf CGROUP_DIR PORT: 2000 datagrams to a socket that never reads, sent
# from a process in that cgroup (the socket is created there); prints the
# datagrams the socket did not take
rcvbuf() {
	local out
	out=$(bash -c "${1:+echo \$\$ >$1/cgroup.procs && }exec ip netns exec $NS-d $GEN rcvbuf -d 127.0.0.1 -p $2 -n 2000 -s 41200") ||
		fail "rcvbuf in ${1:-the test cgroup}: $out"
	echo "${out##*dropped }"
}
n1=$(rcvbuf "$CGP/docker-$ID1.scope" 7101)
n2=$(rcvbuf "$CGP/docker-$ID2.scope" 7102)
n3=$(rcvbuf "" 7103)
kernel=$(ip netns exec "$NS-d" nstat -az UdpRcvbufErrors | awk '$1 == "UdpRcvbufErrors" { print $2 }')
ctr() { val "sysobs_packet_drops_total{reason=\"SOCKET_RCVBUFF\",protocol=\"udp\",container=\"$1\"}"; }
host() { val 'sysobs_packet_drops_total{reason="SOCKET_RCVBUFF",protocol="udp",container=""}'; }
ctr_is() { [ "$(ctr "$1")" = "$2" ]; }
S1=${ID1:0:12}
S2=${ID2:0:12}
wait_for 5 ctr_is "$S2" "$n2" || true
settle
echo "container label: ${S1} $(ctr "$S1") (sent-received $n1), ${S2} $(ctr "$S2") ($n2)," \
	"host $(metric_sum sysobs_packet_drops_total 'reason="SOCKET_RCVBUFF"') in all," \
	"kernel UdpRcvbufErrors $kernel ($((n1 + n2 + n3)))"
assert_eq "kernel's own count vs the generator's" $((n1 + n2 + n3)) "$kernel"
assert_ge "drops in each socket" 1 "$n1"
assert_eq "container $S1" "$n1" "$(ctr "$S1")"
assert_eq "container $S2" "$n2" "$(ctr "$S2")"
all=$(metric_sum sysobs_packet_drops_total 'reason="SOCKET_RCVBUFF"')
assert_eq "the three sockets' drops in all series" "$kernel" "$all"
assert_eq "series with a container" 2 \
	"$(metrics_body | grep -c '^sysobs_packet_drops_total{.*container="[0-9a-f]\{12\}"')"
# from the label to the stored samples: ?container= takes the short id
CG1=$(stat -c %i "$CGP/docker-$ID1.scope")
req GET "/api/v1/drops/samples?container=$S1&limit=1000"
rows=$BODY
assert_eq "samples by ?container=$S1" 200 "$HTTP_CODE"
echo "samples of container $S1: $(jq '.data | length' <<<"$rows"), of cgroup $CG1:" \
	"$(api GET "/api/v1/drops/samples?cgroup_id=$CG1&limit=1000" | jq '.data | length')"
assert_ge "samples of container $S1" 1 "$(jq '.data | length' <<<"$rows")"
assert_eq "every one of them in $S1" "[\"$ID1\"]" "$(jq -c '[.data[].container] | unique' <<<"$rows")"
assert_eq "and in its cgroup" "[\"$CG1\"]" "$(jq -c '[.data[].cgroup_id] | unique' <<<"$rows")"
assert_eq "?cgroup_id= gives the same samples" "$(jq -c '[.data[].id]' <<<"$rows")" \
	"$(api GET "/api/v1/drops/samples?cgroup_id=$CG1&limit=1000" | jq -c '[.data[].id]')"
rmdir "$CGP/docker-$ID1.scope" || fail "cannot remove cgroup docker-$ID1.scope"
t_del=$SECONDS
wait_for 10 sh -c "! curl -sS --max-time 5 http://127.0.0.1:$PORT/metrics | grep -q 'container=\"$S1\"'" ||
	fail "series of the removed container $S1 still in /metrics after $((SECONDS - t_del)) s"
echo "series of the removed container $S1 left /metrics after $((SECONDS - t_del)) s"
assert_eq "the other container's series stays" "$n2" "$(ctr "$S2")"
stop_agent

pass "gone namespaces and containers: series gone after the grace, keys freed, totals kept (inode $A, reuse $B, $C2; containers $S1 removed, $S2 kept)"
