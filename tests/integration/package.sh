#!/usr/bin/env bash
# integration.package: the Debian package on a clean Debian 12, under systemd.
#
# scripts/package.sh builds the .deb (or $SYSOBS_DEB names one) and lintian
# checks it there. A minimal bookworm root made by mmdebstrap from Debian's
# archive (cached in ${SYSOBS_CACHE:-/var/cache/sysobs}/pkg/) gets the
# package's dependencies into apt's cache, then boots with systemd-nspawn -b
# (its own network: loopback and a veth pair to the host) and runs
# tests/pkg/guest.sh, which installs, scrapes, reloads, upgrades, removes
# and purges. Asserted here:
#  - installed, enabled and active as Type=notify; the main process runs as
#    sysobs with empty capability sets, no_new_privs and seccomp filtering,
#    without a privileged helper child (no IFS device), under the unit's
#    MemoryHigh=136M and MemoryMax=224M;
#  - /var/lib/sysobs/sysobs.db exists (the absolute path of the installed
#    config in the unit's StateDirectory), the sysobs user exists;
#  - every collector the container allows runs (self, drops, mptcp);
#  - systemd-analyze security rates the unit <= SYSOBS_MAX_EXPOSURE (3.0);
#  - journald: "http: listening" has PRIORITY 6 (from the "<6>" prefix);
#  - /etc/sysobs/sysobsd.d/ exists, empty; the installed config passes
#    sysobsd --check-config;
#  - systemctl reload = SIGHUP, same process; with a bad drop-in the
#    ExecReload guard fails the reload, sends no SIGHUP, the agent runs on;
#    an upgrade to a newer version
#    restarts it, keeps the edited conffile and the history;
#  - a drop-in the next start would refuse (listen address not on the
#    host, port 22, [storage] path under /opt): the reload fails, a
#    reinstall fails in postinst naming the drop-in's line, the agent runs
#    on unchanged; once removed, dpkg --configure -a restarts it;
#  - /usr/share/sysobs/clickhouse.sql is the installed agent's
#    --print-clickhouse-ddl; GET /runbooks answers 200; no start warning
#    names the optional udp_destruct_common attach point;
#  - remove stops it and keeps /etc; purge removes /etc/sysobs (with a
#    drop-in left in sysobsd.d), /var/lib/sysobs and the unit;
#  - remote scrape: [http] listen = 0.0.0.0:9559 alone, and the host
#    scrapes the container over the veth (200); with the old unit's
#    IPAddressDeny=any/IPAddressAllow=localhost in a drop-in the scrape
#    times out and the agent warned at start.
# Prints install-to-first-scrape time, package size and the exposure score.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd systemd-nspawn
need_cmd mmdebstrap
need_cmd dpkg-deb
# 3.1: the unit has no IPAddressDeny= (0.2 of systemd-analyze's score): the
# agent filters its clients itself by [http] allow, which systemd-analyze
# cannot see (deploy/sysobsd.service, docs/security.md).
MAX_EXPOSURE=${SYSOBS_MAX_EXPOSURE:-3.1}
CACHE=${SYSOBS_CACHE:-/var/cache/sysobs}/pkg
mkdir -p "$CACHE"

# the package
if [ -n "${SYSOBS_DEB:-}" ]; then
	DEB=$SYSOBS_DEB
else
	DEB=$("$SYSOBS_SRC/scripts/package.sh" "$T/pkg" | tail -n 1) || fail "scripts/package.sh failed"
fi
[ -f "$DEB" ] || fail "no .deb ($DEB)"
deb_size=$(stat -c %s "$DEB")
inst_kib=$(dpkg-deb -f "$DEB" Installed-Size)
# a newer version of the same package for the upgrade
mkdir -p "$T/x" "$T/new2"
dpkg-deb -R "$DEB" "$T/x"
ver=$(dpkg-deb -f "$DEB" Version)
sed -i "s/^Version: .*/Version: ${ver}+up1/" "$T/x/DEBIAN/control"
dpkg-deb -b --root-owner-group "$T/x" "$T/new2/sysobs_${ver}+up1_amd64.deb" >/dev/null ||
	fail "cannot build the upgrade package"

# a clean Debian 12 root, cached as a tarball keyed by its package list
PKGS=systemd,systemd-sysv,dbus,curl,ca-certificates,procps
key=$(echo "bookworm $PKGS" | sha256sum | cut -c1-12)
TAR=$CACHE/rootfs-bookworm-$key.tar
if [ ! -s "$TAR" ]; then
	mmdebstrap --variant=minbase --format=tar --include="$PKGS" bookworm "$TAR.tmp" \
		http://deb.debian.org/debian >"$T/mmdebstrap.log" 2>&1 ||
		{ tail -5 "$T/mmdebstrap.log"; skip "mmdebstrap could not reach Debian's archive"; }
	mv "$TAR.tmp" "$TAR"
fi
ROOT=$T/root
mkdir -p "$ROOT"
tar -xf "$TAR" -C "$ROOT" || fail "cannot unpack $TAR"
on_exit "rm -rf '$ROOT'"
mkdir -p "$ROOT/root/new" "$ROOT/root/new2" "$T/results"
cp "$DEB" "$ROOT/root/new/"
cp "$T"/new2/*.deb "$ROOT/root/new2/"
echo sysobs-pkgtest >"$ROOT/etc/hostname"
# SYSOBS_CAPS_PROBE=1: also restart the unit without each capability of its
# bounding set in turn and print what still works (R cap_... lines)
[ "${SYSOBS_CAPS_PROBE:-0}" != 1 ] || touch "$ROOT/root/caps-probe"

# dependencies into apt's cache (the one step with network), not installed
systemd-nspawn -q -D "$ROOT" --register=no --keep-unit -E DEBIAN_FRONTEND=noninteractive sh -c \
	'apt-get update -q && apt-get install -y -q --download-only /root/new/sysobs_*.deb' \
	>"$T/download.log" 2>&1
# (systemd-nspawn exits 0 but complains that it cannot remove its
# propagation directory: its output is checked instead)
if ! grep -q "Download complete and in download only mode" "$T/download.log"; then
	tail -5 "$T/download.log"
	grep -Eq "Temporary failure resolving|Could not resolve|Failed to fetch|Unable to connect" \
		"$T/download.log" && skip "Debian's archive is not reachable"
	fail "dependency download failed"
fi
# mmdebstrap's apt config deletes downloaded packages after install; keep them
rm -f "$ROOT/etc/apt/apt.conf.d/docker-clean"

install -m 755 "$SYSOBS_SRC/tests/pkg/guest.sh" "$ROOT/root/guest.sh"
install -m 644 "$SYSOBS_SRC/tests/pkg/pkgtest.service" "$ROOT/etc/systemd/system/pkgtest.service"
ln -sf /etc/systemd/system/pkgtest.service \
	"$ROOT/etc/systemd/system/multi-user.target.wants/pkgtest.service"
# no console getty: nothing waits for a terminal
rm -f "$ROOT/etc/systemd/system/getty.target.wants/"* 2>/dev/null

# The container's network: a veth pair (ve-sp<pid> here, host0 there) with
# a private /30 per run, from which the host scrapes the agent once the
# guest has changed [http] listen alone (guest.sh, "remote scrape").
MACHINE=sp$$
VE=ve-$MACHINE
NET=10.199.$(($$ % 250)).$((4 * ($$ / 250 % 63)))
HOST_IP=${NET%.*}.$((${NET##*.} + 1))
GUEST_IP=${NET%.*}.$((${NET##*.} + 2))
echo "$GUEST_IP/30" >"$T/results/guest-addr"
# remote_scrapes: addresses our end of the veth, then scrapes at each
# /results/ready-PHASE of the guest and answers in /results/remote-PHASE
# (the HTTP status; 000: no answer within 3 s).
remote_scrapes() {
	local phase
	until ip link show "$VE" >/dev/null 2>&1; do
		kill -0 "$boot_pid" 2>/dev/null || return 0
		sleep 0.1
	done
	ip addr add "$HOST_IP/30" dev "$VE" && ip link set "$VE" up || return 0
	for phase in open filtered; do
		until [ -e "$T/results/ready-$phase" ]; do
			kill -0 "$boot_pid" 2>/dev/null || return 0
			sleep 0.1
		done
		curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://$GUEST_IP:9559/metrics" \
			>"$T/results/remote-$phase.tmp"
		mv "$T/results/remote-$phase.tmp" "$T/results/remote-$phase"
	done
}
# boot: the agent needs the BPF and perf capabilities the container would drop
t_boot=$SECONDS
timeout 480 systemd-nspawn -q -D "$ROOT" --register=no --keep-unit -b -M "$MACHINE" \
	--network-veth --capability=all --system-call-filter='bpf perf_event_open' \
	--bind="$T/results:/results" --bind-ro=/sys/kernel/btf --bind-ro=/sys/kernel/tracing \
	>"$T/boot.log" 2>&1 </dev/null &
boot_pid=$!
remote_scrapes &
remote_pid=$!
wait "$boot_pid"
boot_rc=$?
kill "$remote_pid" 2>/dev/null
wait "$remote_pid" 2>/dev/null
echo "container ran $((SECONDS - t_boot)) s (rc $boot_rc)"
[ -f "$T/results/out" ] || { tail -20 "$T/boot.log"; fail "the guest test did not run"; }
cat "$T/results/out"
grep -q '^DONE$' "$T/results/out" || fail "the guest test did not finish"
! grep -q '^FAIL' "$T/results/out" || fail "$(grep '^FAIL' "$T/results/out")"
res() { awk -v k="$1" '$1 == "R" && $2 == k { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }' \
	"$T/results/out"; }

assert_eq "active after install" active "$(res active)"
assert_eq "enabled" enabled "$(res enabled)"
assert_eq "unit type" notify "$(res type)"
assert_eq "main process user" sysobs "$(res main_user)"
assert_eq "CapEff and CapBnd" "0000000000000000 0000000000000000" "$(res main_caps | sed 's/ $//')"
assert_eq "no_new_privs" 1 "$(res no_new_privs)"
assert_eq "seccomp mode (2 = filter)" 2 "$(res seccomp)"
assert_eq "privileged helpers without an IFS device" 0 "$(res helper_children)"
assert_eq "MemoryHigh (136M)" 142606336 "$(res memory_high)"
assert_eq "MemoryMax (224M)" 234881024 "$(res memory_max)"
[[ "$(res user_exists)" == sysobs:/var/lib/sysobs:/usr/sbin/nologin ]] ||
	fail "sysobs user: $(res user_exists)"
[[ "$(res db)" == sysobs:* ]] || fail "database: $(res db)"
assert_eq "databases outside /var/lib/sysobs/sysobs.db (the relative default)" 0 "$(res stray_db)"
assert_eq "conffile" /etc/sysobs/sysobsd.ini "$(res conffile)"
assert_eq "drop-in directory (owner, mode, entries)" "root:root 755 0" "$(res dropin_dir)"
assert_eq "sysobsd --check-config of the installed config" 0 "$(res check_config)"
for c in self drops mptcp; do
	assert_eq "collector $c under the unit" running "$(res collector_$c)"
done
assert_ge "sampled NO_SOCKET drops under the unit" 1 "$(res drop_rows)"
[[ "$(res drop_location)" == [a-z_]*+0x* ]] || fail "drop location not named: $(res drop_location)"
assert_eq "kallsyms copy removed once ready" yes "$(res kallsyms_copy_removed)"
assert_eq "kallsyms warnings in the journal" 0 "$(res kallsyms_warning)"
assert_eq "missing Documentation= files" 0 "$(res doc_missing)"
assert_eq "man pages" 2 "$(res man)"
assert_eq "/usr/share/sysobs/clickhouse.sql vs the agent's --print-clickhouse-ddl" same "$(res ch_ddl)"
assert_eq "GET /runbooks under the unit" 200 "$(res runbooks_http)"
assert_eq "warnings about the optional udp_destruct_common attach point" 0 "$(res journal_optional_warn)"
exposure=$(res exposure)
[ -n "$exposure" ] || fail "no exposure score"
awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }' ||
	fail "exposure $exposure > $MAX_EXPOSURE: $(cat "$T/results/security.txt")"
assert_eq "journal PRIORITY of 'http: listening'" 6 "$(res journal_listening)"
assert_ge "reload logged" 1 "$(res reload_logged)"
for c in not_here port22 opt; do
	[[ "$(res refuse_${c}_reload_rc)" == [1-9]* ]] || fail "$c: reload: $(res refuse_${c}_reload_rc)"
	[[ "$(res refuse_${c}_reinstall_rc)" == [1-9]* ]] ||
		fail "$c: reinstall returned $(res refuse_${c}_reinstall_rc)"
	assert_ge "$c: the reinstall names the drop-in's line" 1 "$(res refuse_${c}_reinstall_said)"
	assert_eq "$c: the agent after the refused reinstall" "active same" "$(res refuse_${c}_agent)"
done
assert_eq "dpkg --configure -a once fixed" 0 "$(res refuse_fixed_configure_rc)"
assert_eq "active once fixed" active "$(res refuse_fixed_active)"
assert_eq "reload kept the process" yes "$(res reload_same_pid)"
[ "$(res bad_reload_rc)" != 0 ] || fail "systemctl reload with a bad drop-in succeeded"
assert_ge "the bad drop-in's file:line in the journal" 1 "$(res bad_reload_error)"
assert_eq "SIGHUPs sent for the bad reload" 0 "$(res bad_reload_signals)"
assert_eq "after the bad reload" "active same" "$(res bad_reload_active)"
assert_eq "upgraded" "${ver}+up1" "$(res upgraded_version)"
assert_eq "active after upgrade" active "$(res upgrade_active)"
assert_eq "restarted by the upgrade" yes "$(res upgrade_restarted)"
assert_eq "edited conffile kept" 1 "$(res conffile_kept)"
assert_eq "history kept" yes "$(res history_kept)"
# LimitNOFILE=65536, or the container's hard limit when lower
assert_ge "open file limit (LimitNOFILE)" 4096 "$(res nofile)"
assert_eq "healthz while 100 clients load it and 200 idle" 200 "$(res busy_served)"
[ "$(res busy_stop_ms)" -lt 2000 ] || fail "systemctl stop of a busy agent took $(res busy_stop_ms) ms"
assert_eq "stop result of a busy agent" success "$(res busy_stop_result)"
assert_eq "stopped on remove" inactive "$(res removed_active)"
assert_eq "conffile kept on remove" kept "$(res removed_conf)"
assert_eq "/etc/sysobs on purge" gone "$(res purged_conf)"
assert_eq "/var/lib/sysobs on purge" gone "$(res purged_state)"
assert_eq "drop-ins (/etc/sysobs/sysobsd.d with a file) on purge" gone "$(res purged_dropins)"
assert_eq "unit on purge" gone "$(res purged_unit)"
assert_eq "scrape from the host after [http] listen = 0.0.0.0:9559 alone" 200 "$(res remote_open)"
assert_ge "default allow of a wildcard listen logged" 1 "$(res remote_allow_logged)"
assert_eq "scrape from the host with the old unit's IPAddressDeny= in a drop-in" 000 \
	"$(res remote_filtered)"
assert_ge "the agent warned about the unit's IP filter" 1 "$(res remote_filter_warned)"

echo "MEASURE deb_bytes=$deb_size installed_kib=$inst_kib install_ms=$(res install_ms)" \
	"start_to_ready_ms=$(res start_to_ready_ms)" \
	"install_to_first_scrape_ms=$(res first_scrape_ms) exposure=$exposure"
pass "package: install, notify, privileges, collectors, exposure $exposure, journald, reload, upgrade, remove, purge"
