#!/usr/bin/env bash
# integration.privsep: after start-up the agent runs as an unprivileged user
# (default sysobs, else nobody) with no capabilities (effective, permitted,
# inheritable, ambient and bounding sets empty), no new privileges and its
# seccomp allow-list in kill mode, on every one of its threads (with seccomp
# = off all of it but the filter); its helper stays uid 0 with no capability,
# no new privileges and its own filter, and runs only with an IFS device at
# start-up (a device that appears later is reported as needing a restart,
# with no helper). Under that, the collectors keep working: drops in a netns
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
write_base_config agent.user=- agent.seccomp=kill storage.snapshot_interval=1s \
	collector.self.interval=1s collector.drops.interval=200ms collector.drops.netns_label=true
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
# No IFS device under the default sysfs root (none on this machine): no
# privileged helper, no root process without a job.
if compgen -G '/sys/devices/virtual/misc/intel_ifs_*' >/dev/null; then
	pgrep -P "$AGENT_PID" -x sysobsd-priv >/dev/null || fail "IFS device here but no helper"
else
	assert_eq "ifs state without a device" UNAVAILABLE "$(collector_state ifs)"
	helper=$(pgrep -P "$AGENT_PID" -x sysobsd-priv) &&
		fail "helper $helper runs on a host without IFS"
	assert_eq "sysobs_privhelper_resident_memory_bytes without a helper" "" \
		"$(metric sysobs_privhelper_resident_memory_bytes)"
fi
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

# ---- the privileged helper: only with a job ----
cp "$T/sysobsd.ini" "$T/base.ini"
# helper_ini SYSFS_ROOT: the agent dropping root as above, IFS under that
# root, admin routes (a scan request) on, no drops (not what is checked).
helper_ini() {
	write_base_config agent.user=- agent.seccomp=kill "agent.sysfs_root=$1" http.admin=true \
		collector.drops.enabled=false
}

# A device that appears after start-up (the intel_ifs module loaded
# later; a directory of its name is all discovery looks at): the collector
# stays unavailable, with no helper, and its reason says a restart is needed.
mkdir -p "$T/late/devices/virtual/misc"
helper_ini "$T/late"
start_agent
assert_eq "ifs state before the device" UNAVAILABLE "$(collector_state ifs)"
[[ $(collector_reason ifs) == *"loaded later: restart sysobsd"* ]] ||
	fail "reason without a device does not name the restart: $(collector_reason ifs)"
mkdir "$T/late/devices/virtual/misc/intel_ifs_0"
late() { [[ $(collector_reason ifs) == *"intel_ifs_0 appeared after start-up: restart sysobsd"* ]]; }
wait_for 15 late || fail "device appeared after start-up not reported: $(collector_reason ifs)"
assert_eq "ifs state after the device appeared" UNAVAILABLE "$(collector_state ifs)"
grep -q 'appeared after start-up' "$T/agent.log" || fail "the late device is not logged"
pgrep -P "$AGENT_PID" -x sysobsd-priv >/dev/null && fail "helper after a late device"
stop_agent
helper_note="no helper without IFS, nor for a device that appears later (reported: restart)"

# With a device at start-up (the FUSE fake driver, its files root's with
# their sysfs modes) the helper runs as uid 0 without capabilities, and a
# scan, whose run_test write the unprivileged agent could not do itself,
# passes through it.
if ifs_fake_usable; then
	ifs_fake_start device.0.default=pass -- -o allow_other,default_permissions
	RT=$T/mnt/devices/virtual/misc/intel_ifs_0/run_test
	setpriv --reuid "$uid" --regid "$gid" --clear-groups sh -c "echo 0 >$RT" 2>/dev/null &&
		fail "$user can write run_test of the fake itself: the test proves nothing"
	helper_ini "$T/mnt"
	start_agent
	wait_collector ifs
	HELPER=$(pgrep -P "$AGENT_PID" -x sysobsd-priv) || fail "no helper with an IFS device"
	threads_check helper "$HELPER" "Uid:0 0 0 0" "${no_caps[@]}"
	req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{"cpus":[0]}'
	assert_eq "scan requested" 202 "$HTTP_CODE"
	sid=$(jq -r '.scans[0].scan_id' <<<"$BODY")
	scan_status() { api GET "/api/v1/ifs/scans?scan_id=$sid" | jq -r '.data[0].status // empty'; }
	scanned() { [ -n "$(scan_status)" ]; }
	wait_for 10 scanned || fail "scan $sid not recorded"
	assert_eq "scan through the helper" pass "$(scan_status)"
	grep -q ' intel_ifs_0 0 pass ' "$T/mnt/fake_runs" ||
		fail "the fake saw no run on cpu 0: $(cat "$T/mnt/fake_runs")"
	rss=$(metric sysobs_privhelper_resident_memory_bytes)
	awk -v v="$rss" 'BEGIN { exit !(v > 0) }' ||
		fail "sysobs_privhelper_resident_memory_bytes: '$rss'"
	kill -0 "$AGENT_PID" || fail "the agent died under its seccomp filter"
	kill -0 "$HELPER" || fail "the helper died under its seccomp filter"
	stop_agent
	helper_note="$helper_note; with an IFS device a uid 0 helper without capabilities, a scan written through it ($(awk -v v="$rss" 'BEGIN { printf "%.1f", v / 1048576 }') MiB resident)"
else
	echo "note: IFS fake not usable (FUSE, fusermount3 or ifs_fake missing): helper with a device not checked"
fi
cp "$T/base.ini" "$T/sysobsd.ini"

# An unknown user is refused before anything starts.
sed -i 's/^seccomp = kill$/seccomp = kill\nuser = sysobs-no-such-user/' "$T/sysobsd.ini"
refused "an unknown user" sysobs-no-such-user --config "$T/sysobsd.ini"

# A database directory the user the agent becomes cannot reach: exit 2
# before anything starts, naming the directory and the user.
sed -i '/^user = sysobs-no-such-user$/d' "$T/sysobsd.ini"
mkdir -m 700 "$T/private"
sed -i "s|^path = .*|path = $T/private/sysobs.db|" "$T/sysobsd.ini"
refused "an unreachable database directory" \
	"the database directory $T/private is not reachable by $user" --config "$T/sysobsd.ini"

pass "agent as $user without capabilities, NNP and seccomp on each of its $agent_threads threads; $helper_note; drops counted and sampled, history and /metrics served after the drop"
