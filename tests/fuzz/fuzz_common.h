/* SPDX-License-Identifier: MIT */
/* What the fuzz targets share: the input as a NUL-terminated string, and a
 * check that aborts (a crash libFuzzer and the replay both report). */
#ifndef SYSOBS_FUZZ_COMMON_H
#define SYSOBS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz check failed: %s: ", #cond);                         \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* data as a malloc'ed string; a NUL inside ends it early, as in C. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

#endif
