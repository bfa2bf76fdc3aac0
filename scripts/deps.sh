#!/usr/bin/env bash
# Installs every Debian package sysobs needs to build, run and test, and only
# those that are missing. Needs root (or sudo) the first time.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config clang llvm
	libclang-rt-dev # libFuzzer and the sanitizer runtimes for clang (scripts/fuzz.sh)
	libsqlite3-dev libmicrohttpd-dev libjansson-dev libinih-dev libmnl-dev
	libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev libnghttp2-dev libprotobuf-dev protobuf-compiler python3-protobuf
	libbpf-dev bpftool libelf-dev zlib1g-dev libseccomp-dev libsnappy-dev
	libyaml-dev libcrypt-dev libgnutls28-dev
	python3-markdown # docs/runbooks.md to the HTML of GET /runbooks (scripts/runbooks_html.py)
	# tests
	libcmocka-dev curl jq sqlite3 bc iproute2 nftables prometheus procps
	python3-prometheus-client
	openssl
	prometheus-alertmanager bpftrace libfuse3-dev fuse3
	tshark # decodes the drops pcapng (integration.drops_pcap)
	victoria-metrics # a second remote_write receiver (integration.remote_write_fleet)
	clickhouse-server clickhouse-client # the event exporter's ClickHouse receiver and the client integration.export_clickhouse queries it with
	# HTTP load test and benchmark (bench/http_load.sh: node_exporter beside it)
	wrk prometheus-node-exporter
	# status page test: headless browser and its WebDriver
	chromium chromium-driver
	# package (scripts/package.sh) and its test in a systemd-nspawn container;
	# the CLI test's TLS proxy
	debhelper dpkg-dev lintian mmdebstrap systemd-container openssl python3
	# VM tests (tests/vm): test kernel build, qemu, initramfs, EROFS/ext4 images
	linux-source-6.12 flex bison bc libssl-dev dwarves cpio kmod xz-utils
	qemu-system-x86 busybox-static erofs-utils e2fsprogs
	# Kubernetes names on a real runtime (integration.k8s_cri, k8s_mptcp): containerd's
	# CRI plugin, runc, the CNI bridge; buildah builds the pause image offline
	containerd runc containernetworking-plugins buildah
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
"$(dirname "$0")/deps_node.sh"
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps out services we do not want started.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
