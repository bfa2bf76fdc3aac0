// SPDX-License-Identifier: MIT
/* The agent's own BPF programs and their run statistics (self_bpf.h). Plain
 * bpf(2) calls: no libbpf needed, so the self collector has them in every
 * build. */
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collectors/self_bpf.h"

static long sys_bpf(int cmd, union bpf_attr *attr, unsigned size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

int self_bpf_stats_enable(void)
{
	union bpf_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.enable_stats.type = BPF_STATS_RUN_TIME;
	fd = sys_bpf(BPF_ENABLE_STATS, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

int self_bpf_progs(const char *fd_dir, struct self_bpf_prog *out, size_t max)
{
	DIR *d = opendir(fd_dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[512], target[64];
		struct bpf_prog_info info;
		union bpf_attr attr;
		ssize_t len;
		size_t i;
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || fd < 0 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "%s/%s", fd_dir, e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strcmp(target, "anon_inode:bpf-prog"))
			continue;
		memset(&info, 0, sizeof(info));
		memset(&attr, 0, sizeof(attr));
		attr.info.bpf_fd = (__u32)fd;
		attr.info.info_len = sizeof(info);
		attr.info.info = (__u64)(unsigned long)&info;
		if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr)))
			continue;
		for (i = 0; i < n && out[i].id != info.id; i++)
			;
		if (i < n) /* another fd of the same program */
			continue;
		if (n == max)
			break;
		out[n].id = info.id;
		snprintf(out[n].name, sizeof(out[n].name), "%.*s", (int)sizeof(info.name),
			 info.name);
		out[n].run_cnt = info.run_cnt;
		out[n].run_time_ns = info.run_time_ns;
		n++;
	}
	closedir(d);
	return (int)n;
}
