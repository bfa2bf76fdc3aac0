/* SPDX-License-Identifier: MIT */
/*
 * Pure helpers of the cachefiles collector, apart from I/O (unit-tested):
 * ring-buffer record decoding, histogram bounds, op names, and the probe
 * verdict from what BTF says about the running kernel.
 */
#ifndef SYSOBS_CACHEFILES_DECODE_H
#define SYSOBS_CACHEFILES_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/cachefiles/backend.h"

/* "open", "read", or "unknown". */
const char *cachefiles_op_name(unsigned op);

/* The finite upper bounds in seconds, cf_hist_upper_ns(i) / 1e9. */
extern const double cachefiles_hist_bounds[CF_HIST_FINITE];

/*
 * Decodes one struct cf_slow_record from the ring buffer. mono_now_ns and
 * wall_now_ns are the clocks "now", to turn the record's monotonic end time
 * into wall clock. Returns 0, or -EINVAL for a short record or unknown op.
 */
int cachefiles_slow_decode(const void *buf, size_t len, int64_t mono_now_ns, int64_t wall_now_ns,
			   struct cachefiles_slow *out);

/*
 * Decodes one struct cf_daemon_record (ring buffer daemon_events), with the
 * clocks as for cachefiles_slow_decode(). 0, or -EINVAL for a short record
 * or an unknown event.
 */
int cachefiles_daemon_decode(const void *buf, size_t len, int64_t mono_now_ns, int64_t wall_now_ns,
			     struct cachefiles_daemon_event *out);

/* "death", "restore", "flush", or "unknown". */
const char *cachefiles_daemon_event_name(unsigned event);

/* Readable volume name: the fscache volume key if known, "volume-<id>" if
 * not, "unknown" for id 0. */
void cachefiles_volume_name(uint32_t id, const char *key, char *out, size_t len);

/*
 * What the kernel offers, as found in BTF (and the ftrace filter list).
 * cachefiles_probe_verdict() turns it into 0 or -ENODEV with a precise reason.
 */
struct cachefiles_kernel {
	bool has_btf;	       /* /sys/kernel/btf/vmlinux */
	bool has_cachefiles;   /* struct cachefiles_object in BTF */
	bool module_available; /* cachefiles.ko exists but is not loaded */
	bool has_read_fn;      /* cachefiles_ondemand_read */
	bool has_init_fn;      /* cachefiles_ondemand_init_object */
	bool traceable;	       /* listed in available_filter_functions (or unknown) */
};
int cachefiles_probe_verdict(const struct cachefiles_kernel *k, char *why, size_t len);

/*
 * One line of /proc/self/mountinfo: an EROFS mount with domain_id=D shares
 * the fscache volume "erofs,D" with every image of its domain
 * (fs/erofs/fscache.c, erofs_fscache_register_domain; erofs_show_options
 * prints fsid= and domain_id= among the super options, after " - ").
 * Returns true, the volume name in out and the superblock's device number
 * (field 3, major:minor) for such a line, false for any other.
 */
bool cachefiles_domain_mount(const char *line, char *out, size_t len, unsigned *major,
			     unsigned *minor);

/*
 * Images of each shared EROFS domain, counted as superblocks: a bind mount
 * or a propagated copy of a mount (shared subtrees) is another mountinfo
 * line of the same superblock (same device number), and one image. Fed a
 * mountinfo line at a time; the counts are in domains[0..n_domains).
 */
struct cachefiles_domain_count {
	char volume[CF_VOLUME_NAME_LEN + 1];
	unsigned images;
};
struct cachefiles_domain_tally {
	struct cachefiles_domain_count *domains;
	size_t n_domains, cap_domains;
	uint64_t *devs; /* superblocks seen: major << 32 | minor */
	size_t n_devs, cap_devs;
};
/* 1: a new image of a domain counted, 0: not a domain mount or a superblock
 * already counted, -ENOMEM. */
int cachefiles_domain_tally_line(struct cachefiles_domain_tally *t, const char *line);
void cachefiles_domain_tally_free(struct cachefiles_domain_tally *t);

/* Quantile (0..1) from non-cumulative bucket counts, as the upper bound in
 * seconds of the bucket that holds it; +Inf bucket -> INFINITY; no data -> NAN.
 * Used by tests and the VM harness to check the agent's histograms. */
double cachefiles_hist_quantile(const __u64 *buckets, double q);

#endif
