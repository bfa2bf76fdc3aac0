#!/usr/bin/env bash
# drops collector, record and replay ([collector.drops] record / replay):
#
#  1. a round trip on this kernel: tests/golden/drops/record.sh records
#     drops made in a namespace of its own (UDP and TCP to closed ports,
#     IPv4 protocol 253) with the real sysobsd, replays the file with
#     another, and checks the replay's sysobs_packet_drops_total for that
#     namespace against bpftrace's count on skb:kfree_skb, reason by reason;
#  2. the recording is untrusted input: a truncated one, one of another
#     format, a record of an unknown map, one with an absurd length each
#     stop the agent with exit status 2 and a message naming the file's
#     key and what is wrong where; the file is left as it was;
#  3. the keys that cannot go together: record with replay, replay with
#     container_label or pod_label; a record file that cannot be made, and
#     one that exists with something in it (never written over: left as is);
#  4. record_max_size: the recording stops (logged) at the end of the collect
#     after which one more like it would pass the size, the collector goes
#     on, and what the file holds replays.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd bpftrace
need_cmd jq
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"

# 1. the round trip (its own agents, bpftrace and namespace)
DROPS_REC_OUT=$T/rt.rec bash "$SYSOBS_SRC/tests/golden/drops/record.sh" >"$T/rt.log" 2>&1 ||
	fail "record and replay round trip: $(tail -5 "$T/rt.log")"
grep -q '^NO_SOCKET: bpftrace 20, replay 20$' "$T/rt.log" ||
	fail "the round trip did not compare NO_SOCKET: $(cat "$T/rt.log")"
grep -q '^IP_NOPROTO: bpftrace 4, replay 4$' "$T/rt.log" ||
	fail "the round trip did not compare IP_NOPROTO: $(cat "$T/rt.log")"

# refused CONFIG_KEYS... MESSAGE: sysobsd exits 2 and says MESSAGE
refused_cfg() {
	local msg=${*: -1} rc
	write_base_config collector.self.enabled=false "${@:1:$#-1}"
	timeout 30 "$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port" >"$T/refused.log" 2>&1
	rc=$?
	assert_eq "exit status for $msg" 2 "$rc"
	grep -qF "$msg" "$T/refused.log" || fail "no '$msg' in: $(cat "$T/refused.log")"
}

# 2. bad recordings
REC=$SYSOBS_SRC/tests/data/golden/drops/drops.rec
head -c 5000 "$REC" >"$T/trunc.rec"
sum=$(sha256sum <"$T/trunc.rec")
refused_cfg "collector.drops.replay=$T/trunc.rec" "replay = '$T/trunc.rec': truncated record at offset"
assert_eq "the truncated file is left as it was" "$sum" "$(sha256sum <"$T/trunc.rec")"
printf 'SYSOBSDR\002\000\000\000\002\000\000\000' >"$T/v2.rec"
refused_cfg "collector.drops.replay=$T/v2.rec" "recording version 2 (this sysobsd reads 1)"
printf 'PCAPNGXX\001\000\000\000\002\000\000\000' >"$T/other.rec"
refused_cfg "collector.drops.replay=$T/other.rec" 'not a drops recording (no "SYSOBSDR" header)'
# a MAP record of map 9, then one declaring 4 GiB
{ printf 'SYSOBSDR\001\000\000\000\002\000\000\000'
  printf '\003\000\000\000\010\000\000\000\011\000\000\000\004\000\000\000'; } >"$T/map.rec"
refused_cfg "collector.drops.replay=$T/map.rec" "record at offset 16: unknown map 9"
{ printf 'SYSOBSDR\001\000\000\000\002\000\000\000'
  printf '\002\000\000\000\377\377\377\377'; } >"$T/huge.rec"
refused_cfg "collector.drops.replay=$T/huge.rec" "record at offset 16: 4294967295 bytes (at most 1048576)"
refused_cfg "collector.drops.replay=$T/none.rec" "cannot read: No such file or directory"

# 3. keys that do not go together, a file that cannot be made
refused_cfg "collector.drops.replay=$REC" "collector.drops.record=$T/x.rec" \
	"set record or replay, not both"
refused_cfg "collector.drops.replay=$REC" collector.drops.container_label=true \
	"a replay has neither"
refused_cfg "collector.drops.record=$T/no/such/dir/x.rec" "cannot create it: No such file or directory"
cp "$REC" "$T/kept.rec"
refused_cfg "collector.drops.record=$T/kept.rec" "cannot create it: File exists (a recording never writes over"
cmp -s "$REC" "$T/kept.rec" || fail "the existing file named by record was changed"

# 4. record_max_size: the recording stops before it would pass the size (by
# the last collect's), the agent goes on, and the file replays.
write_base_config collector.self.enabled=false collector.mptcp.enabled=false \
	collector.drops.interval=100ms collector.drops.record="$T/cap.rec" \
	collector.drops.record_max_size=64k
start_agent
wait_collector drops
# drops of its own (each sample about 1 KB with its stack) fill it in a
# few collects, however quiet the host
capped() {
	grep -q "recording to $T/cap.rec stopped at" "$T/agent.log" && return 0
	"$SYSOBS_BUILD/tests/drops_gen" udp -d 127.0.0.1 -p 9 -n 20 >/dev/null 2>&1
	return 1
}
wait_for 30 capped || fail "the recording did not stop at 64k: $(stat -c %s "$T/cap.rec") bytes"
cap_size=$(stat -c %s "$T/cap.rec")
[ "$cap_size" -le 65536 ] || fail "the recording is $cap_size bytes, over record_max_size 64k"
sleep 0.5 # 5 collects more
assert_eq "the recording's size after it stopped" "$cap_size" "$(stat -c %s "$T/cap.rec")"
assert_eq "drops after the recording stopped" RUNNING "$(collector_state drops)"
stop_agent
write_base_config collector.self.enabled=false collector.mptcp.enabled=false \
	storage.path="$T/cap.db" collector.drops.replay="$T/cap.rec"
start_agent
wait_collector drops
stop_agent
pass "record and replay: bpftrace's counts come back from the replay; 6 bad recordings and 4 bad configs refused with their reason; record_max_size 64k stopped the recording at $cap_size bytes, which replays"
