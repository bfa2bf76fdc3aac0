#!/usr/bin/env bash
# integration.config_long_lines: a config line is read whole, whatever its
# length (issue 30: inih cut lines after 199 bytes and parsed each piece as
# a line of its own).
#  - '#' + 198 x 'a' + 'admin = true' in [http] is a comment: --check-config
#    passes, --print-config shows admin at its default, and the running
#    agent refuses an admin POST (403);
#  - a 2 KB JWT in [remote_write] bearer_token passes the check and reaches
#    a receiver whole, as "Authorization: Bearer <token>";
#  - a 100,000-character comment is one comment; a 100,000-character line
#    that is not valid is one error at its own line;
#  - a long comment ending in "log_level = debug", added before a SIGHUP,
#    changes nothing.
source "$(dirname "$0")/lib.sh"
need_cmd jq
need_cmd python3

: "${SYSOBS_SRC:?}"
long() { head -c "$2" </dev/zero | tr '\0' "$1"; }

# ---- the comment that hid admin = true ----
write_base_config
sed -i "s/^\[http\]$/[http]\n#$(long a 198)admin = true/" "$T/sysobsd.ini"
[ "$(awk 'NR == 4' "$T/sysobsd.ini" | wc -c)" = 212 ] || fail "test config not as meant"
"$SYSOBSD" --check-config --config "$T/sysobsd.ini" 2>"$T/err" ||
	fail "the long comment: check failed: $(cat "$T/err")"
"$SYSOBSD" --print-config --config "$T/sysobsd.ini" >"$T/eff" || fail "--print-config failed"
grep -B1 -x 'admin = false' "$T/eff" | grep -qx '# default' ||
	fail "admin set by a comment: $(grep -B1 '^admin' "$T/eff")"
start_agent
req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{}'
assert_eq "an admin POST with admin only in a comment" 403 "$HTTP_CODE"
stop_agent

# ---- a 2 KB JWT as the bearer token, to a receiver ----
receiver_start fake -- 200
jwt="eyJhbGciOiJIUzI1NiJ9.$(long A 1980).$(long s 43)"
[ "${#jwt}" = 2045 ] || fail "token length ${#jwt}"
write_base_config storage.snapshot_interval=1s collector.drops.enabled=false \
	"remote_write.url=http://127.0.0.1:$(cat "$T/fake.port")/api/v1/write" \
	"remote_write.bearer_token=$jwt" remote_write.metadata_interval=0
"$SYSOBSD" --check-config --config "$T/sysobsd.ini" 2>"$T/err" ||
	fail "a 2 KB bearer_token: check failed: $(cat "$T/err")"
start_agent
wait_for 20 test -s "$T/fake.log" || fail "no remote_write request within 20 s"
assert_eq "Authorization sent" "Bearer $jwt" "$(head -1 "$T/fake.log" | jq -r .Authorization)"
stop_agent

# ---- 100,000 characters ----
write_base_config
{ printf ';' && long b 100000 && echo; } >>"$T/sysobsd.ini"
"$SYSOBSD" --check-config --config "$T/sysobsd.ini" 2>"$T/err" ||
	fail "a 100,000-character comment: $(head -c 300 "$T/err")"
{ printf '[http]\n' && long c 100000 && printf '\n[storage]\npath = %s/x.db\n[agent]\nuser = root\n' "$T"; } >"$T/big.ini"
"$SYSOBSD" --check-config --config "$T/big.ini" 2>"$T/err"
assert_eq "a 100,000-character bad line: exit" 2 $?
assert_eq "errors and summary" 2 "$(wc -l <"$T/err")"
grep -q "^$T/big.ini:2: syntax error" "$T/err" ||
	fail "the long line's error: $(head -c 300 "$T/err")"

# ---- SIGHUP: a long comment with a key at its end ----
write_base_config
start_agent
sed -i "s/^\[agent\]$/[agent]\n# $(long x 300) log_level = debug/" "$T/sysobsd.ini"
lines=$(wc -l <"$T/agent.log")
kill -HUP "$AGENT_PID"
wait_for 5 grep -q 'SIGHUP: reloaded' "$T/agent.log" || fail "no reload line after SIGHUP"
tail -n +"$((lines + 1))" "$T/agent.log" >"$T/after"
grep -q 'SIGHUP: reloaded .*(log_level info,' "$T/after" &&
	! grep -q 'log_level = debug applied' "$T/after" ||
	fail "SIGHUP applied a key of a comment: $(cat "$T/after")"
stop_agent

pass "a comment hiding admin = true stays a comment (403), a 2045-byte bearer token is sent whole, 100,000-character lines are one line (one error when bad), a long comment hides no key from SIGHUP"
