// SPDX-License-Identifier: MIT
/*
 * The agent's side of Prometheus exposition (see expose.h): the [metrics]
 * settings, sysobs_build_info, the standard process_* metrics, and the
 * removal of series whose object is gone once their grace period is over.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "agent/expose.h"
#include "base/log.h"
#include "metrics/nhist.h"
#include "metrics/process_metrics.h"
#include "sysobs_revision.h"

/* [metrics]: field names are the key names (CFG_KEY). */
struct metrics_section {
	bool native_histograms;
	int native_histogram_schema;
	double native_histogram_zero_threshold;
	uint64_t native_histogram_max_buckets;
	uint64_t stale_series_grace; /* ms */
};

#define MK(f, t, d, lo, hi, h) CFG_KEY(struct metrics_section, f, t, d, lo, hi, h)

static const struct cfg_key metrics_keys[] = {
    MK(native_histograms, CFG_BOOL, "true", 0, 0,
       "keep native (exponential) histogram buckets beside the classic ones; protobuf "
       "scrapes carry both"),
    MK(native_histogram_schema, CFG_INT, "3", (uint64_t)NHIST_SCHEMA_MIN, NHIST_SCHEMA_MAX,
       "resolution: -4..8, each power of two split into 2^schema buckets (3: ~9% wide)"),
    MK(native_histogram_zero_threshold, CFG_DOUBLE, "2.938735877055719e-39", 0, UINT64_MAX,
       "observations with |v| at most this count in the zero bucket"),
    MK(native_histogram_max_buckets, CFG_U64, "160", 2, 1u << 16,
       "per series; past it the schema halves (two buckets merge)"),
    MK(stale_series_grace, CFG_DURATION, "5m", 0, 7 * 86400000ULL,
       "how long a series whose object is gone (netns deleted, volume unmounted, collector "
       "stopped) stays in /metrics before it is removed (0 = at the next check)"),
    {0},
};

int expose_config_declare(struct config *cfg)
{
	return cfg_declare(cfg, "metrics", metrics_keys);
}

/* [metrics] into native and *grace_ms. 0, or -EINVAL. */
static int metrics_config(struct config *cfg, struct metrics_native *n, uint64_t *grace_ms)
{
	struct metrics_section s = {0};
	int err = cfg_section_parse(cfg, "metrics", &s);

	n->enabled = s.native_histograms;
	n->schema = s.native_histogram_schema;
	n->zero_threshold = s.native_histogram_zero_threshold;
	n->max_buckets = (unsigned)s.native_histogram_max_buckets;
	*grace_ms = s.stale_series_grace;
	return err;
}

int expose_config_check(struct config *cfg)
{
	struct metrics_native native = {0};
	uint64_t grace_ms;

	return metrics_config(cfg, &native, &grace_ms);
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
	err = metrics_config(cfg, &native, &x->grace_ms);
	if (err)
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
