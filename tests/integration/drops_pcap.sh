#!/usr/bin/env bash
# drops collector: sampled drops as a pcapng file that tshark (Wireshark's
# decoder, not ours) reads. In a namespace of its own (lo at MTU 1280, a
# tun device, nft dropping ICMP echo requests and non-first IPv4 fragments
# before reassembly), the test makes known drops and requires, from
# GET /api/v1/drops/samples with Accept: application/x-pcapng and from
# `sysobs drops pcap`:
#   - UDP to a closed port, IPv4 and IPv6 (NO_SOCKET): the 5-tuple, frame
#     length = 20 (Linux cooked v2) + the IP datagram, captured length =
#     the headers only (no byte of the 100-byte payload in the file);
#   - TCP SYN to a closed port (NO_SOCKET): ports, SYN flag, its options;
#   - ICMP and ICMPv6 echo requests (NETFILTER_DROP): type 8 / 128;
#   - two non-first fragments of a 3000-byte datagram (NETFILTER_DROP): the
#     fragment offset, addresses, the IP header only;
#   - a datagram routed to a tun device without carrier (no L2 header):
#     on that interface, decoded from its IP header;
#   - a UDP datagram inside a VXLAN from a second namespace: the inner
#     packet on the vxlan device, with its inner Ethernet source;
#   - an interface block per (netns, ifindex) named after the device, the
#     namespace in its description; timestamps within the test's window;
#     a comment with reason, location and netns on every packet;
#   - `sysobs drops pcap` writes the same file; with --follow, one stream
#     holding each packet and interface once across its polls;
# then, with capture_bytes = 100 and capture_payload = true, one UDP
# datagram cut at 100 bytes from its MAC header (caplen 20 + 86 < frame).
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd jq
need_cmd nft
need_cmd tshark
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
CLI=${SYSOBS_BUILD:?}/api/cli/sysobs
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
[ -x "$CLI" ] || fail "CLI $CLI not built"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"

NS=sysobs-dpcap-$$
netns_new "$NS" || skip "cannot create a network namespace"
ip -n "$NS" link set lo mtu 1280
# no IPv6 on the devices made below: their neighbour and listener
# solicitations would be drops of their own
ip netns exec "$NS" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
ip -n "$NS" addr add 10.77.0.1/24 dev lo 2>/dev/null
ip -n "$NS" tuntap add dev dpcaptun0 mode tun || skip "cannot create a tun device"
ip -n "$NS" addr add 10.78.0.1/24 dev dpcaptun0
ip -n "$NS" link set dpcaptun0 up
ip netns exec "$NS" sysctl -qw net.ipv4.ping_group_range="0 0"
# a VXLAN from a second namespace: the inner packet is the one dropped
NS2=sysobs-dpcap2-$$
ns1=$NSINUM
netns_new "$NS2" || skip "cannot create a second network namespace"
NSINUM=$ns1 # the namespace of the drops
ip netns exec "$NS2" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
ip -n "$NS" link add dpcapv0 type veth peer name dpcapv1 netns "$NS2" || skip "no veth"
ip -n "$NS" addr add 10.79.0.1/24 dev dpcapv0
ip -n "$NS2" addr add 10.79.0.2/24 dev dpcapv1
ip -n "$NS" link set dpcapv0 up
ip -n "$NS2" link set dpcapv1 up
ip -n "$NS" link add dpcapvx0 type vxlan id 42 local 10.79.0.1 remote 10.79.0.2 dstport 4789 \
	dev dpcapv0 || skip "no vxlan"
ip -n "$NS2" link add dpcapvx1 type vxlan id 42 local 10.79.0.2 remote 10.79.0.1 dstport 4789 \
	dev dpcapv1
ip -n "$NS" addr add 10.80.0.1/24 dev dpcapvx0
ip -n "$NS2" addr add 10.80.0.2/24 dev dpcapvx1
ip -n "$NS" link set dpcapvx0 up
ip -n "$NS2" link set dpcapvx1 up
ip netns exec "$NS" nft -f - <<'NFT' || fail "nft rules"
table inet dpcap {
	chain pre {
		type filter hook prerouting priority -400;
		ip frag-off & 0x1fff != 0 drop
		icmp type echo-request drop
		icmpv6 type echo-request drop
	}
}
NFT

agent_with() {
	write_base_config
	cat >>"$T/sysobsd.ini" <<INI
[collector.self]
enabled = false
[collector.drops]
interval = 200ms
sample_rate = 100000
sample_burst = 10000
$*
INI
	start_agent
	wait_collector drops
}

# tsv FILE FIELDS...: one line per frame, tab-separated, through tshark
tsv() {
	local f=$1 args=()
	shift
	for x in "$@"; do args+=(-e "$x"); done
	tshark -r "$f" -T fields -E occurrence=f "${args[@]}" 2>/dev/null
}

pcap_get() { # pcap_get OUT QUERY
	in_api_netns curl -sS --max-time 10 -o "$1" -w '%{http_code} %{content_type}' \
		-H 'Accept: application/x-pcapng' "http://127.0.0.1:$PORT/api/v1/drops/samples?$2"
}

agent_with ""
t0=$(date +%s)
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 40001 -s 41001 -n 1 -l 100 >/dev/null ||
	fail "udp v4"
ip netns exec "$NS" "$GEN" udp -d ::1 -p 40002 -s 41002 -n 1 -l 100 >/dev/null || fail "udp v6"
ip netns exec "$NS" bash -c 'exec 3<>/dev/tcp/127.0.0.1/40003' 2>/dev/null
ip netns exec "$NS" "$GEN" pingq -d 127.0.0.1 -n 1 >/dev/null || fail "icmp echo"
ip netns exec "$NS" "$GEN" pingq -d ::1 -n 1 >/dev/null || fail "icmpv6 echo"
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 40004 -s 41004 -n 1 -l 3000 >/dev/null ||
	fail "fragmented udp"
ip netns exec "$NS" "$GEN" udp -d 10.78.0.2 -p 40005 -s 41005 -n 1 -l 10 >/dev/null ||
	fail "udp to the tun"
ip netns exec "$NS2" "$GEN" udp -d 10.80.0.1 -p 40008 -s 41008 -n 1 -l 10 >/dev/null ||
	fail "udp over the vxlan"
want=9 # udp4 udp6 tcp icmp icmp6 2 fragments tun vxlan
have_all() {
	[ "$(api GET "/api/v1/drops/samples?netns=$NSINUM&limit=50" | jq '.data | length')" -ge $want ] &&
		[ "$(api GET "/api/v1/drops/samples?port=40008" | jq '.data | length')" -ge 1 ]
}
wait_for 10 have_all || fail "fewer than $want samples in $NS: $(api GET "/api/v1/drops/samples?netns=$NSINUM&limit=50" | jq -c '[.data[] | [.reason, .protocol, .dport, .ifname]]')"
t1=$(($(date +%s) + 1))

P=$T/drops.pcapng
out=$(pcap_get "$P" "netns=$NSINUM&limit=50")
assert_eq "status and type" "200 application/x-pcapng" "$out"
json=$(api GET "/api/v1/drops/samples?netns=$NSINUM&limit=50")
n_json=$(jq '.data | length' <<<"$json")
assert_eq "frames in the pcapng (tshark) = rows in JSON" "$n_json" "$(tsv "$P" frame.number | wc -l)"
echo "tshark -r drops.pcapng:"
tshark -r "$P" 2>/dev/null | sed 's/^/  /'

# fields FILTER FIELD...: the fields of the frames a display filter keeps
fields() {
	local filter=$1 args=()
	shift
	for x in "$@"; do args+=(-e "$x"); done
	tshark -r "$P" -Y "$filter" -T fields -E occurrence=f -E separator=' ' "${args[@]}" 2>/dev/null
}

# UDP v4 and v6, 100 bytes of payload: headers only (20 + 20 + 8, 20 + 40 + 8)
assert_eq "udp4 to a closed port" "127.0.0.1 127.0.0.1 41001 40001 148 48 1" \
	"$(fields 'udp.dstport == 40001' ip.src ip.dst udp.srcport udp.dstport frame.len frame.cap_len sll.ifindex)"
assert_eq "udp6 to a closed port" "::1 ::1 41002 40002 168 68" \
	"$(fields 'udp.dstport == 40002' ipv6.src ipv6.dst udp.srcport udp.dstport frame.len frame.cap_len)"
[ "$(grep -c xxxxxxxx "$P")" = 0 ] || fail "payload bytes in the default capture"
# TCP SYN: its options are header, kept whole
assert_eq "tcp SYN to a closed port" "127.0.0.1 40003 1 1" \
	"$(fields 'tcp.dstport == 40003' ip.dst tcp.dstport tcp.flags.syn tcp.options.mss_val | awk '{print $1, $2, $3, ($4 > 0)}')"
tcp_len=$(fields 'tcp.dstport == 40003' frame.len frame.cap_len)
assert_eq "tcp SYN captured whole (no payload)" "${tcp_len% *}" "${tcp_len#* }"
assert_eq "icmp echo request" "127.0.0.1 8 28" \
	"$(fields 'icmp.type == 8' ip.dst icmp.type frame.cap_len | awk '{print $1, $2, $3 - 20 + 0}')"
assert_eq "icmpv6 echo request" "::1 128" "$(fields 'icmpv6.type == 128' ipv6.dst icmpv6.type)"
# non-first fragments: the IP header only
frags=$(fields 'ip.frag_offset > 0' ip.src ip.dst ip.proto frame.cap_len | sort -u)
assert_eq "non-first fragments (one line: same header shape)" "127.0.0.1 127.0.0.1 17 40" "$frags"
assert_eq "non-first fragments counted" 2 "$(fields 'ip.frag_offset > 0' frame.number | wc -l)"
# the tun: no L2 header; its interface block names it
assert_eq "udp to the tun (no L2)" "10.78.0.1 10.78.0.2 40005 dpcaptun0" \
	"$(fields 'udp.dstport == 40005' ip.src ip.dst udp.dstport frame.interface_name)"
assert_eq "tun frame without a link-layer address" "0" \
	"$(fields 'udp.dstport == 40005' sll.halen)"

# the VXLAN: the inner packet, on the vxlan device, its inner Ethernet source
assert_eq "udp inside the vxlan" "10.80.0.2 10.80.0.1 41008 40008 dpcapvx0 6" \
	"$(fields 'udp.dstport == 40008' ip.src ip.dst udp.srcport udp.dstport frame.interface_name sll.halen)"
assert_eq "the vxlan frame's source MAC (the peer's vxlan device)" \
	"$(ip -n "$NS2" -j link show dpcapvx1 | jq -r '.[0].address')" \
	"$(fields 'udp.dstport == 40008' sll.src.eth)"

# interface blocks: one per (netns, ifindex), named, the namespace described
ifs=$(tshark -r "$P" -T fields -e frame.interface_id -e frame.interface_name \
	-e frame.interface_description 2>/dev/null | sort -u)
echo "interfaces:"
echo "$ifs" | sed 's/^/  /'
assert_eq "interfaces" 3 "$(wc -l <<<"$ifs")"
grep -q "lo	ifindex 1 in netns $NSINUM ($NS)" <<<"$ifs" || fail "lo's interface block: $ifs"
# timestamps: within the test's window, equal to the JSON's
bad=$(tsv "$P" frame.time_epoch | awk -v a="$t0" -v b="$t1" '$1 < a || $1 > b' | wc -l)
assert_eq "timestamps outside [$t0, $t1]" 0 "$bad"
first_json=$(jq -r '.data[-1].time' <<<"$json")
first_pcap=$(tshark -r "$P" -c 1 -T fields -e frame.time_epoch -t ud 2>/dev/null)
assert_eq "oldest sample's time (JSON vs pcapng)" \
	"$(date -u -d "$first_json" +%s.%N | cut -c1-20)" "$(printf '%s' "$first_pcap" | cut -c1-20)"
# comments: reason, location, netns on every frame
assert_eq "frames with reason, location and netns in their comment" "$n_json" \
	"$(tsv "$P" frame.comment | grep -cE "reason=[A-Z_]+ location=[a-z_0-9]+\+0x[0-9a-f]+ netns=$NSINUM")"
assert_eq "udp4 comment" 1 \
	"$(fields 'udp.dstport == 40001' frame.comment | grep -c 'reason=NO_SOCKET location=__udp4_lib_rcv')"
assert_eq "icmp comment" 1 \
	"$(fields 'icmp.type == 8' frame.comment | grep -c 'reason=NETFILTER_DROP location=nft_do_chain')"

# the CLI writes the same file
"$CLI" --server "http://127.0.0.1:$PORT" drops pcap "netns=$NSINUM" --limit 50 >"$T/cli.pcapng" ||
	fail "sysobs drops pcap"
cmp -s "$P" "$T/cli.pcapng" || fail "sysobs drops pcap differs from the API's pcapng"
out=$("$CLI" --server "http://127.0.0.1:$PORT" drops pcap reason=NOPE 2>&1 >/dev/null)
[ $? = 1 ] && grep -q "reason" <<<"$out" || fail "a bad filter: '$out'"
# --follow: one stream out of successive pages, each packet and interface once
"$CLI" --server "http://127.0.0.1:$PORT" drops pcap --follow "netns=$NSINUM" >"$T/follow.pcapng" &
fpid=$!
sleep 1.5
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 40007 -s 41007 -n 3 >/dev/null || fail "udp"
sleep 2.5
kill -INT $fpid
wait $fpid || fail "sysobs drops pcap --follow exited with $?"
n_follow=$(tshark -r "$T/follow.pcapng" -T fields -e frame.comment 2>/dev/null | sed 's/ .*//' | sort -u | wc -l)
assert_eq "--follow: distinct packets ($n_json before it started, 3 during)" $((n_json + 3)) "$n_follow"
assert_eq "--follow: frames" $((n_json + 3)) "$(tsv "$T/follow.pcapng" frame.number | wc -l)"
assert_eq "--follow: interfaces" 3 "$(tshark -r "$T/follow.pcapng" -T fields -e frame.interface_name 2>/dev/null | sort -u | wc -l)"
assert_eq "--follow: the 3 new ones" 3 "$(tshark -r "$T/follow.pcapng" -Y 'udp.dstport == 40007' -T fields -e frame.number 2>/dev/null | wc -l)"
# pcapng only when asked by name: */* still gets JSON
ct=$(in_api_netns curl -sS -o /dev/null -w '%{content_type}' -H 'Accept: */*' \
	"http://127.0.0.1:$PORT/api/v1/drops/samples?limit=1")
assert_eq "Accept: */*" "application/json" "$ct"
stop_agent

# capture_bytes cuts the copy: 100 bytes from the MAC header, payload allowed
rm -f "$T/sysobs.db"
agent_with "capture_bytes = 100
capture_payload = true"
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 40006 -s 41006 -n 1 -l 100 >/dev/null || fail "udp"
have_one() { [ "$(api GET "/api/v1/drops/samples?netns=$NSINUM&port=40006" | jq '.data | length')" -ge 1 ]; }
wait_for 10 have_one || fail "no sample of the cut datagram"
out=$(pcap_get "$P" "netns=$NSINUM&port=40006")
assert_eq "udp cut at capture_bytes: frame, captured" "148 106 41006" \
	"$(fields 'udp.dstport == 40006' frame.len frame.cap_len udp.srcport)"
[ "$(grep -c xxxxxxxx "$P")" -ge 1 ] || fail "capture_payload: no payload bytes"
stop_agent
pass "tshark decodes the agent's pcapng: udp4/udp6/tcp/icmp/icmpv6/fragments/tun/vxlan with 5-tuple," \
	"lengths, timestamps, interface blocks and comments; headers only by default;" \
	"capture_bytes cuts at 100 bytes; the CLI writes the same file"
