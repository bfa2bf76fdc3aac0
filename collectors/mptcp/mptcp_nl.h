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

#include "collectors/mptcp/mptcp_decode.h"

struct mnl_socket;

/*
 * Opens a NETLINK_GENERIC socket in the current netns, resolves the family
 * and joins the events group. rcvbuf (bytes, 0 = kernel default) is forced
 * with SO_RCVBUFFORCE when allowed. The socket is non-blocking with
 * NETLINK_NO_ENOBUFS off (ENOBUFS must be seen). *reports_side (NULL: not
 * asked) is mptcp_genl_family_reports_side() of the family's reply, 0 when
 * it is malformed. Returns the socket or NULL with *err = -errno (-ENOENT:
 * no mptcp_pm family, i.e. no MPTCP).
 */
struct mnl_socket *mptcp_events_open(size_t rcvbuf, uint16_t *family, int *reports_side, int *err);

#endif
