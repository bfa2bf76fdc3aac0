#!/usr/bin/env bash
# integration.check_config: the config as configuration management sees it.
#  - sysobsd --check-config --config F: a set of bad configs, each exits 2
#    and names the file:line of every error it holds, and nothing else (one
#    file holds several errors: all are reported); the shipped configs pass;
#  - check mode as nobody: works, creates no database file, leaves no port
#    bound (where strace runs: no bpf or listen call, one throwaway bind of
#    [http] listen as at start); its summary names the drop-in directory;
#  - drop-ins (F.d/*.ini): override the main file, in strcmp() order, other
#    names ignored, an unreadable one an error; --print-config --config
#    shows the value in effect and the drop-in file:line it came from (also
#    where ./var is missing), and the running agent uses it. (A drop-in or
#    secret file the checking user cannot read: an error naming it.)
source "$(dirname "$0")/lib.sh"
need_cmd jq

: "${SYSOBS_SRC:?}"
C=$T/c
mkdir -p "$C" "$T/var"
# the configs below keep the default [agent] user: the check asks, as the
# start does, that the user the agent becomes reaches the database directory
chmod 755 "$T" "$T/var"
n_bad=0

# check_bad NAME SUBSTRING LOC...: $C/NAME.ini (and its drop-ins) fails the
# check with exit 2; the error lines' locations ("file:line", or "file" for
# a file that cannot be read) are exactly LOC... (as a set); one of the
# lines holds SUBSTRING.
check_bad() {
	local name=$1 want=$2 rc got exp
	shift 2
	"$SYSOBSD" --check-config --config "$C/$name.ini" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 2 ] || fail "$name: exit $rc, expected 2: $(cat "$T/err")"
	[ ! -s "$T/out" ] || fail "$name: wrote to stdout: $(cat "$T/out")"
	grep -qF -- "$want" "$T/err" || fail "$name: no error with '$want': $(cat "$T/err")"
	tail -n 1 "$T/err" | grep -qF "sysobsd: $C/$name.ini: config not valid" ||
		fail "$name: no summary line: $(cat "$T/err")"
	got=$(head -n -1 "$T/err" | while IFS= read -r l; do printf '%s\n' "${l%%: *}"; done |
		sort -u)
	exp=$(printf "$C/%s\n" "$@" | sort -u)
	[ "$got" = "$exp" ] || fail "$name: errors at
$got
expected at
$exp
stderr:
$(cat "$T/err")"
	n_bad=$((n_bad + 1))
}

# bad NAME: the config from stdin, after a [storage] path line 2 that passes
bad() { { printf '[storage]\npath = %s/var/x.db\n' "$T" && cat; } >"$C/$1.ini"; }

bad unknown_key <<'EOF'
[http]
bogus = 1
EOF
check_bad unknown_key "unknown key 'bogus' in [http]" unknown_key.ini:4

bad bad_duration <<'EOF'
retention = 5 parsecs
EOF
check_bad bad_duration "[storage] retention = '5 parsecs': expected a duration" bad_duration.ini:3

bad out_of_range <<'EOF'
[http]
threads = 999
EOF
check_bad out_of_range "threads = '999': out of range [1, 64]" out_of_range.ini:4

bad dup_key <<'EOF'
[http]
threads = 2
threads = 3
EOF
check_bad dup_key "[http] threads given twice (first at $C/dup_key.ini:4)" dup_key.ini:5

# the keys under the second header are not reported again
bad dup_section <<'EOF'
[http]
threads = 2
[http]
threads = 3
EOF
check_bad dup_section "[http] given twice (first at $C/dup_section.ini:3)" dup_section.ini:5

# named once, at its first key
bad bad_section <<'EOF'
[colector.drops]
enabled = false
ring_bytes = 1M
EOF
check_bad bad_section "unknown section [colector.drops]" bad_section.ini:4

bad syntax <<'EOF'
[http]
threads 2
admin = true
gzip never
EOF
check_bad syntax "syntax error" syntax.ini:4 syntax.ini:6

bad continuation <<'EOF'
[http]
threads = 2
  admin = true
EOF
check_bad continuation "indented line taken as continuing [http] threads" continuation.ini:5

bad collector_bool <<'EOF'
[collector.drops]
enabled = maybe
EOF
check_bad collector_bool "[collector.drops] enabled = 'maybe': expected true or false" \
	collector_bool.ini:4

bad collector_choice <<'EOF'
[collector.cachefiles]
backend = kprobe
EOF
check_bad collector_choice "backend = 'kprobe': must be one of bpf" collector_choice.ini:4

# in range for its type, refused by the collector's own check
bad collector_cross <<'EOF'
[collector.drops]
ring_bytes = 12k
EOF
check_bad collector_cross "must be a power of two and a multiple of the page size" \
	collector_cross.ini:4

bad collector_list <<'EOF'
[collector.mptcp]
netns = self, run/netns/a
EOF
check_bad collector_list "'run/netns/a': expected self or an absolute path" collector_list.ini:4

bad ifs_url <<'EOF'
[collector.ifs]
alertmanager_url = ftp://am:9093
EOF
check_bad ifs_url "alertmanager_url = 'ftp://am:9093': must start with http(s)://" ifs_url.ini:4

bad rw_url <<'EOF'
[remote_write]
url = ftp://tsdb.example/api/v1/write
EOF
check_bad rw_url "the scheme must be http or https" rw_url.ini:4

bad export_table <<'EOF'
[export.ch]
url = http://127.0.0.1:8123/
tables = drop_samples, nosuch
EOF
check_bad export_table "[export.ch] tables = 'drop_samples, nosuch': no event table 'nosuch'" \
	export_table.ini:5

bad export_format <<'EOF'
[export.ch]
format = kafka
url = http://127.0.0.1:8123/
EOF
check_bad export_format "[export.ch] format = 'kafka'" export_format.ini:4

bad export_cursor <<'EOF'
[export.a]
url = http://127.0.0.1:8123/
cursor = shared
[export.b]
format = otlp
url = http://127.0.0.1:4318/v1/logs
cursor = shared
EOF
check_bad export_cursor "'shared' is [export.a]'s cursor too" export_cursor.ini:9

bad export_name <<'EOF'
[export.Big]
url = http://127.0.0.1:8123/
EOF
check_bad export_name "unknown section [export.Big]" export_name.ini:4

bad rw_backoff <<'EOF'
[remote_write]
url = http://127.0.0.1:9/api/v1/write
min_backoff = 10s
max_backoff = 1s
EOF
check_bad rw_backoff "max_backoff = '1s': must not be below min_backoff" rw_backoff.ini:6

bad rw_auth <<'EOF'
[remote_write]
url = http://127.0.0.1:9/api/v1/write
basic_auth_user = sysobs
EOF
check_bad rw_auth "basic auth needs both basic_auth_user and basic_auth_password_file" \
	rw_auth.ini:5

bad rw_secret <<EOF
[remote_write]
url = http://127.0.0.1:9/api/v1/write
bearer_token_file = $T/no-such-token
EOF
check_bad rw_secret "$T/no-such-token: No such file or directory" rw_secret.ini:5

printf 'tls_server_config:\n  cert_file: [\n' >"$T/web.yml"
bad web_config <<EOF
[http]
web_config_file = $T/web.yml
EOF
check_bad web_config "[http] web_config_file = '$T/web.yml'" web_config.ini:4

bad listen <<'EOF'
[http]
listen = 127.0.0.1
EOF
check_bad listen "listen = '127.0.0.1': expected HOST:PORT" listen.ini:4

printf '[storage]\npath = %s/no-such-dir/x.db\n' "$T" >"$C/db_dir.ini"
check_bad db_dir "directory $T/no-such-dir: No such file or directory" db_dir.ini:2

bad table_retention <<'EOF'
table_retention = drop_samples=1d, dorp_samples=2d
EOF
check_bad table_retention "no table 'dorp_samples'" table_retention.ini:3

bad storage_cross <<'EOF'
snapshot_interval = 500ms
EOF
check_bad storage_cross "must be 0 or at least 1s" storage_cross.ini:3

bad metrics <<'EOF'
[metrics]
native_histogram_schema = 9
EOF
check_bad metrics "must be an integer from" metrics.ini:4

bad agent <<'EOF'
[agent]
seccomp = maybe
user = no-such-user-here
EOF
check_bad agent "seccomp = 'maybe': must be errno, kill, log or off" agent.ini:4 agent.ini:5

# a bad key in a drop-in names the drop-in's own file:line
bad dropin_key <<'EOF'
[http]
threads = 2
EOF
mkdir -p "$C/dropin_key.d"
printf '[http]\nthreads = 4\n\n[collector.drops]\nenbled = false\n' >"$C/dropin_key.d/10-x.ini"
check_bad dropin_key "unknown key 'enbled' in [collector.drops]" dropin_key.d/10-x.ini:5

# across files a key is overridden, within a drop-in it is given twice
bad dropin_dup <<'EOF'
[http]
threads = 2
EOF
mkdir -p "$C/dropin_dup.d"
printf '[http]\nthreads = 3\nthreads = 4\n' >"$C/dropin_dup.d/10-x.ini"
check_bad dropin_dup "given twice (first at $C/dropin_dup.d/10-x.ini:2)" dropin_dup.d/10-x.ini:3

# a drop-in that cannot be read (as root: a directory by a drop-in's name)
bad dropin_unreadable <<'EOF'
[http]
threads = 2
EOF
mkdir -p "$C/dropin_unreadable.d/10-x.ini"
check_bad dropin_unreadable "cannot read config" dropin_unreadable.d/10-x.ini

# several errors in one file and its drop-in: every one is reported
bad many <<'EOF'
retention = 5 parsecs
[agent]
log_level = loud
bogus = 1
[http]
listen = nope
max_connections = 0
gzip = sometimes
[collector.ifs]
allow_cpus = x-y
alertmanager_url = ftp://x
[collector.mptcp]
netns = relative
[remote_write]
url = ftp://x
min_backoff = 10s
max_backoff = 1s
not a key
EOF
mkdir -p "$C/many.d"
printf '[http]\nthreads = 0\n' >"$C/many.d/50-a.ini"
check_bad many "unknown key 'bogus'" many.ini:3 many.ini:5 many.ini:6 many.ini:8 many.ini:9 \
	many.ini:10 many.ini:12 many.ini:13 many.ini:15 many.ini:17 many.ini:19 many.ini:20 \
	many.d/50-a.ini:2
[ "$(grep -c '' "$T/err")" = 14 ] || fail "many: expected 13 errors and a summary: $(cat "$T/err")"

# The shipped configs pass (the installed one with its database elsewhere:
# /var/lib/sysobs is the package's; --db would not excuse a missing one,
# integration.check_config_start).
(cd "$T" && "$SYSOBSD" --check-config --config "$SYSOBS_SRC/deploy/sysobsd.example.ini") \
	2>"$T/err" || fail "sysobsd.example.ini: $(cat "$T/err")"
sed "s|^path = /var/lib/sysobs/sysobs.db$|path = $T/var/x.db|" "$SYSOBS_SRC/deploy/sysobsd.ini" \
	>"$T/shipped.ini"
grep -qx "path = $T/var/x.db" "$T/shipped.ini" || fail "no [storage] path in deploy/sysobsd.ini"
"$SYSOBSD" --check-config --config "$T/shipped.ini" 2>"$T/err" || fail "sysobsd.ini: $(cat "$T/err")"
grep -qxF "sysobsd: $T/shipped.ini: config valid (no drop-in in $T/shipped.d)" "$T/err" ||
	fail "the summary does not name the drop-in directory: $(cat "$T/err")"
# a flag over a bad value does not excuse it, as at start
"$SYSOBSD" --check-config --config "$C/out_of_range.ini" --listen 127.0.0.1:0 2>"$T/err"
assert_eq "a flag over a bad file value" 2 $?

# libcurl and snappy are loaded only by what sends (base/lazylib.h): the
# agent does not link them. Hidden (a private mount namespace, /dev/null
# bound over each library file), remote_write, an export and the IFS alert
# push are errors at their url that name the package to install; a config
# that sends nothing still passes.
! ldd "$SYSOBSD" | grep -E 'libcurl|libsnappy' || fail "sysobsd links libcurl or snappy"
nolib=
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	bad nolib <<'EOF'
[remote_write]
url = http://127.0.0.1:9/api/v1/write
[export.ch]
url = http://127.0.0.1:8123/
[collector.ifs]
alertmanager_url = http://127.0.0.1:9093
EOF
	# without_libs CMD...: CMD with libcurl.so.4 and libsnappy.so.1 unreadable
	without_libs() {
		unshare -m sh -c '
			for l in libcurl.so.4 libsnappy.so.1; do
				f=$(ldconfig -p | awk -v l="$l" "\$1 == l { print \$NF; exit }")
				[ -n "$f" ] && mount --bind /dev/null "$(readlink -f "$f")" || exit 99
			done
			exec "$@"' sh "$@"
	}
	without_libs "$SYSOBSD" --check-config --config "$C/nolib.ini" 2>"$T/err"
	assert_eq "check without libcurl and snappy" 2 $?
	for want in "nolib.ini:4: [remote_write] url = 'http://127.0.0.1:9/api/v1/write': remote_write needs snappy: " \
		"(install the package libsnappy1v5)" \
		"nolib.ini:4: [remote_write] url = 'http://127.0.0.1:9/api/v1/write': sending needs libcurl: " \
		"nolib.ini:6: [export.ch] url = 'http://127.0.0.1:8123/': sending needs libcurl: " \
		"nolib.ini:8: [collector.ifs] alertmanager_url = 'http://127.0.0.1:9093': the alert push needs libcurl: " \
		"(install the package libcurl4)"; do
		grep -qF -- "$want" "$T/err" || fail "without the libraries, no '$want': $(cat "$T/err")"
	done
	without_libs "$SYSOBSD" --check-config --config "$T/shipped.ini" 2>"$T/err" ||
		fail "without libcurl, sysobsd.ini: $(cat "$T/err")"
	nolib=", without libcurl and snappy only the senders' urls fail, naming the packages"
fi

# Check mode as nobody: reads what it may, creates and binds nothing.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	N=$T/nobody
	mkdir -p "$N/var"
	chmod 755 "$T" "$N" "$N/var"
	port=$(free_port)
	printf 'secret\n' >"$N/token"
	chmod 600 "$N/token"
	printf '[http]\nlisten = 127.0.0.1:%s\n[storage]\npath = %s/var/sysobs.db\n' \
		"$port" "$N" >"$N/ok.ini"
	chmod 644 "$N/ok.ini"
	"${as_nobody[@]}" "$SYSOBSD" --check-config --config "$N/ok.ini" 2>"$T/err" ||
		fail "check as nobody failed: $(cat "$T/err")"
	[ -z "$(ls -A "$N/var")" ] || fail "check mode created files: $(ls -A "$N/var")"
	! ss -Hltn "sport = :$port" | grep -q . || fail "check mode left port $port bound"
	if strace -o /dev/null true 2>/dev/null; then
		# (LeakSanitizer cannot run under ptrace: off for a sanitizer build)
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace -f -qq -e trace=bpf,socket,bind,listen,perf_event_open -o "$T/strace" \
			"${as_nobody[@]}" "$SYSOBSD" --check-config --config "$N/ok.ini" 2>"$T/strace.err" ||
			fail "check under strace failed: $(tail -5 "$T/strace.err")"
		# (AF_UNIX sockets are NSS's user lookups, setpriv's and getpwnam()'s;
		# one AF_INET socket is the throwaway bind of [http] listen, as at
		# start, never listened on)
		! grep -E 'bpf\(|socket\(AF_(INET6|NETLINK|PACKET)|listen\(|perf_event_open\(' \
			"$T/strace" || fail "check mode made a bpf/socket/listen call"
		[ "$(grep -c 'socket(AF_INET,' "$T/strace")" = 1 ] &&
			grep -q "bind(.*sin_port=htons($port)" "$T/strace" ||
			fail "check mode: not one throwaway bind of port $port: $(cat "$T/strace")"
	fi
	# a secret file nobody cannot read is an error at its line
	printf '[remote_write]\nurl = http://127.0.0.1:9/w\nbearer_token_file = %s\n' "$N/token" \
		>>"$N/ok.ini"
	"${as_nobody[@]}" "$SYSOBSD" --check-config --config "$N/ok.ini" 2>"$T/err"
	assert_eq "unreadable secret: exit" 2 $?
	grep -qF "$N/ok.ini:7: [remote_write] bearer_token_file = '$N/token': $N/token: Permission denied" \
		"$T/err" || fail "unreadable secret not reported: $(cat "$T/err")"
	n_bad=$((n_bad + 1))
	# a drop-in nobody cannot read is an error naming it
	printf '[storage]\npath = %s/var/sysobs.db\n' "$N" >"$N/dr.ini"
	mkdir -p "$N/dr.d"
	printf '[http]\nthreads = 3\n' >"$N/dr.d/10-x.ini"
	chmod 644 "$N/dr.ini" && chmod 755 "$N/dr.d" && chmod 600 "$N/dr.d/10-x.ini"
	"${as_nobody[@]}" "$SYSOBSD" --check-config --config "$N/dr.ini" 2>"$T/err"
	assert_eq "unreadable drop-in: exit" 2 $?
	grep -qxF "$N/dr.d/10-x.ini: cannot read config: Permission denied" "$T/err" ||
		fail "unreadable drop-in not reported: $(cat "$T/err")"
	n_bad=$((n_bad + 1))
	as_nobody_done=", as nobody (no file, port free)"
fi

# Drop-ins: strcmp() order (digits, then upper case, then lower case,
# whatever the locale), later wins; other names are not read.
D=$T/d
mkdir -p "$D/sysobsd.d"
write_base_config http.threads=2 http.max_connections=50
cp "$T/sysobsd.ini" "$D/sysobsd.ini"
printf '[http]\nthreads = 3\nmax_connections = 60\n' >"$D/sysobsd.d/10-a.ini"
printf '[http]\nthreads = 4\n' >"$D/sysobsd.d/20-b.ini"
printf '[http]\nthreads = 5\n' >"$D/sysobsd.d/9-z.ini"
printf '[collector.drops]\nenabled = true\n' >"$D/sysobsd.d/B.ini"
printf '\n[collector.drops]\nenabled = false\n' >"$D/sysobsd.d/a.ini"
for junk in 99.ini.dpkg-old 99.ini~ .99.ini.swp .hidden.ini README; do
	printf 'not an ini\n' >"$D/sysobsd.d/$junk"
done
LC_ALL=C.UTF-8 "$SYSOBSD" --print-config --config "$D/sysobsd.ini" >"$T/eff" 2>"$T/err" ||
	fail "--print-config --config: $(cat "$T/err")"
grep -A1 -xF "# from $D/sysobsd.d/9-z.ini:2" "$T/eff" | grep -qx 'threads = 5' ||
	fail "threads not 5 from 9-z.ini:2: $(grep -B1 '^threads' "$T/eff")"
grep -A1 -xF "# from $D/sysobsd.d/10-a.ini:3" "$T/eff" | grep -qx 'max_connections = 60' ||
	fail "max_connections not from 10-a.ini:3"
grep -A1 -xF "# from $D/sysobsd.d/a.ini:3" "$T/eff" | grep -qx 'enabled = false' ||
	fail "[collector.drops] enabled not from a.ini:3"
grep -A1 -xF "# from $D/sysobsd.ini:8" "$T/eff" | grep -qx "path = $T/sysobs.db" ||
	fail "path not from the main file"
grep -A1 -xF '# default' "$T/eff" | grep -qx 'timeout = 10s' || fail "timeout not a default"
# the effective config is itself a valid config, with the same values
cp "$T/eff" "$T/eff.ini"
"$SYSOBSD" --check-config --config "$T/eff.ini" 2>"$T/err" ||
	fail "the printed config does not pass: $(cat "$T/err")"
"$SYSOBSD" --print-config --config "$T/eff.ini" | grep -Ev '^# (from |default$)' >"$T/eff2"
grep -Ev '^# (from |default$)' "$T/eff" | diff - "$T/eff2" >/dev/null ||
	fail "the printed config loads to other values"
# (its lines may be of any length: the reader takes them whole, issue 30;
# the round trip above is what proves it)
# --print-config asks nothing of this host: the default ./var/sysobs.db
# where there is no ./var (issue 30)
mkdir -p "$T/novar"
printf '[http]\nthreads = 3\n' >"$T/novar/p.ini"
(cd "$T/novar" && "$SYSOBSD" --print-config --config p.ini) >"$T/novar.out" 2>"$T/err" ||
	fail "--print-config without ./var: $(cat "$T/err")"
grep -A1 -x '# default' "$T/novar.out" | grep -qx 'path = ./var/sysobs.db' ||
	fail "--print-config without ./var printed no default path"

# the running agent: drops disabled by the last drop-in, threads from 9-z
cp "$D/sysobsd.ini" "$T/sysobsd.ini"
mv "$D/sysobsd.d" "$T/sysobsd.d"
start_agent
assert_eq "drops, disabled by a drop-in" DISABLED "$(collector_state drops)"
assert_eq "why" "disabled in the config" "$(collector_reason drops)"
stop_agent
# without the drop-ins the main file's value runs
mv "$T/sysobsd.d" "$T/off.d"
start_agent
[ "$(collector_state drops)" != DISABLED ] || fail "drops disabled without the drop-in"
stop_agent

pass "$n_bad bad configs exit 2 naming every error's file:line (one file with 13), shipped configs pass${as_nobody_done:-}, drop-ins override in strcmp() order with their origin in --print-config and in the running agent, non-.ini files ignored${nolib}"
