#!/usr/bin/env bash
# Boots a kernel + initramfs under qemu and captures the serial console.
#
#   run-qemu.sh --kernel BZIMAGE --initrd CPIO.GZ --console LOG
#               [--append "sysobs.test=NAME ..."] [--disk IMG]... [--timeout S]
#               [--mem MB]
#
# KVM when /dev/kvm can be opened and the CPU advertises vmx/svm, else TCG
# (a /dev/kvm without those flags was seen to hang the guest in SeaBIOS);
# SYSOBS_VM_ACCEL=kvm|tcg overrides. -no-reboot: the guest's
# `poweroff -f` ends qemu. Exits with qemu's status, or 124 on timeout.
set -euo pipefail

kernel= initrd= console= append= timeout=120 mem=512
disks=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2 ;;
	--initrd) initrd=$2 ;;
	--console) console=$2 ;;
	--append) append=$2 ;;
	--disk) disks+=("$2") ;;
	--timeout) timeout=$2 ;;
	--mem) mem=$2 ;;
	*)
		echo "run-qemu: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift 2
done
[ -n "$kernel" ] && [ -n "$initrd" ] && [ -n "$console" ] || {
	echo "run-qemu: --kernel, --initrd and --console are required" >&2
	exit 2
}

accel=${SYSOBS_VM_ACCEL:-}
if [ -z "$accel" ]; then
	accel=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		accel=kvm
	fi
fi
cpu=max
[ "$accel" = kvm ] && cpu=host

args=(-accel "$accel" -cpu "$cpu" -m "$mem" -smp 2 -no-reboot -nographic
	-kernel "$kernel" -initrd "$initrd"
	-append "console=ttyS0 panic=-1 quiet loglevel=3 $append"
	-serial "file:$console" -monitor none -nic none)
i=0
for d in "${disks[@]}"; do
	args+=(-drive "file=$d,if=virtio,format=raw,index=$i")
	i=$((i + 1))
done

rc=0
timeout --kill-after=5 "$timeout" qemu-system-x86_64 "${args[@]}" </dev/null >/dev/null 2>"$console.qemu" || rc=$?
echo "run-qemu: accel=$accel exit=$rc" >>"$console.qemu"
exit $rc
