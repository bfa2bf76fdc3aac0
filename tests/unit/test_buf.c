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

#include "base/buf.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_array_grow),
	    cmocka_unit_test(test_buf_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
