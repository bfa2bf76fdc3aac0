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

/* "STATUS\nBODY", the form of the reply targets' inputs: an HTTP status
 * in decimal on the first line (0: no answer), the body's bytes after it. */
static inline void fuzz_status_body(const uint8_t *data, size_t size, long *status,
				    const uint8_t **body, size_t *len)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t n = nl ? (size_t)(nl - data) : size;
	char num[16];

	memcpy(num, data, n < sizeof(num) - 1 ? n : sizeof(num) - 1);
	num[n < sizeof(num) - 1 ? n : sizeof(num) - 1] = '\0';
	*status = strtol(num, NULL, 10);
	*body = nl ? nl + 1 : data + size;
	*len = nl ? size - n - 1 : 0;
}

/* s is NUL-terminated within max bytes and printable ASCII throughout. */
static inline int fuzz_printable(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (n == max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

#endif
