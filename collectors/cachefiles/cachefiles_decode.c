// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#include "collectors/cachefiles/cachefiles_decode.h"

const char *cachefiles_op_name(unsigned op)
{
	switch (op) {
	case CF_OP_OPEN:
		return "open";
	case CF_OP_READ:
		return "read";
	case CF_OP_CLOSE:
		return "close";
	}
	return "unknown";
}

/*
 * cf_hist_upper_ns(i) / 1e9 as constant expressions, so the bounds are a
 * static table a metric descriptor can point at (the agent registers the
 * histograms before the collector's init runs). Finite bucket 0 ends at
 * 2^CF_HIST_MIN_SHIFT ns; then CF_HIST_SUB buckets per power of two.
 */
#define CF_BOUND(i)                                                                                \
	((double)((unsigned long long)(CF_HIST_SUB + ((i)-1) % CF_HIST_SUB + 1)                    \
		  << (CF_HIST_MIN_SHIFT + ((i)-1) / CF_HIST_SUB - CF_HIST_SUB_SHIFT)) /            \
	 1e9)
#define CF_BOUNDS_POW(k)                                                                           \
	CF_BOUND(1 + 8 * (k)), CF_BOUND(2 + 8 * (k)), CF_BOUND(3 + 8 * (k)),                       \
	    CF_BOUND(4 + 8 * (k)), CF_BOUND(5 + 8 * (k)), CF_BOUND(6 + 8 * (k)),                   \
	    CF_BOUND(7 + 8 * (k)), CF_BOUND(8 + 8 * (k))
_Static_assert(CF_HIST_SUB == 8 && CF_HIST_MAX_SHIFT - CF_HIST_MIN_SHIFT == 21,
	       "the table below spells out 21 powers of two of 8 sub-buckets");

#define CF_BOUNDS_POW7(k)                                                                          \
	CF_BOUNDS_POW(k), CF_BOUNDS_POW(k + 1), CF_BOUNDS_POW(k + 2), CF_BOUNDS_POW(k + 3),        \
	    CF_BOUNDS_POW(k + 4), CF_BOUNDS_POW(k + 5), CF_BOUNDS_POW(k + 6)

const double cachefiles_hist_bounds[] = {
    (double)(1ULL << CF_HIST_MIN_SHIFT) / 1e9,
    CF_BOUNDS_POW7(0),
    CF_BOUNDS_POW7(7),
    CF_BOUNDS_POW7(14),
};
_Static_assert(sizeof(cachefiles_hist_bounds) == CF_HIST_FINITE * sizeof(double),
	       "one bound per finite bucket");

/* Copies a possibly unterminated fixed-size kernel string. */
static void copy_cstr(char *dst, size_t dst_len, const char *src, size_t src_len)
{
	size_t n = strnlen(src, src_len);

	if (n >= dst_len)
		n = dst_len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Wall time of a CLOCK_MONOTONIC instant; never in the future. */
static int64_t cf_wall_time(uint64_t mono_ns, int64_t mono_now_ns, int64_t wall_now_ns)
{
	if ((int64_t)mono_ns > mono_now_ns || mono_ns == 0)
		return wall_now_ns;
	return wall_now_ns - (mono_now_ns - (int64_t)mono_ns);
}

int cachefiles_slow_decode(const void *buf, size_t len, int64_t mono_now_ns, int64_t wall_now_ns,
			   struct cachefiles_slow *out)
{
	struct cf_slow_record r;

	if (!buf || len < sizeof(r))
		return -EINVAL;
	memcpy(&r, buf, sizeof(r));
	if (r.op >= CF_OP_MAX)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* end_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns); never in the future */
	out->ts_ns = cf_wall_time(r.end_ns, mono_now_ns, wall_now_ns);
	out->latency_ns = r.latency_ns;
	out->offset = r.offset;
	out->len = r.len;
	out->ret = r.ret;
	out->op = r.op;
	out->object_debug_id = r.object_debug_id;
	out->object_id = r.object_id;
	out->pid = r.pid;
	out->kworker = r.flags & CF_SLOW_KWORKER;
	copy_cstr(out->comm, sizeof(out->comm), r.comm, sizeof(r.comm));
	if (r.volume[0])
		copy_cstr(out->volume, sizeof(out->volume), r.volume, sizeof(r.volume));
	else
		cachefiles_volume_name(r.volume_id, NULL, out->volume, sizeof(out->volume));
	return 0;
}

int cachefiles_daemon_decode(const void *buf, size_t len, int64_t mono_now_ns, int64_t wall_now_ns,
			     struct cachefiles_daemon_event *out)
{
	struct cf_daemon_record r;

	if (!buf || len < sizeof(r))
		return -EINVAL;
	memcpy(&r, buf, sizeof(r));
	if (r.event >= CF_DAEMON_MAX)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->ts_ns = cf_wall_time(r.ts_ns, mono_now_ns, wall_now_ns);
	out->event = r.event;
	out->pid = r.pid;
	out->inflight = r.inflight < 0 ? 0 : r.inflight;
	copy_cstr(out->comm, sizeof(out->comm), r.comm, sizeof(r.comm));
	return 0;
}

const char *cachefiles_daemon_event_name(unsigned event)
{
	switch (event) {
	case CF_DAEMON_DEATH:
		return "death";
	case CF_DAEMON_RESTORE:
		return "restore";
	case CF_DAEMON_FLUSH:
		return "flush";
	}
	return "unknown";
}

void cachefiles_volume_name(uint32_t id, const char *key, char *out, size_t len)
{
	if (key && key[0])
		snprintf(out, len, "%s", key);
	else if (id)
		snprintf(out, len, "volume-%u", id);
	else
		snprintf(out, len, "unknown");
}

int cachefiles_probe_verdict(const struct cachefiles_kernel *k, char *why, size_t len)
{
	if (!k->has_btf) {
		snprintf(why, len,
			 "kernel has no BTF (/sys/kernel/btf/vmlinux missing, "
			 "CONFIG_DEBUG_INFO_BTF off): cannot attach fentry programs");
		return -ENODEV;
	}
	if (!k->has_cachefiles && k->module_available) {
		snprintf(why, len,
			 "kernel has no cachefiles_ondemand_read until the cachefiles "
			 "module is loaded (modprobe cachefiles)");
		return -ENODEV;
	}
	if (!k->has_cachefiles) {
		snprintf(why, len,
			 "kernel has no cachefiles_ondemand_read (no cachefiles at all: "
			 "CONFIG_CACHEFILES off)");
		return -ENODEV;
	}
	if (!k->has_read_fn || !k->has_init_fn) {
		snprintf(why, len, "kernel has no %s (CONFIG_CACHEFILES_ONDEMAND off)",
			 !k->has_read_fn ? "cachefiles_ondemand_read"
					 : "cachefiles_ondemand_init_object");
		return -ENODEV;
	}
	if (!k->traceable) {
		snprintf(why, len,
			 "cachefiles_ondemand_read is not traceable "
			 "(not in available_filter_functions)");
		return -EOPNOTSUPP;
	}
	return 0;
}

bool cachefiles_domain_mount(const char *line, char *out, size_t len, unsigned *major,
			     unsigned *minor)
{
	char type[32], opts[1024];
	const char *o, *sep;

	/* id parent major:minor root mountpoint options [optional...] - type
	 * source superoptions; spaces inside a field are escaped (\040) by
	 * the kernel, so " - " only ever separates the optional fields from
	 * the filesystem's. */
	if (sscanf(line, "%*u %*u %u:%u", major, minor) != 2)
		return false;
	sep = strstr(line, " - ");
	if (!sep || sscanf(sep + 3, "%31s %*s %1023s", type, opts) != 2 || strcmp(type, "erofs"))
		return false;
	for (o = opts; o; o = strchr(o, ',') ? strchr(o, ',') + 1 : NULL) {
		size_t n;

		if (strncmp(o, "domain_id=", 10))
			continue;
		o += 10;
		n = strcspn(o, ",");
		if (!n)
			return false;
		snprintf(out, len, "erofs,%.*s", (int)n, o);
		return true;
	}
	return false;
}

int cachefiles_domain_tally_line(struct cachefiles_domain_tally *t, const char *line)
{
	char vol[CF_VOLUME_NAME_LEN + 1];
	unsigned major, minor;
	uint64_t dev;
	size_t i;
	void *p;

	if (!cachefiles_domain_mount(line, vol, sizeof(vol), &major, &minor))
		return 0;
	dev = (uint64_t)major << 32 | minor;
	for (i = 0; i < t->n_devs; i++)
		if (t->devs[i] == dev)
			return 0; /* a bind mount or propagated copy */
	p = array_grow(t->devs, &t->cap_devs, t->n_devs, sizeof(*t->devs), 8);
	if (!p)
		return -ENOMEM;
	t->devs = p;
	for (i = 0; i < t->n_domains; i++)
		if (!strcmp(t->domains[i].volume, vol))
			break;
	if (i == t->n_domains) {
		p = array_grow(t->domains, &t->cap_domains, t->n_domains, sizeof(*t->domains), 4);
		if (!p)
			return -ENOMEM;
		t->domains = p;
		snprintf(t->domains[i].volume, sizeof(t->domains[i].volume), "%s", vol);
		t->domains[i].images = 0;
		t->n_domains++;
	}
	t->devs[t->n_devs++] = dev;
	t->domains[i].images++;
	return 1;
}

void cachefiles_domain_tally_free(struct cachefiles_domain_tally *t)
{
	if (!t)
		return;
	free(t->domains);
	free(t->devs);
	memset(t, 0, sizeof(*t));
}

double cachefiles_hist_quantile(const __u64 *buckets, double q)
{
	uint64_t total = 0, cum = 0;
	double rank;
	unsigned i;

	for (i = 0; i < CF_HIST_BUCKETS; i++)
		total += buckets[i];
	if (!total)
		return NAN;
	rank = q * (double)total;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < CF_HIST_FINITE; i++) {
		cum += buckets[i];
		if ((double)cum >= rank)
			return (double)cf_hist_upper_ns(i) / 1e9;
	}
	return INFINITY;
}
