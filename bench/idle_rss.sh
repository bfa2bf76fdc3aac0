#!/usr/bin/env bash
# Resident memory of the idle agent (every collector this host supports,
# embedded defaults, temporary database), read after it settles and three
# scrapes, with its privileged IFS helper (sysobsd-priv, a child that runs
# only with an IFS device) and Debian's prometheus-node-exporter beside it in
# the same run (skipped if not installed). RUNS runs (default 3), then a
# side-by-side table: median and range of VmRSS, VmHWM (the peak, start-up's),
# RssAnon and Pss, and the ratio sysobsd / node_exporter of the medians.
# The goal (issue #23): VmHWM <= node_exporter's, VmRSS <= 0.75x.
# STAGES=1: one more agent start with SYSOBS_MEM_STAGES=1, printing VmRSS and
# the peak of each start-up stage (config, store open, each collector's init
# and start, http start, ...).
# BEFORE=path/to/an/older/sysobsd: that build too, started in each run
# right after this one, in a column of its own (a change's before/after in
# the same runs as node_exporter).
# Needs root (BPF; the agent then drops to sysobs, else nobody).
# Usage: bench/idle_rss.sh [path/to/sysobsd]
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
RUNS=${RUNS:-3}
t=$(mktemp -d)
# The database directory must be reachable by the user the agent becomes.
chmod 755 "$t"
pid= ne_pid=
trap 'kill $pid $ne_pid 2>/dev/null; wait $pid $ne_pid 2>/dev/null; rm -rf "$t"' EXIT

# status_kb PID FIELD: a /proc/PID/status field in kB
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
pss_kb() { awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup"; }
# scrape3 URL: three scrapes, then a second to settle
scrape3() {
	for _ in 1 2 3; do curl -s -o /dev/null "$1"; done
	sleep 1
}
# sample WHO PID: one row "WHO rss hwm anon pss" (kB) into $t/rows
sample() {
	echo "$1 $(status_kb "$2" VmRSS) $(status_kb "$2" VmHWM) $(status_kb "$2" RssAnon) $(pss_kb "$2")" \
		>>"$t/rows"
}

agent_start() { # agent_start [ENV=VALUE...] (AGENT_BIN: the binary, default $bin)
	rm -f "$t"/sysobs.db* "$t/port"
	env "$@" "${AGENT_BIN:-$bin}" --listen 127.0.0.1:0 --db "$t/sysobs.db" --port-file "$t/port" \
		--log-level warn 2>"$t/log" &
	pid=$!
	for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
	[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/log"; exit 1; }
	port=$(cat "$t/port")
}
agent_stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

have_ne=1
command -v prometheus-node-exporter >/dev/null || {
	have_ne=0
	echo "node_exporter: not installed (apt-get install prometheus-node-exporter)"
}
: >"$t/rows"
for run in $(seq 1 "$RUNS"); do
	agent_start
	sleep 5
	scrape3 "http://127.0.0.1:$port/metrics"
	sample sysobsd "$pid"
	if [ "$run" = 1 ]; then
		running=$(curl -s "http://127.0.0.1:$port/api/v1/collectors" |
			jq -r '[.data[] | select(.state == "RUNNING") | .name] | join(",")')
		echo "sysobsd collectors running: ${running:-none}"
		if helper=$(pgrep -P "$pid" -x sysobsd-priv); then
			printf 'sysobsd-priv (pid %s, uid 0): VmRSS %s kB, VmHWM %s kB\n' "$helper" \
				"$(status_kb "$helper" VmRSS)" "$(status_kb "$helper" VmHWM)"
		else
			echo "sysobsd-priv: not running (no IFS device at start-up)"
		fi
	fi
	agent_stop
	if [ -n "${BEFORE:-}" ]; then
		AGENT_BIN=$BEFORE agent_start
		sleep 5
		scrape3 "http://127.0.0.1:$port/metrics"
		sample before "$pid"
		agent_stop
	fi
	[ "$have_ne" = 1 ] || continue
	ne_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" >"$t/ne.log" 2>&1 &
	ne_pid=$!
	for _ in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$ne_port/metrics" && break
		sleep 0.1
	done
	sleep 4
	scrape3 "http://127.0.0.1:$ne_port/metrics"
	sample node_exporter "$ne_pid"
	kill "$ne_pid"
	wait "$ne_pid" 2>/dev/null || true
	ne_pid=
done

# median and range of column C (2 rss, 3 hwm, 4 anon, 5 pss) for WHO, in MiB:
# "median lo hi"
stat_mib() {
	awk -v w="$1" -v c="$2" '$1 == w { print $c }' "$t/rows" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			if (!NR) { print "- - -"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f %.1f %.1f\n", m / 1024, v[1] / 1024, v[NR] / 1024
		}'
}
echo
echo "idle memory over $RUNS runs, MiB: median (min..max)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }
if [ -n "${BEFORE:-}" ]; then
	echo "before: $BEFORE"
	printf '%-8s %-20s %-20s %-8s %-20s %-8s\n' "" sysobsd node_exporter "ratio" before "ratio"
else
	printf '%-8s %-20s %-20s %-8s\n' "" sysobsd node_exporter "ratio"
fi
for col in 2:VmRSS 3:VmHWM 4:RssAnon 5:Pss; do
	read -r a alo ahi < <(stat_mib sysobsd "${col%%:*}")
	read -r b blo bhi < <(stat_mib node_exporter "${col%%:*}")
	printf '%-8s %-20s %-20s %-8s' "${col#*:}" "$a ($alo..$ahi)" "$b ($blo..$bhi)" "$(ratio "$a" "$b")"
	if [ -n "${BEFORE:-}" ]; then
		read -r c clo chi < <(stat_mib before "${col%%:*}")
		printf ' %-20s %-8s' "$c ($clo..$chi)" "$(ratio "$c" "$b")"
	fi
	echo
done
echo "goal: VmHWM ratio <= 1.00x, VmRSS ratio <= 0.75x"

if [ "${STAGES:-0}" = 1 ]; then
	echo
	echo "start-up stages (SYSOBS_MEM_STAGES=1; peak = VmHWM since the previous stage), MiB:"
	agent_start SYSOBS_MEM_STAGES=1
	sleep 3
	agent_stop
	printf '%-28s %8s %8s %8s\n' stage VmRSS peak RssAnon
	sed -n 's/.*mem: stage="\([^"]*\)" rss_kib=\([0-9]*\) hwm_kib=\([0-9]*\) anon_kib=\([0-9]*\).*/\1|\2|\3|\4/p' \
		"$t/log" | awk -F'|' '{ printf "%-28s %8.1f %8.1f %8.1f\n", $1, $2 / 1024, $3 / 1024, $4 / 1024 }'
fi
