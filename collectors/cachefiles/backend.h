/* SPDX-License-Identifier: MIT */
/*
 * Measurement backend of the cachefiles collector.
 *
 * The collector (cachefiles.c) owns metrics, the tables and the HTTP routes;
 * a backend only measures. The one backend is BPF on
 * fs/cachefiles/ondemand.c (backend_bpf.c), and this interface is shaped by
 * it: per (fscache volume, op) log-linear histograms with the bucket layout
 * of bpf/cachefiles.h (cf_hist_bucket()), slow requests one by one, requests
 * in flight with their state, daemon lifecycle records, released volumes.
 *
 * EROFS over fscache is deprecated since 6.12 in favour of file-backed
 * mounts and fanotify pre-content events. Honestly, not all of this would
 * fit a backend for those (docs/cachefiles.md, "Successor"): drain,
 * read_inflight, read_pickup and retire_volumes would; read_hists would
 * with "volume" meaning a watched filesystem and no OPEN or CLOSE;
 * read_stats (enum cf_stat: cachefiles tracepoints), the slow records'
 * object ids and the "restore" record are cachefiles-only and would stay
 * 0 or empty. A successor is more likely a collector of its own that
 * shares the buckets and the in-flight logic than a second backend here.
 */
#ifndef SYSOBS_CACHEFILES_BACKEND_H
#define SYSOBS_CACHEFILES_BACKEND_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/cachefiles.h"

struct cachefiles_backend;

struct cachefiles_backend_cfg {
	uint64_t slow_ns; /* requests at least this long are reported one by one */
	/* Kernel BTF to relocate against and to look optional hooks up in;
	 * NULL: the running kernel's. Tests load against edited copies. */
	const char *btf_path;
};

/* One histogram: a (volume, op) pair. */
struct cachefiles_hist_snapshot {
	const char *volume; /* readable name, e.g. "erofs,fsa" */
	enum cf_op op;
	const __u64 *buckets; /* CF_HIST_BUCKETS, not cumulative */
	uint64_t sum_ns;
	uint64_t ok, errors;
	uint64_t bytes; /* READ: bytes requested */
	int64_t inflight;
};

/* A slow request, decoded (see cachefiles_slow_decode()). */
struct cachefiles_slow {
	int64_t ts_ns; /* wall clock when the request completed */
	uint64_t latency_ns;
	uint64_t offset, len;
	int32_t ret;
	uint32_t op; /* enum cf_op */
	uint32_t object_debug_id;
	int32_t object_id;
	uint32_t pid;
	bool kworker; /* the waiting thread is a kworker (fscache's, for OPEN) */
	char comm[CF_COMM_LEN + 1];
	char volume[CF_VOLUME_NAME_LEN + 1];
};

/* A daemon lifecycle event, decoded (see cachefiles_daemon_decode()). */
struct cachefiles_daemon_event {
	int64_t ts_ns;	  /* wall clock */
	uint32_t event;	  /* enum cf_daemon_event */
	uint32_t pid;	  /* tgid of the dying daemon, or of the task that did it */
	int64_t inflight; /* requests waiting for a daemon then */
	char comm[CF_COMM_LEN + 1];
};

/* One request waiting for the daemon now. */
struct cachefiles_inflight {
	const char *volume; /* readable name, as in the histograms */
	enum cf_op op;
	uint64_t age_ns; /* since it was issued */
	bool picked;	 /* read by the daemon, not answered yet */
};

typedef void (*cachefiles_hist_fn)(const struct cachefiles_hist_snapshot *h, void *arg);
typedef void (*cachefiles_inflight_fn)(const struct cachefiles_inflight *r, void *arg);
typedef void (*cachefiles_slow_fn)(const struct cachefiles_slow *s, void *arg);
typedef void (*cachefiles_daemon_fn)(const struct cachefiles_daemon_event *e, void *arg);

/* Where drain() delivers records; both functions get arg. */
struct cachefiles_drain {
	cachefiles_slow_fn slow;
	cachefiles_daemon_fn daemon;
	void *arg;
};

struct cachefiles_backend_ops {
	const char *name;
	/* Can this host be measured? 0, or -ENODEV/-EPERM/-EOPNOTSUPP and a
	 * precise reason in why. Must not load anything into the kernel. */
	int (*probe)(char *why, size_t why_len);
	/* Loads and attaches; *out on success. -errno and why on failure. */
	int (*open)(const struct cachefiles_backend_cfg *cfg, struct cachefiles_backend **out,
		    char *why, size_t why_len);
	/* fd readable when slow requests or daemon events are waiting, or -1. */
	int (*fd)(struct cachefiles_backend *b);
	/* Delivers the waiting slow requests and daemon events; returns how
	 * many, or -errno. */
	int (*drain)(struct cachefiles_backend *b, const struct cachefiles_drain *d);
	/* Calls fn for every histogram seen so far. 0 or -errno. */
	int (*read_hists)(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg);
	/* For every volume released since the last call: calls fn with each
	 * of its histograms and forgets them (the caller keeps the totals).
	 * Returns the number of volumes, or -errno. */
	int (*retire_volumes)(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg);
	/* Calls fn for every request waiting for the daemon now. 0 or -errno. */
	int (*read_inflight)(struct cachefiles_backend *b, cachefiles_inflight_fn fn, void *arg);
	/* Daemon-side counters (enum cf_stat); unsupported ones stay 0. */
	int (*read_stats)(struct cachefiles_backend *b, uint64_t stats[CF_STAT_MAX]);
	/* Daemon pick-up histogram of op (may be all zero). */
	int (*read_pickup)(struct cachefiles_backend *b, enum cf_op op, struct cf_pickup *out);
	void (*close)(struct cachefiles_backend *b); /* accepts NULL */
};

extern const struct cachefiles_backend_ops cachefiles_backend_bpf;

#endif
