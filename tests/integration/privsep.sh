#!/usr/bin/env bash
# integration.privsep: after start-up the agent runs as an unprivileged user
# (default sysobs, else nobody) with no capabilities (effective, permitted,
# inheritable, ambient and bounding sets empty), no new privileges and its
# seccomp allow-list in kill mode, on every one of its threads (with seccomp
# = off all of it but the filter); its helper stays uid 0 with no capability,
# no new privileges and its own filter. Under that, the collectors keep working: drops in a netns
# are counted and sampled through held BPF fds, history is written and
# served, /metrics renders in every format, every collector that was up
# stays up, SIGTERM still ends it with status 0. An unknown user is a config
# error (exit 2) before anything starts.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"

NS=sysobs-priv-$$
netns_new "$NS" || skip "cannot create a network namespace"

# The database directory must be reachable by the user the agent becomes.
chmod 755 "$T"
cat >"$T/sysobsd.ini" <<INI
[agent]
seccomp = kill
[http]
listen = 127.0.0.1:0
[storage]
path = $T/sysobs.db
batch_ms = 50
snapshot_interval = 1s
[collector.self]
interval = 1s
[collector.drops]
interval = 200ms
netns_label = true
INI
start_agent

user=$(getent passwd sysobs >/dev/null && echo sysobs || echo nobody)
uid=$(id -u "$user")
status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
wait_for 10 grep -q 'without capabilities' "$T/agent.log" || fail "no drop logged"
# threads_check WHAT PID KEY:VALUE...: every thread of PID has each /proc
# status field KEY (all its columns, space-separated) equal to VALUE; capability
# sets, no_new_privs and seccomp are per thread in the kernel. Fails listing
# every mismatch of every thread (id and name); sets THREADS.
threads_check() {
	local what=$1 pid=$2 task tid name want key got wrong=()
	shift 2
	THREADS=0
	for task in /proc/"$pid"/task/*; do
		tid=${task##*/}
		name=$(cat "$task/comm" 2>/dev/null) || continue # ended meanwhile
		THREADS=$((THREADS + 1))
		for want in "$@"; do
			key=${want%%:*}
			got=$(awk -v k="$key:" '$1 == k { $1 = ""; print substr($0, 2) }' "$task/status")
			[ "$got" = "${want#*:}" ] ||
				wrong+=("$what thread $tid ($name) $key: expected '${want#*:}', got '$got'")
		done
	done
	[ "$THREADS" -ge 1 ] || fail "$what: no thread of $pid"
	[ ${#wrong[@]} = 0 ] || fail "$(printf '%s\n' "${wrong[@]}")"
}
no_caps=(CapInh:0000000000000000 CapPrm:0000000000000000 CapEff:0000000000000000
	CapBnd:0000000000000000 CapAmb:0000000000000000 NoNewPrivs:1 Seccomp:2)
gid=$(id -g "$user")
threads_check agent "$AGENT_PID" "Uid:$uid $uid $uid $uid" "Gid:$gid $gid $gid $gid" \
	Groups: "${no_caps[@]}"
# The store writer, the HTTP server's threads, ...: not the main thread alone.
assert_ge "agent threads checked" 3 "$THREADS"
agent_threads=$THREADS
HELPER=$(pgrep -P "$AGENT_PID" -x sysobsd-priv) || fail "no helper process"
threads_check helper "$HELPER" "Uid:0 0 0 0" "${no_caps[@]}"
assert_eq "database owner" "$user" "$(stat -c %U "$T/sysobs.db")"

up_before=$(curl -sS "http://127.0.0.1:$PORT/metrics" | grep -c '^sysobs_collector_up{.*} 1$')

# Drops in the namespace, counted and sampled after the drop.
ip netns exec "$NS" bash -c 'for i in $(seq 1 20); do echo x >/dev/udp/127.0.0.1/4242; done'
key="sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$NSINUM\"}"
counted() { [ "$(metric "$key")" -ge 20 ] 2>/dev/null; }
wait_for 15 counted || fail "drops not counted after the privilege drop: $(metric "$key")"
sampled() { [ "$(api GET "/api/v1/drops/samples?netns=$NSINUM&port=4242" | jq '.data | length')" -ge 1 ]; }
wait_for 15 sampled || fail "no stored drop sample after the privilege drop"
for accept in 'application/openmetrics-text;version=1.0.0' \
	'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'; do
	code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Accept: $accept" "http://127.0.0.1:$PORT/metrics")
	assert_eq "/metrics ($accept)" 200 "$code"
done
req GET '/api/v1/events?limit=5'
assert_eq "events" 200 "$HTTP_CODE"
req GET '/api/v1/series?metric=process_open_fds&start=-1m&step=1s'
assert_eq "series" 200 "$HTTP_CODE"
sleep 3 # a few more collect, snapshot and retention rounds
kill -0 "$AGENT_PID" || fail "the agent died under its seccomp filter: $(dmesg 2>/dev/null | grep -i seccomp | tail -2)"
up_after=$(curl -sS "http://127.0.0.1:$PORT/metrics" | grep -c '^sysobs_collector_up{.*} 1$')
assert_eq "collectors up before and after the drop" "$up_before" "$up_after"
stop_agent

# seccomp = off: no filter, whose TSYNC would carry no_new_privs to the
# other threads; every thread has it and no capability all the same.
sed -i 's/^seccomp = kill$/seccomp = off/' "$T/sysobsd.ini"
start_agent
dropped_twice() { [ "$(grep -c 'without capabilities' "$T/agent.log")" -ge 2 ]; }
wait_for 10 dropped_twice || fail "no drop logged with seccomp = off"
threads_check "agent (seccomp = off)" "$AGENT_PID" "Uid:$uid $uid $uid $uid" \
	"${no_caps[@]/Seccomp:2/Seccomp:0}"
stop_agent
sed -i 's/^seccomp = off$/seccomp = kill/' "$T/sysobsd.ini"

# An unknown user is refused before anything starts.
sed -i 's/^seccomp = kill$/seccomp = kill\nuser = sysobs-no-such-user/' "$T/sysobsd.ini"
# refused WHAT LOG: the agent exits 2 on this config before anything starts
refused() {
	local rc=0
	timeout 10 "$SYSOBSD" --config "$T/sysobsd.ini" >"$2" 2>&1 || rc=$?
	assert_eq "exit status for $1" 2 "$rc"
}
refused "an unknown user" "$T/bad.log"
grep -q 'sysobs-no-such-user' "$T/bad.log" || fail "error does not name the user: $(cat "$T/bad.log")"

# A database directory the user the agent becomes cannot reach: exit 2
# before anything starts, naming the directory and the user.
sed -i '/^user = sysobs-no-such-user$/d' "$T/sysobsd.ini"
mkdir -m 700 "$T/private"
sed -i "s|^path = .*|path = $T/private/sysobs.db|" "$T/sysobsd.ini"
refused "an unreachable database directory" "$T/dir.log"
grep -q "the database directory $T/private is not reachable by $user" "$T/dir.log" ||
	fail "error does not name the directory and the user: $(cat "$T/dir.log")"

pass "agent as $user without capabilities, NNP and seccomp on each of its $agent_threads threads; helper uid 0 without capabilities; drops counted and sampled, history and /metrics served after the drop"
