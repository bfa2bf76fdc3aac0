/* SPDX-License-Identifier: MIT */
/*
 * What the BPF backend decides from BTF alone (unit-tested on synthetic BTF).
 */
#ifndef SYSOBS_CACHEFILES_BACKEND_BPF_H
#define SYSOBS_CACHEFILES_BACKEND_BPF_H

#include <stddef.h>

struct btf;

/*
 * Has cachefiles_ondemand_daemon_read() in btf (a split module BTF sees its
 * base) the prototype the fexit hook reads by position:
 *   ssize_t (struct cachefiles_cache *, char __user *, size_t)
 * 0; -ENOENT when it is not there; -EINVAL, with why, when it differs.
 */
int cachefiles_daemon_read_proto_check(const struct btf *btf, char *why, size_t why_len);

/*
 * Has cachefiles_prepare_ondemand_read() (6.1+) six parameters and an enum
 * (netfs_io_source) return, which the fexit reads for a READ's verdict?
 * 0; -ENOENT when absent; -EINVAL, with why, when it differs.
 */
int cachefiles_prepare_read_proto_check(const struct btf *btf, char *why, size_t why_len);

#endif
