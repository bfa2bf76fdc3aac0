// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the kallsyms reader that names drop locations and stack
 * frames (drops_ksyms_parse, collectors/drops/drops_ksym.c): the input is
 * /proc/kallsyms text. It parses into a table of at most one symbol a line;
 * every address the text names formats within the buffer ("sym+0xoff",
 * "sym+0xoff [mod]" or "0x<addr>"), and a name's text range, when it has
 * one, is non-empty and formats as an offset in it. The seeds are excerpts
 * of this kernel's (6.18) /proc/kallsyms: around kfree_skb_reason, its
 * head, module and BPF symbols, drop sites with a __pfx_ padding symbol,
 * and the zeros kptr_restrict shows an unprivileged reader.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>

#include "collectors/drops/drops_ksym.h"
#include "tests/fuzz/fuzz_common.h"

static void check_format(const struct drops_ksyms *k, uint64_t addr)
{
	char buf[96], tiny[4];
	int rc = drops_ksyms_format(k, addr, buf, sizeof(buf));

	FUZZ_CHECK(rc == 0 || rc == -ENOENT, "format %d", rc);
	FUZZ_CHECK(strnlen(buf, sizeof(buf)) < sizeof(buf) && buf[0], "format not a string");
	/* a known address has its offset, unless a long name filled the buffer */
	FUZZ_CHECK(rc || strstr(buf, "+0x") || strlen(buf) == sizeof(buf) - 1,
		   "\"%s\" for a known address", buf);
	rc = drops_ksyms_format(k, addr, tiny, sizeof(tiny));
	FUZZ_CHECK(strnlen(tiny, sizeof(tiny)) < sizeof(tiny), "format past a small buffer");
}

static void check_line(const struct drops_ksyms *k, const char *l, const char *end)
{
	char name[128];
	const char *p = l, *q;
	uint64_t addr = 0, start, stop;
	size_t n;

	for (; p < end && isxdigit((unsigned char)*p); p++)
		addr = addr << 4 | (uint64_t)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
	check_format(k, addr);
	check_format(k, addr + 1);
	check_format(k, addr - 1);
	/* "addr t name": the name is the third field */
	if (end - p < 4 || p[0] != ' ' || p[2] != ' ')
		return;
	p += 3;
	for (q = p; q < end && *q != '\t' && *q != ' '; q++)
		;
	n = (size_t)(q - p) < sizeof(name) - 1 ? (size_t)(q - p) : sizeof(name) - 1;
	memcpy(name, p, n);
	name[n] = '\0';
	if (!drops_ksyms_range(k, name, &start, &stop)) {
		FUZZ_CHECK(start < stop, "range %" PRIx64 "-%" PRIx64 " of %s", start, stop, name);
		check_format(k, start);
		check_format(k, stop - 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *end = text + size, *l;
	struct drops_ksyms *k = drops_ksyms_parse(text, size);
	size_t lines = 0, checked = 0;

	if (!k) {
		FUZZ_CHECK(errno == ENOMEM || errno == EINVAL || errno == EFBIG, "errno %d", errno);
		return 0;
	}
	for (l = text; l < end; lines++) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));

		if (checked++ < 64)
			check_line(k, l, nl ? nl : end);
		l = nl ? nl + 1 : end;
	}
	FUZZ_CHECK(drops_ksyms_count(k) <= lines, "%zu symbols in %zu lines", drops_ksyms_count(k),
		   lines);
	check_format(NULL, 0x1234);
	drops_ksyms_free(k);
	return 0;
}
