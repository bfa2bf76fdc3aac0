#!/usr/bin/env bash
# Kubernetes names from a real CRI runtime (issue 34): Debian's containerd
# with its CRI plugin, runc and the CNI bridge plugin, on a socket, state and
# root of the test's own; a pause image of static busybox built here with
# buildah (nothing pulled) and imported with ctr. Pods and containers are
# made through CRI v1 with the labels kubelet sets, by curl over the socket
# with bodies from `protoc --encode` (tests/data/cri/cri_client.proto): a
# client that shares no code with the agent.
#
# The agent runs as it is installed: it drops to an unprivileged user, and
# the root-owned runtime socket is reached through its privileged helper.
#
#   A. drops into a pod's network namespace (no socket: by the sandbox's
#      netns) arrive under the pod's name and namespace in /metrics
#      (pod_label) and in the samples API (?pod=&pod_namespace=), exactly;
#      drops of a container's own socket carry its container name too;
#   B. containerd restarts: a pod made after it is named (the helper
#      connects to the new socket);
#   C. 50 pods made and deleted: the cache follows (sysobs_k8s_pods), a
#      new pod in a reused namespace is never named after a gone one, and
#      the rows of a deleted pod keep its names.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"

# --- the agent: unprivileged, the runtime through the helper ----------------------
write_base_config agent.user=- kubernetes.cri_socket="$SOCK" kubernetes.refresh=2s \
	collector.drops.interval=200ms collector.drops.pod_label=true collector.drops.sample_rate=100000 \
	collector.drops.sample_burst=100000 collector.drops.ring_bytes=4m collector.mptcp.enabled=false \
	collector.self.enabled=false \
	metrics.stale_series_grace=1s
start_agent
grep -q 'running as .* without capabilities' "$T/agent.log" || fail "the agent kept its privileges"
info_cri() { [ "$(metric_sum sysobs_k8s_names_info 'source="cri"')" = 1 ]; }
wait_for 15 info_cri || fail "the agent does not name pods from the runtime"

# --- A: drops in a named pod --------------------------------------------------------
new_uid
UID_A=$NEW_UID
SB_A=$(run_pod "web-$$" shop "$UID_A") || fail "RunPodSandbox"
[ -n "$SB_A" ] || fail "RunPodSandbox gave no id"
PODS+=("$SB_A")
IP_A=$(pod_ip "$SB_A")
[ -n "$IP_A" ] || fail "no address for pod web-$$"
known() { [ "$(metric sysobs_k8s_pods)" -ge "$1" ] 2>/dev/null; }
wait_for 10 known 1 || fail "the pod is not in the agent's cache"
# 200 datagrams to a closed port of the pod: NO_SOCKET in its netns
for _ in $(seq 1 200); do echo x >"/dev/udp/$IP_A/9"; done 2>/dev/null
S_A="sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",pod=\"web-$$\",pod_namespace=\"shop\"}"
at200() { [ "$(metric "$S_A")" = 200 ]; }
wait_for 10 at200 || fail "pod's drops in /metrics: '$(metric "$S_A")', expected 200: $(curl -sS "http://127.0.0.1:$PORT/metrics" | grep "^sysobs_packet_drops_total\\|^sysobs_k8s")"
req GET "/api/v1/drops/samples?pod=web-$$&pod_namespace=shop&reason=NO_SOCKET&limit=1000"
assert_eq "samples of the pod" 200 "$(jq '.data | length' <<<"$BODY")"
assert_eq "their pod UID" "$UID_A" "$(jq -r '[.data[].pod_uid] | unique | join(",")' <<<"$BODY")"
req GET "/api/v1/drops/samples?pod=web-$$&pod_namespace=other"
assert_eq "another namespace's pod of that name" 0 "$(jq '.data | length' <<<"$BODY")"

# a container's own socket: TCP SYNs it sends dropped by an output rule in
# the pod's netns (NETFILTER_DROP, with the socket's cgroup)
nsenter --net="$(pod_netns "$SB_A")" nft -f - <<EOF || fail "nft in the pod's netns"
table inet sysobs_k8s {
	chain out {
		type filter hook output priority 0; policy accept;
		tcp dport 7777 drop
	}
}
EOF
CT_A=$(run_container "$SB_A" app "web-$$" shop "$UID_A" \
	"while :; do /bin/busybox nc -w1 $GW 7777 </dev/null; done") || fail "CreateContainer/StartContainer"
# (the first may come before the runtime lists the container: pod names only)
ctr_rows() {
	req GET "/api/v1/drops/samples?pod=web-$$&reason=NETFILTER_DROP&protocol=tcp&limit=1000"
	[ "$(jq '[.data[] | select(.container_name == "app")] | length' <<<"$BODY")" -ge 1 ]
}
wait_for 15 ctr_rows || fail "no drop of the container's socket under its name: $BODY"
# (a drop of the namespace with no socket of the container's has none)
assert_eq "containers of the socket's drops" "$CT_A" \
	"$(jq -r '[.data[].container | select(. != null)] | unique | join(",")' <<<"$BODY")"
assert_eq "their pod UID" "$UID_A" "$(jq -r '[.data[].pod_uid] | unique | join(",")' <<<"$BODY")"
pass "A: a pod's drops under its name in /metrics (200 of 200) and samples; its container's by container name"

# --- B: the runtime restarts ------------------------------------------------------
stop_containerd
start_containerd
new_uid
SB_B=$(run_pod "after-restart-$$" shop "$NEW_UID") || fail "RunPodSandbox after the restart"
PODS+=("$SB_B")
IP_B=$(pod_ip "$SB_B")
wait_for 10 known 2 || fail "the agent does not see pods after the runtime restarted"
for _ in $(seq 1 50); do echo x >"/dev/udp/$IP_B/9"; done 2>/dev/null
S_B="sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",pod=\"after-restart-$$\",pod_namespace=\"shop\"}"
at50() { [ "$(metric "$S_B")" = 50 ]; }
wait_for 10 at50 || fail "drops of a pod made after the runtime restart: '$(metric "$S_B")'"
pass "B: after a containerd restart the helper reconnects and new pods are named"

# --- C: 50 pods made and deleted ------------------------------------------------------
# (K8S_CHURN=100 measures the agent's memory per 100 pods: docs/kubernetes.md)
CHURN_N=${K8S_CHURN:-50}
rss() { awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status"; }
RSS0=$(rss)
CHURN=()
# four at a time, as kubelet starts pods of a node in parallel (a bare
# `wait` would wait for containerd and the agent too)
JOBS=()
wait_jobs() {
	for j in "${JOBS[@]}"; do wait "$j"; done
	JOBS=()
}
for i in $(seq 1 "$CHURN_N"); do
	new_uid
	(run_pod "churn-$i-$$" batch "$NEW_UID" >"$T/churn.$i") &
	JOBS+=($!)
	[ $((i % 4)) != 0 ] || wait_jobs
done
wait_jobs
for i in $(seq 1 "$CHURN_N"); do
	id=$(cat "$T/churn.$i")
	[ -n "$id" ] || fail "RunPodSandbox churn-$i"
	CHURN+=("$id")
	PODS+=("$id")
done
wait_for 15 known $((CHURN_N + 2)) || fail "the cache has $(metric sysobs_k8s_pods) pods, expected $((CHURN_N + 2))"
sleep 1
RSS1=$(rss)
echo "agent VmRSS: $RSS0 kB with 2 pods, $RSS1 kB with $((CHURN_N + 2)) (their set-up drops counted by pod)"
i=0
for id in "${CHURN[@]}"; do
	(remove_pod "$id" || echo "$id" >>"$T/churn.failed") &
	JOBS+=($!)
	[ $((++i % 4)) != 0 ] || wait_jobs
done
wait_jobs
[ ! -s "$T/churn.failed" ] || fail "RemovePodSandbox failed: $(cat "$T/churn.failed")"
PODS=("$SB_A" "$SB_B")
back() { [ "$(metric sysobs_k8s_pods)" = 2 ]; }
wait_for 15 back || fail "the cache has $(metric sysobs_k8s_pods) pods after the deletes, expected 2"
# a new pod likely gets a netns inode of a deleted one: its drops must carry its own name
new_uid
SB_D=$(run_pod "fresh-$$" shop "$NEW_UID") || fail "RunPodSandbox fresh"
PODS+=("$SB_D")
IP_D=$(pod_ip "$SB_D")
wait_for 10 known 3 || fail "the fresh pod is not known"
for _ in $(seq 1 20); do echo x >"/dev/udp/$IP_D/9"; done 2>/dev/null
at20() { [ "$(metric "sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",pod=\"fresh-$$\",pod_namespace=\"shop\"}")" = 20 ]; }
wait_for 10 at20 || fail "the fresh pod's drops are not under its name"
# the series of the deleted pods (their setup's IPv6 and IGMP drops) are gone
churn_series() { curl -sS "http://127.0.0.1:$PORT/metrics" | grep -c "pod=\"churn-" || true; }
no_churn() { [ "$(churn_series)" = 0 ]; }
wait_for 15 no_churn || fail "$(churn_series) series of deleted pods still in /metrics"
# the rows of a deleted pod keep its names
remove_pod "$SB_B" || fail "RemovePodSandbox after-restart"
PODS=("$SB_A" "$SB_D")
wait_for 15 known 2 || true
req GET "/api/v1/drops/samples?pod=after-restart-$$&reason=NO_SOCKET"
assert_eq "rows of the deleted pod" 50 "$(jq '.data | length' <<<"$BODY")"
CALLS=$(metric_sum sysobs_k8s_cri_calls_total 'result="error"')
echo "CRI calls failed during the test (the restart): $CALLS"
stop_agent
pass "C: 50 pods made and deleted, the cache back to the live pods, a new pod named as itself, a gone pod's rows kept"
