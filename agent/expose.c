// SPDX-License-Identifier: MIT
/*
 * The agent's side of Prometheus exposition (see expose.h): the [metrics]
 * settings, sysobs_build_info, the standard process_* metrics, and the
 * removal of series whose object is gone once their grace period is over.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "agent/expose.h"
#include "base/log.h"
#include "api/nhist.h"
#include "api/process_metrics.h"
#include "sysobs_revision.h"

static const struct cfg_key metrics_keys[] = {
    {"native_histograms", "true",
     "keep native (exponential) histogram buckets beside the classic ones; protobuf "
     "scrapes carry both"},
    {"native_histogram_schema", "3",
     "resolution: -4..8, each power of two split into 2^schema buckets (3: ~9% wide)"},
    {"native_histogram_zero_threshold", "2.938735877055719e-39",
     "observations with |v| at most this count in the zero bucket"},
    {"native_histogram_max_buckets", "160",
     "per series; past it the schema halves (two buckets merge)"},
    {"stale_series_grace", "5m",
     "how long a series whose object is gone (netns deleted, volume unmounted, collector "
     "stopped) stays in /metrics before it is removed (0 = at the next check)"},
    {0},
};

int expose_config_declare(struct config *cfg)
{
	return cfg_declare(cfg, "metrics", metrics_keys);
}

static int parse_native(struct config *cfg, struct metrics_native *n)
{
	const struct cfg_section *sec = cfg_section(cfg, "metrics");
	uint64_t buckets = 0;
	char *end;
	long schema;
	int bad = 0;

	bad |= cfg_get_bool(cfg, "metrics", "native_histograms", &n->enabled);
	bad |= cfg_get_u64(cfg, "metrics", "native_histogram_max_buckets", 2, 1u << 16, &buckets);
	n->max_buckets = (unsigned)buckets;
	errno = 0;
	schema = strtol(cfg_get(sec, "native_histogram_schema"), &end, 10);
	if (errno || *end || end == cfg_get(sec, "native_histogram_schema") ||
	    schema < NHIST_SCHEMA_MIN || schema > NHIST_SCHEMA_MAX)
		bad |= cfg_error(cfg, "metrics", "native_histogram_schema",
				 "must be an integer from %d to %d", NHIST_SCHEMA_MIN,
				 NHIST_SCHEMA_MAX);
	n->schema = (int)schema;
	errno = 0;
	n->zero_threshold = strtod(cfg_get(sec, "native_histogram_zero_threshold"), &end);
	if (errno || *end || !isfinite(n->zero_threshold) || n->zero_threshold < 0)
		bad |= cfg_error(cfg, "metrics", "native_histogram_zero_threshold",
				 "must be a number of at least 0");
	return bad ? -EINVAL : 0;
}

int expose_config_check(struct config *cfg)
{
	struct metrics_native native = {0};
	uint64_t grace_ms;
	int bad = 0;

	bad |= parse_native(cfg, &native);
	bad |= cfg_get_duration_ms(cfg, "metrics", "stale_series_grace", 0, 7 * 86400000ULL,
				   &grace_ms);
	return bad ? -EINVAL : 0;
}

static void removed_count(const char *owner, size_t n, void *arg)
{
	struct expose *x = arg;
	const char *v[] = {owner ? owner : "agent"};

	series_add(metric_series(x->removed, v), (double)n);
}

static int on_expire(int fd, void *arg)
{
	struct expose *x = arg;

	metrics_expire(x->m, clock_mono_ns(), (int64_t)x->grace_ms * 1000000, removed_count, x);
	return 0;
}

int expose_start(struct expose *x, struct config *cfg, struct metrics *m, struct loop *loop)
{
	static const char *const build_labels[] = {"version", "revision", "libbpf", "kernel", NULL};
	static const char *const removed_labels[] = {"collector", NULL};
	struct metrics_native native;
	struct utsname u;
	struct metric *build;
	uint64_t check_ms;
	int err;

	memset(x, 0, sizeof(*x));
	x->m = m;
	if ((err = parse_native(cfg, &native)) ||
	    (err = cfg_get_duration_ms(cfg, "metrics", "stale_series_grace", 0, 7 * 86400000ULL,
				       &x->grace_ms)))
		return err;
	if (metrics_set_native(m, &native))
		return cfg_error(cfg, "metrics", "native_histogram_schema", "invalid settings");

	if (uname(&u))
		strcpy(u.release, "unknown");
	const char *build_values[] = {SYSOBS_VERSION, SYSOBS_REVISION, SYSOBS_LIBBPF_VERSION,
				      u.release};
	build = metrics_gauge(m, "sysobs_build_info",
			      "Always 1; the labels say which sysobsd runs: its version and git "
			      "revision, the libbpf it was built with and the running kernel.",
			      build_labels);
	series_set(metric_series(build, build_values), 1);
	x->removed = metrics_counter(m, "sysobs_series_removed_total",
				     "Series removed from /metrics after their object went away "
				     "(netns deleted, volume unmounted, collector stopped) and the "
				     "[metrics] stale_series_grace passed.",
				     removed_labels);
	if (!build || !x->removed || process_metrics_register(m))
		return -ENOMEM;

	/* Check a few times per grace period, at most every 10 s. */
	check_ms = x->grace_ms / 4;
	if (check_ms < 1000)
		check_ms = 1000;
	if (check_ms > 10000)
		check_ms = 10000;
	if (!loop_add_timer(loop, check_ms, on_expire, x))
		return -ENOMEM;
	return 0;
}
