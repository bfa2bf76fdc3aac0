#!/bin/sh
# Guest side of integration.vm_cachefiles (runs as /tests/cachefiles.sh under
# tests/vm/init, busybox sh). Serves one EROFS image through the on-demand
# daemon under two fscache volumes with different injected delays, reads every
# file through both mounts, and prints what the host asserts on between
# markers:
#   VM-SECTION <name> ... VM-END <name>
# Parameters come from /etc/vm-test.conf (written by the host script).
set -u
. /etc/vm-test.conf	# WARM_FSID FAST_FSID FAST_MS SLOW_FSID SLOW_MS SLOW_THRESHOLD READ_AHEAD_KB READERS
			# FAIL_FSID FAIL_MS FAIL_CRASH_READ HUNG_FSID HUNG_S NODATA_FSID
			# REMOUNT_FSID REMOUNTS DOMAIN DOM_FSID1 DOM_FSID2 COPEN_FSID
			# DUP_FSID DUP_MS CHILD_PID DEAD_FSID WITHDRAW_FSID

. /tests/lib.sh
# busybox-static wget crashed here (static NSS); curl comes with its libraries
get() { curl -sS --max-time 10 -o "$2" "http://127.0.0.1:9559$1"; }

mkdir -p /var/cache/fscache /mnt/warm /mnt/fast /mnt/slow /mnt/fail /mnt/hung /mnt/nodata /mnt/remount /run/od \
	/mnt/dom1 /mnt/dom2 /mnt/copen /mnt/dup /mnt/dead /mnt/withdraw /run/od2
mount -t ext4 /dev/vda /var/cache/fscache || {
	say "FAIL cannot mount the cache disk /dev/vda"
	exit 1
}
[ -c /dev/cachefiles ] || {
	say "FAIL no /dev/cachefiles"
	exit 1
}

# The BPF object against edited copies of this kernel's BTF (older layouts,
# a changed daemon_read prototype): each variant must load. Before the agent,
# so that the loads do not overlap its own.
cachefiles_core_check --dir /tmp >/tmp/core.txt 2>/tmp/core.log
say "core check exit $?"
section core /tmp/core.txt
section core_log /tmp/core.log

cat >/etc/sysobsd.ini <<EOF
[http]
listen = 127.0.0.1:9559
[storage]
path = /tmp/sysobs.db
batch_ms = 50
[collector.cachefiles]
interval = 500ms
slow_threshold = $SLOW_THRESHOLD
EOF
sysobsd --config /etc/sysobsd.ini --port-file /run/sysobsd.port >/tmp/sysobsd.log 2>&1 &
agent=$!
i=0
while [ ! -s /run/sysobsd.port ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -s /run/sysobsd.port ] || {
	say "FAIL sysobsd did not start"
	section agent_log /tmp/sysobsd.log
	exit 1
}
get /api/v1/collectors /tmp/collectors.json
section collectors /tmp/collectors.json

# --failover: a supervisor holds /dev/cachefiles; on the fail volume the first
# daemon dies reading its OPEN, the second (after "restore") dies reading its
# FAIL_CRASH_READth READ with READs held, and the third restores and serves.
# Every child is pid CHILD_PID: the two dead daemons share a tgid.
# The copen volume's OPEN is answered with an error; the dup volume is served
# from an image whose two files share their chunks, held DUP_MS per READ.
ondemand_daemon --image /data/fs.img --dir /var/cache/fscache --tag sysobs \
	--delay "erofs,$FAST_FSID=$FAST_MS/$FAST_MS" --delay "erofs,$SLOW_FSID=$SLOW_MS/$SLOW_MS" \
	--delay "erofs,$FAIL_FSID=$FAIL_MS/0" --failover --child-pid "$CHILD_PID" \
	--crash "erofs,$FAIL_FSID=open:1" --crash "erofs,$FAIL_FSID=read:$FAIL_CRASH_READ" \
	--copen-error "erofs,$COPEN_FSID=1" --image-for "erofs,$DUP_FSID=/data/dup.img" \
	--delay "erofs,$DUP_FSID=$DUP_MS/0" --late-write "erofs,$DUP_FSID" \
	--nodata "erofs,$NODATA_FSID=3" --control /run/od --stats /run/ondemand.stats --ready /run/ondemand.ready 2>/tmp/ondemand.log &
daemon=$!
i=0
while [ ! -e /run/ondemand.ready ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -e /run/ondemand.ready ] || {
	say "FAIL on-demand daemon did not bind"
	section ondemand_log /tmp/ondemand.log
	exit 1
}

# warm: a first pass without delay, so that TCG has translated the kernel's
# cold paths (first OPEN, first READ) before the measured volumes run.
rc=0
for which in warm fast slow fail; do
	case $which in
	warm) fsid=$WARM_FSID ;;
	fast) fsid=$FAST_FSID ;;
	slow) fsid=$SLOW_FSID ;;
	fail) fsid=$FAIL_FSID ;;
	esac
	if ! mount -t erofs none -o "fsid=$fsid" /mnt/$which; then
		say "FAIL mount -t erofs -o fsid=$fsid"
		rc=1
		continue
	fi
	# small readahead: more, smaller READ requests (more samples per volume)
	# erofs in fscache mode has a bdi of its own, "erofs-<seq>": the newest
	bdi=$(ls /sys/class/bdi | grep '^erofs-' | sort -t- -k2 -n | tail -n1)
	echo "$READ_AHEAD_KB" >/sys/class/bdi/$bdi/read_ahead_kb 2>/dev/null ||
		say "note: cannot set read_ahead_kb of bdi $bdi"
	# every byte of every file through the on-demand path, files in parallel
	# $READERS readers at a time; more saturate the two emulated CPUs and
	# the requesters' wake-ups, not the daemon, dominate the latency
	i=0
	pids=
	for f in $(cat /data/files); do
		i=$((i + 1))
		(cd /mnt/$which && md5sum "$f" >/tmp/md5-$which.$i) &
		pids="$pids $!"
		if [ $((i % READERS)) = 0 ]; then
			# only the readers: a bare wait would also wait for the agent
			wait $pids
			pids=
		fi
	done
	[ -z "$pids" ] || wait $pids
	i=0
	for f in $(cat /data/files); do
		i=$((i + 1))
		cat /tmp/md5-$which.$i
	done >/tmp/md5-$which
	if cmp -s /tmp/md5-$which /data/md5sums; then
		say "OK content $which"
	else
		say "FAIL content $which differs"
		rc=1
	fi
	umount /mnt/$which
done
# The warm volume once more: a new mount of the same fsid, which the kernel
# may give a new volume id; the agent sums by volume name, so its counts
# still equal the daemon's per-volume counts (OPEN twice).
if mount -t erofs none -o "fsid=$WARM_FSID" /mnt/warm; then
	cat /mnt/warm/small.txt >/dev/null
	umount /mnt/warm
	say "OK remount $WARM_FSID"
else
	say "FAIL remount fsid=$WARM_FSID"
	rc=1
fi

# A hung daemon: it holds one READ (read, not answered) and reads nothing
# more for HUNG_S seconds while a second reader waits (not read); then it
# reads nothing while the volume is unmounted (the CLOSE waits unread).
waitfile() { # waitfile PATH: up to 10 s
	i=0
	while [ ! -e "$1" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$1" ]
}
if mount -t erofs none -o "fsid=$HUNG_FSID" /mnt/hung; then
	touch /run/od/hold
	(cd /mnt/hung && md5sum part1.bin >/tmp/hung1) &
	r1=$!
	waitfile /run/od/pause || say "FAIL the daemon held no READ"
	(cd /mnt/hung && md5sum part2.bin >/tmp/hung2) &
	r2=$!
	sleep "$HUNG_S"
	get /metrics /tmp/hung-read.txt
	rm -f /run/od/pause
	wait $r1 $r2
	cat /tmp/hung1 /tmp/hung2 >/tmp/md5-hung
	if grep -q "$(cat /tmp/md5-hung | head -n1)" /data/md5sums &&
		grep -q "$(tail -n1 /tmp/md5-hung)" /data/md5sums; then
		say "OK content hung"
	else
		say "FAIL content hung differs"
		rc=1
	fi
	touch /run/od/pause
	umount /mnt/hung &
	u=$!
	sleep "$HUNG_S"
	get /metrics /tmp/hung-close.txt
	rm -f /run/od/pause
	wait $u
	say "OK unmount of $HUNG_FSID after a hung CLOSE"
else
	say "FAIL mount -t erofs -o fsid=$HUNG_FSID"
	rc=1
fi
# The daemon completes the third READ of this volume without writing the
# data: that read fails with EIO in EROFS (a later retry of the page may
# succeed); the agent must count an error, not ok.
if mount -t erofs none -o "fsid=$NODATA_FSID" /mnt/nodata; then
	md5sum /mnt/nodata/part3.bin >/dev/null 2>/tmp/nodata.err
	say "nodata read exit $?: $(cat /tmp/nodata.err)"
	umount /mnt/nodata
else
	say "FAIL mount -t erofs -o fsid=$NODATA_FSID"
	rc=1
fi

# A shared domain: two images mounted with one domain_id share the fscache
# volume erofs,<domain_id> (fs/erofs/fscache.c erofs_fscache_register_domain);
# /metrics is read while both are mounted.
if mount -t erofs none -o "fsid=$DOM_FSID1,domain_id=$DOMAIN" /mnt/dom1 &&
	mount -t erofs none -o "fsid=$DOM_FSID2,domain_id=$DOMAIN" /mnt/dom2; then
	md5sum /mnt/dom1/part1.bin /mnt/dom2/part2.bin >/tmp/md5-dom
	grep ' erofs ' /proc/mounts >/tmp/dom-mounts.txt
	# two collects (interval 500 ms): the agent reads the mounts at each
	sleep 1.2
	get /metrics /tmp/dom-metrics-all.txt
	grep '^sysobs_cachefiles_domain' /tmp/dom-metrics-all.txt >/tmp/dom-metrics.txt
	umount /mnt/dom1
	umount /mnt/dom2
	if grep -q "$(sed -n 1p /tmp/md5-dom | cut -d' ' -f1)" /data/md5sums &&
		grep -q "$(sed -n 2p /tmp/md5-dom | cut -d' ' -f1)" /data/md5sums; then
		say "OK content domain"
	else
		say "FAIL content domain differs"
		rc=1
	fi
else
	say "FAIL mount -t erofs -o fsid=...,domain_id=$DOMAIN"
	rc=1
fi
section dom_mounts /tmp/dom-mounts.txt
section dom_metrics /tmp/dom-metrics.txt

# The daemon answers this volume's OPEN with an error (copen <id>,-5): the
# mount fails, and the reply must be counted.
if mount -t erofs none -o "fsid=$COPEN_FSID" /mnt/copen 2>/tmp/copen.err; then
	say "FAIL mount of $COPEN_FSID succeeded though its OPEN was refused"
	umount /mnt/copen
	rc=1
else
	say "OK mount of $COPEN_FSID failed: $(cat /tmp/copen.err)"
fi

# Two files whose chunks are shared (mkfs.erofs --chunksize deduplicates):
# read at once, their READs ask for the same (object, offset). The daemon
# reads nothing while both readers send their first READ (both wait unread
# at one range), then holds each READ DUP_MS and writes its data last, so
# that the other reader's READ of the range is sent meanwhile.
if mount -t erofs none -o "fsid=$DUP_FSID" /mnt/dup; then
	ls -l /mnt/dup >/dev/null # the inodes now: no metadata READ in the pause
	touch /run/od/pause
	(md5sum /mnt/dup/a.bin >/tmp/dup-a) &
	d1=$!
	(md5sum /mnt/dup/b.bin >/tmp/dup-b) &
	d2=$!
	sleep 2
	rm -f /run/od/pause
	wait $d1 $d2
	if [ "$(cut -d' ' -f1 /tmp/dup-a)" = "$(cut -d' ' -f1 /tmp/dup-b)" ] &&
		grep -q "$(cut -d' ' -f1 /tmp/dup-a)" /data/dup.md5; then
		say "OK content dup"
	else
		say "FAIL content dup differs"
		rc=1
	fi
	umount /mnt/dup
else
	say "FAIL mount -t erofs -o fsid=$DUP_FSID"
	rc=1
fi

# Remounts: each mount of the same fsid is a new fscache volume (a new
# debug_id); the agent must keep one label and room in its kernel maps.
start=$(date +%s)
i=0
while [ $i -lt "$REMOUNTS" ]; do
	mount -t erofs none -o "fsid=$REMOUNT_FSID" /mnt/remount || break
	cat /mnt/remount/small.txt >/dev/null
	umount /mnt/remount || break
	i=$((i + 1))
done
say "remounts $i of $REMOUNTS in $(($(date +%s) - start)) s"

grep '^sysobs_cachefiles_inflight' /tmp/hung-read.txt >/tmp/hung-read-cf.txt
grep '^sysobs_cachefiles_inflight' /tmp/hung-close.txt >/tmp/hung-close-cf.txt
section hung_read /tmp/hung-read-cf.txt
section hung_close /tmp/hung-close-cf.txt

kill -TERM $daemon
wait $daemon

# A dead cache: a second daemon serves two volumes, then closes
# /dev/cachefiles keeping its anonymous fds (cachefiles_daemon_release sets
# CACHEFILES_DEAD; the objects stay open). The dead volume's unmount sends a
# CLOSE that cachefiles_ondemand_send_req fails with -EIO at once. Then the
# daemon exits: its fds closed, the cache is withdrawn with the other volume
# still mounted (cachefiles_withdraw_volume), which is unmounted last.
ondemand_daemon --image /data/fs.img --dir /var/cache/fscache --tag sysobs \
	--control /run/od2 --stats /run/ondemand2.stats --ready /run/ondemand2.ready \
	2>/tmp/ondemand2.log &
daemon2=$!
waitfile /run/ondemand2.ready || say "FAIL the second daemon did not bind"
if mount -t erofs none -o "fsid=$DEAD_FSID" /mnt/dead &&
	mount -t erofs none -o "fsid=$WITHDRAW_FSID" /mnt/withdraw; then
	cat /mnt/dead/small.txt /mnt/withdraw/small.txt >/dev/null
	touch /run/od2/closedev
	waitfile /run/od2/closed || say "FAIL the second daemon did not close the device"
	umount /mnt/dead
	say "dead cache: unmount of $DEAD_FSID exit $?"
	kill -TERM $daemon2
	wait $daemon2
	umount /mnt/withdraw
	say "withdrawn cache: unmount of $WITHDRAW_FSID exit $?"
else
	say "FAIL mount of $DEAD_FSID or $WITHDRAW_FSID"
	kill -TERM $daemon2
	wait $daemon2
	rc=1
fi

# The last counts reach /metrics at a collect (interval 500 ms) that TCG on a
# busy host can delay: poll until the OPENs and READs the daemon served are
# all counted (or 30 s pass), then read once more two intervals later.
want=$(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "=");
	if (kv[1] == "open" || kv[1] == "read") s += kv[2] } } END { print s + 0 }' \
	/run/ondemand.stats /run/ondemand2.stats)
counted() {
	get /metrics /tmp/metrics.txt
	awk '/^sysobs_cachefiles_requests_total\{/ && /op="(open|read)"/ { s += $NF } END { print s + 0 }' \
		/tmp/metrics.txt
}
poll_ge "$want" counted
sleep 1
say "requests counted after $POLL_MS ms: $(counted) of $want"
grep '^sysobs_cachefiles_\|^sysobs_collector_up' /tmp/metrics.txt >/tmp/metrics-cf.txt
get '/api/v1/cachefiles/slow?limit=1000' /tmp/slow.json
curl -sS --max-time 10 -H 'Accept: application/openmetrics-text;version=1.0.0' \
	-o /tmp/metrics-om.txt http://127.0.0.1:9559/metrics
grep '^sysobs_cachefiles_request_duration_seconds_bucket{.* # {request_id=' /tmp/metrics-om.txt \
	>/tmp/exemplars.txt || true
get '/api/v1/cachefiles/daemon?limit=100' /tmp/daemon.json
get '/api/v1/cachefiles/slow?limit=5&op=open' /tmp/slow-open.json
get '/api/v1/events?collector=cachefiles&limit=3' /tmp/events.json
get '/api/v1/cachefiles/slow?limit=5' /tmp/page1.json
cur=$(sed -n 's/.*"next_cursor": *"\([0-9]*\)".*/\1/p' /tmp/page1.json)
get "/api/v1/cachefiles/slow?limit=5&cursor=$cur" /tmp/page2.json
section ondemand_stats /run/ondemand.stats
section ondemand_log /tmp/ondemand.log
section ondemand2_stats /run/ondemand2.stats
section ondemand2_log /tmp/ondemand2.log
section metrics /tmp/metrics-cf.txt
section slow /tmp/slow.json
section exemplars /tmp/exemplars.txt
section daemon /tmp/daemon.json
section slow_open /tmp/slow-open.json
section events /tmp/events.json
section page1 /tmp/page1.json
section page2 /tmp/page2.json
kill -TERM $agent
wait $agent
say "agent exit $?"
section agent_log /tmp/sysobsd.log
exit $rc
