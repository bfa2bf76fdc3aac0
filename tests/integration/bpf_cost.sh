#!/usr/bin/env bash
# The agent's own BPF cost as metrics: sysobs_bpf_program_runs_total and
# sysobs_bpf_program_run_seconds_total{program} from the kernel's run
# statistics, which the agent keeps on (BPF_ENABLE_STATS) while it runs.
# The reference is bpftool's view of the same program (run_cnt,
# run_time_ns): after 200,000 drops made in a namespace of the test's own,
# the metric and bpftool agree within 5 %.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd jq
need_cmd bpftool
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
NS=sysobs-bpfcost-$$
netns_new "$NS" || skip "cannot create a network namespace"

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.self]
interval = 100ms
[collector.drops]
interval = 200ms
INI
start_agent
wait_collector drops
# the agent's programs: the prog_id of each BPF fd it holds (bpftool's
# pid column needs a BPF iterator this kernel may not give it)
prog=
for f in /proc/"$AGENT_PID"/fdinfo/*; do
	pid_id=$(awk '$1 == "prog_id:" { print $2 }' "$f" 2>/dev/null)
	[ -n "$pid_id" ] || continue
	n=$(bpftool prog show id "$pid_id" --json 2>/dev/null | jq -r .name)
	case $n in drops_tp_btf | drops_raw_tp) prog="$pid_id $n" && break ;; esac
done
[ -n "$prog" ] || fail "no kfree_skb program among the fds of pid $AGENT_PID"
id=${prog% *}
name=${prog#* }
echo "program $name (id $id)"

out=$(ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 200000) || fail "generator: $out"
sleep 0.5 # a self collect or more

read -r b_cnt b_ns < <(bpftool prog show id "$id" --json | jq -r '"\(.run_cnt // 0) \(.run_time_ns // 0)"')
m_cnt=$(metric "sysobs_bpf_program_runs_total{program=\"$name\"}")
m_sec=$(metric "sysobs_bpf_program_run_seconds_total{program=\"$name\"}")
echo "bpftool: run_cnt $b_cnt run_time_ns $b_ns; sysobs: runs $m_cnt, seconds $m_sec"
[ -n "$m_cnt" ] && [ -n "$m_sec" ] || fail "no sysobs_bpf_program_* series for $name"
assert_ge "bpftool run_cnt (200,000 drops made)" 200000 "$b_cnt"
within() { # within WHAT REF VALUE: |VALUE - REF| <= 5 % of REF
	awk -v r="$2" -v v="$3" 'BEGIN { d = v - r; if (d < 0) d = -d; exit !(r > 0 && d <= 0.05 * r) }' ||
		fail "$1: $3 is not within 5 % of bpftool's $2"
}
within "runs" "$b_cnt" "$m_cnt"
within "run time (ns)" "$b_ns" "$(awk -v s="$m_sec" 'BEGIN { printf "%.0f", s * 1e9 }')"
awk -v c="$b_cnt" -v n="$b_ns" 'BEGIN { printf "ns per run (bpftool): %.1f\n", n / c }'
stop_agent

# unprivileged after start (the default [agent] user): the statistics were
# enabled before the drop, its own fds and their info stay readable
rm -f "$T"/sysobs.db*
write_base_config agent.user=-
cat >>"$T/sysobsd.ini" <<INI
[collector.self]
interval = 100ms
INI
chmod 755 "$T"
start_agent
wait_collector drops
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 20000 >/dev/null || fail "generator"
sleep 0.5
runs=$(metric "sysobs_bpf_program_runs_total{program=\"$name\"}")
assert_ge "runs counted by the unprivileged agent" 20000 "${runs%.*}"
stop_agent
pass "sysobs_bpf_program_runs_total and _run_seconds_total of $name agree with bpftool within 5 %;" \
	"counted after the agent drops its privileges"
