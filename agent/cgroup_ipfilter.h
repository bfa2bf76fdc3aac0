/* SPDX-License-Identifier: MIT */
#ifndef SYSOBS_CGROUP_IPFILTER_H
#define SYSOBS_CGROUP_IPFILTER_H

#include <stddef.h>

/*
 * The BPF programs that may drop this process's incoming IP packets before
 * accept() (systemd's IPAddressDeny=/IPAddressAllow=, IPIngressFilterPath=:
 * cgroup INET_INGRESS programs of its cgroup or a parent). Returns how many,
 * their names comma-separated in names; -errno when it cannot ask (no
 * cgroup v2, no CAP_NET_ADMIN).
 */
int cgroup_ipfilter_find(char *names, size_t len);
/* Warns when listen is beyond loopback and such a filter is there. */
void cgroup_ipfilter_warn(const char *listen);

#endif
