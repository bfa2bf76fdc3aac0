/* SPDX-License-Identifier: MIT */
/*
 * The "self" collector: the agent's own CPU time, memory, open fds, threads
 * and storage queue depth. It is polled like any collector and writes a row
 * per poll, so it exercises the whole pipeline (collector -> metrics and
 * queue -> writer -> SQLite -> REST) on any host.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "collectors/collector.h"

struct self_row {
	double cpu_seconds;
	int64_t rss_bytes;
	int64_t open_fds;
	int64_t threads;
	int64_t queue_depth;
};

struct self_state {
	struct metric_series *cpu, *rss, *fds, *threads, *start_time;
	long page_size;
};

static const char *const self_migrations[] = {
    "CREATE TABLE self_samples(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,"
    " cpu_seconds REAL, rss_bytes INTEGER, open_fds INTEGER, threads INTEGER,"
    " queue_depth INTEGER);"
    "CREATE INDEX self_samples_ts ON self_samples(ts);",
    NULL,
};

static int self_bind(sqlite3_stmt *st, const void *row)
{
	const struct self_row *r = row;
	int rc;

	if ((rc = sqlite3_bind_double(st, 3, r->cpu_seconds)) ||
	    (rc = sqlite3_bind_int64(st, 4, r->rss_bytes)) ||
	    (rc = sqlite3_bind_int64(st, 5, r->open_fds)) ||
	    (rc = sqlite3_bind_int64(st, 6, r->threads)))
		return rc;
	return sqlite3_bind_int64(st, 7, r->queue_depth);
}

static const struct store_table self_samples_table = {
    .name = "self_samples",
    .collector = "self",
    .migrations = self_migrations,
    .insert_sql = "INSERT INTO self_samples(id, ts, cpu_seconds, rss_bytes, open_fds, threads,"
		  " queue_depth) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    .bind = self_bind,
    .row_size = sizeof(struct self_row),
};

static const struct store_table *const self_tables[] = {&self_samples_table, NULL};

static const struct cfg_key self_keys[] = {
    {"interval", "10s", "how often the agent samples itself"},
    {0},
};

/* Counts entries of /proc/self/fd (minus ".", ".." and the dir fd itself). */
static int64_t count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int64_t n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* RSS pages and thread count from /proc/self/stat: fields 20 (num_threads)
 * and 24 (rss), counted after the ")" that closes the command name. */
static int read_proc_stat(long *threads, long *rss_pages, double *start_s)
{
	char buf[1024], *p;
	unsigned long long starttime;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	/* After ") " comes field 3 (state). */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld %*d "
		   "%llu %*u %ld",
		   threads, &starttime, rss_pages) != 3)
		return -EINVAL;
	*start_s = (double)starttime / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

static double boot_time_s(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[256];
	double bt = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lf", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static int self_init(struct collector *c)
{
	struct self_state *st;
	uint64_t interval;
	int err;

	err = cfg_get_duration_ms(&c->agent->cfg, c->section, "interval", 10, 86400000, &interval);
	if (err)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->page_size = sysconf(_SC_PAGESIZE);
	c->priv = st;
	c->interval_ms = interval;
	return 0;
}

static int self_start(struct collector *c)
{
	struct self_state *st = c->priv;
	struct metrics *m = c->agent->metrics;
	double start_s = 0;
	long threads, rss;

	st->cpu = metrics_counter1(m, "sysobs_process_cpu_seconds_total",
				   "User and system CPU time spent by sysobsd, in seconds.");
	st->rss = metrics_gauge1(m, "sysobs_process_resident_memory_bytes",
				 "Resident memory of sysobsd, in bytes.");
	st->fds = metrics_gauge1(m, "sysobs_process_open_fds", "Open file descriptors of sysobsd.");
	st->threads = metrics_gauge1(m, "sysobs_process_threads", "Threads of sysobsd.");
	st->start_time = metrics_gauge1(m, "sysobs_process_start_time_seconds",
					"Start time of sysobsd since the unix epoch, in seconds.");
	if (!st->cpu || !st->rss || !st->fds || !st->threads || !st->start_time)
		return -ENOMEM;
	if (read_proc_stat(&threads, &rss, &start_s) == 0)
		series_set(st->start_time, boot_time_s() + start_s);
	return 0;
}

static int self_collect(struct collector *c)
{
	struct self_state *st = c->priv;
	struct self_row row = {0};
	struct rusage ru;
	double start_s;
	long threads = 0, rss_pages = 0;
	int err;

	if (getrusage(RUSAGE_SELF, &ru))
		return -errno;
	row.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
			  ru.ru_stime.tv_usec / 1e6;
	err = read_proc_stat(&threads, &rss_pages, &start_s);
	if (err)
		return err;
	row.rss_bytes = (int64_t)rss_pages * st->page_size;
	row.threads = threads;
	row.open_fds = count_open_fds();
	row.queue_depth = (int64_t)store_queue_depth(c->agent->store);

	series_set(st->cpu, row.cpu_seconds);
	series_set(st->rss, (double)row.rss_bytes);
	series_set(st->fds, (double)row.open_fds);
	series_set(st->threads, (double)row.threads);

	/* A full queue is counted by the store; the sample is simply lost. */
	store_submit(c->agent->store, &self_samples_table, clock_wall_ns(), &row);
	return 0;
}

static void self_stop(struct collector *c)
{
	free(c->priv);
	c->priv = NULL;
}

const struct collector_ops self_collector = {
    .name = "self",
    .help = "the agent's own CPU, memory, fds, threads and queue depth",
    .keys = self_keys,
    .tables = self_tables,
    .init = self_init,
    .start = self_start,
    .collect = self_collect,
    .stop = self_stop,
};
