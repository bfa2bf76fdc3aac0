/* SPDX-License-Identifier: MIT */
/*
 * A request-scoped bump allocator: a response message and everything it
 * points to (strings, arrays, sub-messages) come from one arena and go with
 * one arena_free(), instead of a free function per message type.
 */
#ifndef SYSOBS_ARENA_H
#define SYSOBS_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head;
	bool oom; /* an allocation failed; the caller checks once at the end */
};

/* n zeroed bytes aligned for any type; NULL (and a->oom) when out of memory. */
void *arena_alloc(struct arena *a, size_t n);
/* Copies of s (NULL -> NULL) and of n bytes of s plus a NUL. */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* printf into the arena. */
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(struct arena *a); /* frees everything; a is empty again */

#endif
