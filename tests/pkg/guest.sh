#!/bin/bash
# Runs inside the booted Debian 12 container (systemd as PID 1), started by
# pkgtest.service; tests/integration/package.sh reads /results/out.
# Every line "R key value" is a result; "FAIL ..." a failure.
exec >/results/out 2>&1
set -u
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
r() { echo "R $*"; }
ms() { date +%s%3N; }
scrape() { curl -sf -o /dev/null --max-time 1 http://127.0.0.1:9559/metrics; }

# install (dependencies are in apt's cache: nothing to fetch, and no network
# here) -> first scrape
t0=$(ms)
apt-get install -y -q /root/new/sysobs_*.deb >/results/apt-install.log 2>&1 ||
	echo "FAIL apt-get install: $(tail -3 /results/apt-install.log)"
t1=$(ms)
for _ in $(seq 1 300); do scrape && break; sleep 0.1; done
t2=$(ms)
scrape && r first_scrape_ms $((t2 - t0)) || echo "FAIL no scrape after install"
r install_ms $((t1 - t0))
# systemd's view: "Starting" to "Started" (READY=1) of the first start
r start_to_ready_ms "$(journalctl -u sysobsd -o short-unix --no-pager |
	awk '/Starting sysobsd.service/ && !s { s = $1 } /Started sysobsd.service/ && !e { e = $1 }
	     END { if (s && e) printf "%d", (e - s) * 1000 }')"
r active "$(systemctl is-active sysobsd)"
r enabled "$(systemctl is-enabled sysobsd)"
r type "$(systemctl show -P Type sysobsd)"
pid=$(systemctl show -P MainPID sysobsd)
r main_user "$(ps -o user= -p "$pid")"
r main_caps "$(grep -E '^Cap(Eff|Bnd)' /proc/"$pid"/status | awk '{print $2}' | tr '\n' ' ')"
r no_new_privs "$(awk '/^NoNewPrivs/ {print $2}' /proc/"$pid"/status)"
r seccomp "$(awk '/^Seccomp:/ {print $2}' /proc/"$pid"/status)"
# no IFS device in the container: no privileged helper child
r helper_children "$(ps --ppid "$pid" -o comm= | grep -c '^sysobsd-priv$')"
r memory_high "$(systemctl show -P MemoryHigh sysobsd)"
r memory_max "$(systemctl show -P MemoryMax sysobsd)"
r user_exists "$(getent passwd sysobs | cut -d: -f1,6,7)"
r db "$(stat -c '%U:%G %a' /var/lib/sysobs/sysobs.db 2>/dev/null || echo missing)"
r stray_db "$(ls /var/sysobs.db /sysobs.db /var/lib/sysobs/var 2>/dev/null | wc -l)"
r statedir "$(stat -c '%U:%G %a' /var/lib/sysobs)"
r conffile "$(dpkg-query -W -f='${Conffiles}' sysobs | awk '{print $1}' | tr -d '\n')"
r dropin_dir "$(stat -c '%U:%G %a' /etc/sysobs/sysobsd.d 2>/dev/null || echo missing) $(ls -A /etc/sysobs/sysobsd.d 2>/dev/null | wc -l)"
r check_config "$(sysobsd --check-config --config /etc/sysobs/sysobsd.ini >/dev/null 2>&1; echo $?)"
sysobs status >/results/status.txt 2>&1
for c in self drops mptcp cachefiles ifs; do
	r "collector_$c" "$(awk -v c="$c" '$1 == c {print $2}' /results/status.txt)"
done
r kallsyms_warning "$(journalctl -u sysobsd --no-pager -o cat | grep -c 'drop locations stay hex')"
r exposure "$(systemd-analyze security sysobsd 2>/dev/null | sed -n 's/.*Overall exposure level for sysobsd.service: \([0-9.]*\).*/\1/p')"
systemd-analyze security sysobsd >/results/security.txt 2>&1
# every file:// of the unit's Documentation= exists
r doc_missing "$(systemctl show -P Documentation sysobsd | tr ' ' '\n' | sed -n 's|^file://||p' |
	while read -r f; do [ -e "$f" ] || echo "$f"; done | wc -l)"
r man "$(ls /usr/share/man/man8/sysobsd.8.gz /usr/share/man/man1/sysobs.1.gz 2>/dev/null | wc -l)"
# the ClickHouse DDL the package ships = the installed agent's
r ch_ddl "$(sysobsd --print-clickhouse-ddl | cmp -s - /usr/share/sysobs/clickhouse.sql && echo same || echo differs)"
r runbooks_http "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:9559/runbooks)"
# journald: priority from the "<N>" prefix, no time stamp in MESSAGE
journalctl -u sysobsd -o json --no-pager >/results/journal.json 2>/dev/null
r journal_listening "$(grep -m1 '"MESSAGE":"http: listening' /results/journal.json |
	sed -n 's/.*"PRIORITY":"\([0-9]\)".*/\1/p')"
r journal_warn_prio "$(grep -c '"PRIORITY":"4"' /results/journal.json)"
# an optional attach point the kernel refuses is no warning at every start
r journal_optional_warn "$(grep '"PRIORITY":"4"' /results/journal.json | grep -c udp_destruct_common)"
# reload: SIGHUP through ExecReload
sed -i 's/^log_level = info$/log_level = debug/' /etc/sysobs/sysobsd.ini
systemctl reload sysobsd
sleep 1
r reload_logged "$(journalctl -u sysobsd --no-pager -o cat | grep -c 'SIGHUP: reloaded')"
r reload_same_pid "$([ "$(systemctl show -P MainPID sysobsd)" = "$pid" ] && echo yes || echo no)"
# a bad drop-in: the ExecReload guard fails the reload, no SIGHUP is sent,
# the agent keeps running
printf '[http]\nthreads = 999\n' >/etc/sysobs/sysobsd.d/50-bad.ini
sighups=$(journalctl -u sysobsd --no-pager -o cat | grep -c 'SIGHUP')
r bad_reload_rc "$(systemctl reload sysobsd >/dev/null 2>&1; echo $?)"
sleep 1
r bad_reload_error "$(journalctl -u sysobsd --no-pager -o cat | grep -c '/etc/sysobs/sysobsd.d/50-bad.ini:2: \[http\] threads')"
r bad_reload_signals "$(($(journalctl -u sysobsd --no-pager -o cat | grep -c 'SIGHUP') - sighups))"
r bad_reload_active "$(systemctl is-active sysobsd) $([ "$(systemctl show -P MainPID sysobsd)" = "$pid" ] && echo same || echo other)"
rm /etc/sysobs/sysobsd.d/50-bad.ini
# upgrade to a newer version: restarted, history and the edited conffile kept
# (the edit also lifts the drop sampling budget, which other traffic on a
# shared host may use up, for the check below)
printf 'sample_rate = 100000\nsample_burst = 10000\n' >>/etc/sysobs/sysobsd.ini
rows_before=$(curl -s 'http://127.0.0.1:9559/api/v1/self/samples?limit=1000' | grep -o '"id"' | wc -l)
dpkg -i /root/new2/sysobs_*.deb >/results/upgrade.log 2>&1 || echo "FAIL upgrade: $(tail -3 /results/upgrade.log)"
for _ in $(seq 1 100); do scrape && break; sleep 0.1; done
r upgraded_version "$(dpkg-query -W -f='${Version}' sysobs)"
r upgrade_active "$(systemctl is-active sysobsd)"
r upgrade_restarted "$([ "$(systemctl show -P MainPID sysobsd)" != "$pid" ] && echo yes || echo no)"
r conffile_kept "$(grep -c '^log_level = debug$' /etc/sysobs/sysobsd.ini)"
rows_after=$(curl -s 'http://127.0.0.1:9559/api/v1/self/samples?limit=1000' | grep -o '"id"' | wc -l)
r history_kept "$([ "$rows_after" -ge "$rows_before" ] && [ "$rows_before" -gt 0 ] && echo yes || echo "no $rows_before $rows_after")"
# a drop-in the next start would refuse (issue 32 item 2): an address not
# on this host, port 22, the database under /opt (read-only in the unit's
# sandbox). Each fails the reload's guard, and a reinstall fails in
# postinst, non-zero and saying why, with the agent left running as it was.
mkdir -p /opt/sysobs
pid=$(systemctl show -P MainPID sysobsd)
for c in not_here port22 opt; do
	case $c in
	not_here) printf '[http]\nlisten = 192.0.2.1:9559\n' ;;
	port22) printf '[http]\nlisten = 127.0.0.1:22\n' ;;
	opt) printf '[storage]\npath = /opt/sysobs/sysobs.db\n' ;;
	esac >/etc/sysobs/sysobsd.d/50-$c.ini
	r refuse_${c}_reload_rc "$(systemctl reload sysobsd >/dev/null 2>&1; echo $?)"
	dpkg -i /root/new2/sysobs_*.deb >/results/reinstall-$c.log 2>&1
	r refuse_${c}_reinstall_rc $?
	r refuse_${c}_reinstall_said "$(grep -c "sysobsd.d/50-$c.ini:2: " /results/reinstall-$c.log)"
	r refuse_${c}_agent "$(systemctl is-active sysobsd) $([ "$(systemctl show -P MainPID sysobsd)" = "$pid" ] && echo same || echo other)"
	rm /etc/sysobs/sysobsd.d/50-$c.ini
done
dpkg --configure -a >/results/configure.log 2>&1
r refuse_fixed_configure_rc $?
for _ in $(seq 1 100); do scrape && break; sleep 0.1; done
r refuse_fixed_active "$(systemctl is-active sysobsd)"
# after the upgrade: a drop the agent samples: UDP to a closed port; its kernel location named
# (from the root copy of /proc/kallsyms the unit makes before start)
P=$((20000 + RANDOM % 20000))
echo x >/dev/udp/127.0.0.1/$P
sleep 2
sysobs drops port=$P >/results/drops.txt 2>&1
r drop_rows "$(grep -c ' NO_SOCKET ' /results/drops.txt)"
r drop_location "$(awk '/ NO_SOCKET / {print $NF; exit}' /results/drops.txt)"
r kallsyms_copy_removed "$([ -e /run/sysobs/kallsyms ] && echo no || echo yes)"
# remote scrape (issue #19 item 6): [http] listen = 0.0.0.0:9559 is the one
# change; the host scrapes over the container's veth (package.sh gives the
# address in /results/guest-addr and scrapes when /results/ready-PHASE
# appears). Then a drop-in with the old unit's IPAddressDeny=any /
# IPAddressAllow=localhost: the agent warns at start, the host's scrape is
# dropped. Config and unit restored after.
remote() {
	touch /results/ready-$1
	for _ in $(seq 1 300); do [ -e /results/remote-$1 ] && break; sleep 0.1; done
	r remote_$1 "$(cat /results/remote-$1 2>/dev/null || echo no-answer)"
}
if [ -s /results/guest-addr ]; then
	printf '[Match]\nName=host0\n[Network]\nAddress=%s\n' "$(cat /results/guest-addr)" \
		>/etc/systemd/network/50-host0.network
	systemctl start systemd-networkd
	cp /etc/sysobs/sysobsd.ini /root/sysobsd.ini.keep
	sed -i 's/^listen = 127.0.0.1:9559$/listen = 0.0.0.0:9559/' /etc/sysobs/sysobsd.ini
	systemctl restart sysobsd
	for _ in $(seq 1 100); do scrape && break; sleep 0.1; done
	remote open
	r remote_allow_logged "$(journalctl -u sysobsd --no-pager -o cat |
		grep -c 'clients allowed: any (the default for this listen address)')"
	mkdir -p /etc/systemd/system/sysobsd.service.d
	printf '[Service]\nIPAddressDeny=any\nIPAddressAllow=localhost\n' \
		>/etc/systemd/system/sysobsd.service.d/ipfilter.conf
	systemctl daemon-reload
	systemctl restart sysobsd
	for _ in $(seq 1 100); do scrape && break; sleep 0.1; done
	remote filtered
	r remote_filter_warned "$(journalctl -u sysobsd --no-pager -o cat | grep -c 'has an IP ingress filter')"
	journalctl -u sysobsd --no-pager -o cat | grep -E 'ingress filter|cgroup IP filter' | tail -3
	rm -rf /etc/systemd/system/sysobsd.service.d
	cp /root/sysobsd.ini.keep /etc/sysobs/sysobsd.ini
	systemctl daemon-reload
	systemctl restart sysobsd
	for _ in $(seq 1 100); do scrape && break; sleep 0.1; done
fi
# SYSOBS_CAPS_PROBE=1 on the host: the unit again without each capability
# of its bounding set in turn (a copy in /etc/systemd/system), restarted
# over the existing database, with the mptcp collector also entering a
# namespace (setns); what still works is recorded.
if [ -e /root/caps-probe ]; then
	mkdir -p /run/netns && touch /run/netns/probe && unshare --net=/run/netns/probe true
	printf '[collector.mptcp]\nnetns = self, /run/netns/probe\n' >>/etc/sysobs/sysobsd.ini
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' /lib/systemd/system/sysobsd.service)
	for cap in none $caps; do
		sed "s/^\(CapabilityBoundingSet=.*\) $cap\b/\1/; s/^CapabilityBoundingSet=$cap /CapabilityBoundingSet=/" \
			/lib/systemd/system/sysobsd.service >/etc/systemd/system/sysobsd.service
		systemctl daemon-reload
		systemctl restart sysobsd >/dev/null 2>&1
		for _ in $(seq 1 30); do scrape && break; sleep 0.1; done
		P=$((20000 + RANDOM % 20000))
		echo x >/dev/udp/127.0.0.1/$P
		sleep 1.5
		st=$(sysobs status 2>/dev/null)
		loc=$(sysobs drops port=$P 2>/dev/null | awk '/ NO_SOCKET / {print $NF; exit}')
		mp=$(journalctl -u sysobsd --no-pager -o cat -n 40 | grep -c 'mptcp: watching netns /run/netns/probe')
		if [ "$(systemctl is-active sysobsd)" != active ]; then
			r "cap_$cap" "start-failed: $(journalctl -u sysobsd --no-pager -o cat -n 30 | grep -E 'error|cannot' | tail -1)"
		else
			r "cap_$cap" "drops=$(awk '$1 == "drops" {print $2}' <<<"$st")" \
				"mptcp=$(awk '$1 == "mptcp" {print $2}' <<<"$st") setns=$mp" \
				"location=${loc:-none} user=$(ps -o user= -p "$(systemctl show -P MainPID sysobsd)")"
		fi
	done
	rm -f /etc/systemd/system/sysobsd.service
	systemctl daemon-reload
	systemctl restart sysobsd
fi
# stop while busy: 100 clients from bash (no load tool in the guest), each
# sending requests as fast as answered, and 200 connections that never send
# a byte; systemctl stop must return within 2 s (the agent's shutdown
# deadline is 1.7 s); the open file limit is the unit's (or the
# container's hard limit, if lower)
t_busy=$(ms)
r nofile "$(awk '/^Max open files/ {print $4}' /proc/"$(systemctl show -P MainPID sysobsd)"/limits)"
busy_pids=()
for i in $(seq 1 100); do
	(end=$((SECONDS + 15))
	while [ $SECONDS -lt $end ] && exec 3<>/dev/tcp/127.0.0.1/9559; do
		printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
		cat <&3 >/dev/null; exec 3<&-
	done) >/dev/null 2>&1 &
	busy_pids+=($!)
done
for i in $(seq 1 200); do
	(exec 3<>/dev/tcp/127.0.0.1/9559; exec sleep 15) >/dev/null 2>&1 &
	busy_pids+=($!)
done
sleep 2
r busy_served "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:9559/healthz)"
t0=$(ms)
systemctl stop sysobsd
r busy_stop_ms $(($(ms) - t0))
r busy_stop_result "$(systemctl show -P Result sysobsd)"
kill "${busy_pids[@]}" 2>/dev/null
wait "${busy_pids[@]}" 2>/dev/null
systemctl start sysobsd
r busy_section_ms $(($(ms) - t_busy))
# remove, then purge
apt-get remove -y -q sysobs >/results/remove.log 2>&1 || echo "FAIL remove"
r removed_active "$(systemctl is-active sysobsd)"
r removed_conf "$([ -f /etc/sysobs/sysobsd.ini ] && echo kept || echo gone)"
# a drop-in configuration management left: purge removes it with the rest
printf '[http]\nlisten = 127.0.0.1:9560\n' >/etc/sysobs/sysobsd.d/50-cm.ini
apt-get purge -y -q sysobs >/results/purge.log 2>&1 || echo "FAIL purge"
r purged_conf "$([ -e /etc/sysobs ] && echo kept || echo gone)"
r purged_state "$([ -e /var/lib/sysobs ] && echo kept || echo gone)"
r purged_dropins "$([ -e /etc/sysobs/sysobsd.d ] && echo kept || echo gone)"
r purged_unit "$([ -e /lib/systemd/system/sysobsd.service ] && echo kept || echo gone)"
echo DONE
systemctl poweroff --no-block
