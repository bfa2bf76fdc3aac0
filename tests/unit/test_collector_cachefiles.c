// SPDX-License-Identifier: MIT
/*
 * The cachefiles collector through its ops without BPF or root: a fake
 * backend (collectors/cachefiles/backend.h) stands where the BPF one
 * would. Its drain decodes ring-buffer records built here as the BPF
 * program writes them (struct cf_slow_record, struct cf_daemon_record in
 * bpf/cachefiles.h) with the collector's own decoders; its map reads give
 * one histogram, one waiting request and the daemon counters. on_ready and
 * collect run as the agent runs them; the cachefiles_slow and
 * cachefiles_daemon rows and the sysobs_cachefiles_* series are asserted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/config.h"
#include "collectors/cachefiles/backend.h"
#include "collectors/cachefiles/cachefiles_decode.h"
#include "collectors/cachefiles/cachefiles_priv.h"
#include "collectors/collector.h"
#include "storage/table.h"
#include "recording_sink.h"

#define SEC  1000000000ll
#define MSEC 1000000ll

extern const struct collector_ops cachefiles_collector;

/* What the fake kernel holds: ring-buffer records not drained yet, and
 * the maps' totals. */
static struct fake_kernel {
	struct cf_slow_record slow[4];
	size_t n_slow;
	struct cf_daemon_record daemon[4];
	size_t n_daemon;
	__u64 buckets[CF_HIST_BUCKETS];
	uint64_t stats[CF_STAT_MAX];
	int drains;
} kern;

static int fake_probe(char *why, size_t len)
{
	(void)why, (void)len;
	return 0;
}

static int fake_open(const struct cachefiles_backend_cfg *cfg, struct cachefiles_backend **out,
		     char *why, size_t len)
{
	(void)why, (void)len;
	assert_int_equal(cfg->slow_ns, 100 * MSEC); /* slow_threshold's default */
	*out = (struct cachefiles_backend *)&kern;
	return 0;
}

static int fake_fd(struct cachefiles_backend *b)
{
	(void)b;
	return -1;
}

/* As backend_bpf.c's ring-buffer callbacks: decode, deliver; a record that
 * does not decode is dropped. The monotonic clock is at 50 s, the wall
 * clock at 1000 s. */
static int fake_drain(struct cachefiles_backend *b, const struct cachefiles_drain *d)
{
	int n = 0;

	(void)b;
	kern.drains++;
	for (size_t i = 0; i < kern.n_slow; i++) {
		struct cachefiles_slow s;

		if (cachefiles_slow_decode(&kern.slow[i], sizeof(kern.slow[i]), 50 * SEC,
					   1000 * SEC, &s))
			continue;
		d->slow(&s, d->arg);
		n++;
	}
	for (size_t i = 0; i < kern.n_daemon; i++) {
		struct cachefiles_daemon_event e;

		if (cachefiles_daemon_decode(&kern.daemon[i], sizeof(kern.daemon[i]), 50 * SEC,
					     1000 * SEC, &e))
			continue;
		d->daemon(&e, d->arg);
		n++;
	}
	kern.n_slow = kern.n_daemon = 0;
	return n;
}

/* One READ histogram of volume "erofs,img": two fast requests, one slow,
 * one error; 3 s in all. */
static int fake_read_hists(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg)
{
	const struct cachefiles_hist_snapshot h = {
	    .volume = "erofs,img",
	    .op = CF_OP_READ,
	    .buckets = kern.buckets,
	    .sum_ns = 3 * SEC,
	    .ok = 3,
	    .errors = 1,
	    .bytes = 4 * 131072,
	};

	(void)b;
	fn(&h, arg);
	return 0;
}

static int fake_retire(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg)
{
	(void)b, (void)fn, (void)arg;
	return 0;
}

/* One READ the daemon has read and not answered, for 2 s. */
static int fake_read_inflight(struct cachefiles_backend *b, cachefiles_inflight_fn fn, void *arg)
{
	const struct cachefiles_inflight r = {
	    .volume = "erofs,img", .op = CF_OP_READ, .age_ns = 2 * SEC, .picked = true};

	(void)b;
	fn(&r, arg);
	return 0;
}

static int fake_read_stats(struct cachefiles_backend *b, uint64_t stats[CF_STAT_MAX])
{
	(void)b;
	memcpy(stats, kern.stats, sizeof(kern.stats));
	return 0;
}

static int fake_read_pickup(struct cachefiles_backend *b, enum cf_op op, struct cf_pickup *out)
{
	(void)b, (void)op;
	memset(out, 0, sizeof(*out));
	return 0;
}

static void fake_close(struct cachefiles_backend *b)
{
	(void)b;
}

static const struct cachefiles_backend_ops fake_backend = {
    .name = "fake",
    .probe = fake_probe,
    .open = fake_open,
    .fd = fake_fd,
    .drain = fake_drain,
    .read_hists = fake_read_hists,
    .retire_volumes = fake_retire,
    .read_inflight = fake_read_inflight,
    .read_stats = fake_read_stats,
    .read_pickup = fake_read_pickup,
    .close = fake_close,
};

static double series(struct recording_sink *rs, const char *name, const char *labels)
{
	struct rs_series *s = rs_find(rs, name, labels);

	assert_non_null(s);
	return s->value;
}

static void records_and_totals_through_ops(void **state)
{
	struct recording_sink rs;
	struct config cfg = {0};
	struct collector c = {.ops = &cachefiles_collector, .fd = -1};
	const struct cachefiles_slow_row *slow;
	const struct cachefiles_daemon_row *daemon;
	struct cf_slow_record *r;

	(void)state;
	memset(&kern, 0, sizeof(kern));
	rs_init(&rs, "cachefiles");
	rs_collector_attach(&rs, &c);
	assert_int_equal(rs_collector_defaults(&c, &cfg), 0);
	assert_int_equal(cachefiles_init_backend(&c, &fake_backend), 0);
	assert_int_equal(c.interval_ms, 5000);
	assert_int_equal(cachefiles_collector.start(&c), 0);
	assert_int_equal(c.fd, -1);

	/* a READ that took 1.5 s, ended at mono 49 s: wall 999 s */
	r = &kern.slow[kern.n_slow++];
	r->end_ns = 49 * SEC;
	r->latency_ns = 1500 * MSEC;
	r->offset = 65536;
	r->len = 131072;
	r->ret = 0;
	r->op = CF_OP_READ;
	r->object_debug_id = 12;
	r->object_id = 3;
	r->pid = 4242;
	strcpy(r->comm, "cat");
	strcpy(r->volume, "erofs,img");
	/* an op the collector does not know: not decoded, no row */
	kern.slow[kern.n_slow] = *r;
	kern.slow[kern.n_slow++].op = CF_OP_MAX;
	/* the daemon died with two requests waiting */
	kern.daemon[kern.n_daemon].ts_ns = 48 * SEC;
	kern.daemon[kern.n_daemon].event = CF_DAEMON_DEATH;
	kern.daemon[kern.n_daemon].pid = 77;
	kern.daemon[kern.n_daemon].inflight = 2;
	strcpy(kern.daemon[kern.n_daemon++].comm, "nydusd");

	assert_int_equal(cachefiles_collector.on_ready(&c), 0);
	assert_int_equal(rs.n_rows, 2);
	assert_ptr_equal(rs.rows[0].t, &cachefiles_slow_table);
	assert_int_equal(rs.rows[0].ts_ns, 999 * SEC);
	slow = (const struct cachefiles_slow_row *)rs.rows[0].row;
	assert_string_equal(slow->op, "read");
	assert_string_equal(slow->volume, "erofs,img");
	assert_string_equal(slow->comm, "cat");
	assert_true(slow->latency_seconds == 1.5);
	assert_int_equal(slow->offset, 65536);
	assert_int_equal(slow->length, 131072);
	assert_int_equal(slow->result, 0);
	assert_int_equal(slow->pid, 4242);
	assert_int_equal(slow->object_id, 3);
	assert_ptr_equal(rs.rows[1].t, &cachefiles_daemon_table);
	assert_int_equal(rs.rows[1].ts_ns, 998 * SEC);
	daemon = (const struct cachefiles_daemon_row *)rs.rows[1].row;
	assert_string_equal(daemon->event, "death");
	assert_int_equal(daemon->pid, 77);
	assert_int_equal(daemon->inflight, 2);
	assert_string_equal(daemon->comm, "nydusd");
	assert_true(series(&rs, "sysobs_cachefiles_slow_requests_total", "") == 1);
	/* the stored row's id on the latency bucket it counted in */
	assert_string_equal(
	    rs_find(&rs, "sysobs_cachefiles_request_duration_seconds", "read,erofs,img")->exemplar,
	    "request_id=1");

	/* collect: the maps' totals, every interval */
	kern.buckets[0] = 2;
	kern.buckets[CF_HIST_BUCKETS - 1] = 2;
	kern.stats[CF_STAT_FD_WRITE_BYTES] = 8192;
	kern.stats[CF_STAT_DAEMON_DEATH] = 1;
	kern.stats[CF_STAT_RINGBUF_FULL] = 5;
	assert_int_equal(cachefiles_collector.collect(&c), 0);
	assert_int_equal(kern.drains, 2); /* collect drains first */
	assert_int_equal(rs.n_rows, 2);
	assert_true(series(&rs, "sysobs_cachefiles_request_duration_seconds", "read,erofs,img") ==
		    3);
	assert_true(series(&rs, "sysobs_cachefiles_requests_total", "read,erofs,img,ok") == 3);
	assert_true(series(&rs, "sysobs_cachefiles_requests_total", "read,erofs,img,error") == 1);
	assert_true(series(&rs, "sysobs_cachefiles_read_bytes_total", "erofs,img") == 4 * 131072);
	assert_true(series(&rs, "sysobs_cachefiles_inflight_requests", "read,erofs,img,read") == 1);
	assert_true(series(&rs, "sysobs_cachefiles_inflight_requests", "read,erofs,img,unread") ==
		    0);
	assert_true(
	    series(&rs, "sysobs_cachefiles_inflight_oldest_seconds", "read,erofs,img,read") == 2);
	assert_true(series(&rs, "sysobs_cachefiles_daemon_written_bytes_total", "") == 8192);
	assert_true(series(&rs, "sysobs_cachefiles_daemon_events_total", "daemon_death") == 1);
	assert_true(series(&rs, "sysobs_cachefiles_slow_lost_total", "") == 5);
	assert_null(rs_find(&rs, "sysobs_cachefiles_daemon_pickup_seconds", "read"));

	cachefiles_collector.stop(&c);
	assert_null(c.priv);
	free((void *)c.cfg);
	cfg_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(records_and_totals_through_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
