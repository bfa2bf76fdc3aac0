// SPDX-License-Identifier: MIT
/* The drops recording ([collector.drops] record / replay): what the writer
 * writes reads back item by item; every cut of a file and every absurd
 * record is refused with its offset and reason; the kernel symbols the
 * recorder keeps name an address as the full table did. */
#include <errno.h>
#include <linux/types.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf/drops.h"
#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_recfile.h"

#define NCPUS 3

static char path[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_drops_recfile.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* One of each record (path is empty, as mkstemp made it): a reason, a sample, a value of each map,
 * a symbol, the collect. */
static void write_one_of_each(void)
{
	struct drops_rec_writer *w = drops_rec_create(path, NCPUS, 0);
	struct drops_key key = {.reason = 3, .l3_proto = 0x0800, .l4_proto = 17, .netns = 7};
	uint64_t counts[NCPUS] = {1, 2, 3}, stats[NCPUS] = {4, 5, 6};
	struct drops_slot slots[NCPUS] = {{.key = key, .count = 9}};
	uint32_t slot = 5, stat = 1;
	const char rb[] = "ring-buffer record";

	assert_non_null(w);
	assert_int_equal(drops_rec_reason(w, 3, "NO_SOCKET"), 0);
	assert_int_equal(drops_rec_sample(w, -100, 200, rb, sizeof(rb)), 0);
	assert_int_equal(
	    drops_rec_map(w, DROPS_MAP_COUNTS, &key, sizeof(key), counts, sizeof(counts)), 0);
	assert_int_equal(
	    drops_rec_map(w, DROPS_MAP_SLOTS, &slot, sizeof(slot), slots, sizeof(slots)), 0);
	assert_int_equal(
	    drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), stats, sizeof(stats)), 0);
	assert_int_equal(drops_rec_ksym(w, "ffffffff81000000 t __udp4_lib_rcv"), 0);
	assert_int_equal(drops_rec_collect(w, 12345), 0);
	drops_rec_close(w);
}

static void test_round_trip(void **state)
{
	struct drops_rec r;
	struct drops_slot slot;
	uint64_t v;
	char err[256];

	(void)state;
	write_one_of_each();
	assert_int_equal(drops_rec_load(&r, path, err, sizeof(err)), 0);
	assert_int_equal(r.ncpus, NCPUS);
	assert_int_equal(r.n, 7);
	assert_int_equal(r.nreasons, 1);
	assert_int_equal(r.nsamples, 1);
	assert_int_equal(r.ncollects, 1);
	assert_int_equal(r.nksyms, 1);
	assert_int_equal(r.it[0].type, DROPS_REC_REASON);
	assert_int_equal(r.it[0].value, 3);
	assert_memory_equal(r.it[0].data, "NO_SOCKET", 9);
	assert_int_equal(r.it[1].type, DROPS_REC_SAMPLE);
	assert_int_equal(r.it[1].a, -100);
	assert_int_equal(r.it[1].b, 200);
	assert_string_equal((const char *)r.it[1].data, "ring-buffer record");
	assert_int_equal(r.it[2].map, DROPS_MAP_COUNTS);
	assert_int_equal(r.it[2].klen, sizeof(struct drops_key));
	assert_int_equal(r.it[2].len, NCPUS * sizeof(uint64_t));
	/* a record's data is not aligned in the file: copied out, as the
	 * replay does */
	memcpy(&v, (const uint8_t *)r.it[2].data + 2 * sizeof(v), sizeof(v));
	assert_int_equal(v, 3);
	assert_int_equal(r.it[3].map, DROPS_MAP_SLOTS);
	memcpy(&slot, r.it[3].data, sizeof(slot));
	assert_int_equal(slot.count, 9);
	assert_int_equal(r.it[4].map, DROPS_MAP_STATS);
	assert_int_equal(r.it[5].type, DROPS_REC_KSYM);
	assert_int_equal(r.it[6].type, DROPS_REC_COLLECT);
	assert_int_equal(r.it[6].a, 12345);
	drops_rec_free(&r);
}

static uint8_t *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(4096);

	assert_non_null(f);
	*len = fread(buf, 1, 4096, f);
	fclose(f);
	return buf;
}

/* Every cut inside a record is refused, naming its offset; a cut between
 * records is a shorter, valid recording. */
static void test_every_cut(void **state)
{
	size_t len, bounds = 0;
	uint8_t *buf;
	struct drops_rec r;
	char err[256];

	(void)state;
	write_one_of_each();
	buf = slurp(&len);
	for (size_t cut = 0; cut < len; cut++) {
		int ret = drops_rec_parse(&r, buf, cut, err, sizeof(err));

		if (!ret) {
			bounds++;
			drops_rec_free(&r);
			continue;
		}
		assert_int_equal(ret, -EINVAL);
		if (cut < DROPS_REC_HDR)
			assert_non_null(strstr(err, "not a drops recording"));
		else
			assert_non_null(strstr(err, "truncated record"));
		assert_null(r.it); /* nothing half-parsed */
	}
	assert_int_equal(bounds, 7); /* after the header and after each of 6 records */
	free(buf);
}

static void expect_refused(const uint8_t *buf, size_t len, const char *what)
{
	struct drops_rec r;
	char err[256];

	assert_int_equal(drops_rec_parse(&r, buf, len, err, sizeof(err)), -EINVAL);
	if (!strstr(err, what))
		fail_msg("'%s' does not say '%s'", err, what);
}

static void test_absurd(void **state)
{
	uint8_t buf[256] __attribute__((aligned(8)));
	uint32_t *u = (uint32_t *)(buf + 16);
	char msg[64];

	(void)state;
	memcpy(buf, "SYSOBSDR\1\0\0\0\3\0\0\0", 16);
	u[0] = 9, u[1] = 0;
	expect_refused(buf, 24, "record at offset 16: unknown record type 9");
	u[0] = DROPS_REC_MAP, u[1] = 8, u[2] = 42, u[3] = 4;
	expect_refused(buf, 32, "unknown map 42");
	/* a stats value of one CPU where the header says three */
	u[0] = DROPS_REC_MAP, u[1] = 20, u[2] = DROPS_MAP_STATS, u[3] = 4, u[4] = 0;
	expect_refused(buf, 16 + 8 + 20, "want 4 and 24");
	/* a stats index past DROPS_STAT_MAX */
	u[1] = 8 + 4 + 24, u[4] = DROPS_STAT_MAX;
	memset(&u[5], 0, 24);
	snprintf(msg, sizeof(msg), "key %d out of range", DROPS_STAT_MAX);
	expect_refused(buf, 16 + 8 + 36, msg);
	u[0] = DROPS_REC_REASON, u[1] = 6, u[2] = 3;
	memcpy(&u[3], "A\n", 2);
	expect_refused(buf, 16 + 8 + 6, "not printable");
	u[0] = DROPS_REC_SAMPLE, u[1] = DROPS_REC_LEN_MAX + 1;
	expect_refused(buf, 24, "bytes (at most 1048576)");
	memcpy(buf + 8, "\1\0\0\0\0\0\0\0", 8);
	expect_refused(buf, 16, "0 CPUs in the header");
	memcpy(buf + 8, "\2\0\0\0\1\0\0\0", 8);
	expect_refused(buf, 16, "recording version 2");
}

/* The line the recorder keeps for an address names it, in a table of that
 * line alone, as the full table does. */
static void test_ksym_line(void **state)
{
	static const char table[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81001000 t __udp4_lib_rcv\n"
				    "ffffffff81002000 T ip_rcv\n"
				    "ffffffffc0001000 t ovs_dp_process_packet\t[openvswitch]\n"
				    "ffffffffc0002000 t ovs_vport_receive\t[openvswitch]\n";
	const uint64_t addrs[] = {0xffffffff81001234ull, 0xffffffffc0001010ull};
	struct drops_ksyms *full = drops_ksyms_parse(table, sizeof(table) - 1), *one;
	char line[256], a[128], b[128];
	uint64_t start;

	(void)state;
	assert_non_null(full);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(drops_ksyms_line(full, addrs[i], &start, line, sizeof(line)), 0);
		one = drops_ksyms_parse(line, strlen(line));
		assert_non_null(one);
		assert_int_equal(drops_ksyms_format(full, addrs[i], a, sizeof(a)), 0);
		assert_int_equal(drops_ksyms_format(one, addrs[i], b, sizeof(b)), 0);
		assert_string_equal(a, b);
		drops_ksyms_free(one);
	}
	assert_string_equal(a, "ovs_dp_process_packet+0x10 [openvswitch]");
	assert_int_equal(start, 0xffffffffc0001000ull);
	assert_int_equal(drops_ksyms_line(full, 0x1000, &start, line, sizeof(line)), -ENOENT);
	assert_int_equal(drops_ksyms_line(full, addrs[0], &start, line, 10), -ENAMETOOLONG);
	drops_ksyms_free(full);
}

/* A snapshot with a key twice (no map holds a key twice) is refused; the
 * same key in two collects is not. */
static void test_duplicate_key(void **state)
{
	struct drops_rec_writer *w = drops_rec_create(path, NCPUS, 0);
	uint64_t v[NCPUS] = {1, 2, 3};
	uint32_t stat = 1;
	struct drops_rec r;
	char err[256];

	(void)state;
	assert_non_null(w);
	for (int i = 0; i < 2; i++) {
		drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), v, sizeof(v));
		drops_rec_collect(w, i);
	}
	drops_rec_close(w);
	assert_int_equal(drops_rec_load(&r, path, err, sizeof(err)), 0);
	drops_rec_free(&r);
	assert_int_equal(truncate(path, 0), 0); /* a recording is not written over */
	w = drops_rec_create(path, NCPUS, 0);
	assert_non_null(w);
	drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), v, sizeof(v));
	drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), v, sizeof(v));
	drops_rec_collect(w, 1);
	drops_rec_close(w);
	assert_int_equal(drops_rec_load(&r, path, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "record at offset 104: this collect has a key of map 3 twice");
}

/* max_size: nothing reaches the file before its collect; a collect that
 * would pass the size is not written at all (-EFBIG, the writer done: at
 * the record that passes it, so memory stays within it too), and the file
 * stays a whole recording of the collects before it. */
static void test_max_size(void **state)
{
	/* the second sample fits, not its collect record */
	struct drops_rec_writer *w = drops_rec_create(path, NCPUS, 16 + 35 + 16 + 35 + 8);
	const char rb[] = "0123456789"; /* a sample: 8 + 16 + 11 bytes */
	struct drops_rec r;
	struct stat sb;
	char err[256];

	(void)state;
	assert_non_null(w);
	assert_int_equal(drops_rec_sample(w, 0, 1, rb, sizeof(rb)), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 16);	      /* the header only: the sample waits */
	assert_int_equal(drops_rec_collect(w, 1), 0); /* 35 + 16 */
	assert_int_equal(drops_rec_size(w), 16 + 35 + 16);
	assert_int_equal(drops_rec_sample(w, 0, 2, rb, sizeof(rb)), 0);
	assert_int_equal(drops_rec_collect(w, 2), -EFBIG);
	assert_int_equal(drops_rec_sample(w, 0, 3, rb, sizeof(rb)), -EFBIG);
	assert_int_equal(drops_rec_collect(w, 3), -EFBIG);
	drops_rec_close(w);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 16 + 35 + 16);
	assert_int_equal(drops_rec_load(&r, path, err, sizeof(err)), 0);
	assert_int_equal(r.nsamples, 1);
	assert_int_equal(r.ncollects, 1);
	drops_rec_free(&r);
}

static void test_writer_errors(void **state)
{
	(void)state;
	errno = 0;
	assert_null(drops_rec_create("/nonexistent-dir/x.rec", 2, 0));
	assert_int_equal(errno, ENOENT);
}

/* A file with something in it is never written over. */
static void test_never_overwrites(void **state)
{
	struct drops_rec r;
	char err[256];

	(void)state;
	write_one_of_each();
	errno = 0;
	assert_null(drops_rec_create(path, NCPUS, 0));
	assert_int_equal(errno, EEXIST);
	assert_int_equal(drops_rec_load(&r, path, err, sizeof(err)), 0);
	assert_int_equal(r.n, 7); /* as it was */
	drops_rec_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_every_cut, setup, teardown),
	    cmocka_unit_test(test_absurd),
	    cmocka_unit_test(test_ksym_line),
	    cmocka_unit_test_setup_teardown(test_duplicate_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_size, setup, teardown),
	    cmocka_unit_test(test_writer_errors),
	    cmocka_unit_test_setup_teardown(test_never_overwrites, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
