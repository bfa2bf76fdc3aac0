// SPDX-License-Identifier: MIT
/* Bump allocator in chunks of at least 16 KiB (see arena.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"

#define ARENA_CHUNK_MIN (16 * 1024)
#define ARENA_ALIGN	16

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->head;
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	void *p;

	if (need < n) {
		a->oom = true;
		return NULL;
	}
	if (!c || c->cap - c->used < need) {
		size_t cap = need > ARENA_CHUNK_MIN ? need : ARENA_CHUNK_MIN;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			a->oom = true;
			return NULL;
		}
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d;

	if (!s)
		return NULL;
	d = arena_alloc(a, n + 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *d;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	d = arena_alloc(a, (size_t)n + 1);
	if (!d)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return d;
}

void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
	a->oom = false;
}
