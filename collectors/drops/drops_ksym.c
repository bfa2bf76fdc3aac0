// SPDX-License-Identifier: MIT
/* /proc/kallsyms lookup (see drops_ksym.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/drops/drops_ksym.h"

/* A symbol further than this from its start is not believed to cover addr
 * (the gap after the last symbol of a region). */
#define KSYM_MAX_SPAN (1u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into names */
	uint32_t module; /* offset into names, 0 = vmlinux */
};

struct drops_ksyms {
	struct ksym *v;
	size_t n, cap;
	char *names; /* NUL-separated; offset 0 is "" */
	size_t names_len, names_cap;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int64_t names_add(struct drops_ksyms *k, const char *s, size_t n)
{
	size_t off = k->names_len;

	if (k->names_len + n + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 16;
		char *p;

		while (cap < k->names_len + n + 1)
			cap *= 2;
		p = realloc(k->names, cap);
		if (!p)
			return -ENOMEM;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + off, s, n);
	k->names[off + n] = '\0';
	k->names_len += n + 1;
	return off;
}

/* One line: "ffffffff81000000 T _stext" or "... t foo\t[mod]". Returns 0 to
 * keep going (also for lines that are skipped), -ENOMEM. */
static int parse_line(struct drops_ksyms *k, const char *l, size_t n)
{
	const char *end = l + n, *p, *name, *mod = NULL;
	size_t name_len, mod_len = 0;
	int64_t name_off, mod_off = 0;
	uint64_t addr = 0;
	char type;

	for (p = l; p < end && *p != ' '; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return 0;
		addr = addr << 4 | d;
	}
	if (p == l || end - p < 4 || p[2] != ' ')
		return 0;
	type = p[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (addr == 0) /* hidden by kptr_restrict */
		return 0;
	name = p + 3;
	for (p = name; p < end && *p != '\t' && *p != ' '; p++)
		;
	name_len = p - name;
	if (!name_len)
		return 0;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	if (p < end && *p == '[') {
		mod = p + 1;
		for (p = mod; p < end && *p != ']'; p++)
			;
		mod_len = p - mod;
	}

	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 4096;
		struct ksym *v = realloc(k->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	name_off = names_add(k, name, name_len);
	if (name_off < 0)
		return -ENOMEM;
	if (mod_len) {
		mod_off = names_add(k, mod, mod_len);
		if (mod_off < 0)
			return -ENOMEM;
	}
	k->v[k->n].addr = addr;
	k->v[k->n].name = name_off;
	k->v[k->n].module = mod_off;
	k->n++;
	return 0;
}

struct drops_ksyms *drops_ksyms_parse(const char *text, size_t len)
{
	struct drops_ksyms *k = calloc(1, sizeof(*k));
	const char *p = text, *end = text + len;

	if (!k)
		return NULL;
	if (names_add(k, "", 0) < 0)
		goto err_free;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (parse_line(k, p, n) < 0)
			goto err_free;
		p += n + 1;
	}
	if (k->n)
		qsort(k->v, k->n, sizeof(*k->v), ksym_cmp);
	return k;

err_free:
	drops_ksyms_free(k);
	errno = ENOMEM;
	return NULL;
}

struct drops_ksyms *drops_ksyms_load(const char *path)
{
	struct drops_ksyms *k = NULL;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	FILE *f;
	int err = 0;

	f = fopen(path, "re");
	if (!f)
		return NULL;
	/* /proc files have no size: read in chunks. */
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *p = realloc(buf, cap ? cap * 2 : 1 << 20);

			if (!p) {
				err = ENOMEM;
				goto out;
			}
			buf = p;
			cap = cap ? cap * 2 : 1 << 20;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f))
				err = EIO;
			break;
		}
	}
	if (!err) {
		k = drops_ksyms_parse(buf, len);
		if (!k)
			err = errno;
	}
out:
	free(buf);
	fclose(f);
	if (err)
		errno = err;
	return k;
}

void drops_ksyms_free(struct drops_ksyms *k)
{
	if (!k)
		return;
	free(k->v);
	free(k->names);
	free(k);
}

size_t drops_ksyms_count(const struct drops_ksyms *k)
{
	return k ? k->n : 0;
}

int drops_ksyms_format(const struct drops_ksyms *k, uint64_t addr, char *buf, size_t len)
{
	size_t lo = 0, hi = k ? k->n : 0;
	const struct ksym *s;

	/* Last symbol with s->addr <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - k->v[lo - 1].addr >= KSYM_MAX_SPAN) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return -ENOENT;
	}
	s = &k->v[lo - 1];
	if (s->module)
		snprintf(buf, len, "%s+0x%" PRIx64 " [%s]", k->names + s->name, addr - s->addr,
			 k->names + s->module);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, k->names + s->name, addr - s->addr);
	return 0;
}
