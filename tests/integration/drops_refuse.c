// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD for integration.drops_probe: the kernel refuses a BPF feature
 * as an older or locked-down kernel would, so that the drops collector's
 * probes are seen to pick the variant it can load, in one load. libbpf
 * makes every bpf(2) call through syscall(); SYSOBS_DROPS_REFUSE says what
 * is refused, every other call is the real one:
 *
 *   percpu_elem     a BPF_PROG_LOAD whose program calls
 *                   bpf_map_lookup_percpu_elem() fails as on a kernel
 *                   before 5.19: EINVAL, and the verifier's "invalid func
 *                   unknown#195" in the log when one is asked for (libbpf's
 *                   helper probe reads it there).
 *   tracing_attach  attaching a tracing program (tp_btf, fentry: a raw
 *                   tracepoint open without a name, or a link of attach
 *                   type BPF_TRACE_RAW_TP/FENTRY/FEXIT) fails with EINVAL:
 *                   tp_btf loads but does not attach.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int calls_percpu_elem(const union bpf_attr *attr)
{
	const struct bpf_insn *insn = (const struct bpf_insn *)(uintptr_t)attr->insns;

	for (uint32_t i = 0; insn && i < attr->insn_cnt; i++)
		if (insn[i].code == (BPF_JMP | BPF_CALL) && insn[i].src_reg == 0 &&
		    insn[i].imm == BPF_FUNC_map_lookup_percpu_elem)
			return 1;
	return 0;
}

static int tracing_attach(long cmd, const union bpf_attr *attr)
{
	if (cmd == BPF_RAW_TRACEPOINT_OPEN)
		return !attr->raw_tracepoint.name;
	return cmd == BPF_LINK_CREATE && (attr->link_create.attach_type == BPF_TRACE_RAW_TP ||
					  attr->link_create.attach_type == BPF_TRACE_FENTRY ||
					  attr->link_create.attach_type == BPF_TRACE_FEXIT);
}

/* 1 when the call is refused (errno set) */
static int refused(long cmd, union bpf_attr *attr)
{
	const char *what = getenv("SYSOBS_DROPS_REFUSE");

	if (!what || !attr)
		return 0;
	if (!strcmp(what, "percpu_elem") && cmd == BPF_PROG_LOAD && calls_percpu_elem(attr)) {
		if (attr->log_level && attr->log_buf && attr->log_size)
			snprintf((char *)(uintptr_t)attr->log_buf, attr->log_size,
				 "invalid func unknown#%d\n", BPF_FUNC_map_lookup_percpu_elem);
		errno = EINVAL;
		return 1;
	}
	if (!strcmp(what, "tracing_attach") && tracing_attach(cmd, attr)) {
		errno = EINVAL;
		return 1;
	}
	return 0;
}

long syscall(long number, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == __NR_bpf && refused(a[0], (union bpf_attr *)a[1]))
		return -1;
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
