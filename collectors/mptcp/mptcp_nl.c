/* SPDX-License-Identifier: MIT */
/* Generic netlink plumbing of the mptcp collector; see mptcp_nl.h. */
#include "collectors/mptcp/mptcp_nl.h"

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* CTRL_CMD_GETFAMILY round trip on nl. */
static int mptcp_genl_resolve(struct mnl_socket *nl, uint16_t *family, uint32_t *group,
			      int *reports_side)
{
	char buf[8192] __attribute__((aligned(4)));
	struct nlmsghdr *nlh;
	struct genlmsghdr *genl;
	uint32_t seq = (uint32_t)time(NULL), portid = mnl_socket_get_portid(nl);
	int ret = -ENOENT, left;
	ssize_t n;

	/* Attribute padding is not cleared by every libmnl: send no stack bytes. */
	memset(buf, 0, 512);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
	genl->cmd = CTRL_CMD_GETFAMILY;
	genl->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, MPTCP_GENL_NAME);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;

	/* The reply comes first, then the ACK (error 0): read both, so no
	 * stray ACK is left for the event reader. */
	for (;;) {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		left = (int)n;
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_seq != seq || nlh->nlmsg_pid != portid)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

				if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
					return -EINVAL;
				if (e->error)
					return e->error;
				return ret;
			}
			if (nlh->nlmsg_type != GENL_ID_CTRL)
				continue;
			ret = mptcp_genl_family_parse(nlh, nlh->nlmsg_len, family, group);
			*reports_side = mptcp_genl_family_reports_side(nlh, nlh->nlmsg_len) == 1;
		}
	}
}

struct mnl_socket *mptcp_events_open(size_t rcvbuf, uint16_t *family, int *reports_side, int *err)
{
	struct mnl_socket *nl;
	uint32_t group = 0;
	int fd, ret, side = 0;

	nl = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!nl) {
		*err = -errno;
		return NULL;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out_close;
	}
	ret = mptcp_genl_resolve(nl, family, &group, &side);
	if (ret < 0)
		goto out_close;
	if (reports_side)
		*reports_side = side;
	fd = mnl_socket_get_fd(nl);
	if (rcvbuf) {
		int v = rcvbuf > (size_t)INT32_MAX / 2 ? INT32_MAX / 2 : (int)rcvbuf;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	/* Extended ACKs are irrelevant for a listener; strict checking is not
	 * needed either. Joining the group needs CAP_NET_ADMIN in this netns. */
	if (mnl_socket_setsockopt(nl, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0) {
		ret = -errno;
		goto out_close;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		ret = -errno;
		goto out_close;
	}
	return nl;

out_close:
	mnl_socket_close(nl);
	*err = ret;
	return NULL;
}
