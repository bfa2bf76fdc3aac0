#!/usr/bin/env bash
# Readable identifiers (issue #19 item 8), against a real MPTCP connection
# (tests/integration/mptcp_topo.sh):
# - ?token= of GET /api/v1/mptcp/events takes the token as printed (8 hex
#   digits, token_hex), 0x-prefixed, upper case, and in decimal (with a
#   leading 0 when it has 8 digits: 8 characters are hex), each giving the
#   same rows, all of that connection; the CLI's filter too; bad tokens
#   (not hex, 0x alone, 9 hex digits, above 2^32 - 1, 6 hex digits) are a
#   400 JSON error naming the forms;
# - the client's namespace, named by `ip netns add`, shows its name in
#   GET /api/v1/mptcp/connections (netns_name of the connection and of the
#   watched namespace), in the history rows (GET /api/v1/mptcp/events, and
#   /api/v1/drops/samples for a UDP drop there when the drops collector
#   runs), in
#   `sysobs mptcp` and `sysobs mptcp events`; a second name given later
#   (bind mount) and the first removed: the answer follows within the
#   cache's second, without a restart; an unnamed namespace has no
#   netns_name.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
PEER=$SYSOBS_BUILD/tests/mptcp_peer
CLI_BIN=${SYSOBS_CLI:-$SYSOBS_BUILD/api/cli/sysobs}
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"
[ -x "$CLI_BIN" ] || fail "sysobs CLI not built ($CLI_BIN)"

mptcp_topo_up || fail "topology setup failed"
write_base_config collector.ifs.enabled=false collector.cachefiles.enabled=false \
	"collector.mptcp.netns=/run/netns/$NS_A" collector.drops.sample_rate=1000
start_agent
wait_collector mptcp
NS_INO=$(stat -L -c %i "/run/netns/$NS_A")

mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 1
have_created() {
	[ "$(api GET "/api/v1/mptcp/events?token=$TOKEN_HEX&type=CREATED" | jq '.data | length')" -ge 1 ]
}
wait_for 10 have_created || fail "no CREATED row for token $TOKEN_HEX ($TOKEN)"

# ---- tokens in every form ----
# 8 characters are hex (the printed form); a decimal of 8 digits takes a 0
dec=$TOKEN
[ ${#dec} -ne 8 ] || dec=0$dec
upper=$(tr a-f A-F <<<"$TOKEN_HEX")
ref=
for form in "$TOKEN_HEX" "0x$TOKEN_HEX" "0X$upper" "$upper" "$dec"; do
	req GET "/api/v1/mptcp/events?token=$form"
	assert_eq "status of token=$form" 200 "$HTTP_CODE"
	ids=$(jq -c '[.data[].id]' <<<"$BODY")
	toks=$(jq -c '[.data[].token] | unique' <<<"$BODY")
	assert_eq "tokens of the rows for token=$form" "[$TOKEN]" "$toks"
	[ -n "$ref" ] || ref=$ids
	assert_eq "rows for token=$form" "$ref" "$ids"
done
assert_ge "rows of the connection" 1 "$(jq length <<<"$ref")"
# the CLI passes filters through: the printed form works there too
"$CLI_BIN" -s "http://127.0.0.1:$PORT" mptcp events "token=$TOKEN_HEX" >"$T/cli-events.txt" 2>&1 ||
	fail "sysobs mptcp events token=$TOKEN_HEX: $(cat "$T/cli-events.txt")"
grep -q "CREATED *$TOKEN_HEX *$NS_A " "$T/cli-events.txt" ||
	fail "CLI events for token=$TOKEN_HEX: $(cat "$T/cli-events.txt")"
for bad in xyz 0x 0x123456789 4294967296 d11430 -1 "%2042"; do
	req GET "/api/v1/mptcp/events?token=$bad"
	assert_eq "status of token=$bad" 400 "$HTTP_CODE"
	assert_eq "error code of token=$bad" bad_request "$(jq -r .error.code <<<"$BODY")"
	jq -r .error.message <<<"$BODY" | grep -q '^token: expected a token as printed (8 hex digits' ||
		fail "error message of token=$bad: $BODY"
done
pass "token=$TOKEN_HEX, 0x$TOKEN_HEX, 0X$upper, $upper and $dec give the same $(jq length <<<"$ref") rows; 7 bad forms are 400s"

# ---- the namespace by its name ----
conns() { api GET /api/v1/mptcp/connections; }
conn_name() { conns | jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .netns_name // "-"'; }
assert_eq "connection's netns" "$NS_INO" "$(conns | jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .netns')"
assert_eq "connection's netns_name" "$NS_A" "$(conn_name)"
assert_eq "watched namespace's netns_name" "$NS_A" "$(conns | jq -r '.namespaces[0].netns_name')"
# history rows too: the stored inode, named when served
req GET "/api/v1/mptcp/events?token=$TOKEN_HEX"
assert_eq "events' netns_name" "[\"$NS_A\"]" "$(jq -c '[.data[].netns_name] | unique' <<<"$BODY")"
assert_eq "events' netns" "[$NS_INO]" "$(jq -c '[.data[].netns] | unique' <<<"$BODY")"
# a drop sample of that namespace (UDP to a closed port on its loopback)
if [ "$(collector_state drops)" = RUNNING ]; then
	UP=$((20000 + RANDOM % 20000))
	ip netns exec "$NS_A" bash -c "echo x >/dev/udp/127.0.0.1/$UP"
	sampled() { [ "$(api GET "/api/v1/drops/samples?netns=$NS_INO&port=$UP" | jq '.data | length')" -ge 1 ]; }
	wait_for 10 sampled || fail "no drop sample of netns $NS_INO port $UP"
	req GET "/api/v1/drops/samples?netns=$NS_INO&port=$UP"
	assert_eq "drop samples' netns_name" "[\"$NS_A\"]" "$(jq -c '[.data[].netns_name] | unique' <<<"$BODY")"
	DROPS_NAMED=", drop samples"
else
	echo "note: drops collector $(collector_state drops) ($(collector_reason drops)): drop samples' names not checked"
	DROPS_NAMED=
fi
"$CLI_BIN" -s "http://127.0.0.1:$PORT" mptcp >"$T/cli.txt" 2>&1 || fail "sysobs mptcp: $(cat "$T/cli.txt")"
grep -Eq "^$TOKEN_HEX +$NS_A " "$T/cli.txt" || fail "CLI does not name the netns: $(cat "$T/cli.txt")"
grep -q "^netns /run/netns/$NS_A ($NS_INO, name $NS_A)" "$T/cli.txt" ||
	fail "CLI namespaces line: $(cat "$T/cli.txt")"
# Names change: another name for the same namespace, then the first gone.
NEW=sysobs-t$$
touch "/run/netns/$NEW"
on_exit "umount /run/netns/$NEW 2>/dev/null; rm -f /run/netns/$NEW"
mount --bind "/run/netns/$NS_A" "/run/netns/$NEW" || fail "cannot bind a second name"
umount "/run/netns/$NS_A" && rm -f "/run/netns/$NS_A" || fail "cannot remove the first name"
renamed() { [ "$(conn_name)" = "$NEW" ]; }
wait_for 3 renamed || fail "netns_name after the rename: $(conn_name)"
# unnamed: no netns_name at all
umount "/run/netns/$NEW" && rm -f "/run/netns/$NEW"
unnamed() { [ "$(conn_name)" = "-" ]; }
wait_for 3 unnamed || fail "netns_name of an unnamed namespace: $(conn_name)"
assert_eq "the inode stays" "$NS_INO" "$(conns | jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .netns')"
pass "netns $NS_INO named $NS_A in the API (live, events$DROPS_NAMED) and the CLI, then $NEW, then unnamed, without a restart"
