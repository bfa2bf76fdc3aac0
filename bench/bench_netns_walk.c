// SPDX-License-Identifier: MIT
/*
 * How dear is it to know which network namespaces exist? Side by side in
 * one run, on whatever namespaces the host has (bench/netns_walk.sh makes
 * N of its own first):
 *  - walk: collectors/netns_live.c, the kernel's list read by a BPF program
 *    (one BPF_PROG_TEST_RUN), what the drops collector does every collect;
 *  - proc: what a user-space agent would do instead, stat() of
 *    /proc/<pid>/ns/net for every process plus /run/netns/<name> (and it
 *    would still miss namespaces held only by an fd or a socket, and those
 *    of other users once unprivileged).
 * Needs root (loading BPF, reading every process's namespace).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bpf/netns.skel.h"
#include "collectors/netns_live.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct namespace inodes from /proc and /run/netns. */
static size_t proc_scan(uint32_t *ino, size_t cap)
{
	static const char *const dirs[] = {"/proc", "/run/netns"};
	size_t n = 0, u = 0;

	for (int d = 0; d < 2; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;

		if (!dir)
			continue;
		while ((e = readdir(dir)) && n < cap) {
			char path[300];
			struct stat sb;

			if (e->d_name[0] == '.' ||
			    (!d && (e->d_name[0] < '0' || e->d_name[0] > '9')))
				continue;
			snprintf(path, sizeof(path), d ? "%s/%s" : "%s/%s/ns/net", dirs[d],
				 e->d_name);
			if (!stat(path, &sb))
				ino[n++] = (uint32_t)sb.st_ino;
		}
		closedir(dir);
	}
	qsort(ino, n, sizeof(*ino), u32_cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || ino[u - 1] != ino[i])
			ino[u++] = ino[i];
	return u;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	static uint32_t ino[1 << 20];
	struct netns_live *nl;
	struct netns_bpf *skel;
	char why[512];
	size_t nproc = 0;
	double t0, walk, proc;

	skel = netns_bpf__open_and_load();
	if (!skel) {
		perror("netns walk: load");
		return 77;
	}
	nl = netns_live_new(bpf_program__fd(skel->progs.netns_walk), skel->bss->live_netns,
			    skel->bss->live_cookie, why, sizeof(why));
	if (!nl) {
		fprintf(stderr, "netns walk: %s\n", why);
		return 77;
	}
	t0 = now_ns();
	for (int i = 0; i < rounds; i++)
		if (netns_live_snapshot(nl)) {
			fprintf(stderr, "walk failed\n");
			return 1;
		}
	walk = (now_ns() - t0) / rounds;
	t0 = now_ns();
	for (int i = 0; i < rounds; i++)
		nproc = proc_scan(ino, sizeof(ino) / sizeof(ino[0]));
	proc = (now_ns() - t0) / rounds;
	printf("namespaces: walk %zu, /proc + /run/netns %zu\n", netns_live_count(nl), nproc);
	printf("walk  %10.1f us per snapshot (%.0f ns per namespace)\n", walk / 1e3,
	       walk / (double)netns_live_count(nl));
	printf("proc  %10.1f us per scan\n", proc / 1e3);
	netns_live_close(nl);
	netns_bpf__destroy(skel);
	return 0;
}
