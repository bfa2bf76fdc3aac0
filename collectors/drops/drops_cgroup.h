/* SPDX-License-Identifier: MIT */
/*
 * Container attribution of drop samples: the cgroup v2 id the BPF program
 * reads from the drop's socket (sk->sk_cgrp_data) -> the cgroup's path in
 * the cgroup2 hierarchy -> the container id when the path carries one.
 *
 * A cgroup id is the kernfs node id of the cgroup, which is also the inode
 * number of its directory: a walk of the cgroup2 mount finds it without
 * privileges (open_by_handle_at() would need CAP_DAC_READ_SEARCH). Paths
 * are cached by id; an id not found is not looked for again for a second,
 * and the tree is walked at most 8 times a second, so samples from many
 * unknown cgroups cost a bounded number of walks, not one each.
 */
#ifndef SYSOBS_DROPS_CGROUP_H
#define SYSOBS_DROPS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DROPS_CONTAINER_ID_LEN 64 /* hex digits */

/*
 * The container id in a cgroup path: the 64-hex-digit run, bounded by
 * anything but hex digits, nearest the end of the path. That covers the
 * systemd driver (docker-<id>.scope, cri-containerd-<id>.scope,
 * crio-<id>.scope, libpod-<id>.scope) and the cgroupfs one (/docker/<id>,
 * /kubepods/burstable/pod<uid>/<id>); pod UIDs (36 characters with dashes)
 * and shorter hex never match. Pure. true and out (65 bytes at least), or
 * false.
 */
bool drops_container_id(const char *path, char *out, size_t len);

struct drops_cgroups;

/* root: where cgroup2 is mounted; NULL or "" = the first cgroup2 mount of
 * /proc/self/mountinfo. NULL + errno (ENOENT: no cgroup2). */
struct drops_cgroups *drops_cgroups_new(const char *root);
void drops_cgroups_free(struct drops_cgroups *g); /* accepts NULL */

/* The path of cgroup id relative to the root ("/" for the root,
 * "/system.slice/docker-<id>.scope"), cut from the left with a leading
 * "..." when longer than len - 1. 0, -ENOENT (not found, or not looked for:
 * missed less than a second ago, or the walks of this second spent),
 * -EINVAL (g NULL, id 0). */
int drops_cgroups_path(struct drops_cgroups *g, uint64_t id, char *out, size_t len);

/* Is cgroup id still there (ids are never reused)? 1 yes, 0 gone (its
 * directory is not where it was, or a walk did not find it), -EAGAIN (not
 * looked for now, see drops_cgroups_path), -EINVAL. */
int drops_cgroups_alive(struct drops_cgroups *g, uint64_t id);

#endif
