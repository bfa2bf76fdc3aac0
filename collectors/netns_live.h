/* SPDX-License-Identifier: MIT */
/*
 * netns_live: which network namespaces exist now, by inode number, as the
 * kernel's own list says (bpf/netns.bpf.c). Collectors that label series by
 * netns use it to declare a deleted namespace's series gone.
 *
 *   netns_live_new()       the walk of a loaded netns_walk program (its fd,
 *                          and its .bss arrays live_netns and live_cookie,
 *                          mmapped), with one first snapshot. The program
 *                          rides in the object of the collector that uses
 *                          it (bpf/CMakeLists.txt links it in): libbpf
 *                          parses the kernel's BTF once per object loaded.
 *                          NULL with errno and *why when it cannot.
 *   netns_live_snapshot()  runs the walk (a BPF_PROG_TEST_RUN: no
 *                          capability needed); 0, or -E2BIG (more than
 *                          NETNS_LIVE_MAX or a list that did not close) or
 *                          -ENOENT (init_net not found): nothing can be
 *                          judged gone then.
 *   netns_live_close()     frees it, before the object the program is in.
 *   netns_live_has()       inum is in the last good snapshot.
 *   netns_live_has_cookie() a namespace with that cookie (net->net_cookie)
 *                          is: the inode number of a deleted namespace is
 *                          given to the next one made, its cookie never.
 *                          Cookies are unique, not ordered: the kernel hands
 *                          them out in per-CPU batches (linux/cookie.h).
 *   netns_live_cookie()    the cookie of the namespace with that inode
 *                          number, 0 when there is none.
 *
 * A namespace created after the snapshot is not in it: take the snapshot
 * after reading the keys to judge, never before.
 */
#ifndef SYSOBS_NETNS_LIVE_H
#define SYSOBS_NETNS_LIVE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netns_live;

struct netns_live *netns_live_new(int prog_fd, const __u32 *live_netns, const __u64 *live_cookie,
				  char *why, size_t why_len);
int netns_live_snapshot(struct netns_live *nl);
bool netns_live_has(const struct netns_live *nl, uint32_t inum);
uint64_t netns_live_cookie(const struct netns_live *nl, uint32_t inum);
bool netns_live_has_cookie(const struct netns_live *nl, uint64_t cookie);
size_t netns_live_count(const struct netns_live *nl);
void netns_live_close(struct netns_live *nl);

#endif
