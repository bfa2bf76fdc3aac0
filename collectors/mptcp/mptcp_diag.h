/* SPDX-License-Identifier: MIT */
/*
 * sock_diag resync of the mptcp collector's live state, used after the event
 * socket overran (ENOBUFS: events were lost).
 *
 * Two dumps per address family, on a NETLINK_SOCK_DIAG socket opened in the
 * watched netns: MPTCP sockets (INET_DIAG_INFO = struct mptcp_info gives the
 * token) for connections and listeners, and TCP sockets whose ULP is mptcp
 * (INET_DIAG_ULP_INFO, needs CAP_NET_ADMIN) for subflows with their token,
 * local/remote ids and backup flag.
 */
#ifndef SYSOBS_MPTCP_DIAG_H
#define SYSOBS_MPTCP_DIAG_H

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

struct mptcp_state;

/* Pure: applies one SOCK_DIAG_BY_FAMILY reply message of a dump of protocol
 * proto (IPPROTO_MPTCP or IPPROTO_TCP) to fresh. Returns 1 if it added
 * something, 0 if the socket was skipped, -EINVAL if malformed, -ENOMEM. */
int mptcp_diag_msg_apply(const struct nlmsghdr *nlh, size_t len, int proto, uint64_t netns,
			 struct mptcp_state *fresh, int64_t now_ns);

/* Pure: one recv() of a dump's answer (a datagram of messages) applied to
 * fresh, as mptcp_diag_msg_apply; messages of another sequence number than
 * the request's seq are skipped, and *added counts the sockets added. 1
 * when the dump ended (NLMSG_DONE, or an NLMSG_ERROR of 0), 0 when more is
 * to come, the kernel's -errno (or -EIO for a malformed or positive error),
 * -ENOMEM. */
int mptcp_diag_reply(const void *buf, size_t len, uint32_t seq, int proto, uint64_t netns,
		     struct mptcp_state *fresh, int64_t now_ns, int *added);

/* After both dumps: drops the connections the MPTCP dump did not list
 * (their subflows alone came, from a connection closed in between). */
void mptcp_diag_dump_end(struct mptcp_state *fresh);

/* Opens a NETLINK_SOCK_DIAG socket in the current netns (blocking, with a
 * receive timeout so a dump can never hang the loop). -errno on failure. */
int mptcp_diag_open(void);

/* Dumps everything MPTCP in fd's netns into fresh (an empty private state).
 * Returns the number of sockets added or -errno. */
int mptcp_diag_dump(int fd, uint64_t netns, struct mptcp_state *fresh, int64_t now_ns);

#endif
