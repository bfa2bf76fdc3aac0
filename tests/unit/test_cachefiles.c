// SPDX-License-Identifier: MIT
/*
 * Unit tests of the cachefiles collector's pure parts: the log-linear bucket
 * layout shared with BPF, slow-record decoding, volume names, the probe
 * verdict, quantiles; and, on this host, that the BPF backend's probe refuses
 * a kernel without cachefiles_ondemand_read with the precise reason; the
 * daemon_read prototype check on synthetic BTF.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/btf.h>

#include "collectors/cachefiles/backend.h"
#include "collectors/cachefiles/backend_bpf.h"
#include "collectors/cachefiles/cachefiles_decode.h"

static void bucket_edges_are_consistent_with_bounds(void **state)
{
	/* every finite bucket i holds exactly [upper(i-1), upper(i)) */
	for (unsigned i = 0; i < CF_HIST_FINITE; i++) {
		uint64_t hi = cf_hist_upper_ns(i);
		uint64_t lo = i ? cf_hist_upper_ns(i - 1) : 0;

		assert_true(hi > lo);
		assert_int_equal(cf_hist_bucket(lo), i);
		assert_int_equal(cf_hist_bucket(hi - 1), i);
		assert_int_equal(cf_hist_bucket(hi), i + 1);
	}
	assert_int_equal(cf_hist_bucket(0), 0);
	assert_int_equal(cf_hist_bucket(UINT64_MAX), CF_HIST_BUCKETS - 1);
}

static void buckets_span_10us_to_10s_finely(void **state)
{
	const double *bounds = cachefiles_hist_bounds;

	/* the static table is what cf_hist_upper_ns() computes */
	for (unsigned i = 0; i < CF_HIST_FINITE; i++)
		assert_true(bounds[i] == (double)cf_hist_upper_ns(i) / 1e9);
	/* the first bound is below 10 us and the last finite one above 10 s */
	assert_true(bounds[0] <= 10e-6);
	assert_true(bounds[CF_HIST_FINITE - 1] >= 10.0);
	for (unsigned i = 1; i < CF_HIST_FINITE; i++) {
		assert_true(bounds[i] > bounds[i - 1]);
		/* log-linear: each bucket at most 12.5 % of its lower edge wide */
		if (i > 1)
			assert_true((bounds[i] - bounds[i - 1]) / bounds[i - 1] <= 0.125 + 1e-12);
	}
	/* 20 ms and 150 ms land in buckets whose bounds enclose them */
	assert_true(cf_hist_upper_ns(cf_hist_bucket(20000000)) > 20000000);
	assert_true(cf_hist_upper_ns(cf_hist_bucket(20000000) - 1) <= 20000000);
	assert_true(cf_hist_upper_ns(cf_hist_bucket(150000000)) > 150000000);
}

static void quantile_reads_the_bucket_holding_the_rank(void **state)
{
	__u64 b[CF_HIST_BUCKETS] = {0};
	unsigned i20 = cf_hist_bucket(20000000), i150 = cf_hist_bucket(150000000);

	assert_true(isnan(cachefiles_hist_quantile(b, 0.5)));
	b[i20] = 98;
	b[i150] = 2;
	assert_float_equal(cachefiles_hist_quantile(b, 0.5), cf_hist_upper_ns(i20) / 1e9, 1e-12);
	assert_float_equal(cachefiles_hist_quantile(b, 0.98), cf_hist_upper_ns(i20) / 1e9, 1e-12);
	assert_float_equal(cachefiles_hist_quantile(b, 0.99), cf_hist_upper_ns(i150) / 1e9, 1e-12);
	b[CF_HIST_BUCKETS - 1] = 1000;
	assert_true(isinf(cachefiles_hist_quantile(b, 0.99)));
}

static struct cf_slow_record sample_record(void)
{
	struct cf_slow_record r;

	memset(&r, 0, sizeof(r));
	r.end_ns = 5000000000ULL;
	r.latency_ns = 151000000ULL;
	r.offset = 65536;
	r.len = 131072;
	r.ret = 0;
	r.op = CF_OP_READ;
	r.volume_id = 7;
	r.object_debug_id = 42;
	r.object_id = 3;
	r.pid = 1234;
	memcpy(r.comm, "md5sum", 6);
	memcpy(r.volume, "erofs,fsslow", 12);
	return r;
}

static void slow_record_decodes_with_wall_time(void **state)
{
	struct cf_slow_record r = sample_record();
	struct cachefiles_slow s;

	/* ended 1 s before "now" on the monotonic clock */
	assert_int_equal(
	    cachefiles_slow_decode(&r, sizeof(r), 6000000000LL, 1764700000000000000LL, &s), 0);
	assert_int_equal(s.ts_ns, 1764700000000000000LL - 1000000000LL);
	assert_int_equal(s.latency_ns, 151000000ULL);
	assert_int_equal(s.offset, 65536);
	assert_int_equal(s.len, 131072);
	assert_int_equal(s.op, CF_OP_READ);
	assert_int_equal(s.object_id, 3);
	assert_int_equal(s.object_debug_id, 42);
	assert_int_equal(s.pid, 1234);
	assert_string_equal(s.comm, "md5sum");
	assert_false(s.kworker);
	assert_string_equal(s.volume, "erofs,fsslow");
	r.flags = CF_SLOW_KWORKER;
	assert_int_equal(cachefiles_slow_decode(&r, sizeof(r), 6000000000LL, 0, &s), 0);
	assert_true(s.kworker);
	assert_string_equal(cachefiles_op_name(s.op), "read");
	assert_string_equal(cachefiles_op_name(CF_OP_CLOSE), "close");
	assert_string_equal(cachefiles_op_name(CF_OP_MAX), "unknown");
}

static void slow_record_edge_cases(void **state)
{
	struct cf_slow_record r = sample_record();
	struct cachefiles_slow s;

	/* short buffer, unknown op */
	assert_int_equal(cachefiles_slow_decode(&r, sizeof(r) - 1, 0, 0, &s), -EINVAL);
	assert_int_equal(cachefiles_slow_decode(NULL, sizeof(r), 0, 0, &s), -EINVAL);
	r.op = CF_OP_MAX;
	assert_int_equal(cachefiles_slow_decode(&r, sizeof(r), 0, 0, &s), -EINVAL);
	/* unterminated comm and volume stay bounded; empty volume -> by id */
	r = sample_record();
	memset(r.comm, 'x', sizeof(r.comm));
	memset(r.volume, 0, sizeof(r.volume));
	assert_int_equal(cachefiles_slow_decode(&r, sizeof(r), 6000000000LL, 100, &s), 0);
	assert_int_equal(strlen(s.comm), CF_COMM_LEN);
	assert_string_equal(s.volume, "volume-7");
	/* end time in the future (clock skew) -> now */
	r.end_ns = 9000000000ULL;
	assert_int_equal(cachefiles_slow_decode(&r, sizeof(r), 6000000000LL, 100, &s), 0);
	assert_int_equal(s.ts_ns, 100);
}

static void daemon_record_decodes(void **state)
{
	struct cf_daemon_record r = {
	    .ts_ns = 5000000000ULL, .event = CF_DAEMON_DEATH, .pid = 321, .inflight = 4};
	struct cachefiles_daemon_event e;

	memcpy(r.comm, "ondemand_daemon", 15);
	assert_int_equal(cachefiles_daemon_decode(&r, sizeof(r), 6000000000LL, 2000000000LL, &e),
			 0);
	assert_int_equal(e.ts_ns, 1000000000LL);
	assert_int_equal(e.event, CF_DAEMON_DEATH);
	assert_string_equal(cachefiles_daemon_event_name(e.event), "death");
	assert_int_equal(e.pid, 321);
	assert_int_equal(e.inflight, 4);
	assert_string_equal(e.comm, "ondemand_daemon");
	/* short, unknown event, unterminated comm, negative gauge (a race) */
	assert_int_equal(cachefiles_daemon_decode(&r, sizeof(r) - 1, 0, 0, &e), -EINVAL);
	r.event = CF_DAEMON_MAX;
	assert_int_equal(cachefiles_daemon_decode(&r, sizeof(r), 0, 0, &e), -EINVAL);
	assert_string_equal(cachefiles_daemon_event_name(CF_DAEMON_MAX), "unknown");
	r.event = CF_DAEMON_RESTORE;
	r.inflight = -1;
	memset(r.comm, 'x', sizeof(r.comm));
	assert_int_equal(cachefiles_daemon_decode(&r, sizeof(r), 6000000000LL, 100, &e), 0);
	assert_string_equal(cachefiles_daemon_event_name(e.event), "restore");
	assert_int_equal(e.inflight, 0);
	assert_int_equal(strlen(e.comm), CF_COMM_LEN);
}

static void volume_names(void **state)
{
	char b[64];

	cachefiles_volume_name(3, "erofs,abc", b, sizeof(b));
	assert_string_equal(b, "erofs,abc");
	cachefiles_volume_name(3, "", b, sizeof(b));
	assert_string_equal(b, "volume-3");
	cachefiles_volume_name(0, NULL, b, sizeof(b));
	assert_string_equal(b, "unknown");
}

static void probe_verdict_names_what_is_missing(void **state)
{
	struct cachefiles_kernel k = {.has_btf = true,
				      .has_cachefiles = true,
				      .has_read_fn = true,
				      .has_init_fn = true,
				      .traceable = true};
	char why[256];

	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), 0);
	k.has_read_fn = false;
	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), -ENODEV);
	assert_string_equal(
	    why, "kernel has no cachefiles_ondemand_read (CONFIG_CACHEFILES_ONDEMAND off)");
	k.has_read_fn = true;
	k.traceable = false;
	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), -EOPNOTSUPP);
	k.has_cachefiles = false;
	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), -ENODEV);
	assert_string_equal(why, "kernel has no cachefiles_ondemand_read (no cachefiles at all: "
				 "CONFIG_CACHEFILES off)");
	k.module_available = true;
	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), -ENODEV);
	assert_string_equal(why, "kernel has no cachefiles_ondemand_read until the cachefiles "
				 "module is loaded (modprobe cachefiles)");
	k.has_btf = false;
	assert_int_equal(cachefiles_probe_verdict(&k, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "BTF"));
}

/* The real probe against the running kernel. Where the kernel has on-demand
 * cachefiles this only checks that probe agrees with available_filter_functions. */
/* A BTF with cachefiles_ondemand_daemon_read(cache, <p1>, <p2>...) as the
 * kernel spells it: typedefs for ssize_t/size_t, char __user * as a type tag. */
static struct btf *daemon_read_btf(bool read_iter)
{
	struct btf *btf = btf__new_empty();
	int chr, lng, ulng, ssz, sz, cache, cachep, user, ubuf, iter, iterp, proto;

	assert_non_null(btf);
	chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	lng = btf__add_int(btf, "long", 8, BTF_INT_SIGNED);
	ulng = btf__add_int(btf, "unsigned long", 8, 0);
	ssz = btf__add_typedef(btf, "ssize_t", lng);
	sz = btf__add_typedef(btf, "size_t", ulng);
	cache = btf__add_struct(btf, "cachefiles_cache", 8);
	cachep = btf__add_ptr(btf, cache);
	user = btf__add_type_tag(btf, "user", chr);
	ubuf = btf__add_ptr(btf, user);
	iter = btf__add_struct(btf, "iov_iter", 40);
	iterp = btf__add_ptr(btf, iter);
	proto = btf__add_func_proto(btf, ssz);
	assert_true(chr > 0 && ssz > 0 && sz > 0 && cachep > 0 && ubuf > 0 && iterp > 0 &&
		    proto > 0);
	assert_int_equal(btf__add_func_param(btf, "cache", cachep), 0);
	if (read_iter) {
		assert_int_equal(btf__add_func_param(btf, "iter", iterp), 0);
	} else {
		assert_int_equal(btf__add_func_param(btf, "_buffer", ubuf), 0);
		assert_int_equal(btf__add_func_param(btf, "buflen", sz), 0);
	}
	assert_true(btf__add_func(btf, "cachefiles_ondemand_daemon_read", BTF_FUNC_GLOBAL, proto) >
		    0);
	return btf;
}

static void daemon_read_hook_only_for_its_prototype(void **state)
{
	struct btf *btf, *empty;
	char why[200] = "";

	/* 5.19 to 6.12+: ssize_t (struct cachefiles_cache *, char __user *, size_t) */
	btf = daemon_read_btf(false);
	assert_int_equal(cachefiles_daemon_read_proto_check(btf, why, sizeof(why)), 0);
	btf__free(btf);
	/* the read_iter series: (struct cachefiles_cache *, struct iov_iter *) */
	btf = daemon_read_btf(true);
	assert_int_equal(cachefiles_daemon_read_proto_check(btf, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "2 parameters"));
	btf__free(btf);
	empty = btf__new_empty();
	assert_int_equal(cachefiles_daemon_read_proto_check(empty, why, sizeof(why)), -ENOENT);
	btf__free(empty);
}

/* cachefiles_prepare_ondemand_read: enum netfs_io_source (a 1-byte enum,
 * __mode(byte)) (cres, start, *len, i_size, *flags, ino) */
static void prepare_read_hook_only_for_its_prototype(void **state)
{
	for (int variant = 0; variant < 3; variant++) {
		struct btf *btf = btf__new_empty();
		int src, ptr, l, proto;
		char why[200] = "";

		assert_non_null(btf);
		src = btf__add_enum(btf, "netfs_io_source", variant == 2 ? 8 : 1);
		assert_true(src > 0);
		assert_int_equal(btf__add_enum_value(btf, "NETFS_READ_FROM_CACHE", 3), 0);
		l = btf__add_int(btf, "long long", 8, BTF_INT_SIGNED);
		ptr = btf__add_ptr(btf, l);
		proto = btf__add_func_proto(btf, src);
		assert_true(l > 0 && ptr > 0 && proto > 0);
		/* variant 1: five parameters (another kernel's prototype) */
		for (int i = 0; i < (variant == 1 ? 5 : 6); i++)
			assert_int_equal(btf__add_func_param(btf, "a", i % 2 ? l : ptr), 0);
		assert_true(btf__add_func(btf, "cachefiles_prepare_ondemand_read", BTF_FUNC_STATIC,
					  proto) > 0);
		assert_int_equal(cachefiles_prepare_read_proto_check(btf, why, sizeof(why)),
				 variant ? -EINVAL : 0);
		btf__free(btf);
	}
}

/* Issue 33 item 15: what the fexit of cachefiles_ondemand_copen() counts.
 * A reply with a size >= 0 for an OPEN whose anonymous fd the daemon closed
 * first returns 0 without the tracepoint (ondemand.c: -EBADFD to the
 * reader): before, no copen counter saw it (neither the tracepoint's copen
 * nor copen_error nor copen_invalid); now copen_closed. */
static void copen_replies_each_counted_once(void **state)
{
	(void)state;
	/* size >= 0, the tracepoint fired: counted there as copen */
	assert_int_equal(cf_copen_class(0, 0, 1, 1), -1);
	/* size >= 0, returned 0, no tracepoint: the fd was closed first */
	assert_int_equal(cf_copen_class(0, 0, 0, 1), CF_STAT_COPEN_CLOSED);
	/* the daemon's error reply: the OPEN fails with it */
	assert_int_equal(cf_copen_class(0, 1, 0, 1), CF_STAT_COPEN_ERROR);
	/* refused by the kernel: unknown id, bad number, -EINVAL size */
	assert_int_equal(cf_copen_class(-EINVAL, 0, 0, 1), CF_STAT_COPEN_INVALID);
	assert_int_equal(cf_copen_class(-EINVAL, 1, 0, 1), CF_STAT_COPEN_INVALID);
	/* without the tracepoint attached nothing can be told apart */
	assert_int_equal(cf_copen_class(0, 0, 0, 0), -1);
}

/* /proc/self/mountinfo lines, the super options as erofs_show_options
 * prints them */
static void domain_mounts_name_the_shared_volume(void **state)
{
	char vol[CF_VOLUME_NAME_LEN + 1];
	unsigned ma = 9, mi = 9;

	(void)state;
	assert_true(cachefiles_domain_mount("113 67 0:60 / /mnt/a ro,relatime - erofs none "
					    "ro,fsid=img1,domain_id=dom\n",
					    vol, sizeof(vol), &ma, &mi));
	assert_string_equal(vol, "erofs,dom");
	assert_int_equal(ma, 0);
	assert_int_equal(mi, 60);
	/* domain_id first, optional fields (shared:N) before the separator */
	assert_true(
	    cachefiles_domain_mount("118 116 0:61 / /mnt/b ro shared:6 master:2 - erofs none "
				    "ro,domain_id=dom,fsid=img2",
				    vol, sizeof(vol), &ma, &mi));
	assert_string_equal(vol, "erofs,dom");
	assert_int_equal(mi, 61);
	/* an image of its own: its volume is erofs,<fsid>, not shared */
	assert_false(cachefiles_domain_mount("120 67 0:62 / /mnt/c ro - erofs none ro,fsid=img3\n",
					     vol, sizeof(vol), &ma, &mi));
	/* not erofs, an empty domain_id, no separator, a short line */
	assert_false(cachefiles_domain_mount(
	    "30 24 0:27 / /tmp rw - tmpfs tmpfs rw,domain_id=dom\n", vol, sizeof(vol), &ma, &mi));
	assert_false(cachefiles_domain_mount("121 67 0:63 / /mnt/d ro - erofs none "
					     "ro,domain_id=,fsid=x\n",
					     vol, sizeof(vol), &ma, &mi));
	assert_false(cachefiles_domain_mount("121 67 0:63 / /mnt/d ro erofs none ro,domain_id=d\n",
					     vol, sizeof(vol), &ma, &mi));
	assert_false(cachefiles_domain_mount("121 67\n", vol, sizeof(vol), &ma, &mi));
	/* a mount point with an escaped space is one field */
	assert_true(cachefiles_domain_mount("121 67 0:63 / /mnt/my\\040dir ro - erofs none "
					    "ro,domain_id=d2\n",
					    vol, sizeof(vol), &ma, &mi));
	assert_string_equal(vol, "erofs,d2");
}

/* Issue 33 item 14: images of a domain are superblocks. The recorded
 * mountinfo (tests/data/cachefiles/README) has domain "dom" on 5 lines: 2
 * images, one bind-mounted, the other bind-mounted under a shared subtree
 * and propagated; counting lines (as /proc/self/mounts did) said 5. */
static void domain_images_count_superblocks(void **state)
{
	struct cachefiles_domain_tally t = {0};
	const char *dir = getenv("SYSOBS_TEST_DATA");
	char path[4096], line[4096];
	unsigned lines = 0;
	FILE *f;

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/cachefiles/mountinfo_domains", dir);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char vol[CF_VOLUME_NAME_LEN + 1];
		unsigned ma, mi;

		lines += cachefiles_domain_mount(line, vol, sizeof(vol), &ma, &mi) &&
			 !strcmp(vol, "erofs,dom");
		assert_true(cachefiles_domain_tally_line(&t, line) >= 0);
	}
	fclose(f);
	assert_int_equal(lines, 5);
	assert_int_equal(t.n_domains, 2);
	assert_string_equal(t.domains[0].volume, "erofs,dom");
	assert_int_equal(t.domains[0].images, 2);
	assert_string_equal(t.domains[1].volume, "erofs,d2");
	assert_int_equal(t.domains[1].images, 1);
	cachefiles_domain_tally_free(&t);
	cachefiles_domain_tally_free(NULL);
}

static void bpf_probe_on_this_host(void **state)
{
	char why[256] = "";
	int err = cachefiles_backend_bpf.probe(why, sizeof(why));
	FILE *f = fopen("/sys/kernel/btf/vmlinux", "r");

	if (!f) {
		assert_int_equal(err, -ENODEV);
		assert_non_null(strstr(why, "BTF"));
		return;
	}
	fclose(f);
	if (err == 0 || (err == -EPERM && geteuid() != 0)) {
		print_message("this kernel has on-demand cachefiles (%s)\n", why);
		return;
	}
	assert_int_equal(err, -ENODEV);
	assert_non_null(strstr(why, "cachefiles"));
	print_message("probe on this host: %s\n", why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bucket_edges_are_consistent_with_bounds),
	    cmocka_unit_test(buckets_span_10us_to_10s_finely),
	    cmocka_unit_test(quantile_reads_the_bucket_holding_the_rank),
	    cmocka_unit_test(slow_record_decodes_with_wall_time),
	    cmocka_unit_test(slow_record_edge_cases),
	    cmocka_unit_test(daemon_record_decodes),
	    cmocka_unit_test(volume_names),
	    cmocka_unit_test(domain_mounts_name_the_shared_volume),
	    cmocka_unit_test(domain_images_count_superblocks),
	    cmocka_unit_test(copen_replies_each_counted_once),
	    cmocka_unit_test(probe_verdict_names_what_is_missing),
	    cmocka_unit_test(bpf_probe_on_this_host),
	    cmocka_unit_test(daemon_read_hook_only_for_its_prototype),
	    cmocka_unit_test(prepare_read_hook_only_for_its_prototype),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
