// SPDX-License-Identifier: MIT
/* /proc/kallsyms lookup (see drops_ksym.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/drops/drops_ksym.h"

/* A symbol further than this from its start is not believed to cover addr
 * (the gap after the last symbol of a region). */
#define KSYM_MAX_SPAN (1u << 20)

/* One resolved address: the formatted location, or hex when nothing covers
 * it (negative results are cached too). */
struct ksym_ent {
	uint64_t addr;
	bool named;
	char text[DROPS_KSYM_TEXT_MAX];
};

struct drops_ksyms {
	char *path; /* streamed on each miss, or ... */
	char *text; /* ... this copy (drops_ksyms_parse) */
	size_t text_len;
	size_t n_text;	    /* text symbols seen by the first scan */
	struct ksym_ent *v; /* sorted by addr */
	size_t n, max;
	uint64_t scans;
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

/* Calls fn for every text symbol of the source; 0 or -errno. */
static int ksym_scan(const struct drops_ksyms *k, void (*fn)(const struct ksym_line *, void *),
		     void *arg)
{
	struct ksym_line sl;

	if (k->text) {
		const char *p = k->text, *end = k->text + k->text_len;

		while (p < end) {
			const char *nl = memchr(p, '\n', end - p);
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

			if (ksym_line_parse(p, n, &sl))
				fn(&sl, arg);
			p += n + 1;
		}
		return 0;
	}

	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = fopen(k->path, "re");

	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0)
		if (ksym_line_parse(line, n, &sl))
			fn(&sl, arg);
	n = ferror(f) ? -EIO : 0;
	free(line);
	fclose(f);
	return n;
}

static void count_fn(const struct ksym_line *sl, void *arg)
{
	(void)sl;
	++*(size_t *)arg;
}

/* The closest text symbol at or below addr. */
struct ksym_best {
	uint64_t addr;	   /* looked up */
	uint64_t sym_addr; /* best so far */
	bool found;
	char name[DROPS_KSYM_TEXT_MAX];
	char mod[64];
};

static void best_fn(const struct ksym_line *sl, void *arg)
{
	struct ksym_best *b = arg;

	if (sl->addr > b->addr || (b->found && sl->addr <= b->sym_addr))
		return;
	b->found = true;
	b->sym_addr = sl->addr;
	/* the line buffer is reused: copy out */
	snprintf(b->name, sizeof(b->name), "%.*s", (int)sl->name_len, sl->name);
	snprintf(b->mod, sizeof(b->mod), "%.*s", (int)sl->mod_len, sl->mod ? sl->mod : "");
}

static struct drops_ksyms *ksyms_new(void)
{
	struct drops_ksyms *k = calloc(1, sizeof(struct drops_ksyms));

	if (k)
		k->max = DROPS_KSYM_CACHE_MAX;
	return k;
}

void drops_ksyms_set_cache_max(struct drops_ksyms *k, size_t max)
{
	k->max = max < k->n ? k->n : max;
}

struct drops_ksyms *drops_ksyms_parse(const char *text, size_t len)
{
	struct drops_ksyms *k = ksyms_new();

	if (!k || !(k->text = malloc(len + 1))) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(k->text, text, len);
	k->text[len] = '\0';
	k->text_len = len;
	ksym_scan(k, count_fn, &k->n_text);
	return k;
}

struct drops_ksyms *drops_ksyms_load(const char *path)
{
	struct drops_ksyms *k = ksyms_new();
	int err;

	if (!k || !(k->path = strdup(path))) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	err = ksym_scan(k, count_fn, &k->n_text);
	if (err) {
		drops_ksyms_free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

void drops_ksyms_free(struct drops_ksyms *k)
{
	if (!k)
		return;
	free(k->path);
	free(k->text);
	free(k->v);
	free(k);
}

size_t drops_ksyms_count(const struct drops_ksyms *k)
{
	return k ? k->n_text : 0;
}

uint64_t drops_ksyms_scans(const struct drops_ksyms *k)
{
	return k ? k->scans : 0;
}

/* Index of the first entry with addr >= a. */
static size_t ent_lower(const struct drops_ksyms *k, uint64_t a)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Resolves addr by one pass over the source. */
static void ksyms_resolve(struct drops_ksyms *k, uint64_t addr, struct ksym_ent *e)
{
	struct ksym_best b = {.addr = addr};

	e->addr = addr;
	k->scans++;
	e->named = k->n_text && ksym_scan(k, best_fn, &b) == 0 && b.found &&
		   addr - b.sym_addr < KSYM_MAX_SPAN;
	if (!e->named)
		snprintf(e->text, sizeof(e->text), "0x%" PRIx64, addr);
	else if (b.mod[0])
		snprintf(e->text, sizeof(e->text), "%s+0x%" PRIx64 " [%s]", b.name,
			 addr - b.sym_addr, b.mod);
	else
		snprintf(e->text, sizeof(e->text), "%s+0x%" PRIx64, b.name, addr - b.sym_addr);
}

int drops_ksyms_format(struct drops_ksyms *k, uint64_t addr, char *buf, size_t len)
{
	struct ksym_ent one, *e = &one, *v;
	size_t at;

	if (!k) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return -ENOENT;
	}
	at = ent_lower(k, addr);
	if (at < k->n && k->v[at].addr == addr) {
		e = &k->v[at];
	} else if (k->n >= k->max) {
		/* Full: no pass over the file on the event loop for addresses
		 * that could not be kept anyway; hex, as when restricted. */
		snprintf(buf, len, "0x%" PRIx64, addr);
		return -ENOENT;
	} else {
		ksyms_resolve(k, addr, &one);
		/* cached (the set of drop sites is small) */
		if ((v = realloc(k->v, (k->n + 1) * sizeof(*v)))) {
			k->v = v;
			memmove(&v[at + 1], &v[at], (k->n - at) * sizeof(*v));
			v[at] = one;
			k->n++;
		}
	}
	snprintf(buf, len, "%s", e->text);
	return e->named ? 0 : -ENOENT;
}
