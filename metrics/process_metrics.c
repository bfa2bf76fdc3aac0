// SPDX-License-Identifier: MIT
/*
 * process_* metrics from /proc/self (see process_metrics.h). Field numbers
 * follow proc(5): in /proc/PID/stat, after the ")" closing the command name,
 * utime (14), stime (15), starttime (22, clock ticks after boot), vsize (23,
 * bytes), rss (24, pages). The start time is made absolute with btime from
 * /proc/stat; the fd limit is RLIMIT_NOFILE's soft value from
 * /proc/PID/limits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"
#include "metrics/process_metrics.h"

enum { P_CPU, P_RSS, P_VSZ, P_FDS, P_MAXFDS, P_START, P_N };

static const struct {
	const char *name, *help;
	bool counter;
} descs[P_N] = {
    [P_CPU] = {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
	       true},
    [P_RSS] = {"process_resident_memory_bytes", "Resident memory size in bytes.", false},
    [P_VSZ] = {"process_virtual_memory_bytes", "Virtual memory size in bytes.", false},
    [P_FDS] = {"process_open_fds", "Number of open file descriptors.", false},
    [P_MAXFDS] = {"process_max_fds", "Maximum number of open file descriptors.", false},
    [P_START] = {"process_start_time_seconds",
		 "Start time of the process since unix epoch in seconds.", false},
};

static struct metric_series *series[P_N];

static int read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

static double boot_time(void)
{
	char buf[8192], *p;

	if (read_file("/proc/stat", buf, sizeof(buf)) < 0 || !(p = strstr(buf, "\nbtime ")))
		return -1;
	return strtod(p + 7, NULL);
}

static double max_fds(const char *proc)
{
	char path[256], buf[4096], *p;

	snprintf(path, sizeof(path), "%s/limits", proc);
	if (read_file(path, buf, sizeof(buf)) < 0 || !(p = strstr(buf, "Max open files")))
		return -1;
	p += strlen("Max open files");
	if (strncmp(p + strspn(p, " "), "unlimited", 9) == 0)
		return -1;
	return strtod(p, NULL);
}

static int process_stat_read(const char *proc, struct process_stat *st)
{
	unsigned long long utime, stime, start, vsize;
	long long rss;
	char path[256], buf[2048], *p;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	double bt;
	int n;

	snprintf(path, sizeof(path), "%s/stat", proc);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strrchr(buf, ')');
	/* From field 3 (state): utime is the 12th field after it. */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			 "%*d %*d %llu %llu %lld",
			 &utime, &stime, &start, &vsize, &rss) != 5)
		return -EINVAL;
	st->cpu_seconds = (double)(utime + stime) / (double)tck;
	bt = boot_time();
	st->start_time_seconds = bt < 0 ? -1 : bt + (double)start / (double)tck;
	st->virtual_bytes = (double)vsize;
	st->resident_bytes = (double)rss * (double)page;
	st->open_fds = (double)procfs_open_fds(proc);
	st->max_fds = max_fds(proc);
	return 0;
}

static void process_hook(struct metrics *m, void *arg)
{
	struct process_stat st;
	const double *v[P_N] = {
	    [P_CPU] = &st.cpu_seconds,	 [P_RSS] = &st.resident_bytes,
	    [P_VSZ] = &st.virtual_bytes, [P_FDS] = &st.open_fds,
	    [P_MAXFDS] = &st.max_fds,	 [P_START] = &st.start_time_seconds,
	};

	if (process_stat_read("/proc/self", &st))
		return;
	for (int i = 0; i < P_N; i++)
		if (*v[i] >= 0)
			series_set(series[i], *v[i]);
}

int process_metrics_register(struct metrics *m)
{
	for (int i = 0; i < P_N; i++) {
		series[i] = descs[i].counter ? metrics_counter1(m, descs[i].name, descs[i].help)
					     : metrics_gauge1(m, descs[i].name, descs[i].help);
		if (!series[i])
			return -errno;
	}
	process_hook(m, NULL);
	return metrics_add_hook(m, process_hook, NULL);
}
