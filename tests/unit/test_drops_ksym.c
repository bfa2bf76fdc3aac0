// SPDX-License-Identifier: MIT
/* kallsyms parsing and address lookup of the drops collector. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/drops/drops_ksym.h"

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81000100 t helper_fn\n"
			       "ffffffff81001000 D some_data\n"
			       "ffffffff81002000 W weak_fn\n"
			       "ffffffffc0000000 t mod_fn\t[openvswitch]\n"
			       "garbage line\n"
			       "ffffffff81000800 T __udp4_lib_rcv"; /* unsorted, no final \n */

static void test_lookup(void **state)
{
	struct drops_ksyms *k = drops_ksyms_parse(kallsyms, strlen(kallsyms));
	char buf[128];

	assert_non_null(k);
	assert_int_equal(drops_ksyms_count(k), 5); /* data and garbage left out */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000000ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "_stext+0x0");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff810008a4ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0xa4");
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000104ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "helper_fn+0x4");
	/* Data symbols do not cover text: the lookup lands on the text before. */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81001004ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "__udp4_lib_rcv+0x804");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0000010ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "mod_fn+0x10 [openvswitch]");
	/* Below the first symbol, or far past the last. */
	assert_int_equal(drops_ksyms_format(k, 0x1000, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(buf, "0x1000");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc1000000ull, buf, sizeof(buf)), -ENOENT);
	drops_ksyms_free(k);
}

/* A vmlinux function's text: from its address to the next symbol's. */
static void test_range(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t skb_release_data\n"
				   "ffffffff81000100 t skb_release_data_alias\n"
				   "ffffffff81000180 T __pfx_kfree_skbmem\n"
				   "ffffffff81000190 T kfree_skbmem\n"
				   "ffffffff81000200 t dup\n"
				   "ffffffff81000300 t dup\n"
				   "ffffffffc0000000 t modfn\t[m]\n"
				   "ffffffffc0000100 t modfn2\t[m]\n";
	struct drops_ksyms *k = drops_ksyms_parse(text, strlen(text));
	uint64_t lo = 0, hi = 0;

	assert_non_null(k);
	assert_int_equal(drops_ksyms_range(k, "skb_release_data", &lo, &hi), 0);
	assert_true(lo == 0xffffffff81000100ull);
	/* the alias at the same address is not the end; __pfx_ symbols are
	 * left out, so the padding before the next function is inside */
	assert_true(hi == 0xffffffff81000190ull);
	assert_int_equal(drops_ksyms_range(k, "dup", &lo, &hi), -EEXIST);
	assert_int_equal(drops_ksyms_range(k, "modfn", &lo, &hi), -ENOENT); /* vmlinux only */
	assert_int_equal(drops_ksyms_range(k, "nope", &lo, &hi), -ENOENT);
	assert_int_equal(drops_ksyms_range(NULL, "nope", &lo, &hi), -ENOENT);
	drops_ksyms_free(k);
}

/* kptr_restrict hides addresses as zeros: nothing to look up, hex output. */
static void test_restricted(void **state)
{
	static const char text[] = "0000000000000000 T _stext\n0000000000000000 t foo\n";
	struct drops_ksyms *k = drops_ksyms_parse(text, strlen(text));
	char buf[64];

	assert_non_null(k);
	assert_int_equal(drops_ksyms_count(k), 0);
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81000000ull, buf, sizeof(buf)), -ENOENT);
	assert_string_equal(buf, "0xffffffff81000000");
	assert_int_equal(drops_ksyms_format(NULL, 0x10, buf, sizeof(buf)), -ENOENT);
	drops_ksyms_free(k);
}

/* __pfx_ padding symbols are left out; the lookup still lands on the
 * function; module names are stored once. */
static void test_pfx_and_modules(void **state)
{
	static const char text[] = "ffffffff81000ff0 T __pfx_fn_a\n"
				   "ffffffff81001000 T fn_a\n"
				   "ffffffff81001ff0 t __pfx_fn_b\n"
				   "ffffffff81002000 t fn_b\n"
				   "ffffffffc0000000 t m1\t[nf_tables]\n"
				   "ffffffffc0000100 t m2\t[nf_tables]\n"
				   "ffffffffc0001000 t m3\t[openvswitch]\n";
	struct drops_ksyms *k = drops_ksyms_parse(text, strlen(text));
	char buf[128];

	(void)state;
	assert_non_null(k);
	assert_int_equal(drops_ksyms_count(k), 5);
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81001ff8ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn_a+0xff8"); /* in __pfx_fn_b: fn_a's tail */
	assert_int_equal(drops_ksyms_format(k, 0xffffffff81002004ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn_b+0x4");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0000104ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "m2+0x4 [nf_tables]");
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0001008ull, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "m3+0x8 [openvswitch]");
	/* a small output buffer truncates, never overflows */
	assert_int_equal(drops_ksyms_format(k, 0xffffffffc0000104ull, buf, 8), 0);
	assert_string_equal(buf, "m2+0x4 ");
	drops_ksyms_free(k);
}

/* The real /proc/kallsyms, as root: a text symbol read from the file comes
 * back as its own name, from a table of a few MiB. */
static void test_proc(void **state)
{
	char line[512], name[256], want[300], buf[128];
	unsigned long long addr = 0;
	struct drops_ksyms *k;
	char type;
	FILE *f;

	if (geteuid() != 0)
		skip();
	f = fopen("/proc/kallsyms", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && type == 'T' &&
		    !strcmp(name, "kfree_skb_list_reason"))
			break;
	fclose(f);
	if (!addr)
		skip(); /* restricted, or an older kernel */
	k = drops_ksyms_load("/proc/kallsyms");
	assert_non_null(k);
	assert_true(drops_ksyms_count(k) > 1000);
	snprintf(want, sizeof(want), "%s+0x10", name);
	assert_int_equal(drops_ksyms_format(k, addr + 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
	printf("kallsyms: %zu text symbols in %.2f MiB\n", drops_ksyms_count(k),
	       drops_ksyms_bytes(k) / 1048576.0);
	assert_true(drops_ksyms_bytes(k) < 8u << 20);
	drops_ksyms_free(k);
	assert_null(drops_ksyms_load("/nonexistent/kallsyms"));
	assert_int_equal(errno, ENOENT);
}

/*
 * Two reads of the live table: BPF programs loaded or freed meanwhile (by
 * any process: other tests, other agents) add or remove their bpf_prog_*
 * and trampoline symbols, so the counts may differ by those; a read that
 * lost the addresses has none at all.
 */
static bool ksyms_same_table(size_t got, size_t want)
{
	size_t d = got > want ? got - want : want - got;

	return got > 0 && d <= want / 100;
}

/*
 * The table read again from the fd kept open since start-up: from offset
 * 0 whatever was read before, and with addresses after the process gave up
 * root (the kernel decides at open), where a new open may show zeros.
 */
static void test_read_fd(void **state)
{
	struct drops_ksyms *a, *b;
	char buf[4096];
	int fd, status;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	a = drops_ksyms_read_fd(fd);
	assert_non_null(a);
	if (drops_ksyms_count(a) < 1000) {
		drops_ksyms_free(a);
		close(fd);
		skip(); /* restricted even for root */
	}
	/* left somewhere in the middle */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	b = drops_ksyms_read_fd(fd);
	assert_non_null(b);
	assert_true(ksyms_same_table(drops_ksyms_count(b), drops_ksyms_count(a)));
	drops_ksyms_free(b);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct drops_ksyms *kept, *fresh;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		kept = drops_ksyms_read_fd(fd);
		fresh = drops_ksyms_load("/proc/kallsyms");
		printf("kallsyms as uid 65534: %zu symbols through the fd opened as root, %zu "
		       "through a new open\n",
		       drops_ksyms_count(kept), drops_ksyms_count(fresh));
		fflush(stdout);
		_exit(ksyms_same_table(drops_ksyms_count(kept), drops_ksyms_count(a)) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	drops_ksyms_free(a);
	close(fd);
	assert_null(drops_ksyms_read_fd(-1));
	assert_int_equal(errno, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookup), cmocka_unit_test(test_restricted),
	    cmocka_unit_test(test_range),  cmocka_unit_test(test_pfx_and_modules),
	    cmocka_unit_test(test_proc),   cmocka_unit_test(test_read_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
