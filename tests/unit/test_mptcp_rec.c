/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the mptcp collector's recording format (mptcp_rec.c), the
 * input of [collector.mptcp] replay = FILE: a file built here record by
 * record reads back field for field; the checked-in recording of golden.mptcp
 * (tests/data/golden/mptcp/events.rec) checks, and every prefix of it that
 * ends inside a record is refused as truncated; each other kind of bad input
 * (magic, version, flags, an absurd length, an unknown kind, a record before
 * its namespace's WATCH, a bad path, too many namespaces) is refused with
 * the offset and the reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/mptcp/mptcp_rec.h"

#define NETNS_A 4026532375ull
#define NETNS_B 4026532440ull

struct file {
	uint8_t b[4096];
	size_t len;
};

static void file_start(struct file *f)
{
	mptcp_rec_file_header(f->b);
	f->len = MPTCP_REC_FILE_HDR;
}

/* Appends a record; returns its offset. */
static size_t file_add(struct file *f, unsigned kind, unsigned flags, uint64_t netns, int64_t t,
		       const void *data, size_t len)
{
	struct mptcp_rec r = {
	    .kind = kind, .flags = flags, .family = 0x1d, .time_ns = t, .netns = netns, .len = len};
	size_t at = f->len;

	mptcp_rec_header(f->b + f->len, &r);
	if (len)
		memcpy(f->b + f->len + MPTCP_REC_HDR, data, len);
	f->len += MPTCP_REC_HDR + len;
	return at;
}

static char err[256];

static long check(const struct file *f, size_t max_netns)
{
	err[0] = '\0';
	return mptcp_rec_check(f->b, f->len, max_netns, err, sizeof(err));
}

static void test_round_trip(void **state)
{
	static const char dgram[] = "\x14\0\0\0\x1d\0\0\0datagram";
	struct file f;
	struct mptcp_rec r;
	size_t off = 0;

	(void)state;
	file_start(&f);
	assert_int_equal(check(&f, 4), 0); /* a header alone: nothing to replay */
	file_add(&f, MPTCP_REC_WATCH, MPTCP_REC_F_SIDE, NETNS_A, 100, "/run/netns/a", 12);
	file_add(&f, MPTCP_REC_DGRAM, 0, NETNS_A, 250, dgram, sizeof(dgram));
	file_add(&f, MPTCP_REC_OVERRUN, 0, NETNS_A, -5, NULL, 0);
	assert_int_equal(check(&f, 4), 3);
	assert_int_equal(mptcp_rec_next(f.b, f.len, &off, &r, err, sizeof(err)), 1);
	assert_int_equal(r.kind, MPTCP_REC_WATCH);
	assert_int_equal(r.flags, MPTCP_REC_F_SIDE);
	assert_int_equal(r.family, 0x1d);
	assert_true(r.netns == NETNS_A);
	assert_int_equal(r.time_ns, 100);
	assert_int_equal(r.len, 12);
	assert_memory_equal(r.data, "/run/netns/a", 12);
	assert_int_equal(mptcp_rec_next(f.b, f.len, &off, &r, err, sizeof(err)), 1);
	assert_int_equal(r.kind, MPTCP_REC_DGRAM);
	assert_int_equal(r.time_ns, 250);
	assert_int_equal(r.len, sizeof(dgram));
	assert_memory_equal(r.data, dgram, sizeof(dgram));
	assert_int_equal(mptcp_rec_next(f.b, f.len, &off, &r, err, sizeof(err)), 1);
	assert_int_equal(r.kind, MPTCP_REC_OVERRUN);
	assert_int_equal(r.time_ns, -5);
	assert_int_equal(r.len, 0);
	assert_int_equal(mptcp_rec_next(f.b, f.len, &off, &r, err, sizeof(err)), 0);
	assert_int_equal(off, f.len);
}

/* The fixture of golden.mptcp into f. */
static void load_fixture(struct file *f)
{
	const char *dir = getenv("SYSOBS_TEST_DATA");
	char path[512];
	FILE *fp;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/golden/mptcp/events.rec", dir);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	f->len = fread(f->b, 1, sizeof(f->b), fp);
	assert_true(f->len > MPTCP_REC_FILE_HDR && f->len < sizeof(f->b));
	fclose(fp);
}

static void test_fixture_and_its_truncations(void **state)
{
	struct file f, cut;
	size_t bounds[64], n_bounds = 0, off = 0;
	struct mptcp_rec r;
	long n;

	(void)state;
	load_fixture(&f);
	n = check(&f, 64);
	assert_true(n > 20);
	bounds[n_bounds++] = MPTCP_REC_FILE_HDR;
	while (mptcp_rec_next(f.b, f.len, &off, &r, err, sizeof(err)) == 1)
		bounds[n_bounds++] = off;
	assert_int_equal(n_bounds, (size_t)n + 1);
	for (size_t len = 0; len < f.len; len++) {
		size_t whole = 0;

		memcpy(cut.b, f.b, len);
		cut.len = len;
		for (size_t i = 0; i < n_bounds; i++)
			whole += bounds[i] == len;
		if (whole) {
			assert_true(check(&cut, 64) >= 0);
			continue;
		}
		assert_int_equal(check(&cut, 64), -EINVAL);
		assert_true(strstr(err, len < MPTCP_REC_FILE_HDR ? "not a sysobs MPTCP recording"
								 : "truncated record") != NULL);
	}
}

static void test_bad_header(void **state)
{
	struct file f;

	(void)state;
	file_start(&f);
	f.b[0] = 'X';
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 0: not a sysobs MPTCP recording (no SYSOBSMP header)");
	file_start(&f);
	f.b[8] = 2;
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 8: format version 2, this sysobs reads 1");
	file_start(&f);
	f.b[12] = 1;
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 12: unknown header flags 0x1");
}

static void test_bad_records(void **state)
{
	struct file f;
	size_t at;

	(void)state;
	/* An absurd length: refused before anything is read past the header. */
	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_A, 1, "self", 4);
	at = file_add(&f, MPTCP_REC_DGRAM, 0, NETNS_A, 2, "x", 1);
	memset(f.b + at, 0xff, 4);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 44: record length 4294967295 over the maximum 65536");
	/* A length within the maximum but past the end. */
	f.b[at] = 200, f.b[at + 1] = 0, f.b[at + 2] = 0, f.b[at + 3] = 0;
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 44: truncated record (200 bytes announced, 1 left)");

	file_start(&f);
	file_add(&f, MPTCP_REC_DGRAM, 0, NETNS_A, 1, "x", 1);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 16: record of netns 4026532375 before its WATCH");

	file_start(&f);
	file_add(&f, 9, 0, NETNS_A, 1, "x", 1);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 16: unknown record kind 9");

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_A, 1, "a\0b", 3);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_true(strstr(err, "WATCH record: a path of 1..255 bytes without NUL") != NULL);

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, 0, 1, "self", 4);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 16: WATCH record of netns 0");

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 4, NETNS_A, 1, "self", 4);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 16: WATCH record with unknown flags 0x4");

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_A, 1, "self", 4);
	file_add(&f, MPTCP_REC_DGRAM, 1, NETNS_A, 1, "x", 1);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 44: record of kind 2 with flags 0x1");

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_A, 1, "self", 4);
	file_add(&f, MPTCP_REC_OVERRUN, 0, NETNS_A, 1, "x", 1);
	assert_int_equal(check(&f, 4), -EINVAL);
	assert_string_equal(err, "offset 44: OVERRUN record with 1 bytes of payload");

	file_start(&f);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_A, 1, "/a", 2);
	file_add(&f, MPTCP_REC_WATCH, 0, NETNS_B, 1, "/b", 2);
	assert_int_equal(check(&f, 2), 2);
	assert_int_equal(check(&f, 1), -EINVAL);
	assert_string_equal(err, "offset 42: more than 1 namespaces");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_fixture_and_its_truncations),
	    cmocka_unit_test(test_bad_header),
	    cmocka_unit_test(test_bad_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
