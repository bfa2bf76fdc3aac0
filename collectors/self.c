/* SPDX-License-Identifier: MIT */
/*
 * The "self" collector: the agent's own CPU time, memory, open fds, threads
 * and storage queue depth, as history. It is polled like any collector and
 * writes a row per poll, so it exercises the whole pipeline (collector ->
 * queue -> writer -> SQLite -> REST) on any host. The live values are the
 * standard process_* metrics, read at every scrape (api/metrics/process_metrics.c);
 * this collector adds only the thread count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procfs.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"

struct self_row {
	double cpu_seconds;
	int64_t rss_bytes;
	int64_t open_fds;
	int64_t threads;
	int64_t queue_depth;
};

struct self_cfg {
	uint64_t interval; /* ms */
};

static const struct metric_desc self_metrics[] = {
    {"sysobs_threads", "Threads of sysobsd.", METRIC_KIND_GAUGE},
    {0},
};

struct self_state {
	struct sink_series *threads;
	long page_size;
};

static const struct event_column self_cols[] = {
    COL(struct self_row, cpu_seconds, COL_REAL, COL_NOT_NULL),
    COL(struct self_row, rss_bytes, COL_INT, COL_NOT_NULL),
    COL(struct self_row, open_fds, COL_INT, COL_NOT_NULL),
    COL(struct self_row, threads, COL_INT, COL_NOT_NULL),
    COL(struct self_row, queue_depth, COL_INT, COL_NOT_NULL),
    {0},
};

static const struct event_table self_samples_table = {
    .name = "self_samples",
    .collector = "self",
    .route = "/api/v1/self/samples",
    .help = "the agent's own CPU, memory, fds, threads and queue depth over time",
    .cols = self_cols,
    .row_size = sizeof(struct self_row),
    .message = &sysobs__v1__self_sample__descriptor,
    .list_message = &sysobs__v1__self_sample_list__descriptor,
};

static const struct event_table *const self_tables[] = {&self_samples_table, NULL};

static const struct cfg_key self_keys[] = {
    CFG_KEY(struct self_cfg, interval, CFG_DURATION, "10s", 10, 86400000,
	    "how often the agent samples itself"),
    {0},
};

/* RSS pages and thread count from /proc/self/stat: fields 20 (num_threads)
 * and 24 (rss), counted after the ")" that closes the command name. */
static int read_proc_stat(long *threads, long *rss_pages)
{
	char buf[1024], *p;
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
		   "%*u %*u %ld",
		   threads, rss_pages) != 2)
		return -EINVAL;
	return 0;
}

static int self_init(struct collector *c)
{
	const struct self_cfg *cfg = c->cfg;
	struct self_state *st;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->page_size = sysconf(_SC_PAGESIZE);
	c->priv = st;
	c->interval_ms = cfg->interval;
	return 0;
}

static int self_start(struct collector *c)
{
	struct self_state *st = c->priv;

	st->threads = sink_series1(c->sink, &self_metrics[0]);
	return st->threads ? 0 : -ENOMEM;
}

static int self_collect(struct collector *c)
{
	struct self_state *st = c->priv;
	struct self_row row = {0};
	struct rusage ru;
	long threads = 0, rss_pages = 0;
	int err;

	if (getrusage(RUSAGE_SELF, &ru))
		return -errno;
	row.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
			  ru.ru_stime.tv_usec / 1e6;
	err = read_proc_stat(&threads, &rss_pages);
	if (err)
		return err;
	row.rss_bytes = (int64_t)rss_pages * st->page_size;
	row.threads = threads;
	row.open_fds = procfs_open_fds("/proc/self");
	row.queue_depth = (int64_t)sink_queue_depth(c->sink);

	sink_set(c->sink, st->threads, (double)row.threads);

	/* A full queue is the sink's business; the sample is simply lost. */
	sink_event(c->sink, &self_samples_table, clock_wall_ns(), &row);
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
    .cfg_size = sizeof(struct self_cfg),
    .metrics = self_metrics,
    .tables = self_tables,
    .init = self_init,
    .start = self_start,
    .collect = self_collect,
    .stop = self_stop,
};
