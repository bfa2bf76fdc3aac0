// SPDX-License-Identifier: MIT
/* /proc/kallsyms lookup (see drops_ksym.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/drops/drops_ksym.h"

/* A symbol further than this from its start is not believed to cover addr
 * (the gap after the last symbol of a region). */
#define KSYM_MAX_SPAN (1u << 20)
#define KSYM_MODS_MAX 65535
/* A 6.x kernel's kallsyms is 5-10 MiB of text; more is not kallsyms. */
#define KSYM_FILE_MAX (256u << 20)

/* 12 bytes a symbol: the address as an offset from the lowest one (kernel
 * text, modules and BPF programs lie within 4 GiB of each other on x86-64
 * and arm64), the name as an offset into one string block. */
struct ksym {
	uint32_t off;
	uint32_t name;
	uint16_t mod; /* index into mods + 1; 0 = vmlinux */
};

struct drops_ksyms {
	uint64_t base;
	struct ksym *v; /* sorted by off */
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	char **mods;
	size_t n_mods;
};

/* A kallsyms line that names a text symbol. */
struct ksym_line {
	uint64_t addr;
	const char *name, *mod;
	size_t name_len, mod_len;
};

/* "ffffffff81000000 T _stext" or "... t foo\t[mod]": true for a text
 * symbol (t, T, w, W) with a visible address (kptr_restrict shows zeros). */
static bool ksym_line_parse(const char *l, size_t n, struct ksym_line *out)
{
	const char *end = l + n, *p;
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
			return false;
		addr = addr << 4 | d;
	}
	if (p == l || end - p < 4 || p[2] != ' ')
		return false;
	type = p[1];
	if ((type != 't' && type != 'T' && type != 'w' && type != 'W') || addr == 0)
		return false;
	out->addr = addr;
	out->name = p + 3;
	for (p = out->name; p < end && *p != '\t' && *p != ' ' && *p != '\n'; p++)
		;
	out->name_len = p - out->name;
	if (!out->name_len)
		return false;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	out->mod = NULL;
	out->mod_len = 0;
	if (p < end && *p == '[') {
		out->mod = ++p;
		while (p < end && *p != ']' && *p != '\n')
			p++;
		out->mod_len = p - out->mod;
	}
	return true;
}

/* Raw entries before the base address is known. */
struct ksym_raw {
	uint64_t addr;
	uint32_t name;
	uint16_t mod;
};

struct ksym_build {
	struct drops_ksyms *k;
	struct ksym_raw *raw;
	size_t n, cap;
	int err;
};

static int64_t names_add(struct drops_ksyms *k, const char *s, size_t n)
{
	size_t off = k->names_len;

	if (k->names_len + n + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 16;
		char *p;

		while (cap < k->names_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -ENOMEM;
		p = realloc(k->names, cap);
		if (!p)
			return -ENOMEM;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + off, s, n);
	k->names[off + n] = '\0';
	k->names_len += n + 1;
	return (int64_t)off;
}

/* Module names are few (tens to hundreds): a linear search, newest first
 * (kallsyms lists a module's symbols together). */
static int mod_index(struct drops_ksyms *k, const char *m, size_t n)
{
	char **v;

	for (size_t i = k->n_mods; i-- > 0;)
		if (strlen(k->mods[i]) == n && !memcmp(k->mods[i], m, n))
			return (int)i + 1;
	if (k->n_mods == KSYM_MODS_MAX)
		return 0;
	v = realloc(k->mods, (k->n_mods + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->mods = v;
	if (!(v[k->n_mods] = strndup(m, n)))
		return -ENOMEM;
	return (int)++k->n_mods;
}

static void build_add(struct ksym_build *b, const struct ksym_line *sl)
{
	int64_t name;
	int mod = 0;

	if (b->err)
		return;
	/* __pfx_<fn> is the padding before <fn> (CFI, call depth tracking):
	 * half of all text symbols on 6.x kernels and never a drop site; the
	 * lookup lands on <fn> or before it without them. */
	if (sl->name_len > 6 && !memcmp(sl->name, "__pfx_", 6))
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		struct ksym_raw *v = realloc(b->raw, cap * sizeof(*v));

		if (!v) {
			b->err = -ENOMEM;
			return;
		}
		b->raw = v;
		b->cap = cap;
	}
	name = names_add(b->k, sl->name, sl->name_len);
	if (sl->mod_len)
		mod = mod_index(b->k, sl->mod, sl->mod_len);
	if (name < 0 || mod < 0) {
		b->err = -ENOMEM;
		return;
	}
	b->raw[b->n].addr = sl->addr;
	b->raw[b->n].name = (uint32_t)name;
	b->raw[b->n].mod = (uint16_t)mod;
	b->n++;
}

static int raw_cmp(const void *a, const void *b)
{
	const struct ksym_raw *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts, rebases to 32-bit offsets, shrinks every block to its size. */
static int build_finish(struct ksym_build *b)
{
	struct drops_ksyms *k = b->k;
	char *names;

	if (b->err)
		return b->err;
	if (b->n) {
		qsort(b->raw, b->n, sizeof(*b->raw), raw_cmp);
		k->base = b->raw[0].addr;
		k->v = malloc(b->n * sizeof(*k->v));
		if (!k->v)
			return -ENOMEM;
		for (size_t i = 0; i < b->n; i++) {
			if (b->raw[i].addr - k->base > UINT32_MAX)
				break; /* beyond 4 GiB of the lowest: not kept */
			k->v[k->n].off = (uint32_t)(b->raw[i].addr - k->base);
			k->v[k->n].name = b->raw[i].name;
			k->v[k->n].mod = b->raw[i].mod;
			k->n++;
		}
	}
	if (k->names_len && (names = realloc(k->names, k->names_len)))
		k->names = names;
	return 0;
}

static struct drops_ksyms *build(const char *text, size_t len)
{
	struct ksym_build b = {.k = calloc(1, sizeof(struct drops_ksyms))};
	const char *p = text, *end = text + len;
	struct ksym_line sl;
	int err;

	if (!b.k) {
		errno = ENOMEM;
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (ksym_line_parse(p, n, &sl))
			build_add(&b, &sl);
		p += n + 1;
	}
	err = build_finish(&b);
	free(b.raw);
	if (err) {
		drops_ksyms_free(b.k);
		errno = -err;
		return NULL;
	}
	return b.k;
}

struct drops_ksyms *drops_ksyms_parse(const char *text, size_t len)
{
	return build(text, len);
}

struct drops_ksyms *drops_ksyms_read_fd(int fd)
{
	struct drops_ksyms *k = NULL;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int err = 0;

	/* From the start, whatever was read before (seq_file restarts its
	 * walk at offset 0). */
	if (lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	/* /proc files have no size: read in chunks. */
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			size_t ncap = cap ? cap * 2 : 1 << 20;
			char *p = ncap <= KSYM_FILE_MAX ? realloc(buf, ncap) : NULL;

			if (!p) {
				err = ncap <= KSYM_FILE_MAX ? ENOMEM : EFBIG;
				goto out;
			}
			buf = p;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!(k = build(buf, len)))
		err = errno;
out:
	free(buf);
	if (err)
		errno = err;
	return k;
}

struct drops_ksyms *drops_ksyms_load(const char *path)
{
	struct drops_ksyms *k;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return NULL;
	k = drops_ksyms_read_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return k;
}

void drops_ksyms_free(struct drops_ksyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n_mods; i++)
		free(k->mods[i]);
	free(k->mods);
	free(k->v);
	free(k->names);
	free(k);
}

size_t drops_ksyms_count(const struct drops_ksyms *k)
{
	return k ? k->n : 0;
}

size_t drops_ksyms_bytes(const struct drops_ksyms *k)
{
	size_t b;

	if (!k)
		return 0;
	b = sizeof(*k) + k->n * sizeof(*k->v) + k->names_len + k->n_mods * sizeof(*k->mods);
	for (size_t i = 0; i < k->n_mods; i++)
		b += strlen(k->mods[i]) + 1;
	return b;
}

/* The symbol covering addr (its offset from base in *off), or NULL. */
static const struct ksym *ksym_find(const struct drops_ksyms *k, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = k ? k->n : 0;

	if (!hi || addr < k->base || addr - k->base > UINT32_MAX)
		return NULL;
	*off = addr - k->base;
	/* Last symbol with s->off <= off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].off <= *off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || *off - k->v[lo - 1].off >= KSYM_MAX_SPAN)
		return NULL;
	return &k->v[lo - 1];
}

int drops_ksyms_format(const struct drops_ksyms *k, uint64_t addr, char *buf, size_t len)
{
	uint64_t off = 0;
	const struct ksym *s = ksym_find(k, addr, &off);

	if (!s) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return -ENOENT;
	}
	if (s->mod)
		snprintf(buf, len, "%s+0x%" PRIx64 " [%s]", k->names + s->name, off - s->off,
			 k->mods[s->mod - 1]);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, k->names + s->name, off - s->off);
	return 0;
}

int drops_ksyms_line(const struct drops_ksyms *k, uint64_t addr, uint64_t *start, char *buf,
		     size_t len)
{
	uint64_t off = 0;
	const struct ksym *s = ksym_find(k, addr, &off);
	int n;

	if (!s)
		return -ENOENT;
	*start = k->base + s->off;
	if (s->mod)
		n = snprintf(buf, len, "%016" PRIx64 " t %s\t[%s]", *start, k->names + s->name,
			     k->mods[s->mod - 1]);
	else
		n = snprintf(buf, len, "%016" PRIx64 " t %s", *start, k->names + s->name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int drops_ksyms_range(const struct drops_ksyms *k, const char *name, uint64_t *start, uint64_t *end)
{
	size_t found = SIZE_MAX, next;

	/* A linear pass (~65,000 symbols, about a millisecond): done once at
	 * start, not worth an index by name. */
	for (size_t i = 0; k && i < k->n; i++) {
		if (k->v[i].mod || strcmp(k->names + k->v[i].name, name))
			continue;
		if (found != SIZE_MAX)
			return -EEXIST;
		found = i;
	}
	if (found == SIZE_MAX)
		return -ENOENT;
	/* the end is the next symbol at a higher address (aliases share one) */
	for (next = found + 1; next < k->n && k->v[next].off == k->v[found].off; next++)
		;
	if (next == k->n || k->v[next].off - k->v[found].off >= KSYM_MAX_SPAN)
		return -ENOENT;
	*start = k->base + k->v[found].off;
	*end = k->base + k->v[next].off;
	return 0;
}
