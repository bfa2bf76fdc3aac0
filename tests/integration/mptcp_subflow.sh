#!/usr/bin/env bash
# mptcp subflow health (issue 36) against `ss`, on the real kernel: two
# namespaces joined by two veth pairs (mptcp_topo.sh), the agent watching the
# client's. Path 2 is shaped (tbf 8 mbit with a 60 ms queue: queueing delay
# under load, as no netem exists here) and lossy (nft numgen drops 2 % of
# its segments at the server); path 1 is neither. The client streams bulk
# data, then idles.
# Asserted: under load, each subflow's RTT from ?refresh=1 within 10 % of
# `ss -ti` read before, beside and after it (rounds where those agree);
# idle, from the reconciliation alone (1 s, no refresh) once the kernel's
# figures settle: srtt, rttvar, cwnd, bytes_acked, bytes_sent, total
# retransmits and segs_out equal to ss; retransmits per segment on path 2
# at least 10 times path 1's, the metrics by endpoint id equal to ss's
# totals; the connection's mptcp_info equal to `ss -M`; history
# rows of both subflows (/api/v1/mptcp/subflows); the CLI's tree.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
mptcp_need
need_cmd jq
need_cmd curl
need_cmd ss
need_cmd tc
need_cmd nft
PEER=$SYSOBS_BUILD/tests/mptcp_peer
[ -x "$PEER" ] || fail "mptcp_peer not built ($PEER)"
# The peers' lifetime (mptcp_topo.sh): some 20 s here, minutes in a TCG
# guest (integration.vm_matrix with SYSOBS_VM_TESTS=mptcp_subflow).
MP_TIMEOUT=600

mptcp_topo_up || fail "topology setup failed"
ip netns exec "$NS_A" tc qdisc add dev mpa2 root tbf rate 8mbit burst 16kb latency 60ms ||
	skip "no tbf qdisc in this kernel"
ip netns exec "$NS_B" nft -f - <<NFT || skip "no nf_tables numgen in this kernel"
table inet sysobs_sfloss {
	chain pre {
		type filter hook prerouting priority 0;
		iifname "mpb2" tcp dport $MP_PORT numgen random mod 100 lt 2 drop
	}
}
NFT

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.mptcp]
netns = /run/netns/$NS_A
reconcile = 1s
subflow_history = 2s
INI
start_agent
INO=$(stat -L -c %i "/run/netns/$NS_A")
wait_for 10 curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/connections" -o /dev/null ||
	fail "connections route not answering"

mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2
grep -q 'subflows=2' "$T/client.txt" || fail "second subflow not established: $(cat "$T/client.txt")"

# ss's subflows of the connection, one line each:
#   saddr rtt_ms rttvar_ms cwnd bytes_acked bytes_sent total_retrans segs_out
ss_subflows() {
	ip netns exec "$NS_A" ss -tinHO state established "( dport = :$MP_PORT )" |
		awk '/tcp-ulp-mptcp/ {
			split($3, a, ":"); sub(/%.*/, "", a[1]); r = ""; v = ""; c = ""; ba = 0; bs = 0; tr = 0; so = 0
			for (i = 4; i <= NF; i++) {
				n = split($i, kv, ":")
				if (kv[1] == "rtt") { split(kv[2], rv, "/"); r = rv[1]; v = rv[2] }
				else if (kv[1] == "cwnd") c = kv[2]
				else if (kv[1] == "bytes_acked") ba = kv[2]
				else if (kv[1] == "bytes_sent") bs = kv[2]
				else if (kv[1] == "segs_out") so = kv[2]
				else if (kv[1] == "retrans") { split(kv[2], t, "/"); tr = t[2] }
			}
			print a[1], r, v, c, ba, bs, tr, so }'
}
# sysobs's subflows of the connection, the same columns (rtt in ms as ss
# prints it: microseconds / 1000, three decimals).
api_subflows() {
	jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .subflows[] |
		[.saddr, (.tcp.rtt_us / 1000 | tostring), (.tcp.rttvar_us / 1000 | tostring),
		 .tcp.snd_cwnd, (.tcp.bytes_acked // "0"), (.tcp.bytes_sent // "0"),
		 .tcp.total_retrans, (.tcp.segs_out // 0)] | map(tostring) | join(" ")'
}
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }'; }

# ---- 1. under load: RTT within 10 % of ss read around it ------------------
# The shaped path's srtt moves by tens of percent within milliseconds under
# this load (cubic's sawtooth in the tbf queue). Each round reads ss before
# the API call, beside it (started with it) and after it; a round is judged
# only when the three agree within 5 % or 20 us (the kernel's value was
# steady across the call), and sysobs must then be within 10 % of them in at
# least 4 of 5 judged rounds (the value can still swing and come back
# between two readings), or within 20 us (path 1's veth RTT is some
# 10 us, where 10 % is below ss's 1 us print resolution); up to 80 rounds
# until 10 are judged per subflow, at least 5 (a loaded host judges fewer).
echo stream >&4
sleep 3
declare -A judged=([$MP_A1]=0 [$MP_A2]=0) missed=([$MP_A1]=0 [$MP_A2]=0) all=()
# Under emulation (SYSOBS_VM=1: a TCG guest, integration.vm_matrix) a
# round spans seconds and the API's dump is no longer beside the ss run
# started with it: a few rounds, reported only (on debian-6.1 under TCG one
# judged round in eight, 16.3 ms against sysobs 20.4). The idle, metric,
# history and mptcp_info checks below are exact there too.
rounds=80 want=10 need=5
[ "${SYSOBS_VM:-0}" = 1 ] && rounds=8 want=0 need=0
for round in $(seq 1 "$rounds"); do
	before=$(ss_subflows)
	ss_subflows >"$T/mid" & # at the same moment as the API's dump
	sp=$!
	api GET "/api/v1/mptcp/connections?refresh=1" >"$T/live"
	wait "$sp"
	assert_eq "refresh status" 200 "$HTTP_CODE"
	after=$(ss_subflows)
	ours=$(api_subflows <"$T/live")
	for a in "$MP_A1" "$MP_A2"; do
		s=$(col "$a" 2 <<<"$ours")
		b=$(col "$a" 2 <<<"$before")
		m=$(col "$a" 2 <"$T/mid")
		e=$(col "$a" 2 <<<"$after")
		[ -n "$s" ] || fail "round $round, $a: no RTT from sysobs: $(cat "$T/live")"
		all[$a]+=" $s"
		# ss can miss a socket whose dump was interrupted (seen in a
		# TCG guest): no reference, no round.
		[ -n "$b" ] && [ -n "$m" ] && [ -n "$e" ] || continue
		awk -v b="$b" -v m="$m" -v e="$e" 'BEGIN {
			lo = b; if (m < lo) lo = m; if (e < lo) lo = e
			hi = b; if (m > hi) hi = m; if (e > hi) hi = e
			exit !(hi <= lo * 1.05 + 0.02) }' || continue
		judged[$a]=$((judged[$a] + 1))
		if awk -v s="$s" -v b="$b" -v m="$m" -v e="$e" 'BEGIN {
			lo = b; if (m < lo) lo = m; if (e < lo) lo = e
			hi = b; if (m > hi) hi = m; if (e > hi) hi = e
			exit !(s >= lo * 0.9 - 0.02 && s <= hi * 1.1 + 0.02) }'; then
			echo "load round $round $a: ss $b, $m (beside), $e ms; sysobs $s ms"
		else
			echo "load round $round $a: ss $b, $m (beside), $e ms; sysobs $s ms: MISSED"
			missed[$a]=$((missed[$a] + 1))
		fi
	done
	[ "$want" -gt 0 ] && [ "${judged[$MP_A1]}" -ge "$want" ] && [ "${judged[$MP_A2]}" -ge "$want" ] && break
	sleep 0.1
done
for a in "$MP_A1" "$MP_A2"; do
	echo "$a: $((judged[$a] - missed[$a])) of ${judged[$a]} judged rounds within 10 % of ss"
	[ "$need" = 0 ] && continue # emulation: reported only
	assert_ge "judged rounds of $a" "$need" "${judged[$a]}"
	[ "$((missed[$a] * 5))" -le "${judged[$a]}" ] ||
		fail "$a: sysobs RTT outside 10 % of ss in ${missed[$a]} of ${judged[$a]} rounds"
done
# Path 2 queues: its RTT, averaged over the rounds, well above path 1's.
mean() { awk '{ for (i = 1; i <= NF; i++) s += $i } END { printf "%.3f", NF ? s / NF : 0 }' <<<"$1"; }
m1=$(mean "${all[$MP_A1]}") m2=$(mean "${all[$MP_A2]}")
echo "mean RTT under load: path 1 $m1 ms, path 2 (shaped) $m2 ms"
awk -v p1="$m1" -v p2="$m2" 'BEGIN { exit !(p2 > 2 * p1) }' ||
	fail "shaped path's mean RTT ($m2 ms) not above twice the other's ($m1 ms)"

# ---- 2. idle: equal to ss after the reconciliation -------------------------
echo stop >&4
wait_for 5 grep -qs '^idle' "$T/client.txt" || fail "client did not stop streaming"
# The lossy path can still retransmit for a few seconds (RTO backoff):
# wait until sysobs's last reconciliation (no refresh) shows what ss shows,
# every figure of both subflows (a reconcile period is 1 s).
idle_equal() {
	theirs=$(ss_subflows)
	api GET /api/v1/mptcp/connections >"$T/live"
	ours=$(api_subflows <"$T/live")
	[ -n "$theirs" ] && [ "$(sort <<<"$ours")" = "$(sort <<<"$theirs")" ]
}
wait_for 10 idle_equal || fail "idle subflows not equal to ss: ss '$theirs', sysobs '$ours'"
echo "ss:     $theirs" | tr '\n' ';'
echo
echo "sysobs: $ours" | tr '\n' ';'
echo
for a in "$MP_A1" "$MP_A2"; do
	for c in 2:rtt 3:rttvar 4:cwnd 5:bytes_acked 6:bytes_sent 7:total_retrans 8:segs_out; do
		assert_eq "idle $a ${c#*:} equal to ss" "$(col "$a" "${c%%:*}" <<<"$theirs")" \
			"$(col "$a" "${c%%:*}" <<<"$ours")"
	done
done
# Retransmits: per segment sent, the lossy path's (2 % dropped, plus tbf's
# overflow) at least 10 times the clean path's (veth; a loaded host's
# backlog can still drop a few there).
r1=$(col "$MP_A1" 7 <<<"$ours") s1=$(col "$MP_A1" 8 <<<"$ours")
r2=$(col "$MP_A2" 7 <<<"$ours") s2=$(col "$MP_A2" 8 <<<"$ours")
assert_ge "retransmits on the lossy path" 20 "$r2"
echo "retransmits: clean path $r1 of $s1 segments, lossy path $r2 of $s2"
[ "$((r1 * s2 * 10))" -le "$((r2 * s1))" ] ||
	fail "clean path's retransmit rate ($r1/$s1) not a tenth of the lossy path's ($r2/$s2)"
sampled=$(jq -r --argjson t "$TOKEN" '.data[] | select(.token == $t) | .subflows[0].tcp.sampled' "$T/live")
[ "$sampled" != null ] || fail "no sample time"

# The metrics by endpoint id: retransmits and acked bytes counted from the
# subflows' start (an event saw them), so equal to ss's totals.
id2=$(jq -r --argjson t "$TOKEN" --arg a "$MP_A2" '.data[] | select(.token == $t) | .subflows[] | select(.saddr == $a) | .loc_id' "$T/live")
assert_eq "path 2's endpoint id" 2 "$id2"
assert_eq "retransmits_total{loc_id=2}" "$r2" \
	"$(metric "sysobs_mptcp_subflow_retransmits_total{netns=\"$INO\",loc_id=\"2\"}")"
assert_eq "retransmits_total{loc_id=0}" "$r1" \
	"$(metric "sysobs_mptcp_subflow_retransmits_total{netns=\"$INO\",loc_id=\"0\"}")"
# The series of what has not happened yet exists at 0 (the client received
# nothing but the server's acks).
assert_eq "received_bytes_total{loc_id=2}" "$(jq -r --arg a "$MP_A2" '.data[].subflows[] | select(.saddr == $a) | .tcp.bytes_received' "$T/live")" \
	"$(metric "sysobs_mptcp_subflow_received_bytes_total{netns=\"$INO\",loc_id=\"2\"}")"
for a in "$MP_A1:0" "$MP_A2:2"; do
	assert_eq "acked_bytes_total{loc_id=${a#*:}}" "$(col "${a%%:*}" 5 <<<"$theirs")" \
		"$(metric "sysobs_mptcp_subflow_acked_bytes_total{netns=\"$INO\",loc_id=\"${a#*:}\"}")"
done
n=$(metric "sysobs_mptcp_subflow_srtt_seconds_count{netns=\"$INO\",loc_id=\"2\"}")
assert_ge "srtt histogram samples of path 2" 3 "${n%.*}"

# The connection's mptcp_info equal to ss -M (from the reconciliation; the
# data level can still move a moment after the subflows settle).
hexu() { printf %u "$((16#$(grep -o "$1:[0-9a-f]*" <<<"$ssm" | cut -d: -f2)))"; }
info_equal() {
	ssm=$(ip netns exec "$NS_A" ss -MinHO "( dport = :$MP_PORT )")
	api GET /api/v1/mptcp/connections >"$T/live"
	info=$(jq -c --argjson t "$TOKEN" '.data[] | select(.token == $t) | .info' "$T/live")
	[ "$(grep -o ' subflows:[0-9]*' <<<"$ssm" | cut -d: -f2)" = "$(jq -r .subflows <<<"$info")" ] &&
		[ "$(hexu write_seq)" = "$(jq -r .write_seq <<<"$info")" ] &&
		[ "$(hexu snd_una)" = "$(jq -r .snd_una <<<"$info")" ] &&
		[ "$(hexu rcv_nxt)" = "$(jq -r .rcv_nxt <<<"$info")" ]
}
wait_for 5 info_equal || fail "mptcp_info not equal to ss -M: ss '$ssm', sysobs $info"
if [ "$(jq -r '.subflows_total // empty' <<<"$info")" != "" ]; then
	assert_eq "info.subflows_total (6.8+)" 2 "$(jq -r .subflows_total <<<"$info")"
fi

# ---- 3. history: rows of both subflows, the newest (written every 2 s)
# equal to the idle figures
rows_ok() {
	local a row
	api GET "/api/v1/mptcp/subflows?token=$TOKEN_HEX&limit=100" >"$T/rows"
	for a in "$MP_A1" "$MP_A2"; do
		row=$(jq -c --arg a "$a" '[.data[] | select(.saddr == $a)][0]' "$T/rows")
		[ "$(jq -r .bytes_acked <<<"$row")" = "$(col "$a" 5 <<<"$theirs")" ] || return 1
		[ "$(jq -r .total_retrans <<<"$row")" = "$(col "$a" 7 <<<"$theirs")" ] || return 1
		[ "$(jq -r .snd_cwnd <<<"$row")" = "$(col "$a" 4 <<<"$theirs")" ] || return 1
	done
}
wait_for 5 rows_ok || fail "history rows of both subflows not equal to ss $theirs: $(cat "$T/rows")"
api GET "/api/v1/mptcp/subflows?loc_id=2&limit=1" >"$T/rows"
assert_eq "history filter loc_id" 2 "$(jq -r '.data[0].loc_id' "$T/rows")"

# ---- 4. the CLI's tree and bad input ----------------------------------------
# The lossy path can still retransmit late (RTO backoff) after the idle
# check above matched: the tree is compared with the API read just before it.
cli_tree_ok() {
	api GET /api/v1/mptcp/connections >"$T/live"
	ours=$(api_subflows <"$T/live")
	cli=$("$SYSOBS_BUILD/api/cli/sysobs" --server "http://127.0.0.1:$PORT" mptcp 2>&1) ||
		fail "sysobs mptcp: $cli"
	grep -q "rtt $(col "$MP_A2" 2 <<<"$ours")ms/$(col "$MP_A2" 3 <<<"$ours")ms cwnd $(col "$MP_A2" 4 <<<"$ours") " <<<"$cli"
}
wait_for 10 cli_tree_ok || fail "CLI tree without path 2's rtt/cwnd ($ours): $cli"
hist=$("$SYSOBS_BUILD/api/cli/sysobs" --server "http://127.0.0.1:$PORT" mptcp subflows \
	token="$TOKEN_HEX" loc_id=2 2>&1) || fail "sysobs mptcp subflows: $hist"
grep -q "$MP_A2" <<<"$hist" || fail "CLI history without path 2's rows: $hist"
api GET "/api/v1/mptcp/connections?refresh=yes" >/dev/null
assert_eq "refresh=yes refused" 400 "$HTTP_CODE"

echo 'x' >&4
pass "subflow RTT, cwnd, bytes and retransmits equal to ss; metrics, history, CLI"
