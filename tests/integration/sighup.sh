#!/usr/bin/env bash
# integration.sighup: day-2 operations of the agent itself.
#  - [agent] log_format text|logfmt|json: the line shapes (json lines parse
#    with jq and carry ts/level/component/msg);
#  - journald mode: with JOURNAL_STREAM naming stderr's device:inode, lines
#    start with "<N>" (the syslog priority) and carry no time stamp;
#  - SIGHUP applies a new log_level and log_format at once (a debug line
#    appears only after the reload), names a changed key that needs a restart
#    ([storage] retention) and keeps serving; a broken file changes nothing,
#    and so does one only semantically bad (a collector's list, a
#    remote_write url) or a bad drop-in: every error logged at its
#    file:line; a good drop-in applies (drop-ins are read again);
#  - --version names the git revision and the library versions.
source "$(dirname "$0")/lib.sh"
need_cmd jq

# --version
v=$("$SYSOBSD" --version) || fail "--version failed"
grep -Eq '^sysobsd [0-9]+\.[0-9]+\.[0-9]+ \(revision [0-9a-f]{7,}' <<<"$v" ||
	fail "--version has no revision: $v"
for lib in libbpf sqlite libmicrohttpd libcurl protobuf-c jansson zlib; do
	grep -q "$lib [0-9]" <<<"$v" || fail "--version lacks $lib: $v"
done

write_base_config
sed -i 's/^user = root$/user = root\nlog_format = json/' "$T/sysobsd.ini"
start_agent
grep -m1 '"component":"http","msg":"listening' "$T/agent.log" >"$T/json.line" || fail "no json http line"
jq -e '.ts and .level == "info" and .component == "http" and (.msg | test("listening"))' \
	"$T/json.line" >/dev/null || fail "json line malformed: $(cat "$T/json.line")"
# every line the agent wrote so far is JSON
jq -s length "$T/agent.log" >/dev/null || fail "a log line is not JSON"

# SIGHUP: logfmt + debug, and a key that needs a restart
sed -i 's/^log_format = json$/log_format = logfmt\nlog_level = debug/' "$T/sysobsd.ini"
sed -i 's/^batch_ms = 50$/batch_ms = 50\nretention = 3d/' "$T/sysobsd.ini"
lines=$(wc -l <"$T/agent.log")
kill -HUP "$AGENT_PID"
wait_for 5 grep -q 'msg="SIGHUP: reloaded' "$T/agent.log" || fail "no reload line after SIGHUP"
tail -n +"$((lines + 1))" "$T/agent.log" >"$T/after"
grep -Eq '^ts=[0-9T:.-]+Z level=warn component=agent msg="SIGHUP: \[storage\] retention changed \(\\"7d\\" -> \\"3d\\"\): needs a restart"$' "$T/after" ||
	fail "retention change not named as needing a restart: $(cat "$T/after")"
grep -q 'msg="SIGHUP: \[agent\] log_level = debug applied"' "$T/after" || fail "log_level not applied"
req GET /healthz
assert_eq "healthz after SIGHUP" 200 "$HTTP_CODE"

# A broken file: logged, nothing changes, still serving
echo 'log_level = loud' >>"$T/sysobsd.ini"
kill -HUP "$AGENT_PID"
wait_for 5 grep -q 'SIGHUP: .*nothing changed' "$T/agent.log" || fail "bad reload not reported"
kill -0 "$AGENT_PID" || fail "agent died on a bad reload"
req GET /healthz
assert_eq "healthz after a bad SIGHUP" 200 "$HTTP_CODE"

# reload_bad WHAT LOC...: SIGHUP logs an error at each file:line LOC and
# that nothing changed; the agent keeps serving
reload_bad() {
	local what=$1 loc lines
	shift
	lines=$(wc -l <"$T/agent.log")
	kill -HUP "$AGENT_PID"
	wait_for 5 eval "tail -n +$((lines + 1)) '$T/agent.log' | grep -q 'SIGHUP: config not valid; nothing changed'" ||
		fail "$what: no 'nothing changed' after SIGHUP"
	tail -n +"$((lines + 1))" "$T/agent.log" >"$T/after"
	for loc in "$@"; do
		grep -qF "level=error component=agent msg=\"SIGHUP: $loc: " "$T/after" ||
			fail "$what: no error at $loc: $(cat "$T/after")"
	done
	! grep -q 'SIGHUP: reloaded' "$T/after" || fail "$what: reloaded anyway"
	req GET /healthz
	assert_eq "healthz after SIGHUP with $what" 200 "$HTTP_CODE"
}

# A file that parses but that the checks refuse: a collector's list, a
# remote_write url (semantic errors, not syntax): each named, nothing changed
sed -i '/^log_level = loud$/d' "$T/sysobsd.ini"
printf '[collector.mptcp]\nnetns = self, run/netns/x\n[remote_write]\nurl = ftp://tsdb/w\n' \
	>>"$T/sysobsd.ini"
netns_line=$(grep -n '^netns = ' "$T/sysobsd.ini" | cut -d: -f1)
reload_bad "a semantically bad file" "$T/sysobsd.ini:$netns_line" \
	"$T/sysobsd.ini:$((netns_line + 2))"
grep -qF "[collector.mptcp] netns = 'self, run/netns/x': 'run/netns/x': expected self or an absolute path" \
	"$T/after" || fail "netns error text: $(cat "$T/after")"
head -n "$((netns_line - 2))" "$T/sysobsd.ini" >"$T/ini" && mv "$T/ini" "$T/sysobsd.ini"

# The drop-ins are read again: a bad one is named at its own file:line, a
# good one applies
mkdir -p "$T/sysobsd.d"
printf '[http]\nthreads = 999\n' >"$T/sysobsd.d/10-bad.ini"
reload_bad "a bad drop-in" "$T/sysobsd.d/10-bad.ini:2"
rm "$T/sysobsd.d/10-bad.ini"
printf '[agent]\nlog_level = info\n' >"$T/sysobsd.d/10-info.ini"
lines=$(wc -l <"$T/agent.log")
kill -HUP "$AGENT_PID"
wait_for 5 eval "tail -n +$((lines + 1)) '$T/agent.log' | grep -q 'msg=\"SIGHUP: reloaded'" ||
	fail "no reload with a good drop-in"
tail -n +"$((lines + 1))" "$T/agent.log" | grep -q 'msg="SIGHUP: reloaded .*(log_level info,' ||
	fail "the drop-in's log_level not applied: $(tail -n +"$((lines + 1))" "$T/agent.log")"
rm -r "$T/sysobsd.d"
stop_agent

# journald mode: stderr is a file here, so JOURNAL_STREAM names that file
rm -f "$T/agent.log"
write_base_config
touch "$T/agent.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/agent.log")
export JOURNAL_STREAM
start_agent
unset JOURNAL_STREAM
grep -Eq '^<6>http: listening on ' "$T/agent.log" ||
	fail "journal mode: no '<6>http: listening' line: $(head -5 "$T/agent.log")"
! grep -Eq '^<[0-7]>[0-9]{4}-' "$T/agent.log" || fail "journal mode line has a time stamp"
stop_agent
# a JOURNAL_STREAM that is not our stderr (inherited, redirected) is ignored
rm -f "$T/agent.log"
JOURNAL_STREAM=1:1 start_agent
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T.* info  http: listening' "$T/agent.log" ||
	fail "text format expected with a foreign JOURNAL_STREAM: $(head -3 "$T/agent.log")"
stop_agent

pass "log_format json/logfmt/text, journald mode, SIGHUP applies log settings and names restart keys, --version"
