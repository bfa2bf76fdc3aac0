/* SPDX-License-Identifier: MIT */
/*
 * agent/buf: array_grow() doubles from its first capacity, keeps the array
 * (and its capacity) when the size would overflow, and keeps what was
 * stored across moves; buf_* appends and hands over a NUL-terminated
 * string.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/file.h"
#include "base/gzip.h"
#include "base/procfs.h"

static void test_array_grow(void **state)
{
	uint32_t *v = NULL, *p;
	size_t cap = 0, n;

	(void)state;
	for (n = 0; n < 100; n++) {
		p = array_grow(v, &cap, n, sizeof(*v), 8);
		assert_non_null(p);
		v = p;
		v[n] = (uint32_t)n * 3;
		/* 8, then doubling: 8 16 32 64 128 */
		assert_int_equal(cap, n < 8 ? 8 : n < 16 ? 16 : n < 32 ? 32 : n < 64 ? 64 : 128);
	}
	for (n = 0; n < 100; n++)
		assert_int_equal(v[n], n * 3);
	/* room left: the same array, the same capacity */
	assert_ptr_equal(array_grow(v, &cap, 100, sizeof(*v), 8), v);
	assert_int_equal(cap, 128);
	/* a size that would overflow: NULL, array and capacity kept */
	assert_null(array_grow(v, &cap, 128, SIZE_MAX / 128, 8));
	assert_int_equal(cap, 128);
	assert_int_equal(v[99], 297);
	free(v);
}

static void test_buf_append(void **state)
{
	struct buf b = {0};
	size_t len;
	char *s;

	(void)state;
	buf_puts(&b, "drops");
	buf_putc(&b, ' ');
	buf_printf(&b, "%d/%s", 42, "udp");
	for (int i = 0; i < 1000; i++)
		buf_append(&b, "x", 1);
	assert_false(b.oom);
	s = buf_steal(&b, &len);
	assert_non_null(s);
	assert_int_equal(len, strlen("drops 42/udp") + 1000);
	assert_memory_equal(s, "drops 42/udp", 12);
	assert_int_equal(s[len], '\0');
	assert_null(b.p);
	free(s);
}

/* bytes_reserve() keeps an area that fits and grows one that does not to
 * exactly what is asked, keeping its bytes. */
static void test_bytes_reserve(void **state)
{
	uint8_t *p = NULL, *kept;
	size_t cap = 0;

	(void)state;
	assert_int_equal(bytes_reserve(&p, &cap, 16), 0);
	assert_non_null(p);
	assert_int_equal(cap, 16);
	memset(p, 0xab, 16);
	kept = p;
	assert_int_equal(bytes_reserve(&p, &cap, 10), 0);
	assert_ptr_equal(p, kept);
	assert_int_equal(cap, 16);
	assert_int_equal(bytes_reserve(&p, &cap, 4096), 0);
	assert_int_equal(cap, 4096);
	for (int i = 0; i < 16; i++)
		assert_int_equal(p[i], 0xab);
	free(p);
}

/* gzip_compress() gives a gzip member zlib reads back byte for byte, at
 * each level the agent uses, and replaces what out held. */
static void test_gzip_round_trip(void **state)
{
	static const int levels[] = {1, 6};
	char in[20000], back[sizeof(in)];
	struct buf out = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)("sysobs_metric{a=\"1\"} 42\n"[i % 24]);
	buf_puts(&out, "stale");
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		z_stream z = {0};

		assert_int_equal(gzip_compress(in, sizeof(in), levels[l], &out), 0);
		assert_true(out.len > 18 && out.len < sizeof(in) / 4);
		assert_int_equal((unsigned char)out.p[0], 0x1f); /* gzip magic */
		assert_int_equal((unsigned char)out.p[1], 0x8b);
		assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
		z.next_in = (Bytef *)out.p;
		z.avail_in = (uInt)out.len;
		z.next_out = (Bytef *)back;
		z.avail_out = sizeof(back);
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(z.total_out, sizeof(in));
		inflateEnd(&z);
		assert_memory_equal(in, back, sizeof(in));
	}
	assert_int_equal(gzip_compress("", 0, 1, &out), 0);
	assert_true(out.len > 0);
	buf_free(&out);
}

/* procfs_status_field() reads decimal and hex fields of /proc/self/status
 * and says when a key is missing. */
static void test_procfs_status_field(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(procfs_status_field("Pid", 10, &v), 0);
	assert_int_equal(v, (uint64_t)getpid());
	assert_int_equal(procfs_status_field("Threads", 10, &v), 0);
	assert_true(v >= 1);
	assert_int_equal(procfs_status_field("CapEff", 16, &v), 0);
	assert_int_equal(procfs_status_field("Pi", 10, &v), -ENOENT); /* a prefix of Pid */
	assert_int_equal(procfs_status_field("NoSuchField", 10, &v), -ENOENT);
	assert_int_equal(procfs_status_field("Name", 10, &v), -EINVAL); /* not a number */
}

/* The descriptors of the directory's listing, as procfs_open_fds() counted
 * them before it read the size procfs gives (and still does elsewhere). */
static int64_t fds_listed(void)
{
	DIR *d = opendir("/proc/self/fd");
	int64_t n = 0;
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* its own */
}

/* procfs_open_fds(): the same count as the listing, 200 more after 200
 * opens; a directory that is not procfs (a test's fixed /proc) is listed;
 * -1 for none. */
static void test_procfs_open_fds(void **state)
{
	char dir[] = "/tmp/sysobs-proc-XXXXXX", sub[64], f[80];
	int fds[200];
	int64_t n0;

	(void)state;
	n0 = procfs_open_fds("/proc/self");
	assert_int_equal(n0, fds_listed());
	for (int i = 0; i < 200; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
	assert_int_equal(procfs_open_fds("/proc/self"), n0 + 200);
	assert_int_equal(procfs_open_fds("/proc/self"), fds_listed());
	for (int i = 0; i < 200; i++)
		close(fds[i]);
	assert_int_equal(procfs_open_fds("/proc/self"), n0);
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/fd", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(f, sizeof(f), "%s/%d", sub, i);
		close(open(f, O_CREAT | O_WRONLY, 0600));
	}
	assert_int_equal(procfs_open_fds(dir), 3);
	for (int i = 0; i < 3; i++) {
		snprintf(f, sizeof(f), "%s/%d", sub, i);
		unlink(f);
	}
	rmdir(sub);
	assert_int_equal(procfs_open_fds(dir), -1);
	rmdir(dir);
}

/* file_read: a whole regular file, NUL-terminated, from its start even
 * through an O_APPEND descriptor; an empty one; refused: over the size
 * given, a directory, a FIFO (at once, no writer waited for), a missing
 * file. */
static void test_file_read(void **state)
{
	char dir[] = "/tmp/sysobs-file-XXXXXX", path[64], fifo[64], *buf, why[64];
	size_t len;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(fifo, sizeof(fifo), "%s/p", dir);
	fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0600);
	assert_true(fd >= 0);
	assert_int_equal(file_read_fd(fd, 16, &buf, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	assert_int_equal(write(fd, "hello\0world", 11), 11);
	assert_int_equal(file_read_fd(fd, 16, &buf, &len), 0); /* the offset is at the end */
	assert_int_equal(len, 11);
	assert_memory_equal(buf, "hello\0world", 12);
	free(buf);
	assert_int_equal(file_read(path, 11, &buf, &len), 0);
	free(buf);
	assert_int_equal(file_read(path, 10, &buf, &len), -EFBIG);
	assert_null(buf);
	assert_string_equal(file_read_strerror(-EFBIG, 10, why, sizeof(why)), "more than 10 bytes");
	close(fd);
	assert_int_equal(file_read(dir, 1 << 20, &buf, &len), -EINVAL);
	assert_string_equal(file_read_strerror(-EINVAL, 1, why, sizeof(why)), "not a regular file");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(file_read(fifo, 1 << 20, &buf, &len), -EINVAL);
	assert_int_equal(file_read("/dev/zero", 1 << 20, &buf, &len), -EINVAL);
	unlink(fifo);
	unlink(path);
	assert_int_equal(file_read(path, 16, &buf, &len), -ENOENT);
	assert_null(buf);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_array_grow),		cmocka_unit_test(test_buf_append),
	    cmocka_unit_test(test_bytes_reserve),	cmocka_unit_test(test_gzip_round_trip),
	    cmocka_unit_test(test_procfs_status_field), cmocka_unit_test(test_procfs_open_fds),
	    cmocka_unit_test(test_file_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
