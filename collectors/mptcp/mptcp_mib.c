/* SPDX-License-Identifier: MIT */
/* The MPTcpExt MIB parser; see mptcp_mib.h. A hand-written parser: the file
 * is two lines of space-separated words, which no library parses for us. */
#include "collectors/mptcp/mptcp_mib.h"

#include <errno.h>
#include <string.h>

#define MPTCP_MIB_PREFIX "MPTcpExt:"

/* The next line starting with the prefix at or after *pos, as [start, end). */
static int mptcp_mib_line(const char *text, size_t len, size_t *pos, const char **start,
			  const char **end)
{
	size_t plen = strlen(MPTCP_MIB_PREFIX);

	while (*pos < len) {
		const char *line = text + *pos;
		const char *nl = memchr(line, '\n', len - *pos);
		size_t llen = nl ? (size_t)(nl - line) : len - *pos;

		*pos += llen + 1;
		if (llen >= plen && !memcmp(line, MPTCP_MIB_PREFIX, plen)) {
			*start = line + plen;
			*end = line + llen;
			return 1;
		}
	}
	return 0;
}

/* The next space-separated word in [*p, end); 0 when none is left. */
static size_t mptcp_mib_word(const char **p, const char *end, const char **word)
{
	while (*p < end && **p == ' ')
		(*p)++;
	*word = *p;
	while (*p < end && **p != ' ')
		(*p)++;
	return (size_t)(*p - *word);
}

int mptcp_mib_parse(const char *text, size_t len, struct mptcp_mib *out)
{
	const char *ns, *ne, *vs, *ve, *w;
	size_t pos = 0, n = 0, wl;

	out->n = 0;
	if (!mptcp_mib_line(text, len, &pos, &ns, &ne))
		return 0;
	if (!mptcp_mib_line(text, len, &pos, &vs, &ve))
		return -EINVAL;
	while ((wl = mptcp_mib_word(&ns, ne, &w))) {
		const char *v;
		size_t vl = mptcp_mib_word(&vs, ve, &v);
		uint64_t val = 0;

		if (!vl || wl >= MPTCP_MIB_NAME_MAX)
			return -EINVAL;
		for (size_t i = 0; i < vl; i++) {
			uint64_t d = (uint64_t)(v[i] - '0');

			if (v[i] < '0' || v[i] > '9' || val > (UINT64_MAX - d) / 10)
				return -EINVAL;
			val = val * 10 + d;
		}
		if (n < MPTCP_MIB_MAX) {
			memcpy(out->name[n], w, wl);
			out->name[n][wl] = '\0';
			out->value[n] = val;
			n++;
		}
	}
	if (mptcp_mib_word(&vs, ve, &w))
		return -EINVAL; /* more values than names */
	out->n = n;
	return (int)n;
}

int mptcp_mib_is_gauge(const char *name)
{
	return strstr(name, "Curr") != NULL;
}
