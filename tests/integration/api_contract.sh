#!/usr/bin/env bash
# integration.api_contract: the HTTP API contract (DESIGN.md, "The API
# contract") on the real daemon with real data, checked by an independent
# decoder: protoc's Python code for api/proto/sysobs.proto and Google's
# protobuf runtime (tests/tools/api_contract.py says what it checks).
#
# The agent runs inside a network namespace of the test's own, where all
# traffic stays: UDP to a closed port and SYNs to a closed TCP port (drops),
# an MPTCP connection over loopback (mptcp events, live state), and the
# HTTP requests themselves. Self samples come by themselves; IFS scans come
# from the FUSE fake of the driver (tests/fakes/ifs_fake) when it can run.
# cachefiles has no data on a host kernel: its route is checked empty.
#
# Own temp namespace: the IFS fake is a FUSE mount inside $T, which a blanket
# cleanup of ${TMPDIR:-/tmp}/sysobs-it.* elsewhere must not walk into.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-api-it"
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd nsenter
need_cmd curl
need_cmd jq
need_cmd protoc
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import google.protobuf.json_format' 2>/dev/null; then
		PY=$(command -v "$p")
		break
	fi
done
[ -n "$PY" ] || skip "needs python3 with google.protobuf (Debian python3-protobuf)"
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux): no drops to check"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
TIME0=$SECONDS

# The independent decoder: Python code generated from the schema.
mkdir -p "$T/pb"
protoc --python_out="$T/pb" -I"$SYSOBS_SRC/api/proto" -I/usr/include \
	"$SYSOBS_SRC/api/proto/sysobs.proto" || fail "protoc --python_out failed"
[ -f "$T/pb/sysobs_pb2.py" ] || fail "protoc wrote no sysobs_pb2.py"

NS=sysobs-api-$$
netns_new "$NS" || skip "cannot create a network namespace"
nsrun() { ip netns exec "$NS" "$@"; }
API_NETNS=$NS

# ---- IFS: the fake driver, if FUSE and the fake are here ----
IFS_NOTE=
FAKE=$SYSOBS_BUILD/tests/fakes/ifs_fake
if [ ! -c /dev/fuse ]; then
	IFS_NOTE="no /dev/fuse"
elif ! command -v fusermount3 >/dev/null; then
	IFS_NOTE="no fusermount3"
elif [ ! -x "$FAKE" ]; then
	IFS_NOTE="ifs_fake not built (libfuse3-dev missing at build time)"
else
	# 2 cores x 2 threads; core 1 fails the scan test
	ifs_fake_start cpus=4 threads_per_core=2 scan_ms=30 devices=0,1 device.0.batches=1 \
		device.0.core.1=fail,pass device.1.default=pass
fi

{
	printf '[agent]\nuser = root\n'
	[ -n "$IFS_NOTE" ] || printf 'sysfs_root = %s\n' "$T/mnt"
	cat <<INI
[http]
listen = 127.0.0.1:0
admin = true
[storage]
path = $T/sysobs.db
batch_ms = 50
[collector.self]
interval = 200ms
[collector.drops]
interval = 200ms
sample_rate = 10000
sample_burst = 1000
[collector.mptcp]
netns = self
INI
	[ -n "$IFS_NOTE" ] || cat <<INI
[collector.ifs]
schedule = true
interval = 2s
poll = 100ms
retry_backoff = 100ms
INI
} >"$T/sysobsd.ini"
start_agent

running() { [ "$(collector_state "$1")" = RUNNING ]; }
if ! wait_for 10 running drops; then
	drops=$(api GET /api/v1/collectors | jq -c '.data[] | select(.name == "drops")')
	[ "$(jq -r .state <<<"$drops")" != UNAVAILABLE ] || skip "no drops to check here: $drops"
	fail "drops collector not RUNNING: $drops"
fi
RUNNING_LIST=self,drops
ROWS=/api/v1/self/samples,/api/v1/drops/samples
EVENTS=self,drops
if [ -z "$IFS_NOTE" ]; then
	if running ifs; then
		RUNNING_LIST+=,ifs ROWS+=,/api/v1/ifs/scans EVENTS+=,ifs
	else
		IFS_NOTE="ifs not RUNNING on the fake: $(api GET /api/v1/collectors | jq -c '.data[] | select(.name == "ifs")')"
	fi
fi
[ -z "$IFS_NOTE" ] || echo "NOTE: ifs_scans not filled: $IFS_NOTE (its routes are checked empty)"

# ---- drops: UDP (IPv4, IPv6) to a closed port, SYNs to a closed TCP port ----
out=$(nsrun "$GEN" udp -d 127.0.0.1 -p 9 -n 50 -s 40101) || fail "udp sender: $out"
out=$(nsrun "$GEN" udp -d ::1 -p 9 -n 20 -s 40102) || fail "udp6 sender: $out"
out=$(nsrun "$GEN" tcp -d 127.0.0.1 -p 81 -n 5) || fail "tcp sender: $out"

# ---- mptcp: one connection over loopback in the namespace, held open ----
MPTCP_NOTE=
PEER=$SYSOBS_BUILD/tests/mptcp_peer
if [ ! -x "$PEER" ]; then
	MPTCP_NOTE="mptcp_peer not built"
elif ! running mptcp; then
	MPTCP_NOTE="mptcp collector not RUNNING: $(collector_reason mptcp)"
elif [ "$(nsrun sysctl -n net.mptcp.enabled 2>/dev/null)" != 1 ]; then
	MPTCP_NOTE="net.mptcp.enabled is not 1"
else
	# ip netns exec execs the command: $! is the peer's timeout, which
	# passes a SIGTERM on
	ip netns exec "$NS" timeout 100 "$PEER" server 127.0.0.1 7100 >"$T/server.txt" 2>&1 &
	SRV=$!
	on_exit "kill $SRV 2>/dev/null"
	wait_for 5 grep -q listening "$T/server.txt" || MPTCP_NOTE="mptcp server did not listen: $(cat "$T/server.txt")"
fi
if [ -z "$MPTCP_NOTE" ]; then
	# one connection opened and closed, one held for the live state
	echo | nsrun timeout 20 "$PEER" client 127.0.0.1 7100 -s 1 >"$T/client1.txt" 2>&1 ||
		fail "mptcp client: $(cat "$T/client1.txt")"
	mkfifo "$T/ctl"
	ip netns exec "$NS" timeout 100 "$PEER" client 127.0.0.1 7100 -s 1 <"$T/ctl" >"$T/client2.txt" 2>&1 &
	CLI=$!
	on_exit "kill $CLI 2>/dev/null"
	exec 4>"$T/ctl"
	on_exit "exec 4>&-"
	wait_for 10 grep -q '^token=' "$T/client2.txt" || fail "mptcp client did not connect: $(cat "$T/client2.txt")"
	RUNNING_LIST+=,mptcp ROWS+=,/api/v1/mptcp/events EVENTS+=,mptcp
else
	echo "NOTE: mptcp_events not filled: $MPTCP_NOTE (its routes are checked empty)"
fi

# ---- wait until every table the test filled has rows ----
n_rows() { api GET "$1" | jq '.data | length'; }
has_rows() { [ "$(n_rows "$1")" -ge "$2" ]; }
wait_for 10 has_rows "/api/v1/drops/samples?netns=$NSINUM&port=40101" 1 || fail "no drop sample of sport 40101"
wait_for 10 has_rows "/api/v1/drops/samples?netns=$NSINUM&port=40102" 1 || fail "no drop sample of sport 40102"
wait_for 10 has_rows "/api/v1/drops/samples?netns=$NSINUM&port=81" 1 || fail "no drop sample of port 81"
wait_for 10 has_rows /api/v1/self/samples 5 || fail "fewer than 5 self samples"
if [[ $ROWS == *ifs* ]]; then
	wait_for 20 has_rows '/api/v1/ifs/scans?result=fail' 1 || fail "no failed IFS scan from the fake"
fi
if [[ $ROWS == *mptcp* ]]; then
	wait_for 10 has_rows '/api/v1/mptcp/events?type=CLOSED' 1 || fail "no mptcp CLOSED event"
	wait_for 10 has_rows '/api/v1/mptcp/events?type=ESTABLISHED' 2 || fail "no 2 mptcp ESTABLISHED events"
fi
pass "data in place after $((SECONDS - TIME0)) s: tables filled: $ROWS"

# The kernel's drop reason names, for "the 400 lists the allowed values".
REASONS=
if command -v bpftool >/dev/null; then
	bpftool btf dump file /sys/kernel/btf/vmlinux format c 2>/dev/null |
		awk '/^enum skb_drop_reason \{/ { f = 1; next } f && /^\};/ { exit } f' |
		sed -n 's/^[[:space:]]*SKB_DROP_REASON_\([A-Z0-9_]*\).*/\1/p' |
		grep -Ev '^(MAX|SUBSYS_MASK)$' >"$T/reasons.txt"
	[ -s "$T/reasons.txt" ] && REASONS=$T/reasons.txt
fi
[ -n "$REASONS" ] || echo "NOTE: bpftool or enum skb_drop_reason unavailable: the reason list is checked for consistency only"

# Rows up to END stay put while each route is fetched in both encodings.
sleep 1
END=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
sleep 0.5
args=(--url "http://127.0.0.1:$PORT" --pb-dir "$T/pb" --end "$END"
	--running "$RUNNING_LIST" --expect-rows "$ROWS" --expect-events "$EVENTS"
	--drops-netns "$NSINUM" --drops-ports 40101,40102 --drops-tcp
	${REASONS:+--drop-reasons "$REASONS"})
[[ $RUNNING_LIST == *ifs* ]] && args+=(--ifs-post)
rc=0
in_api_netns timeout 90 "$PY" "$SYSOBS_SRC/tests/tools/api_contract.py" "${args[@]}" || rc=$?
[ "$rc" = 0 ] || fail "the API breaks its contract (api_contract.py exit $rc, FAIL lines above)"

if [ -n "${CLI:-}" ]; then
	echo >&4
	wait "$CLI" || true
fi
stop_agent
pass "API contract holds on every route in both encodings ($((SECONDS - TIME0)) s)"
