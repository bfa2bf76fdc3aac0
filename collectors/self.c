/* SPDX-License-Identifier: MIT */
/*
 * The "self" collector: the agent's own CPU time, memory, open fds, threads
 * and storage queue depth, as history. It is polled like any collector and
 * writes a row per poll, so it exercises the whole pipeline (collector ->
 * queue -> writer -> SQLite -> REST) on any host. The live values are the
 * standard process_* metrics, read at every scrape (metrics/process_metrics.c);
 * this collector adds the thread count, and what the agent's own BPF
 * programs cost the kernel (self_bpf.c): their run count and run time, with
 * the kernel's run statistics held on while the agent runs (bpf_stats).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procfs.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"
#include "collectors/self_bpf.h"

struct self_row {
	double cpu_seconds;
	int64_t rss_bytes;
	int64_t open_fds;
	int64_t threads;
	int64_t queue_depth;
};

struct self_cfg {
	uint64_t interval; /* ms */
	bool bpf_stats;
	const char *proc; /* the agent's /proc directory; a test points it at a fixed tree */
};

static const char *const self_prog_labels[] = {"program", NULL};

enum { SELF_M_THREADS, SELF_M_BPF_RUN_SECONDS, SELF_M_BPF_RUNS };
static const struct metric_desc self_metrics[] = {
    [SELF_M_THREADS] = {"sysobs_threads", "Threads of sysobsd.", METRIC_KIND_GAUGE},
    [SELF_M_BPF_RUN_SECONDS] = {"sysobs_bpf_program_run_seconds_total",
				"Time the kernel spent running this BPF program of sysobsd "
				"(bpf_prog_info.run_time_ns; counted while run statistics are on: "
				"[collector.self] bpf_stats).",
				METRIC_KIND_COUNTER, self_prog_labels},
    [SELF_M_BPF_RUNS] = {"sysobs_bpf_program_runs_total",
			 "Runs of this BPF program of sysobsd (bpf_prog_info.run_cnt; counted "
			 "while run statistics are on).",
			 METRIC_KIND_COUNTER, self_prog_labels},
    {0},
};

#define SELF_BPF_PROGS_MAX 32

struct self_state {
	struct sink_series *threads;
	struct sink_family *bpf_seconds, *bpf_runs;
	int stats_fd; /* BPF_ENABLE_STATS, -1 none */
	long page_size, clk_tck;
	char fd_dir[4096]; /* <proc>/fd */
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
    CFG_KEY(struct self_cfg, bpf_stats, CFG_BOOL, "true", 0, 0,
	    "keep the kernel's BPF run statistics on while sysobsd runs (BPF_ENABLE_STATS), for "
	    "sysobs_bpf_program_run_seconds_total; host-wide: every BPF program then pays two "
	    "clock reads per run"),
    CFG_KEY(struct self_cfg, proc, CFG_STRING, "/proc/self", 0, 0,
	    "the /proc directory the agent reads about itself (stat, fd/); only tests change it, "
	    "to replay a fixed tree"),
    {0},
};

struct self_stat {
	unsigned long utime, stime; /* clock ticks */
	long threads, rss_pages;
};

/* CPU ticks, thread count and RSS pages from <proc>/stat: fields 14 and 15
 * (utime, stime), 20 (num_threads) and 24 (rss), counted after the ")" that
 * closes the command name. */
static int read_proc_stat(const char *proc, struct self_stat *out)
{
	char buf[1024], path[4096], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/stat", proc);
	f = fopen(path, "r");
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
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %ld %*d "
		   "%*u %*u %ld",
		   &out->utime, &out->stime, &out->threads, &out->rss_pages) != 4)
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
	st->clk_tck = sysconf(_SC_CLK_TCK);
	snprintf(st->fd_dir, sizeof(st->fd_dir), "%s/fd", cfg->proc);
	st->stats_fd = -1;
	c->priv = st;
	c->interval_ms = cfg->interval;
	/* Before the agent drops its privileges: it needs CAP_SYS_ADMIN. */
	if (cfg->bpf_stats) {
		st->stats_fd = self_bpf_stats_enable();
		if (st->stats_fd < 0)
			log_warn("self",
				 "BPF run statistics not enabled (%s): "
				 "sysobs_bpf_program_run_seconds_total counts only while another "
				 "holder or kernel.bpf_stats_enabled keeps them on",
				 strerror(-st->stats_fd));
	}
	return 0;
}

/* Each program's run count and time, summed by name (a name the agent
 * loads twice is one series). */
static void self_bpf_publish(struct collector *c, struct self_state *st)
{
	struct self_bpf_prog p[SELF_BPF_PROGS_MAX];
	int n = self_bpf_progs(st->fd_dir, p, SELF_BPF_PROGS_MAX);

	for (int i = 0; i < n; i++) {
		const char *values[2] = {p[i].name, NULL};
		uint64_t cnt = p[i].run_cnt, ns = p[i].run_time_ns;

		if (!p[i].name[0])
			continue;
		for (int j = i + 1; j < n; j++) {
			if (!strcmp(p[j].name, p[i].name)) {
				cnt += p[j].run_cnt, ns += p[j].run_time_ns;
				p[j].name[0] = '\0';
			}
		}
		sink_set(c->sink, sink_series(c->sink, st->bpf_runs, values), (double)cnt);
		sink_set(c->sink, sink_series(c->sink, st->bpf_seconds, values), (double)ns / 1e9);
	}
}

static int self_start(struct collector *c)
{
	struct self_state *st = c->priv;

	st->threads = sink_series1(c->sink, &self_metrics[SELF_M_THREADS]);
	st->bpf_seconds = sink_family(c->sink, &self_metrics[SELF_M_BPF_RUN_SECONDS]);
	st->bpf_runs = sink_family(c->sink, &self_metrics[SELF_M_BPF_RUNS]);
	return st->threads && st->bpf_seconds && st->bpf_runs ? 0 : -ENOMEM;
}

static int self_collect(struct collector *c)
{
	const struct self_cfg *cfg = c->cfg;
	struct self_state *st = c->priv;
	struct self_row row = {0};
	struct self_stat ps;
	int err;

	/* Everything from the one /proc directory (not getrusage()), so that a
	 * fixed tree gives fixed figures (tests/golden/self). */
	err = read_proc_stat(cfg->proc, &ps);
	if (err)
		return err;
	row.cpu_seconds = (double)(ps.utime + ps.stime) / (double)st->clk_tck;
	row.rss_bytes = (int64_t)ps.rss_pages * st->page_size;
	row.threads = ps.threads;
	row.open_fds = procfs_open_fds(cfg->proc);
	row.queue_depth = (int64_t)sink_queue_depth(c->sink);

	sink_set(c->sink, st->threads, (double)row.threads);
	self_bpf_publish(c, st);

	/* A full queue is the sink's business; the sample is simply lost. */
	sink_event(c->sink, &self_samples_table, clock_wall_ns(), &row);
	return 0;
}

static void self_stop(struct collector *c)
{
	struct self_state *st = c->priv;

	if (st && st->stats_fd >= 0)
		close(st->stats_fd);
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
