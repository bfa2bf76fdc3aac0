#!/usr/bin/env bash
# integration.privsep: after start-up the agent runs as an unprivileged user
# (default sysobs, else nobody) with no capabilities (effective, permitted
# and bounding sets empty), no new privileges and its seccomp allow-list in
# kill mode; its helper stays uid 0 with no capability, no new privileges and
# its own filter. Under that, the collectors keep working: drops in a netns
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
assert_eq "agent uid" "$uid" "$(status "$AGENT_PID" Uid)"
assert_eq "agent CapEff" 0000000000000000 "$(status "$AGENT_PID" CapEff)"
assert_eq "agent CapPrm" 0000000000000000 "$(status "$AGENT_PID" CapPrm)"
assert_eq "agent CapBnd" 0000000000000000 "$(status "$AGENT_PID" CapBnd)"
assert_eq "agent NoNewPrivs" 1 "$(status "$AGENT_PID" NoNewPrivs)"
assert_eq "agent Seccomp (filter)" 2 "$(status "$AGENT_PID" Seccomp)"
# Every thread, not only the main one, is filtered.
for task in /proc/"$AGENT_PID"/task/*; do
	assert_eq "thread $(basename "$task") Seccomp" 2 "$(awk '$1 == "Seccomp:" { print $2 }' "$task/status")"
	assert_eq "thread $(basename "$task") uid" "$uid" "$(awk '$1 == "Uid:" { print $2 }' "$task/status")"
done
HELPER=$(pgrep -P "$AGENT_PID" -x sysobsd-priv) || fail "no helper process"
assert_eq "helper uid" 0 "$(status "$HELPER" Uid)"
assert_eq "helper CapEff" 0000000000000000 "$(status "$HELPER" CapEff)"
assert_eq "helper CapBnd" 0000000000000000 "$(status "$HELPER" CapBnd)"
assert_eq "helper NoNewPrivs" 1 "$(status "$HELPER" NoNewPrivs)"
assert_eq "helper Seccomp" 2 "$(status "$HELPER" Seccomp)"
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

pass "agent as $user without capabilities, NNP and seccomp on every thread; helper uid 0 without capabilities; drops counted and sampled, history and /metrics served after the drop"
