/* SPDX-License-Identifier: MIT */
/*
 * A growable byte buffer for building a response body, a page or a message
 * (and array_grow(), the same doubling for arrays of any type).
 * Start from struct buf b = {0}. p is NUL-terminated whenever it is not NULL.
 * Out of memory sets oom once; every later call does nothing, so a caller
 * appends freely and checks b.oom (or buf_steal()'s NULL) once at the end.
 */
#ifndef SYSOBS_BUF_H
#define SYSOBS_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char *p;	 /* malloc'ed, NUL-terminated; NULL until the first append */
	size_t len, cap; /* len excludes the NUL; cap includes it */
	bool oom;
};

/* Room for n more bytes and the NUL: 0, or -ENOMEM (and oom set). */
int buf_reserve(struct buf *b, size_t n);
void buf_append(struct buf *b, const void *data, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hands over the malloc'ed NUL-terminated string ("" if nothing was
 * appended), its length in *len if len is not NULL, and resets b to empty.
 * NULL with errno ENOMEM if b ran out of memory (b is freed and reset). */
char *buf_steal(struct buf *b, size_t *len);
/* Frees and resets b; accepts NULL. */
void buf_free(struct buf *b);

/*
 * Growable arrays of any element type: the array arr (capacity *cap) with
 * room for the element at index n. arr itself while n < *cap, else moved to
 * twice the capacity (first_cap the first time) with *cap updated; NULL when
 * out of memory or the size would overflow (arr is kept as it was).
 *   p = array_grow(v, &cap, n, sizeof(*v), 64); if (!p) ...; v = p;
 */
void *array_grow(void *arr, size_t *cap, size_t n, size_t size, size_t first_cap);

/* A byte area *p of *cap bytes with room for need: kept while it fits, else
 * reallocated to exactly need (for areas sized once per message, such as an
 * encoder's output). 0, or -ENOMEM with *p and *cap as they were. */
int bytes_reserve(uint8_t **p, size_t *cap, size_t need);

#endif
