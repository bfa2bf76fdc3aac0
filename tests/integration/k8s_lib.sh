# shellcheck shell=bash
# Sourced by the Kubernetes tests (integration.k8s_cri, integration.k8s_mptcp)
# after lib.sh: Debian's containerd with its CRI plugin, runc and the CNI
# bridge plugin on a socket, state and root of the test's own, a pause image
# of static busybox built here with buildah (nothing pulled) and imported
# with ctr, started when this file is sourced; and a CRI v1 client made of
# curl over the socket and `protoc --encode` (tests/data/cri/cri_client.proto)
# that shares no code with the agent: run_pod, run_container, remove_pod,
# pod_netns, pod_ip. Every sandbox is removed and containerd stopped at exit.
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
# shellcheck disable=SC2034 # (the sourcing test's)
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
