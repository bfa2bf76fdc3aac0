/* SPDX-License-Identifier: MIT */
/*
 * netns_name: the name the host gives a network namespace, as `ip netns`
 * lists it: a bind mount of the namespace at /run/netns/NAME. Matched by
 * the namespace file's inode and device (nsfs), so a name is shown only for
 * the very namespace it names.
 *
 * Names come and go (ip netns add/del) while the agent runs: they are read
 * at query time, with the directory's listing cached for NETNS_NAME_TTL_MS.
 * An absent or unreadable /run/netns is no error: no names. Thread-safe
 * (HTTP threads call it). For API answers only, never as a metric label (a
 * label that changes with a rename would split the series). In base: the
 * history API (api/history.c, any table with a netns column) and the
 * mptcp collector's live route both name namespaces.
 */
#ifndef SYSOBS_NETNS_NAME_H
#define SYSOBS_NETNS_NAME_H

#include <stddef.h>
#include <stdint.h>

#define NETNS_NAME_DIR	  "/run/netns"
#define NETNS_NAME_TTL_MS 1000

/*
 * The name of namespace inode inum into buf: 0, or -ENOENT when the host
 * names it nowhere. Several names for one namespace: the first in byte
 * order.
 */
int netns_name_lookup(uint32_t inum, char *buf, size_t len);

#endif
