#!/usr/bin/env bash
# No growth under abuse (issue #24 item 8): the bad-request corpus of
# tests/tools/http_abuse.py against sysobsd with the shipped defaults and a
# temporary database for DURATION, printing every INTERVAL the elapsed time,
# requests sent, VmRSS, VmHWM, open descriptors (/proc/PID/fd) and threads,
# and the same RSS of a control: a second agent, same defaults, no HTTP
# traffic. Both record the host's packet drops (the abuse makes some: each
# reset connection), so both databases grow alike, and with them SQLite's
# page cache (up to cache_size, 8 MiB): the control's growth is that share.
# At the end it says whether RSS and descriptors are flat: the mean RSS of
# the last third of the samples against the first third after WARMUP, less
# the control's (growth < GROWTH_KIB), and the descriptors 3 s after the
# load against before it. A glibc arena that rises then plateaus shows as
# growth in the warm-up only.
#
# Usage: bench/http_abuse_soak.sh [path/to/sysobsd]
#   DURATION=600 INTERVAL=30 WARMUP=60 WORKERS=4 SLOW=2 GROWTH_KIB=2048
# Root (the collectors of the shipped defaults load BPF). A build-asan agent
# works too: LSan reports at its exit (the end of this script), in its log.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-${SYSOBSD:-$here/build/sysobsd}}
DURATION=${DURATION:-600}
INTERVAL=${INTERVAL:-30}
WARMUP=${WARMUP:-60}
WORKERS=${WORKERS:-4}
SLOW=${SLOW:-2}
GROWTH_KIB=${GROWTH_KIB:-2048}
[ "$(id -u)" = 0 ] || { echo "needs root (the shipped defaults' collectors load BPF)"; exit 1; }
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }

t=$(mktemp -d)
pid=
cpid=
tool=
cleanup() {
	for p in "$tool" "$pid" "$cpid"; do [ -z "$p" ] || kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT

# The embedded defaults (deploy/sysobsd.ini only adds the user, the path
# and kallsyms of the unit), on an ephemeral loopback port. The agent drops
# to user nobody after start: the database directory is that user's.
chmod 755 "$t"
start() { # NAME: starts an agent in the background ($! is its pid)
	mkdir "$t/$1"
	chown nobody "$t/$1"
	"$bin" --listen 127.0.0.1:0 --db "$t/$1/sysobs.db" --port-file "$t/$1.port" \
		--log-level warn 2>"$t/$1.log" &
}
start abused
pid=$!
start control
cpid=$!
for _ in $(seq 100); do [ -s "$t/abused.port" ] && [ -s "$t/control.port" ] && break; sleep 0.1; done
[ -s "$t/abused.port" ] && [ -s "$t/control.port" ] ||
	{ echo "sysobsd did not start"; cat "$t"/*.log; exit 1; }
port=$(cat "$t/abused.port")
sleep 3 # collectors settle

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/${2:-$pid}/status"; }
fds() { ls "/proc/$pid/fd" | wc -l; }
fd0=$(fds)
echo "sysobsd pid $pid port $port; abuse: $WORKERS workers + $SLOW slow for ${DURATION}s (warm-up ${WARMUP}s); baseline: RSS $(field VmRSS) KiB, $fd0 fds, $(field Threads) threads"
python3 "$here/tests/tools/http_abuse.py" --port "$port" --duration "$DURATION" \
	--workers "$WORKERS" --slow "$SLOW" --count-file "$t/sent" >"$t/abuse.json" 2>"$t/abuse.err" &
tool=$!
printf '%8s %10s %10s %10s %5s %7s %12s\n' elapsed sent VmRSS_KiB VmHWM_KiB fds threads control_RSS
t0=$(date +%s)
: >"$t/samples"
while kill -0 "$tool" 2>/dev/null; do
	sleep "$INTERVAL" &
	wait $! || true
	kill -0 "$tool" 2>/dev/null || break
	el=$(($(date +%s) - t0))
	row=$(printf '%8s %10s %10s %10s %5s %7s %12s' "$el" \
		"$(cat "$t/sent" 2>/dev/null || echo 0)" "$(field VmRSS)" "$(field VmHWM)" "$(fds)" \
		"$(field Threads)" "$(field VmRSS "$cpid")")
	echo "$row"
	echo "$row" >>"$t/samples"
done
wait "$tool" || { echo "http_abuse.py failed: $(tail -3 "$t/abuse.err")"; exit 1; }
tool=
sleep 3
fd1=$(fds)
summary=$(tail -1 "$t/abuse.json")
echo "after: RSS $(field VmRSS) KiB, HWM $(field VmHWM) KiB, $fd1 fds, $(field Threads) threads; $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["sent"], "requests,", d["errors"], "unexpected answers", d["error_kinds"] or "")' "$summary")"

# flat? the first third of the samples after the warm-up against the last
# third, less the control's growth over the same samples
verdict=$(awk -v w="$WARMUP" -v g="$GROWTH_KIB" '
	$1 >= w { n++; rss[n] = $3; ctl[n] = $7 }
	END {
		if (n < 3) { print "too few samples after the warm-up"; exit }
		k = int(n / 3)
		for (i = 1; i <= k; i++) { a += rss[i]; ca += ctl[i] }
		for (i = n - k + 1; i <= n; i++) { b += rss[i]; cb += ctl[i] }
		d = (b - a) / k; cd = (cb - ca) / k
		printf "RSS %s: first third after warm-up %.0f KiB, last third %.0f KiB (%+.0f KiB); control %+.0f KiB; abuse share %+.0f KiB (bound %d)\n", d - cd < g ? "flat" : "GROWS", a / k, b / k, d, cd, d - cd, g
	}' "$t/samples")
echo "$verdict"
if [ "$fd1" -le "$fd0" ]; then
	echo "fds flat: $fd0 before, $fd1 after"
else
	echo "fds GROW: $fd0 before, $fd1 after"
fi
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
kill -TERM "$cpid"
wait "$cpid" || true
cpid=
if grep -q "LeakSanitizer\|AddressSanitizer\|runtime error" "$t/abused.log"; then
	echo "sanitizer report:"
	grep -A30 "LeakSanitizer\|AddressSanitizer\|runtime error" "$t/abused.log" | head -80
	exit 1
fi
echo "sysobsd exit $rc after SIGTERM"
case $verdict in *GROWS* | too*) exit 1 ;; esac
[ "$fd1" -le "$fd0" ] && [ "$rc" = 0 ]
