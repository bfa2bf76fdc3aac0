#!/usr/bin/env bash
# No growth under abuse (issue #24 item 8), in short: the bad-request corpus
# of tests/tools/http_abuse.py (every case of http_hardening's parsing
# checks and of item 6, as first and as kept-alive second requests,
# slowloris, held and half-sent connections) against the agent for ABUSE_S
# (40 s), 4 workers + 2 slow.
# - every case's answer is checked once first (--check), then none of the
#   loop's answers may differ;
# - descriptors: back to the baseline within 3 s of the end;
# - RSS: the mean of the last third of the samples (every 2 s) against the
#   first third after a 10 s warm-up grows less than 2 MiB. The collectors
#   are off: their database (SQLite's page cache) grows on its own, which
#   bench/http_abuse.sh measures against a control agent instead.
# Under ASan (the asan stage of scripts/test.sh) the RSS bound is not
# asserted (the allocator's quarantine holds freed memory); LeakSanitizer
# checks the exit instead: stop_agent asserts exit code 0.
source "$(dirname "$0")/lib.sh"
need_cmd python3
need_cmd jq
TOOLS="$SYSOBS_SRC/tests/tools"
ABUSE_S=${ABUSE_S:-40}
WARMUP_S=10

write_base_config http.header_timeout=10s collector.self.enabled=false \
	collector.cachefiles.enabled=false collector.drops.enabled=false \
	collector.mptcp.enabled=false collector.ifs.enabled=false
start_agent
P=$AGENT_PID
asan=false
if ldd "$SYSOBSD" 2>/dev/null | grep -q libasan; then asan=true; fi
field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$P/status"; }
fds() { ls "/proc/$P/fd" | wc -l; }
curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics" || fail "no /metrics before the abuse"
sleep 1
fd0=$(fds)
rss0=$(field VmRSS)

python3 "$TOOLS/http_abuse.py" --port "$PORT" --check --duration "$ABUSE_S" --workers 4 \
	--slow 2 --count-file "$T/sent" >"$T/abuse.json" 2>"$T/abuse.err" &
tool=$!
on_exit "kill $tool 2>/dev/null"
t0=$(date +%s)
: >"$T/samples"
while kill -0 "$tool" 2>/dev/null; do
	sleep 2
	kill -0 "$tool" 2>/dev/null || break
	echo "$(($(date +%s) - t0)) $(cat "$T/sent" 2>/dev/null || echo 0) $(field VmRSS) $(fds)" >>"$T/samples"
done
wait "$tool" || fail "http_abuse.py: $(tail -5 "$T/abuse.err")"
echo "elapsed sent VmRSS_KiB fds:"
awk 'NR % 3 == 0' "$T/samples"
summary=$(tail -1 "$T/abuse.json")
sent=$(jq -r .sent <<<"$summary")
assert_ge "bad requests sent" 5000 "$sent"
assert_eq "answers other than the expected ones ($(jq -c .error_kinds <<<"$summary"))" 0 \
	"$(jq -r .errors <<<"$summary")"
pass "$sent bad requests in ${ABUSE_S} s, every one answered as expected ($(wc -l <"$T/abuse.err") cases checked once first)"

# descriptors back to the baseline: nothing held after the abuse
for _ in $(seq 30); do
	[ "$(fds)" -le "$fd0" ] && break
	sleep 0.1
done
fd1=$(fds)
[ "$fd1" -le "$fd0" ] || fail "descriptors: $fd0 before the abuse, $fd1 3 s after: $(ls -l "/proc/$P/fd" | tail -5)"
curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/healthz" || fail "/healthz after the abuse"
open=$(metric 'sysobs_http_connections')
[ "${open%.*}" -le 1 ] || fail "$open connections still tracked after the abuse"

growth=$(awk -v w="$WARMUP_S" '
	$1 >= w { n++; rss[n] = $3 }
	END {
		if (n < 3) { print "x"; exit }
		k = int(n / 3)
		for (i = 1; i <= k; i++) a += rss[i]
		for (i = n - k + 1; i <= n; i++) b += rss[i]
		printf "%d", (b - a) / k
	}' "$T/samples")
[ "$growth" != x ] || fail "too few RSS samples after the warm-up"
rss1=$(field VmRSS)
if $asan; then
	echo "note: ASan build: RSS growth $growth KiB not asserted (quarantine); LSan checks the exit"
else
	[ "$growth" -lt 2048 ] ||
		fail "RSS grew $growth KiB from the first third after the warm-up to the last (bound 2048)"
fi
stop_agent
pass "descriptors $fd0 before, $fd1 after; RSS ${rss0} KiB before, ${rss1} KiB after, $growth KiB growth after the ${WARMUP_S} s warm-up (bound 2048 KiB); clean exit"
