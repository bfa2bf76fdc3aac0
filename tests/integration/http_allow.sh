#!/usr/bin/env bash
# [http] allow (issue #19 item 6), from clients on another host: the agent
# runs in a network namespace of the test's own, clients in a second one,
# joined by a veth pair with private addresses (10.199.7.0/24):
# - allow = 10.199.7.2/32, 127.0.0.1: a scrape from 10.199.7.2 gets 200,
#   one from 10.199.7.3 is reset at once (not a timeout), counted in
#   sysobs_http_connections_closed_total{reason="not_allowed"} and logged;
# - the default: listen = 0.0.0.0 alone serves 10.199.7.3 (one change);
#   listen = 127.0.0.1 alone: allow = loopback;
# - listen = 0.0.0.0 with allow = loopback warns at start; a bad allow
#   exits 2 naming the key.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd ip
need_cmd curl
need_cmd jq

SRV=sysobs-als$$
CLI=sysobs-alc$$
netns_new "$SRV" || skip "cannot create a network namespace"
netns_new "$CLI" || skip "cannot create a network namespace"
ip link add "sa$$" netns "$SRV" type veth peer name "ca$$" netns "$CLI" ||
	skip "cannot create a veth pair"
ip -n "$SRV" addr add 10.199.7.1/24 dev "sa$$"
ip -n "$CLI" addr add 10.199.7.2/24 dev "ca$$"
ip -n "$CLI" addr add 10.199.7.3/24 dev "ca$$"
ip -n "$SRV" link set "sa$$" up
ip -n "$CLI" link set "ca$$" up
API_NETNS=$SRV
OFF=(collector.drops.enabled=false collector.mptcp.enabled=false
	collector.cachefiles.enabled=false collector.ifs.enabled=false)

# scrape FROM_ADDR [DEST]: /metrics from the client namespace with that
# source address; prints curl's exit code and the status ("0 200", "56 000").
scrape() {
	local out rc
	out=$(ip netns exec "$CLI" curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
		--interface "$1" "http://${2:-10.199.7.1}:$PORT/metrics" 2>/dev/null)
	rc=$?
	echo "$rc $out"
}
_up() { [ "$(ip netns exec "$CLI" cat "/sys/class/net/ca$$/operstate")" = up ]; }
wait_for 10 _up || fail "the veth pair is not up"

# ---- an explicit list ----
# --listen (the flag) replaces [http] listen: the default allow follows
# whichever gives the address.
write_base_config "http.allow=10.199.7.2/32, 127.0.0.1" "${OFF[@]}"
start_agent --listen 0.0.0.0:0
assert_eq "scrape from an allowed address" "0 200" "$(scrape 10.199.7.2)"
t0=$(date +%s%N)
got=$(scrape 10.199.7.3)
ms=$((($(date +%s%N) - t0) / 1000000))
# the reset: 7 when it overtakes curl's connect, else 56 (reset) or 52
case $got in 7\ * | 56\ * | 52\ *) ;; *) fail "scrape from 10.199.7.3 not refused: $got" ;; esac
[ "$ms" -lt 2000 ] || fail "the refusal took $ms ms (a timeout, not a reset)"
assert_eq "refusals counted" 1 "$(metric 'sysobs_http_connections_closed_total{reason="not_allowed"}')"
grep -q 'refused a connection from 10.199.7.3: not in \[http\] allow' "$T/agent.log" ||
	fail "the refusal is not logged"
# loopback is in the list: the helpers above talked to it over 127.0.0.1
assert_eq "scrape from an allowed address again" "0 200" "$(scrape 10.199.7.2)"
assert_eq "still one refusal" 1 "$(metric 'sysobs_http_connections_closed_total{reason="not_allowed"}')"
stop_agent
pass "allow list: 10.199.7.2 gets 200, 10.199.7.3 reset in $ms ms and counted"

# ---- the default follows listen ----
write_base_config "${OFF[@]}"
start_agent --listen 0.0.0.0:0
assert_eq "default allow with a wildcard listen" "0 200" "$(scrape 10.199.7.3)"
grep -q 'clients allowed: any (the default for this listen address)' "$T/agent.log" ||
	fail "the default allow list is not logged"
stop_agent
# A loopback listen admits loopback clients only.
write_base_config "${OFF[@]}"
start_agent
assert_eq "loopback client of a loopback listen" 200 "$(api GET /healthz >/dev/null; echo "$HTTP_CODE")"
grep -q 'clients allowed: 127.0.0.0/8, ::1/128 (the default for this listen address)' \
	"$T/agent.log" || fail "a loopback listen's default allow is not loopback"
stop_agent
pass "default: any for listen 0.0.0.0 (one change serves other hosts), loopback for 127.0.0.1"

# ---- what cannot work is said ----
: >"$T/agent.log"
write_base_config http.allow=loopback "${OFF[@]}"
start_agent --listen 0.0.0.0:0
grep -q 'serves other hosts, but \[http\] allow = 127.0.0.0/8, ::1/128 admits only this host' \
	"$T/agent.log" || fail "no warning for a wildcard listen that admits only loopback"
case $(scrape 10.199.7.2) in 0\ *) fail "allow = loopback served 10.199.7.2" ;; esac
stop_agent
write_base_config http.allow=10.1.2.3/33 "${OFF[@]}"
rc=0
ip netns exec "$SRV" "$SYSOBSD" --config "$T/sysobsd.ini" >"$T/bad.log" 2>&1 || rc=$?
assert_eq "exit code of a bad allow" 2 "$rc"
grep -q 'allow.*"10.1.2.3/33" is not an address' "$T/bad.log" ||
	fail "bad allow: $(cat "$T/bad.log")"
pass "a wildcard listen with allow = loopback warns at start; a bad allow exits 2"
