#!/usr/bin/env bash
# integration.ifs_walkthrough (issue 21, item 7): the IFS walkthroughs with
# the fake run as written, the agent started as root and dropping to its
# default user ([agent] user = sysobs, else nobody), as a reader following
# them would. The commands are taken from the documents themselves, not
# copied here: README's "Trying the ifs collector" block, then docs/ifs.md's
# "Trying it without IFS hardware" block (its fake.ini and sysobsd config
# heredocs, the fake and the agent command lines). Only /tmp/ is moved into
# the test's directory, `sudo ` dropped (the test is root) and build/ made
# the build tree; each runs in a network namespace of its own, so the
# documented port 9559 is free.
#
# Before the fix the fake mounted for root alone: the agent found the
# devices as root, dropped to nobody, then saw every intel_ifs_<N> "go
# away" (README's run: collector UNAVAILABLE) and no scan was recorded
# (docs/ifs.md's run: 0 rows against the fake's runs).
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq
: "${SYSOBS_SRC:?SYSOBS_SRC must point at the source tree (ctest sets it)}"
SRC=$SYSOBS_SRC
# The walkthrough's paths must be reachable by the user the agent becomes.
chmod 755 "$T"
W=$T/w
mkdir -p "$W"
chmod 1777 "$W" # a /tmp of the test's own

# code_block FILE HEADING: the first ```sh block after that heading.
code_block() {
	awk -v h="$2" '$0 == h { f = 1; next }
		f && /^```sh/ { b = 1; next }
		b && /^```/ { exit }
		b { print }' "$1"
}

# as_written: the block's commands with /tmp/ moved into $W, `sudo` dropped,
# build/ the build tree and the agent exec'd (its pid the script's pid);
# after the fake's line, a wait for its mount (a reader starts the agent
# once the fake is up, the script would race it).
as_written() {
	echo 'wait_mount() { for _ in $(seq 1 100); do grep -q " $1 fuse" /proc/mounts && return; sleep 0.1; done; }'
	sed -e "s#/tmp/#$W/#g" -e 's#^sudo ##' -e "s#\(^\| \)build/#\1$SYSOBS_BUILD/#g" \
		-e 's#^\(\S*/sysobsd \)#exec \1#' -e '/^\.\/scripts\/build\.sh/d' \
		-e 's#^\(.*ifs_fake -f [^ ]* \([^ ]*\) &.*\)$#\1\nwait_mount \2#'
}

cleanup_mount() {
	local m=$1
	on_exit "fusermount3 -u $m 2>/dev/null || fusermount3 -uz $m 2>/dev/null"
}

# run_walkthrough NAME SCRIPT: runs it in its own netns, in $W; sets
# AGENT_PID, PORT=9559, API_NETNS.
run_walkthrough() {
	local name=$1 script=$2
	API_NETNS=sysobs-walk-$name-$$
	netns_new "$API_NETNS" || skip "cannot create a network namespace"
	(cd "$W" && exec nsenter "--net=/run/netns/$API_NETNS" bash "$script") \
		>>"$T/agent.log" 2>&1 &
	AGENT_PID=$!
	PORT=9559
	on_exit '[ -z "$AGENT_PID" ] || { kill -9 "$AGENT_PID"; wait "$AGENT_PID"; } 2>/dev/null'
	_listening() { in_api_netns curl -sf --max-time 2 "http://127.0.0.1:$PORT/api/v1/collectors" \
		-o /dev/null; }
	wait_for 20 _listening || fail "$name: the agent does not answer on 9559"
}

# --- README ---
readme=$(code_block "$SRC/README.md" "## Trying the ifs collector without IFS hardware")
[ -n "$readme" ] || fail "README has no IFS walkthrough block"
grep -q "ifs_fake" <<<"$readme" || fail "README's block does not start the fake"
as_written <<<"$readme" >"$T/readme.sh"
echo "--- README's walkthrough as run:"
cat "$T/readme.sh"
cleanup_mount "$W/ifs-root"
run_walkthrough readme "$T/readme.sh"
wait_for 10 grep -q "running as" "$T/agent.log" || fail "README: the agent did not drop root"
user=$(sed -n 's/.*agent: running as \([a-z]*\) (uid \([0-9]*\)).*/\1 \2/p' "$T/agent.log" | tail -1)
[ "${user#* }" != 0 ] || fail "README: the agent kept root ($user): the walkthrough must drop"
sleep 2 # the collector polls every second: a device unreadable now shows "gone"
wait_collector ifs
n=$(api GET /api/v1/ifs/cores | jq '[.data[]] | length')
echo "README: agent as $user, ifs $(collector_state ifs), $n cores listed"
[ "$n" -gt 0 ] || fail "README: no core listed"
assert_eq "README: devices seen after the drop" 2 \
	"$(api GET /api/v1/ifs/cores | jq '[.devices[] | select(.image_loaded)] | length')"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
AGENT_PID=
fusermount3 -u "$W/ifs-root"
pass "README's walkthrough: agent as $user sees 2 devices and $n cores"

# --- docs/ifs.md ---
: >"$T/agent.log"
doc=$(code_block "$SRC/docs/ifs.md" "## Trying it without IFS hardware: the fake driver")
[ -n "$doc" ] || fail "docs/ifs.md has no walkthrough block"
as_written <<<"$doc" >"$T/doc.sh"
echo "--- docs/ifs.md's walkthrough as run:"
cat "$T/doc.sh"
fake_root=$(sed -n 's#.*ifs_fake -f [^ ]* \([^ ]*\) .*#\1#p' "$T/doc.sh")
[ -n "$fake_root" ] || fail "docs/ifs.md: no fake mount point"
cleanup_mount "$fake_root"
run_walkthrough doc "$T/doc.sh"
wait_collector ifs
# The config schedules every core once a minute, spread: 4 cores x 2
# tests, the first runs within 30 s. Core 2 fails its scans (fake.ini).
wdb() { sqlite3 "file:$W/sysobs-ifs.db?mode=ro" "$1"; }
_failed() { [ "$(wdb "SELECT count(*) FROM ifs_scans WHERE status = 'fail'")" -ge 1 ] 2>/dev/null; }
wait_for 40 _failed || {
	db=$(wdb "SELECT status || ' ' || coalesce(error_name, '') FROM ifs_scans" 2>&1 | sort | uniq -c)
	fail "docs/ifs.md: no failed scan recorded in 40 s; rows: ${db:-none}; fake runs: $(wc -l <"$fake_root/fake_runs")"
}
rows=$(wdb "SELECT count(*) FROM ifs_scans WHERE requested_by = 'scheduler'")
bad=$(wdb "SELECT count(*) FROM ifs_scans WHERE status = 'error' OR error_name LIKE 'unreadable%'")
runs=$(wc -l <"$fake_root/fake_runs")
echo "docs/ifs.md: $rows scheduler rows, $bad error rows, fake ran $runs tests"
assert_eq "docs/ifs.md: rows with an error" 0 "$bad"
[ "$runs" -ge 1 ] || fail "docs/ifs.md: the fake ran nothing"
assert_eq "docs/ifs.md: failing cores (core 2 of fake.ini)" 1 \
	"$(metric 'sysobs_ifs_failing_cores{test="scan"}')"
pass "docs/ifs.md's walkthrough: $rows scans recorded as the fake ran them ($runs), core 2 failing"
