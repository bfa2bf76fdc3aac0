# shellcheck shell=bash
# Host-side helpers for the VM tests (sourced after tests/integration/lib.sh,
# which provides $T, skip, fail, pass).
#
#   vm_need_tools                  # skip unless qemu, busybox-static, cpio exist
#   vm_initramfs OUT ARGS...       # tests/vm/mkinitramfs.sh with /init
#   vm_boot KERNEL INITRD NAME [run-qemu args...]
#                                  # boots, console in $T/NAME.console (\r stripped)
#   vm_section NAME CONSOLE        # the lines between VM-SECTION NAME / VM-END NAME
#   vm_exit_status CONSOLE         # the N of "SYSOBS-VM-EXIT N", or empty

VM_DIR=${SYSOBS_SRC:?SYSOBS_SRC must point at the source tree (ctest sets it)}/tests/vm

vm_need_tools() {
	need_cmd qemu-system-x86_64
	need_cmd cpio
	[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
		skip "needs a static /bin/busybox (apt-get install busybox-static)"
}

vm_initramfs() {
	local out=$1
	shift
	"$VM_DIR/mkinitramfs.sh" "$out" "$@" || fail "building the initramfs failed"
}

vm_boot() {
	local kernel=$1 initrd=$2 name=$3 rc=0 start=$SECONDS
	shift 3
	"$VM_DIR/run-qemu.sh" --kernel "$kernel" --initrd "$initrd" \
		--console "$T/$name.raw" "$@" || rc=$?
	tr -d '\r' <"$T/$name.raw" >"$T/$name.console"
	echo "vm: $name booted and ran in $((SECONDS - start)) s ($(tail -n1 "$T/$name.raw.qemu"))"
	if [ "$rc" = 124 ]; then
		tail -n 30 "$T/$name.console" >&2
		fail "$name: qemu timed out"
	fi
	return 0
}

vm_section() {
	awk -v s="$1" '
		$0 ~ ("VM-SECTION " s "$") { on = 1; next }
		$0 ~ ("VM-END " s "$") { on = 0 }
		on' "$2"
}

vm_exit_status() {
	sed -n 's/.*SYSOBS-VM-EXIT \([0-9]*\).*/\1/p' "$1" | tail -n1
}
