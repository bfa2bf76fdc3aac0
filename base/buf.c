/* SPDX-License-Identifier: MIT */
/* Growable byte buffer: doubling, sticky out-of-memory. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define BUF_MIN_CAP 256

int buf_reserve(struct buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return -ENOMEM;
	if (__builtin_add_overflow(b->len, n, &need) || __builtin_add_overflow(need, 1, &need))
		goto out_oom;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BUF_MIN_CAP;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->p, cap);
	if (!p)
		goto out_oom;
	if (!b->p)
		p[0] = '\0';
	b->p = p;
	b->cap = cap;
	return 0;

out_oom:
	b->oom = true;
	return -ENOMEM;
}

void buf_append(struct buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n))
		return;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
	buf_append(b, &c, 1);
}

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list copy;
	int n;

	if (b->oom)
		return;
	/* First try in the room there is; on a short write, grow to the exact
	 * size and print again. */
	va_copy(copy, ap);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, copy);
	va_end(copy);
	if (n < 0) {
		b->oom = true; /* only an encoding error or INT_MAX overflow */
		return;
	}
	if (!b->p || b->len + (size_t)n >= b->cap) {
		if (buf_reserve(b, (size_t)n))
			return;
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *buf_steal(struct buf *b, size_t *len)
{
	char *p;

	if (b->oom || (!b->p && buf_reserve(b, 0))) {
		buf_free(b);
		errno = ENOMEM;
		return NULL;
	}
	p = b->p;
	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void buf_free(struct buf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

void *array_grow(void *arr, size_t *cap, size_t n, size_t size, size_t first_cap)
{
	size_t c, bytes;

	if (n < *cap)
		return arr;
	c = *cap ? *cap * 2 : first_cap;
	if (c <= n || __builtin_mul_overflow(c, size, &bytes))
		return NULL;
	arr = realloc(arr, bytes);
	if (arr)
		*cap = c;
	return arr;
}

int bytes_reserve(uint8_t **p, size_t *cap, size_t need)
{
	uint8_t *n;

	if (*cap >= need)
		return 0;
	n = realloc(*p, need);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = need;
	return 0;
}
