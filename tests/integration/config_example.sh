#!/usr/bin/env bash
# integration.config_example: deploy/sysobsd.example.ini is what
# `sysobsd --print-config` prints (every key, default and help, so the
# example cannot drift from the code), and the agent starts from it as is.
# Copies of it with one fault are refused with exit 2 and file:line: a typo,
# a key or a section given twice, and a bad value that a flag overrides.
source "$(dirname "$0")/lib.sh"

EX=$SYSOBS_SRC/deploy/sysobsd.example.ini
[ -f "$EX" ] || fail "$EX missing"
"$SYSOBSD" --print-config >"$T/defaults.ini" || fail "--print-config failed"
# the example is a comment header, a blank line, then the generated text
sed '1,/^$/d' "$EX" >"$T/example-body.ini"
diff -u "$T/defaults.ini" "$T/example-body.ini" >&2 ||
	fail "deploy/sysobsd.example.ini differs from --print-config: regenerate it"
for sec in agent http storage kubernetes metrics remote_write collector.self collector.drops collector.mptcp \
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
refused "an unknown key" "typo.ini:$line" --config "$T/typo.ini" --db "$T/sysobs.db"

# refused_ini NAME WANT FLAG...: lib.sh's refused, on $T/NAME.ini
refused_ini() { refused "$1.ini ${*:3}" "$2" --config "$T/$1.ini" "${@:3}"; }
# lineof FILE REGEX: the number of the one line matching REGEX
lineof() { grep -n -- "$2" "$1" | cut -d: -f1; }

# A key given twice in a section: both lines named, with or without a flag
# for that key (a flag does not pick one of the two).
sed 's/^threads = 2$/threads = 2\nthreads = 4/' "$EX" >"$T/dupkey.ini"
first=$(lineof "$T/dupkey.ini" '^threads = 2$')
second=$(lineof "$T/dupkey.ini" '^threads = 4$')
refused_ini dupkey "dupkey.ini:$second: [http] threads given twice (first at $T/dupkey.ini:$first)" \
	--db "$T/sysobs.db"
sed 's/^listen = .*/&\nlisten = 127.0.0.1:1/' "$EX" >"$T/duplisten.ini"
first=$(lineof "$T/duplisten.ini" '^listen = 127.0.0.1:9559$')
refused_ini duplisten "duplisten.ini:$((first + 1)): [http] listen given twice (first at $T/duplisten.ini:$first)" \
	--listen 127.0.0.1:0 --db "$T/sysobs.db"
# in a collector's section too
sed '/^\[collector.drops\]$/,/^\[/ s/^interval = .*/&\ninterval = 5s/' "$EX" >"$T/dupcoll.ini"
second=$(lineof "$T/dupcoll.ini" '^interval = 5s$')
refused_ini dupcoll "dupcoll.ini:$second: [collector.drops] interval given twice (first at $T/dupcoll.ini:$((second - 1)))" \
	--db "$T/sysobs.db"
# A section header given twice, the second empty: both header lines.
{ cat "$EX"; printf '\n[http]\n'; } >"$T/dupsec.ini"
first=$(lineof "$T/dupsec.ini" '^\[http\]$' | head -1)
second=$(lineof "$T/dupsec.ini" '^\[http\]$' | tail -1)
refused_ini dupsec "dupsec.ini:$second: [http] given twice (first at $T/dupsec.ini:$first)" \
	--db "$T/sysobs.db"

# A bad value in the file is the same error whether or not a flag
# overrides it: every flag that sets a config key, with its key spoiled.
# (Refused before the address is bound or the database opened.)
bad_value() { # KEY BAD WANT FLAG VALUE: refused without and with FLAG VALUE
	local key=$1 bad=$2 want=$3 line
	shift 3
	sed "s|^$key = .*|$key = $bad|" "$EX" >"$T/bad_$key.ini"
	line=$(lineof "$T/bad_$key.ini" "^$key = ")
	refused_ini "bad_$key" "bad_$key.ini:$line: $want"
	refused_ini "bad_$key" "bad_$key.ini:$line: $want" "$@"
}
bad_value listen 127.0.0.1:notaport "[http] listen = '127.0.0.1:notaport': expected HOST:PORT" \
	--listen 127.0.0.1:0
bad_value log_level loud "[agent] log_level = 'loud'" --log-level debug
bad_value path '' "[storage] path = '': must not be empty" --db "$T/sysobs.db"
bad_value user sysobs-no-such-user "[agent] user = 'sysobs-no-such-user'" --user root
bad_value web_config_file "$T/no-such-web.yml" "[http] web_config_file = '$T/no-such-web.yml'" \
	--web.config.file ''
# --port-file and --sysfs-root: --port-file has no key; any [agent]
# sysfs_root is a path the collectors look under (no value is malformed).
pass "example config is --print-config, starts the agent; a typo, a key or section given twice (both file:lines) and a bad value a flag overrides are refused with file:line + exit 2"
