// SPDX-License-Identifier: MIT
/* api/pcapng: the blocks byte for byte, as the pcapng specification lays
 * them out (draft-ietf-opsawg-pcapng, sections 4.1, 4.2, 4.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/pcapng.h"

static uint32_t u32(const struct buf *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b->p + off, sizeof(v));
	return v;
}

static uint16_t u16(const struct buf *b, size_t off)
{
	uint16_t v;

	memcpy(&v, b->p + off, sizeof(v));
	return v;
}

/* Every block: its length twice, a multiple of 4. */
static void assert_block(const struct buf *b, size_t off, uint32_t type, uint32_t len)
{
	assert_int_equal(u32(b, off), type);
	assert_int_equal(u32(b, off + 4), len);
	assert_int_equal(len % 4, 0);
	assert_int_equal(u32(b, off + len - 4), len);
}

static void test_section(void **state)
{
	struct buf b = {0};
	uint64_t section_len;

	pcapng_section(&b, "sysobs", NULL);
	/* 28 fixed (with the trailing length) + shb_userappl (4 + "sysobs"
	 * padded to 8) + opt_endofopt 4 */
	assert_int_equal(b.len, 28 + 12 + 4);
	assert_block(&b, 0, 0x0A0D0D0A, 44);
	assert_int_equal(u32(&b, 8), 0x1A2B3C4D);
	assert_int_equal(u16(&b, 12), 1);
	assert_int_equal(u16(&b, 14), 0);
	memcpy(&section_len, b.p + 16, 8);
	assert_true(section_len == UINT64_MAX);
	assert_int_equal(u16(&b, 24), 4); /* shb_userappl */
	assert_int_equal(u16(&b, 26), 6);
	assert_memory_equal(b.p + 28, "sysobs\0\0", 8);
	assert_int_equal(u32(&b, 36), 0); /* opt_endofopt */
	buf_free(&b);

	pcapng_section(&b, NULL, "next_cursor=7");
	assert_block(&b, 0, 0x0A0D0D0A, 28 + 4 + 16 + 4);
	assert_int_equal(u16(&b, 24), 1); /* opt_comment */
	assert_int_equal(u16(&b, 26), 13);
	assert_memory_equal(b.p + 28, "next_cursor=7\0\0\0", 16);
	buf_free(&b);
}

static void test_interface(void **state)
{
	struct buf b = {0};
	struct pcapng_if ifc = {
	    .linktype = PCAPNG_LINKTYPE_LINUX_SLL2, .name = "lo", .description = "netns 1"};

	pcapng_interface(&b, &ifc);
	/* 16 fixed + if_name 8 + if_description 12 + if_tsresol 8 + end 4 + 4 */
	assert_block(&b, 0, 1, 16 + 8 + 12 + 8 + 4 + 4);
	assert_int_equal(u16(&b, 8), 276);
	assert_int_equal(u16(&b, 10), 0);
	assert_int_equal(u32(&b, 12), 0); /* snaplen */
	assert_int_equal(u16(&b, 16), 2);
	assert_int_equal(u16(&b, 18), 2);
	assert_memory_equal(b.p + 20, "lo\0\0", 4);
	assert_int_equal(u16(&b, 24), 3);
	assert_int_equal(u16(&b, 26), 7);
	assert_memory_equal(b.p + 28, "netns 1\0", 8);
	assert_int_equal(u16(&b, 36), 9); /* if_tsresol: 10^-9 */
	assert_int_equal(u16(&b, 38), 1);
	assert_int_equal((uint8_t)b.p[40], 9);
	buf_free(&b);

	/* no names: only the resolution */
	ifc.name = ifc.description = NULL;
	pcapng_interface(&b, &ifc);
	assert_block(&b, 0, 1, 16 + 8 + 4 + 4);
	buf_free(&b);
}

static void test_packet(void **state)
{
	static const uint8_t data[5] = {1, 2, 3, 4, 5};
	struct buf b = {0};
	struct pcapng_packet p = {.if_id = 3,
				  .ts_ns = 0x123456789abcdef0ull,
				  .data = data,
				  .caplen = 5,
				  .origlen = 60,
				  .comment = "reason=NO_SOCKET"};

	pcapng_packet(&b, &p);
	/* 28 fixed + data 8 + opt_comment (4 + 16) + end 4 + 4 */
	assert_block(&b, 0, 6, 28 + 8 + 20 + 4 + 4);
	assert_int_equal(u32(&b, 8), 3);
	assert_int_equal(u32(&b, 12), 0x12345678);
	assert_int_equal(u32(&b, 16), 0x9abcdef0);
	assert_int_equal(u32(&b, 20), 5);
	assert_int_equal(u32(&b, 24), 60);
	assert_memory_equal(b.p + 28, "\1\2\3\4\5\0\0\0", 8);
	assert_int_equal(u16(&b, 36), 1);
	assert_int_equal(u16(&b, 38), 16);
	assert_memory_equal(b.p + 40, "reason=NO_SOCKET", 16);
	assert_int_equal(u32(&b, 56), 0);
	buf_free(&b);

	/* no bytes, no comment, an original length below the captured one */
	p.caplen = 0;
	p.origlen = 0;
	p.comment = NULL;
	pcapng_packet(&b, &p);
	assert_block(&b, 0, 6, 32);
	assert_int_equal(u32(&b, 24), 0);
	buf_free(&b);
	p.caplen = 5;
	p.origlen = 2;
	pcapng_packet(&b, &p);
	assert_int_equal(u32(&b, 24), 5);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_section),
	    cmocka_unit_test(test_interface),
	    cmocka_unit_test(test_packet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
