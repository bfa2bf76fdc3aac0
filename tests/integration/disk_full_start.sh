#!/usr/bin/env bash
# integration.disk_full_start: an agent that starts while its database's
# file system is full (it died meanwhile: OOM, kill -9, an upgrade) is not
# kept down. It exits with a status the shipped unit restarts for (75, not
# the 2 of a config error that RestartPreventExitStatus=2 keeps down), and
# a supervisor that applies the unit's own Restart=, RestartSec= and
# RestartPreventExitStatus= (read from deploy/sysobsd.service; RestartSec
# shortened to 1 s here) brings it back once space is freed: it serves and
# writes again, with the history from before intact.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd sqlite3

UNIT=$SYSOBS_SRC/deploy/sysobsd.service
unit_key() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
restart=$(unit_key Restart)
prevent=$(unit_key RestartPreventExitStatus)
assert_eq "the unit's Restart=" on-failure "$restart"
[ -n "$(unit_key RestartSec)" ] || fail "the unit has no RestartSec="
assert_eq "the unit's start limit (restarts for as long as the disk is full)" 0 \
	"$(unit_key StartLimitIntervalSec)"

mkdir -p "$T/small"
mount -t tmpfs -o size=4m tmpfs "$T/small" || skip "cannot mount a tmpfs"
on_exit 'umount -l "$T/small"'
db="$T/small/sysobs.db"
write_base_config "storage.path=$db" collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false collector.ifs.enabled=false collector.self.interval=100ms
start_agent
rows() { sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM self_samples' 2>/dev/null || echo 0; }
some() { [ "$(rows)" -ge 10 ]; }
wait_for 15 some || fail "no rows before the disk filled"
stop_agent # an upgrade: stopped; the disk fills before it is started again
before=$(rows)
# A clean stop checkpoints the WAL empty, and SQLite's last connection
# deletes it and the -shm (this test's read-only readers may have been the
# last here, which leaves them): as a clean stop leaves the directory.
[ ! -s "$db-wal" ] || fail "the WAL is not empty after a clean stop"
rm -f "$db-wal" "$db-shm"
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null

# The supervisor: the unit's rules, as systemd applies them to Restart=on-failure.
(
	n=0
	while :; do
		n=$((n + 1))
		echo "$n" >"$T/attempts"
		rm -f "$T/port"
		rc=0
		"$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port" >>"$T/agent.log" 2>&1 &
		echo $! >"$T/agent.pid"
		wait $! || rc=$?
		echo "$rc" >>"$T/statuses"
		[ "$rc" != 0 ] || break # a clean stop is not restarted
		for p in $prevent; do
			[ "$rc" != "$p" ] || { echo kept-down >"$T/verdict"; exit 0; }
		done
		sleep 1 # RestartSec, shortened
	done
) &
sup=$!
on_exit "kill $sup 2>/dev/null; kill \$(cat $T/agent.pid 2>/dev/null) 2>/dev/null"

two_failed() { [ "$(wc -l <"$T/statuses" 2>/dev/null || echo 0)" -ge 2 ] || [ -e "$T/verdict" ]; }
wait_for 30 two_failed || fail "no failed start on the full disk: $(tail -3 "$T/agent.log")"
[ ! -e "$T/verdict" ] || fail "exit status $(tail -1 "$T/statuses") is in the unit's RestartPreventExitStatus=$prevent: the agent stays down after space returns"
status=$(head -1 "$T/statuses")
assert_eq "exit status on a full disk" 75 "$status"
grep -q "exiting with status 75" "$T/agent.log" || fail "the reason is not logged"
[ -s "$T/port" ] && fail "the agent served on a full disk"

# Space returns: the next restart serves and writes.
rm -f "$T/small/fill" "$T/small/fill2"
served() { [ -s "$T/port" ]; }
wait_for 20 served || fail "the agent did not come back after space was freed: $(tail -3 "$T/agent.log")"
PORT=$(cat "$T/port")
AGENT_PID=$(cat "$T/agent.pid")
req GET /healthz
assert_eq "healthz after the restart" 200 "$HTTP_CODE"
more() { [ "$(rows)" -ge $((before + 20)) ]; }
wait_for 15 more || fail "not writing after the restart: $(rows) rows (had $before)"
attempts=$(cat "$T/attempts")
first_status=$status

# Killed while the disk is full (kill -9, the OOM killer): restarted by the
# same rules; it either serves on the file as it is (its WAL still there) or
# exits 75 until space returns; either way it is back once space is freed.
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null
rm -f "$T/port"
kill -9 "$AGENT_PID"
sleep 3
[ ! -e "$T/verdict" ] || fail "killed on a full disk: kept down (status $(tail -1 "$T/statuses"))"
rm -f "$T/small/fill" "$T/small/fill2"
wait_for 20 served || fail "the agent killed on a full disk did not come back: $(tail -3 "$T/agent.log")"
PORT=$(cat "$T/port")
AGENT_PID=$(cat "$T/agent.pid")
req GET /healthz
assert_eq "healthz after the kill on a full disk" 200 "$HTTP_CODE"
statuses=$(paste -sd' ' "$T/statuses")
kill -TERM "$AGENT_PID"
AGENT_PID=
wait "$sup"
assert_eq "exit status after SIGTERM" 0 "$(tail -1 "$T/statuses")"
assert_eq "integrity" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
pass "full disk at start: exit $first_status x$((attempts - 1)) (not in RestartPreventExitStatus=$prevent), restarted per the unit; space freed: serving and writing again ($before -> $(rows) rows); killed on a full disk: back after space was freed (statuses $statuses)"
