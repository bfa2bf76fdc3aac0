#!/usr/bin/env bash
# Runs the qemu VM tests alone: the cachefiles collector inside the project's
# 6.12 test kernel, and the kernel matrix (drops and mptcp on Debian's 6.1 and
# 6.12 cloud kernels and on the test kernel).
#
#   scripts/vm-test.sh            # both
#   scripts/vm-test.sh cachefiles # or: matrix
#
# The test kernel is built once (8-35 min on 2 cores) and cached in
# ${SYSOBS_CACHE:-/var/cache/sysobs}/vm/, as are the Debian kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-all} in
cachefiles) re='^integration\.vm_cachefiles$' ;;
matrix) re='^integration\.vm_matrix$' ;;
all) re='^integration\.vm_' ;;
*)
	echo "usage: scripts/vm-test.sh [cachefiles|matrix|all]" >&2
	exit 2
	;;
esac
./scripts/deps.sh
./scripts/build.sh
tests/vm/build-kernel.sh >/dev/null
cd "${SYSOBS_BUILD_DIR:-build}"
ctest --output-on-failure -R "$re"
