#!/usr/bin/env bash
# integration.postinst: the Debian package's postinst (deploy/debian/
# sysobs.postinst) checks the config before it lets debhelper restart the
# agent (issue 32 item 2). Run here as a script over a root of its own
# (SYSOBS_POSTINST_ROOT: the installed config and unit, sysobsd from this
# build), outside systemd; integration.package runs it in the .deb.
#  - the shipped config passes: exit 0, the state directory made;
#  - beside a running agent on the config's port (an upgrade: the old agent
#    still holds it) it passes;
#  - a drop-in with a listen address not on this host, with port 22, or
#    with the database outside the unit's writable paths (a directory that
#    exists, /opt in the issue): exit 1, the drop-in's file:line and what to
#    do next on stderr.
source "$(dirname "$0")/lib.sh"
need_root

: "${SYSOBS_SRC:?}"
POSTINST=$SYSOBS_SRC/deploy/debian/sysobs.postinst
UNIT_IN=$SYSOBS_SRC/deploy/sysobsd.service
R=$T/root
mkdir -p "$R/etc/sysobs/sysobsd.d" "$R/lib/systemd/system" "$R/usr/sbin" "$R/opt/sysobs"
chmod 755 "$T" "$R"
ln -s "$SYSOBSD" "$R/usr/sbin/sysobsd"
# the installed config and unit, their absolute paths moved under the root
port=$(free_port)
# (root: the user sysobs need not exist here; integration.check_config_start
# checks the database directory for the user the agent becomes)
sed -e "s|^path = /var/lib/sysobs/|path = $R/var/lib/sysobs/|" \
	-e "s|^listen = 127.0.0.1:9559$|listen = 127.0.0.1:$port|" -e "s|^user = sysobs$|user = root|" \
	"$SYSOBS_SRC/deploy/sysobsd.ini" >"$R/etc/sysobs/sysobsd.ini"
grep -q '^user = root$' "$R/etc/sysobs/sysobsd.ini" || fail "no [agent] user in deploy/sysobsd.ini"
grep -q "^path = $R/var/lib/sysobs/sysobs.db$" "$R/etc/sysobs/sysobsd.ini" ||
	fail "deploy/sysobsd.ini has no [storage] path under /var/lib/sysobs"
grep -q "^listen = 127.0.0.1:$port$" "$R/etc/sysobs/sysobsd.ini" ||
	fail "deploy/sysobsd.ini has no [http] listen = 127.0.0.1:9559"
sed "s|^Environment=SYSOBS_WRITABLE_PATHS=/var/lib/sysobs$|Environment=SYSOBS_WRITABLE_PATHS=$R/var/lib/sysobs|" \
	"$UNIT_IN" >"$R/lib/systemd/system/sysobsd.service"
grep -q "^Environment=SYSOBS_WRITABLE_PATHS=$R/var/lib/sysobs$" \
	"$R/lib/systemd/system/sysobsd.service" || fail "the unit names no SYSOBS_WRITABLE_PATHS"

postinst() { SYSOBS_POSTINST_ROOT=$R sh "$POSTINST" configure 0.1.0 >"$T/out" 2>"$T/err"; }

postinst || fail "the shipped config: exit $?: $(cat "$T/err")"
assert_eq "the state directory made" 770 "$(stat -c %a "$R/var/lib/sysobs" 2>&1)"

# an upgrade: the old agent runs on the config's port
cp "$R/etc/sysobs/sysobsd.ini" "$T/sysobsd.ini"
sed -i "s|^path = .*|path = $T/run.db|" "$T/sysobsd.ini"
start_agent
assert_eq "the old agent's port" "$port" "$PORT"
postinst || fail "beside the running agent: exit $?: $(cat "$T/err")"
stop_agent

# bad CASE TEXT WANT: the drop-in 50-CASE.ini (TEXT) fails the postinst,
# exit 1, WANT and the way out on stderr
bad() {
	local rc=0
	printf '%b' "$2" >"$R/etc/sysobs/sysobsd.d/50-$1.ini"
	postinst || rc=$?
	assert_eq "$1: postinst exit" 1 "$rc"
	grep -qF -- "$R/etc/sysobs/sysobsd.d/50-$1.ini:2: $3" "$T/err" ||
		fail "$1: no '$3' at the drop-in's line: $(cat "$T/err")"
	grep -qF "dpkg --configure -a" "$T/err" || fail "$1: no way out named: $(cat "$T/err")"
	rm "$R/etc/sysobs/sysobsd.d/50-$1.ini"
}
bad not_here '[http]\nlisten = 192.0.2.1:9559\n' \
	"[http] listen = '192.0.2.1:9559': cannot bind: Cannot assign requested address"
[ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" -gt 22 ] &&
	bad port22 '[http]\nlisten = 127.0.0.1:22\n' "[http] listen = '127.0.0.1:22': port 22 is below"
bad opt "[storage]\npath = $R/opt/sysobs/sysobs.db\n" \
	"[storage] path = '$R/opt/sysobs/sysobs.db': directory $R/opt/sysobs is outside what the service may write"

# fixed: passes again
postinst || fail "after the drop-ins were removed: exit $?: $(cat "$T/err")"

pass "postinst: the shipped config passes (also beside the running agent on its port); a drop-in with an address not here, port 22, or the database under /opt fails it with exit 1 and the drop-in's file:line"
