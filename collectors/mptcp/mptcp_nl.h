/* SPDX-License-Identifier: MIT */
/*
 * Generic netlink plumbing of the mptcp collector (libmnl): resolve the
 * "mptcp_pm" family and its "mptcp_pm_events" multicast group, and open a
 * socket subscribed to it in the calling thread's network namespace.
 */
#ifndef SYSOBS_MPTCP_NL_H
#define SYSOBS_MPTCP_NL_H

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

struct mnl_socket;

#define MPTCP_GENL_NAME	      "mptcp_pm"
#define MPTCP_GENL_EVENTS_GRP "mptcp_pm_events"

/* Pure: parses a CTRL_CMD_NEWFAMILY reply. Returns 0 with *family and *group
 * set, -ENOENT if the events group is not listed, -EINVAL if malformed. */
int mptcp_genl_family_parse(const struct nlmsghdr *nlh, size_t len, uint16_t *family,
			    uint32_t *group);

/*
 * Opens a NETLINK_GENERIC socket in the current netns, resolves the family
 * and joins the events group. rcvbuf (bytes, 0 = kernel default) is forced
 * with SO_RCVBUFFORCE when allowed. The socket is non-blocking with
 * NETLINK_NO_ENOBUFS off (ENOBUFS must be seen). Returns the socket or NULL
 * with *err = -errno (-ENOENT: no mptcp_pm family, i.e. no MPTCP).
 */
struct mnl_socket *mptcp_events_open(size_t rcvbuf, uint16_t *family, int *err);

#endif
