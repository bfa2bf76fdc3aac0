// SPDX-License-Identifier: MIT
/* netns_live: see netns_live.h and bpf/netns.bpf.c. */
#include "collectors/netns_live.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/netns.h"

struct netns_live {
	int prog_fd;
	const __u32 *live_netns; /* the program's .bss, mmapped */
	const __u64 *live_cookie;
	size_t n; /* namespaces in the last good snapshot */
	struct netns_id {
		uint32_t inum;
		uint64_t cookie;
	} ns[NETNS_LIVE_MAX];		 /* sorted by inum */
	uint64_t cookie[NETNS_LIVE_MAX]; /* sorted */
};

struct netns_live *netns_live_new(int prog_fd, const __u32 *live_netns, const __u64 *live_cookie,
				  char *why, size_t why_len)
{
	struct netns_live *nl = calloc(1, sizeof(*nl));
	int err;

	if (!nl) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	nl->prog_fd = prog_fd;
	nl->live_netns = live_netns;
	nl->live_cookie = live_cookie;
	/* One walk now: a kernel that loads the program but cannot run it
	 * (no test_run for raw_tp, say) says so here, not at every collect. */
	err = netns_live_snapshot(nl);
	if (err) {
		snprintf(why, why_len, "first walk: %s", strerror(-err));
		free(nl);
		errno = -err;
		return NULL;
	}
	return nl;
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct netns_id *)a)->inum, y = ((const struct netns_id *)b)->inum;

	return x < y ? -1 : x > y;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int netns_live_snapshot(struct netns_live *nl)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	uint32_t n;

	if (bpf_prog_test_run_opts(nl->prog_fd, &opts))
		return -errno;
	n = opts.retval;
	if (n == NETNS_WALK_NO_INIT)
		return -ENOENT;
	if (n > NETNS_LIVE_MAX)
		return -E2BIG;
	/* .bss is mmapped: the walk wrote it before test_run returned. */
	for (uint32_t i = 0; i < n; i++) {
		nl->ns[i].inum = nl->live_netns[i];
		nl->ns[i].cookie = nl->live_cookie[i];
		nl->cookie[i] = nl->ns[i].cookie;
	}
	qsort(nl->ns, n, sizeof(nl->ns[0]), id_cmp);
	qsort(nl->cookie, n, sizeof(nl->cookie[0]), u64_cmp);
	nl->n = n;
	return 0;
}

bool netns_live_has(const struct netns_live *nl, uint32_t inum)
{
	struct netns_id key = {.inum = inum};

	return bsearch(&key, nl->ns, nl->n, sizeof(nl->ns[0]), id_cmp) != NULL;
}

uint64_t netns_live_cookie(const struct netns_live *nl, uint32_t inum)
{
	struct netns_id key = {.inum = inum};
	const struct netns_id *id = bsearch(&key, nl->ns, nl->n, sizeof(nl->ns[0]), id_cmp);

	return id ? id->cookie : 0;
}

bool netns_live_has_cookie(const struct netns_live *nl, uint64_t cookie)
{
	return bsearch(&cookie, nl->cookie, nl->n, sizeof(nl->cookie[0]), u64_cmp) != NULL;
}

size_t netns_live_count(const struct netns_live *nl)
{
	return nl ? nl->n : 0;
}

void netns_live_close(struct netns_live *nl)
{
	free(nl);
}
