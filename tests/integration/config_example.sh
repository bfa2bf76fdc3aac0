#!/usr/bin/env bash
# integration.config_example: deploy/sysobsd.example.ini is what
# `sysobsd --print-config` prints (every key, default and help, so the
# example cannot drift from the code), and the agent starts from it as is.
source "$(dirname "$0")/lib.sh"

EX=$SYSOBS_SRC/deploy/sysobsd.example.ini
[ -f "$EX" ] || fail "$EX missing"
"$SYSOBSD" --print-config >"$T/defaults.ini" || fail "--print-config failed"
# the example is a comment header, a blank line, then the generated text
sed '1,/^$/d' "$EX" >"$T/example-body.ini"
diff -u "$T/defaults.ini" "$T/example-body.ini" >&2 ||
	fail "deploy/sysobsd.example.ini differs from --print-config: regenerate it"
for sec in agent http storage metrics remote_write collector.self collector.drops collector.mptcp \
	collector.ifs collector.cachefiles; do
	grep -qx "\[$sec\]" "$T/defaults.ini" || fail "--print-config lacks [$sec]"
done

# The agent starts from the example (flags move the port and database), and
# every collector is in a state the example's defaults allow.
# As root it drops to the unprivileged user of the example ([agent] user):
# the database directory must be reachable by that user.
cp "$EX" "$T/sysobsd.ini"
chmod 755 "$T"
start_agent --listen 127.0.0.1:0 --db "$T/sysobs.db"
req GET /healthz
assert_eq "healthz from the example config" 200 "$HTTP_CODE"
req GET /api/v1/collectors
assert_eq "collectors" 200 "$HTTP_CODE"
bad=$(jq -r '.data[] | select(.state == "FAILED") | .name' <<<"$BODY")
assert_eq "collectors failed under the example config" "" "$bad"
assert_eq "collectors listed" 5 "$(jq '.data | length' <<<"$BODY")"
stop_agent

# A typo in a copy of it is refused with file:line and status 2.
sed 's/^batch_rows = /batch_rowz = /' "$EX" >"$T/typo.ini"
line=$(grep -n '^batch_rowz' "$T/typo.ini" | cut -d: -f1)
rc=0
"$SYSOBSD" --config "$T/typo.ini" --db "$T/sysobs.db" 2>"$T/typo.err" || rc=$?
assert_eq "exit status on an unknown key" 2 "$rc"
grep -q "typo.ini:$line" "$T/typo.err" || fail "no file:line in: $(cat "$T/typo.err")"
pass "example config is --print-config, starts the agent, and a typo in it is file:line + exit 2"
