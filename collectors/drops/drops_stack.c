// SPDX-License-Identifier: MIT
/* Folded kernel stacks of sampled drops (drops_stack.h). */
#include <stdbool.h>
#include <string.h>

#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_stack.h"

#define DROPS_FRAME_NAME 128

/* A frame of the tracing machinery above the dropping function. */
static bool frame_is_tracing(const char *name)
{
	return !strncmp(name, "bpf_", 4) || !strncmp(name, "__bpf_", 6) ||
	       !strncmp(name, "__traceiter_", 12) || !strncmp(name, "perf_trace_", 11) ||
	       strstr(name, "[bpf]");
}

size_t drops_stack_fold(const struct drops_ksyms *k, const uint64_t *frames, size_t n, char *buf,
			size_t len)
{
	char names[24][DROPS_FRAME_NAME];
	size_t first = 0, kept = 0, off = 0, out = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (n > 24)
		n = 24;
	for (size_t i = 0; i < n; i++) {
		char *plus;

		drops_ksyms_format(k, frames[i], names[i], sizeof(names[i]));
		/* the tracing frames on top come before any frame of the stack */
		if (i == first && frame_is_tracing(names[i])) {
			first++;
			continue;
		}
		plus = strchr(names[i], '+');
		if (plus)
			*plus = '\0';
	}
	/* innermost frames first: as many as fit, then written outermost first */
	for (size_t i = first; i < n; i++) {
		size_t need = strlen(names[i]) + (kept ? 1 : 0);

		if (off + need >= len)
			break;
		off += need;
		kept++;
	}
	for (size_t j = 0; j < kept; j++) {
		const char *name = names[first + kept - 1 - j];
		size_t l = strlen(name);

		if (j)
			buf[out++] = ';';
		memcpy(buf + out, name, l);
		out += l;
	}
	buf[out] = '\0';
	return kept;
}
