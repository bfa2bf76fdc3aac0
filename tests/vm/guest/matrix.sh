#!/bin/sh
# Guest side of integration.vm_matrix (runs as /tests/matrix.sh under
# tests/vm/init). On whatever kernel booted:
#  1. a drop-reason check of its own: the kernel's kfree_skb format names the
#     numeric value of NO_SOCKET; sysobsd counts UDP datagrams to a closed
#     port under the name NO_SOCKET, exactly;
#  2. the project's integration tests named in $TESTS (tests/integration/
#     NAME.sh, run with bash as on the host), each reported as
#     VM-TEST NAME <exit status>.
# /etc/vm-test.conf sets TESTS and N_UDP.
set -u
. /etc/vm-test.conf

. /tests/lib.sh

# The numeric value this kernel gives NO_SOCKET and PKT_TOO_SMALL (from the
# tracepoint's print fmt: { 2, "NO_SOCKET" }).
fmt=/sys/kernel/tracing/events/skb/kfree_skb/format
for r in NO_SOCKET PKT_TOO_SMALL; do
	v=$(tr ',' '\n' <"$fmt" | grep -B1 "\"$r\"" | head -n1 | tr -dc '0-9')
	say "reason_value $r=$v"
done

cat >/etc/sysobsd.ini <<EOF
[http]
listen = 127.0.0.1:9559
[storage]
path = /tmp/sysobs.db
batch_ms = 50
[collector.drops]
interval = 200ms
EOF
sysobsd --config /etc/sysobsd.ini --port-file /run/sysobsd.port >/tmp/sysobsd.log 2>&1 &
agent=$!
i=0
while [ ! -s /run/sysobsd.port ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
curl -sS --max-time 10 -o /tmp/collectors.json http://127.0.0.1:9559/api/v1/collectors
section collectors /tmp/collectors.json
drops_gen udp -d 127.0.0.1 -p 9 -n "$N_UDP" -s 40001 | sed 's/^/VM: drops_gen /'
# The counters reach /metrics at the next collect (interval 200 ms), which
# TCG on a busy host can delay by seconds: poll until the UDP drops under any
# name add up to N (or 30 s pass), then read once more after two intervals so
# that a count going past N is seen too. The host checks the names.
udp_drops() {
	curl -sS --max-time 10 -o /tmp/metrics.txt http://127.0.0.1:9559/metrics
	awk '/^sysobs_packet_drops_total\{/ && /protocol="udp"/ { s += $NF } END { print s + 0 }' \
		/tmp/metrics.txt
}
poll_ge "$N_UDP" udp_drops
sleep 0.5
say "udp drops seen after $POLL_MS ms: $(udp_drops)"
grep '^sysobs_packet_drops_total' /tmp/metrics.txt >/tmp/drops.txt
section drops_metrics /tmp/drops.txt
kill -TERM $agent
wait $agent
say "agent exit $?"
section agent_log /tmp/sysobsd.log

# The project's own integration tests, as on the host.
# SYSOBS_VM=1 tells a script it runs under emulation (slow, no real NICs).
export SYSOBSD=/bin/sysobsd SYSOBS_SRC=/src SYSOBS_BUILD=/build SYSOBS_TEST_DATA=/src/tests/data
export SYSOBS_VM=1
for t in $TESTS; do
	start=$(date +%s)
	bash "/src/tests/integration/$t.sh" >/tmp/$t.out 2>&1
	rc=$?
	section "test_$t" /tmp/$t.out
	echo "VM-TEST $t $rc $(($(date +%s) - start))s"
done
exit 0
