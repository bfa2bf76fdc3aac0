// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD for integration.drops_gone: the kernel refuses the namespace
 * walks, as a kernel without bpf_map_lookup_percpu_elem() (before 5.19)
 * would. libbpf makes every bpf(2) call through syscall(); a
 * BPF_PROG_LOAD of a program named netns_walk or netstat_walk fails with
 * EINVAL, every other call is the real one. The drops collector must load
 * its object again without the walks and count as before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long number, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == __NR_bpf && a[0] == BPF_PROG_LOAD && a[1]) {
		const union bpf_attr *attr = (const union bpf_attr *)a[1];

		if (!strncmp(attr->prog_name, "netns_walk", sizeof(attr->prog_name)) ||
		    !strncmp(attr->prog_name, "netstat_walk", sizeof(attr->prog_name))) {
			errno = EINVAL;
			return -1;
		}
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
