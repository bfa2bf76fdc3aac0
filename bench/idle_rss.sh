#!/usr/bin/env bash
# Resident memory of the idle agent (every collector this host supports,
# embedded defaults, temporary database), read after it settles and three
# scrapes, with its privileged IFS helper (sysobsd-priv, a child that runs
# only with an IFS device) and Debian's prometheus-node-exporter beside it in
# the same run (skipped if not installed).
# Needs root (BPF; the agent then drops to sysobs, else nobody).
# Usage: bench/idle_rss.sh [path/to/sysobsd]
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
t=$(mktemp -d)
# The database directory must be reachable by the user the agent becomes.
chmod 755 "$t"
pid= ne_pid=
trap 'kill $pid $ne_pid 2>/dev/null; wait $pid $ne_pid 2>/dev/null; rm -rf "$t"' EXIT

# status_kb PID FIELD: a /proc/PID/status field in kB
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# scrape3 URL: three scrapes, then a second to settle
scrape3() {
	for _ in 1 2 3; do curl -s -o /dev/null "$1"; done
	sleep 1
}

"$bin" --listen 127.0.0.1:0 --db "$t/sysobs.db" --port-file "$t/port" --log-level warn \
	2>"$t/log" &
pid=$!
for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/log"; exit 1; }
port=$(cat "$t/port")
sleep 5
scrape3 "http://127.0.0.1:$port/metrics"
rss_kb=$(status_kb "$pid" VmRSS)
hwm_kb=$(status_kb "$pid" VmHWM)
running=$(curl -s "http://127.0.0.1:$port/api/v1/collectors" |
	jq -r '[.data[] | select(.state == "RUNNING") | .name] | join(",")')
printf 'idle sysobsd: VmRSS %s MiB, VmHWM %s MiB (collectors running: %s)\n' \
	"$(mib "$rss_kb")" "$(mib "$hwm_kb")" "${running:-none}"
if helper=$(pgrep -P "$pid" -x sysobsd-priv); then
	printf 'sysobsd-priv (pid %s, uid 0): VmRSS %s MiB, VmHWM %s MiB; sysobsd + helper VmRSS %s MiB\n' \
		"$helper" "$(mib "$(status_kb "$helper" VmRSS)")" \
		"$(mib "$(status_kb "$helper" VmHWM)")" \
		"$(mib $((rss_kb + $(status_kb "$helper" VmRSS))))"
else
	echo "sysobsd-priv: not running (no IFS device at start-up)"
fi

command -v prometheus-node-exporter >/dev/null || {
	echo "node_exporter: not installed (apt-get install prometheus-node-exporter)"
	exit 0
}
ne_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" >"$t/ne.log" 2>&1 &
ne_pid=$!
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$ne_port/metrics" && break
	sleep 0.1
done
sleep 4
scrape3 "http://127.0.0.1:$ne_port/metrics"
ne_rss=$(status_kb "$ne_pid" VmRSS)
ne_hwm=$(status_kb "$ne_pid" VmHWM)
printf 'idle node_exporter: VmRSS %s MiB, VmHWM %s MiB; sysobsd / node_exporter: VmRSS %sx, VmHWM %sx\n' \
	"$(mib "$ne_rss")" "$(mib "$ne_hwm")" \
	"$(awk -v a="$rss_kb" -v b="$ne_rss" 'BEGIN { printf "%.2f", a / b }')" \
	"$(awk -v a="$hwm_kb" -v b="$ne_hwm" 'BEGIN { printf "%.2f", a / b }')"
