/* SPDX-License-Identifier: MIT */
/*
 * Is there an IP filter in front of the agent that its config cannot see?
 * systemd's IPAddressDeny=/IPAddressAllow= (and IPIngressFilterPath=) are
 * BPF programs attached to the unit's cgroup (or a parent slice's) at
 * BPF_CGROUP_INET_INGRESS: they drop a client's packets before accept(),
 * so the scraper times out and the agent never knows. The unit we ship has
 * none (the agent filters by [http] allow); a drop-in or an older unit may.
 * Asked once at start, as root, while the agent listens beyond loopback.
 *
 * systemd's program is named sd_fw_ingress for IPAccounting= too, which
 * filters nothing: then its only map is the accounting array. With
 * addresses to allow or deny it also has LPM-trie maps, which is what is
 * looked for. A program of any other name is reported as a possible filter.
 *
 * Raw bpf(2) rather than libbpf: the agent builds without libbpf
 * (SYSOBS_BPF=OFF) and needs two commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/cgroup_ipfilter.h"
#include "base/log.h"
#include "api/http.h"
#include "api/http_allow.h"

#define PROGS_MAX 16

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The cgroup v2 directory of this process, opened; -errno. */
static int own_cgroup_open(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	char line[4096], path[4200];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int fd = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		/* the unified hierarchy: /sys/fs/cgroup, or .../unified on a
		 * hybrid host (systemd's legacy layout) */
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
			struct statfs sf;

			snprintf(path, sizeof(path), "%s%s", roots[i], line + 3);
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				fd = -errno;
				continue;
			}
			if (!fstatfs(fd, &sf) && sf.f_type == CGROUP2_SUPER_MAGIC)
				break;
			close(fd);
			fd = -ENOENT;
		}
		break;
	}
	fclose(f);
	return fd;
}

/* Is program id a filter (see the head comment)? Its name into name. */
static bool prog_filters(__u32 id, char *name, size_t len)
{
	struct bpf_prog_info info = {0};
	union bpf_attr attr = {0};
	int fd;

	snprintf(name, len, "id %u", id);
	attr.prog_id = id;
	fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
	if (fd < 0)
		return true; /* cannot tell: say it */
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (__u64)(unsigned long)&info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr)) {
		close(fd);
		return true;
	}
	close(fd);
	if (info.name[0])
		snprintf(name, len, "%.*s", (int)sizeof(info.name), info.name);
	return strcmp(name, "sd_fw_ingress") || info.nr_map_ids > 1;
}

int cgroup_ipfilter_find(char *names, size_t len)
{
	__u32 ids[PROGS_MAX];
	union bpf_attr attr = {0};
	size_t off = 0;
	int cg, n = 0;

	names[0] = '\0';
	cg = own_cgroup_open();
	if (cg < 0)
		return cg;
	attr.query.target_fd = cg;
	attr.query.attach_type = BPF_CGROUP_INET_INGRESS;
	attr.query.query_flags = BPF_F_QUERY_EFFECTIVE; /* the parents' too */
	attr.query.prog_ids = (__u64)(unsigned long)ids;
	attr.query.prog_cnt = PROGS_MAX;
	if (sys_bpf(BPF_PROG_QUERY, &attr)) {
		int err = -errno;

		close(cg);
		return err;
	}
	close(cg);
	for (__u32 i = 0; i < attr.query.prog_cnt && i < PROGS_MAX; i++) {
		char name[32];
		int w;

		if (!prog_filters(ids[i], name, sizeof(name)))
			continue;
		n++;
		w = snprintf(names + off, len - off, "%s%s", off ? ", " : "", name);
		if (w > 0 && (size_t)w < len - off)
			off += (size_t)w;
	}
	return n;
}

void cgroup_ipfilter_warn(const char *listen)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char names[256];
	int n;

	if (http_listen_parse(listen, &ss, &sslen) || http_addr_is_loopback(&ss))
		return;
	n = cgroup_ipfilter_find(names, sizeof(names));
	if (n < 0)
		log_info("http", "cannot look for a cgroup IP filter in front of the agent: %s",
			 strerror(-n));
	else if (n > 0)
		log_warn(
		    "http",
		    "[http] listen = %s serves other hosts, but this service's cgroup has an IP "
		    "ingress filter (BPF %s: systemd's IPAddressDeny=/IPAddressAllow= or "
		    "IPIngressFilterPath=): clients it does not allow are dropped before the "
		    "agent sees them, and time out. The agent filters by [http] allow itself: "
		    "remove those settings (systemctl edit sysobsd) or make them match",
		    listen, names);
}
