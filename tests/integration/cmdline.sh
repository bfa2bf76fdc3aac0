#!/usr/bin/env bash
# integration.cmdline: sysobsd's command line as parse_args() reads it.
#  - each flag that stands for a configuration key (-l, -d, -L, -u,
#    --sysfs-root, --web.config.file) sets that key: --print-config --config
#    shows the flag's value in effect over the file's;
#  - --help and --version exit 0 on stdout; an unknown flag and a stray
#    argument exit 2 with the usage on stderr, the stray one named;
#  - 15 key flags are taken, the 16th is refused ("too many options", 2).
# No agent is started: every case exits before start-up.
source "$(dirname "$0")/lib.sh"

cat >"$T/a.ini" <<'INI'
[http]
listen = 127.0.0.1:1
[storage]
path = /nonexistent/file.db
INI

# key SECTION-LESS-NAME: the value --print-config prints for it
"$SYSOBSD" --print-config --config "$T/a.ini" -l 127.0.0.1:9999 -d "$T/x.db" -L debug \
	-u nobody --sysfs-root "$T" --web.config.file "$T/w.yml" >"$T/out" 2>"$T/err" ||
	fail "--print-config with every key flag: exit $?: $(cat "$T/err")"
key() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$T/out"; }
assert_eq "-l sets [http] listen" "127.0.0.1:9999" "$(key listen)"
assert_eq "-d sets [storage] path" "$T/x.db" "$(key path)"
assert_eq "-L sets [agent] log_level" debug "$(key log_level)"
assert_eq "-u sets [agent] user" nobody "$(key user)"
assert_eq "--sysfs-root sets [agent] sysfs_root" "$T" "$(key sysfs_root)"
assert_eq "--web.config.file sets [http] web_config_file" "$T/w.yml" "$(key web_config_file)"

# run NAME RC ARGS...: sysobsd ARGS exits RC; its output in $T/out, $T/err
run() {
	local name=$1 want=$2 rc
	shift 2
	"$SYSOBSD" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	assert_eq "$name: exit" "$want" "$rc"
}
run --help 0 --help
grep -q '^Usage: sysobsd' "$T/out" || fail "--help: no usage on stdout"
run --version 0 --version
grep -q '^sysobsd ' "$T/out" || fail "--version: no version on stdout: $(cat "$T/out")"
run "unknown flag" 2 --no-such-flag
grep -q '^Usage: sysobsd' "$T/err" || fail "unknown flag: no usage on stderr"
[ ! -s "$T/out" ] || fail "unknown flag: wrote to stdout"
run "stray argument" 2 --config "$T/a.ini" stray
grep -qF "sysobsd: unexpected argument 'stray'" "$T/err" ||
	fail "stray argument not named: $(cat "$T/err")"

flags() { for _ in $(seq "$1"); do printf -- '-L\ninfo\n'; done; }
mapfile -t f15 < <(flags 15)
mapfile -t f16 < <(flags 16)
run "15 key flags" 0 --print-config --config "$T/a.ini" "${f15[@]}"
run "16 key flags" 2 --print-config --config "$T/a.ini" "${f16[@]}"
grep -qx "sysobsd: too many options" "$T/err" || fail "16 key flags: $(cat "$T/err")"

pass "6 key flags set their keys; --help/--version 0; unknown flag, stray argument, 16th key flag: 2"
