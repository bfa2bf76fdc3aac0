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

need_root
for c in containerd ctr runc buildah protoc curl jq nft nsenter python3; do need_cmd "$c"; done
CNI_BIN=/usr/lib/cni
[ -x $CNI_BIN/bridge ] && [ -x $CNI_BIN/host-local ] || skip "needs the CNI plugins (containernetworking-plugins)"
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
BUSYBOX=/bin/busybox # busybox-static's: the image has no libc
[ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 || skip "needs a static busybox (busybox-static)"
PROTO_DIR=${SYSOBS_TEST_DATA:?}/cri

chmod 0755 "$T" # the unprivileged agent reaches its database here
CD=$T/cd
SOCK=$CD/containerd.sock
NET=$(($$ % 200 + 20))
BR=sok$(($$ % 100000))
SUBNET=10.246.$NET.0/24
GW=10.246.$NET.1
mkdir -p "$CD/cni" "$CD/logs"

# --- containerd ----------------------------------------------------------------
cat >"$CD/config.toml" <<EOF
version = 2
root = "$CD/root"
state = "$CD/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/sysobs-pause:1"
  # runc needs CAP_SYS_RESOURCE for oom_score_adj otherwise (KERNEL.md)
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$CD/cni"
EOF
cat >"$CD/cni/10-sysobs.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "sysobs-k8s-$$", "plugins": [
 {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET"}]], "dataDir": "$CD/ipam"}},
 {"type": "loopback"}]}
EOF
CD_PID=
start_containerd() {
	containerd --config "$CD/config.toml" >>"$CD/containerd.log" 2>&1 &
	CD_PID=$!
	_sock() { [ -S "$SOCK" ] && ctr -a "$SOCK" version >/dev/null 2>&1; }
	wait_for 20 _sock || fail "containerd did not start: $(tail -5 "$CD/containerd.log")"
}
stop_containerd() {
	[ -n "$CD_PID" ] || return 0
	kill "$CD_PID" 2>/dev/null
	wait "$CD_PID" 2>/dev/null
	CD_PID=
}

# --- the CRI client: curl + protoc, nothing of the agent's -----------------------
# cri METHOD REQUEST_TYPE RESPONSE_TYPE <<< TEXT_PROTO: the decoded answer;
# non-zero when the call failed.
cri() {
	local m=$1 rq=$2 rs=$3 b=$T/cri.$$.$RANDOM st
	protoc -I"$PROTO_DIR" --encode="runtime.v1.$rq" cri_client.proto >"$b.pb" || return 1
	python3 -c 'import sys,struct;d=open(sys.argv[1],"rb").read();sys.stdout.buffer.write(b"\0"+struct.pack(">I",len(d))+d)' "$b.pb" >"$b"
	curl -sS --max-time 30 --http2-prior-knowledge --unix-socket "$SOCK" \
		-H 'content-type: application/grpc' -H 'te: trailers' --data-binary "@$b" \
		-D "$b.h" -o "$b.out" "http://localhost/runtime.v1.RuntimeService/$m" || return 1
	st=$(tr -d '\r' <"$b.h" | sed -n 's/^grpc-status: //p' | tail -1)
	if [ "$st" != 0 ]; then
		echo "cri $m: grpc-status $st $(tr -d '\r' <"$b.h" | grep grpc-message)" >&2
		return 1
	fi
	tail -c +6 "$b.out" | protoc -I"$PROTO_DIR" --decode="runtime.v1.$rs" cri_client.proto
	rm -f "$b" "$b.pb" "$b.h" "$b.out"
}
# sandbox_config NAME NAMESPACE UID: the config kubelet sends, with its labels.
sandbox_config() {
	cat <<EOF
metadata { name: "$1" uid: "$3" namespace: "$2" attempt: 0 }
hostname: "$1" log_directory: "$CD/logs/$3"
labels { key: "io.kubernetes.pod.name" value: "$1" }
labels { key: "io.kubernetes.pod.namespace" value: "$2" }
labels { key: "io.kubernetes.pod.uid" value: "$3" }
linux { cgroup_parent: "/kubepods/besteffort/pod$3" }
EOF
}
# run_pod NAME NAMESPACE UID -> the sandbox id (tried twice, as kubelet
# retries: under load a CNI set-up can fail)
run_pod() {
	local id
	for _ in 1 2; do
		id=$(cri RunPodSandbox RunPodSandboxRequest RunPodSandboxResponse \
			<<<"config { $(sandbox_config "$@") }" | sed -n 's/^pod_sandbox_id: "\(.*\)"/\1/p')
		[ -z "$id" ] || { echo "$id"; return 0; }
		sleep 1
	done
	return 1
}
remove_pod() {
	cri StopPodSandbox StopPodSandboxRequest Empty <<<"pod_sandbox_id: \"$1\"" >/dev/null &&
		cri RemovePodSandbox RemovePodSandboxRequest Empty <<<"pod_sandbox_id: \"$1\"" >/dev/null
}
# run_container SANDBOX NAME POD NAMESPACE UID SCRIPT -> the container id
run_container() {
	local id
	id=$(cri CreateContainer CreateContainerRequest CreateContainerResponse <<EOF | sed -n 's/^container_id: "\(.*\)"/\1/p'
pod_sandbox_id: "$1"
config { metadata { name: "$2" } image { image: "localhost/sysobs-pause:1" }
 command: "/bin/busybox" args: "sh" args: "-c" args: "$6"
 labels { key: "io.kubernetes.container.name" value: "$2" }
 labels { key: "io.kubernetes.pod.name" value: "$3" }
 labels { key: "io.kubernetes.pod.namespace" value: "$4" }
 labels { key: "io.kubernetes.pod.uid" value: "$5" }
 log_path: "$2.log" }
sandbox_config { $(sandbox_config "$3" "$4" "$5") }
EOF
	) || return 1
	cri StartContainer StartContainerRequest Empty <<<"container_id: \"$id\"" >/dev/null || return 1
	echo "$id"
}
# pod_netns SANDBOX -> the path of its network namespace (from the
# runtime's verbose status, as the agent reads it too: but parsed by jq)
pod_netns() {
	cri PodSandboxStatus PodSandboxStatusRequest PodSandboxStatusResponse \
		<<<"pod_sandbox_id: \"$1\" verbose: true" | python3 -c '
import ast, json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("value: "):
        spec = json.loads(ast.literal_eval(line[7:]))["runtimeSpec"]
        print([n["path"] for n in spec["linux"]["namespaces"] if n["type"] == "network"][0])'
}
pod_ip() { nsenter --net="$(pod_netns "$1")" ip -4 -o addr show eth0 | awk '{split($4, a, "/"); print a[1]}'; }

PODS=()
UIDS=()
# new_uid: a pod UID as the API server makes them (the cgroup path carries it)
new_uid() {
	NEW_UID=$(cat /proc/sys/kernel/random/uuid)
	UIDS+=("$NEW_UID")
}
cleanup_pods() {
	# every sandbox the runtime has, not only those this shell knows of (a
	# failed start in a background job)
	if [ -n "$CD_PID" ]; then
		for id in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
			remove_pod "$id" 2>/dev/null
		done
	fi
	for id in "${PODS[@]}"; do remove_pod "$id" 2>/dev/null; done
	stop_containerd
	# runc removes the containers' cgroups; the pods' parents are ours
	for u in "${UIDS[@]}"; do
		for d in /sys/fs/cgroup/*/kubepods/besteffort/pod"$u" /sys/fs/cgroup/kubepods/besteffort/pod"$u"; do
			[ -d "$d" ] && rmdir "$d" 2>/dev/null
		done
	done
	ip link del "$BR" 2>/dev/null
}
on_exit cleanup_pods

# --- the pause image: static busybox, built and imported here ---------------------
BS="--root $CD/bstore --runroot $CD/brun --storage-driver vfs"
export BUILDAH_ISOLATION=chroot
# shellcheck disable=SC2086
{
	w=$(buildah $BS from scratch) &&
		buildah $BS copy "$w" "$BUSYBOX" /bin/busybox >/dev/null &&
		buildah $BS config --entrypoint '["/bin/busybox","sleep","2147483647"]' "$w" &&
		buildah $BS commit -q "$w" localhost/sysobs-pause:1 >/dev/null &&
		buildah $BS push -q localhost/sysobs-pause:1 "oci-archive:$CD/pause.tar:localhost/sysobs-pause:1"
} >"$CD/buildah.log" 2>&1 || fail "cannot build the pause image: $(tail -3 "$CD/buildah.log")"
start_containerd
imported() {
	ctr -a "$SOCK" -n k8s.io images import --index-name localhost/sysobs-pause:1 "$CD/pause.tar" \
		>>"$CD/ctr.log" 2>&1
}
wait_for 10 imported || fail "ctr import failed: $(tail -3 "$CD/ctr.log")"

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
