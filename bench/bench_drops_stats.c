// SPDX-License-Identifier: MIT
/*
 * Per-event cost of BPF programs from the kernel's own run statistics:
 * enables them with BPF_ENABLE_STATS (bpf_enable_stats(BPF_STATS_RUN_TIME),
 * active while the returned fd is open), reads run_time_ns/run_cnt of each
 * program before and after a command runs, and prints ns/event side by side.
 *
 *   bench_drops_stats [--baseline] ID[:LABEL]... -- COMMAND [ARGS...]
 *
 * --baseline also loads and attaches the drops object's reference program
 * (one per-CPU array counter) and reports it: the floor any program on this
 * tracepoint pays, run statistics included.
 *
 * Used by bench/drops.sh with the drops program and bpftrace's program on
 * the same drop stream. Prints figures; asserts nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "bpf/drops.h" /* before its skeleton */
#include "bpf/drops.skel.h"

#define MAX_PROGS 8

struct prog {
	unsigned id;
	const char *label;
	int fd;
	__u64 t0, c0, t1, c1;
};

static int prog_stats(int fd, __u64 *time_ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*time_ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct prog p[MAX_PROGS];
	struct drops_bpf *base = NULL;
	struct bpf_link *base_link = NULL;
	int n = 0, i, stats_fd, status;
	double t0, t1;
	pid_t pid;

	if (argc == 1) {
		/* scripts/bench.sh runs every bench_* bare: this one is a helper. */
		printf("bench_drops_stats: helper of bench/drops.sh (figures come from there)\n");
		return 0;
	}
	i = 1;
	if (argc > 1 && !strcmp(argv[1], "--baseline")) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		base = drops_bpf__open();
		if (!base)
			return 1;
		bpf_program__set_autoload(base->progs.drops_tp_btf, false);
		bpf_program__set_autoload(base->progs.drops_raw_tp, false);
		bpf_program__set_autoload(base->progs.drops_udp_destruct_enter, false);
		bpf_program__set_autoload(base->progs.drops_udp_destruct_exit, false);
		bpf_program__set_autoload(base->progs.netns_walk, false);
		bpf_program__set_autoload(base->progs.netstat_walk, false);
		if (drops_bpf__load(base) ||
		    !(base_link = bpf_program__attach(base->progs.drops_baseline))) {
			fprintf(stderr, "baseline program: %s\n", strerror(errno));
			return 1;
		}
		p[n].fd = bpf_program__fd(base->progs.drops_baseline);
		bpf_obj_get_info_by_fd(p[n].fd, &info, &len);
		p[n].id = info.id;
		p[n].label = "baseline (1 counter)";
		n++;
		i++;
	}
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		char *colon = strchr(argv[i], ':');

		if (n == MAX_PROGS)
			break;
		p[n].id = strtoul(argv[i], NULL, 10);
		p[n].label = colon ? colon + 1 : argv[i];
		p[n].fd = bpf_prog_get_fd_by_id(p[n].id);
		if (p[n].fd < 0) {
			fprintf(stderr, "prog id %u: %s\n", p[n].id, strerror(errno));
			return 1;
		}
		n++;
	}
	if (i >= argc - 1 || !n) {
		fprintf(stderr, "usage: %s ID[:LABEL]... -- COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	for (int k = 0; k < n; k++)
		prog_stats(p[k].fd, &p[k].t0, &p[k].c0);
	t0 = now_s();
	pid = fork();
	if (pid == 0) {
		execvp(argv[i + 1], argv + i + 1);
		perror("exec");
		_exit(127);
	}
	waitpid(pid, &status, 0);
	t1 = now_s();
	for (int k = 0; k < n; k++)
		prog_stats(p[k].fd, &p[k].t1, &p[k].c1);
	close(stats_fd);

	printf("%-24s %10s %14s %12s %10s\n", "program", "id", "events", "events/s", "ns/event");
	for (int k = 0; k < n; k++) {
		__u64 cnt = p[k].c1 - p[k].c0, ns = p[k].t1 - p[k].t0;

		printf("%-24s %10u %14llu %12.0f %10.1f\n", p[k].label, p[k].id,
		       (unsigned long long)cnt, cnt / (t1 - t0), cnt ? (double)ns / cnt : 0.0);
	}
	bpf_link__destroy(base_link);
	drops_bpf__destroy(base);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
