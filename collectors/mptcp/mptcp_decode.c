/* SPDX-License-Identifier: MIT */
/*
 * Pure decoder of MPTCP path-manager events; see mptcp_decode.h. Modelled on
 * iproute2's ip/ipmptcp.c monitor: every attribute optional, unknown ones
 * reported by number rather than rejected.
 */
#include "collectors/mptcp/mptcp_decode.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <stdio.h>
#include <string.h>

/* Expected payload size per attribute (0: not an attribute we know). */
static const uint8_t mptcp_attr_size[MPTCP_EVA_MAX + 1] = {
    [MPTCP_EVA_TOKEN] = 4,	  [MPTCP_EVA_FAMILY] = 2,      [MPTCP_EVA_LOC_ID] = 1,
    [MPTCP_EVA_REM_ID] = 1,	  [MPTCP_EVA_SADDR4] = 4,      [MPTCP_EVA_SADDR6] = 16,
    [MPTCP_EVA_DADDR4] = 4,	  [MPTCP_EVA_DADDR6] = 16,     [MPTCP_EVA_SPORT] = 2,
    [MPTCP_EVA_DPORT] = 2,	  [MPTCP_EVA_BACKUP] = 1,      [MPTCP_EVA_ERROR] = 1,
    [MPTCP_EVA_FLAGS] = 2,	  [MPTCP_EVA_TIMEOUT] = 4,     [MPTCP_EVA_IF_IDX] = 4,
    [MPTCP_EVA_RESET_REASON] = 4, [MPTCP_EVA_RESET_FLAGS] = 4, [MPTCP_EVA_SERVER_SIDE] = 1,
};

static void mptcp_event_add_unknown(struct mptcp_event *ev, uint16_t type, uint16_t len)
{
	if (ev->n_unknown < MPTCP_EV_MAX_UNKNOWN) {
		ev->unknown[ev->n_unknown].type = type;
		ev->unknown[ev->n_unknown].len = len;
	}
	if (ev->n_unknown < UINT16_MAX)
		ev->n_unknown++;
}

/* Stores one attribute whose size has been checked against mptcp_attr_size. */
static void mptcp_event_put_attr(struct mptcp_event *ev, uint16_t type, const void *p)
{
	uint16_t u16;
	uint32_t u32;

	switch (type) {
	case MPTCP_EVA_TOKEN:
		memcpy(&ev->token, p, 4);
		break;
	case MPTCP_EVA_FAMILY:
		memcpy(&ev->family, p, 2);
		break;
	case MPTCP_EVA_LOC_ID:
		ev->loc_id = *(const uint8_t *)p;
		break;
	case MPTCP_EVA_REM_ID:
		ev->rem_id = *(const uint8_t *)p;
		break;
	case MPTCP_EVA_SADDR4:
		memset(&ev->saddr, 0, sizeof(ev->saddr));
		memcpy(&ev->saddr, p, 4);
		ev->saddr_family = AF_INET;
		break;
	case MPTCP_EVA_SADDR6:
		memcpy(&ev->saddr, p, 16);
		ev->saddr_family = AF_INET6;
		break;
	case MPTCP_EVA_DADDR4:
		memset(&ev->daddr, 0, sizeof(ev->daddr));
		memcpy(&ev->daddr, p, 4);
		ev->daddr_family = AF_INET;
		break;
	case MPTCP_EVA_DADDR6:
		memcpy(&ev->daddr, p, 16);
		ev->daddr_family = AF_INET6;
		break;
	case MPTCP_EVA_SPORT:
		memcpy(&u16, p, 2);
		ev->sport = ntohs(u16);
		break;
	case MPTCP_EVA_DPORT:
		memcpy(&u16, p, 2);
		ev->dport = ntohs(u16);
		break;
	case MPTCP_EVA_BACKUP:
		ev->backup = *(const uint8_t *)p;
		break;
	case MPTCP_EVA_ERROR:
		ev->error = *(const uint8_t *)p;
		break;
	case MPTCP_EVA_FLAGS:
		memcpy(&ev->flags, p, 2);
		if (ev->flags & MPTCP_EV_FLAG_SERVER_SIDE)
			ev->server_side = 1;
		break;
	case MPTCP_EVA_TIMEOUT:
		memcpy(&ev->timeout, p, 4);
		break;
	case MPTCP_EVA_IF_IDX:
		memcpy(&u32, p, 4);
		ev->if_idx = (int32_t)u32;
		break;
	case MPTCP_EVA_RESET_REASON:
		memcpy(&ev->reset_reason, p, 4);
		break;
	case MPTCP_EVA_RESET_FLAGS:
		memcpy(&ev->reset_flags, p, 4);
		break;
	case MPTCP_EVA_SERVER_SIDE:
		ev->server_side = *(const uint8_t *)p;
		break;
	}
	ev->present |= 1u << type;
}

int mptcp_event_decode(const struct nlmsghdr *nlh, size_t len, struct mptcp_event *out)
{
	const struct genlmsghdr *genl;
	const struct nlattr *attr;
	const void *payload;
	size_t payload_len;

	memset(out, 0, sizeof(*out));
	if (!nlh || len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -EINVAL;
	if (nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN || nlh->nlmsg_len > len)
		return -EINVAL;

	genl = (const struct genlmsghdr *)((const char *)nlh + NLMSG_HDRLEN);
	out->type = genl->cmd;
	out->version = genl->version;

	/* Attributes start after the (aligned) genl header and end at
	 * nlmsg_len, not at its aligned value: the bytes past nlmsg_len may
	 * not belong to this buffer. */
	payload = (const char *)genl + GENL_HDRLEN;
	payload_len = nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
	mnl_attr_for_each_payload(payload, payload_len)
	{
		uint16_t type = mnl_attr_get_type(attr);
		uint16_t alen = mnl_attr_get_payload_len(attr);

		if (type == 0 || type > MPTCP_EVA_MAX || alen != mptcp_attr_size[type]) {
			mptcp_event_add_unknown(out, type, alen);
			continue;
		}
		mptcp_event_put_attr(out, type, mnl_attr_get_payload(attr));
	}
	/* SERVER_SIDE wins over FLAGS: a kernel sending both agrees anyway. */
	if (mptcp_event_has(out, MPTCP_EVA_SERVER_SIDE))
		out->side = out->server_side ? 1 : 0;
	else if (mptcp_event_has(out, MPTCP_EVA_FLAGS))
		out->side = (out->flags & MPTCP_EV_FLAG_SERVER_SIDE) ? 1 : 0;
	else
		out->side = -1;
	return 0;
}

void mptcp_event_side_resolve(struct mptcp_event *ev, int absent_is_client)
{
	if (ev->side < 0 && absent_is_client &&
	    (ev->type == MPTCP_EV_CREATED || ev->type == MPTCP_EV_ESTABLISHED))
		ev->side = 0;
}

/* ---- CTRL_CMD_NEWFAMILY replies (resolving "mptcp_pm") ---- */

/* The attributes of a generic netlink message: 0, or -EINVAL if it is
 * shorter than its headers or than it says. */
static int mptcp_genl_payload(const struct nlmsghdr *nlh, size_t len, const void **payload,
			      size_t *plen)
{
	if (len < NLMSG_HDRLEN + GENL_HDRLEN || nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN ||
	    nlh->nlmsg_len > len)
		return -EINVAL;
	*payload = (const char *)nlh + NLMSG_HDRLEN + GENL_HDRLEN;
	*plen = nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
	return 0;
}

/* Finds the events group in a CTRL_ATTR_MCAST_GROUPS nest. */
static int mptcp_genl_group_find(const struct nlattr *nest, uint32_t *group)
{
	const struct nlattr *grp;

	mnl_attr_for_each_nested(grp, nest)
	{
		const struct nlattr *a;
		const char *name = NULL;
		uint32_t id = 0;
		int have_id = 0;

		mnl_attr_for_each_nested(a, grp)
		{
			switch (mnl_attr_get_type(a)) {
			case CTRL_ATTR_MCAST_GRP_NAME:
				if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
					name = mnl_attr_get_str(a);
				break;
			case CTRL_ATTR_MCAST_GRP_ID:
				if (mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
					id = mnl_attr_get_u32(a);
					have_id = 1;
				}
				break;
			}
		}
		if (name && have_id && !strcmp(name, MPTCP_GENL_EVENTS_GRP)) {
			*group = id;
			return 0;
		}
	}
	return -ENOENT;
}

int mptcp_genl_family_parse(const struct nlmsghdr *nlh, size_t len, uint16_t *family,
			    uint32_t *group)
{
	const struct nlattr *attr;
	const void *payload;
	size_t plen;
	int have_family = 0, ret = -ENOENT;

	if (mptcp_genl_payload(nlh, len, &payload, &plen))
		return -EINVAL;
	mnl_attr_for_each_payload(payload, plen)
	{
		switch (mnl_attr_get_type(attr)) {
		case CTRL_ATTR_FAMILY_ID:
			if (mnl_attr_validate(attr, MNL_TYPE_U16) == 0) {
				*family = mnl_attr_get_u16(attr);
				have_family = 1;
			}
			break;
		case CTRL_ATTR_MCAST_GROUPS:
			ret = mptcp_genl_group_find(attr, group);
			break;
		}
	}
	if (!have_family)
		return -EINVAL;
	return ret;
}

/*
 * The kernel's own word on whether it reports the side, not its release
 * number (a distribution kernel carries backports): the family's ops list,
 * CTRL_ATTR_OPS, one nest per command with its CTRL_ATTR_OP_ID. The
 * userspace path-manager commands MPTCP_PM_CMD_ANNOUNCE, _REMOVE,
 * _SUBFLOW_CREATE and _SUBFLOW_DESTROY and the event attribute
 * MPTCP_ATTR_SERVER_SIDE were merged for the same release, Linux 5.19:
 * multipath-tcp/mptcp_net-next issues #186 ("Add netlink command support")
 * and #246 ("Netlink PM events: add one attribute about the connection
 * type"); mptcpd 0.11 (PR #257) supports "the user space MPTCP path
 * management generic netlink API in the upstream Linux 5.19 kernel", and
 * mptcpd issue #244 met attribute 18 (SERVER_SIDE) on a 5.19-rc kernel.
 */
int mptcp_genl_family_reports_side(const struct nlmsghdr *nlh, size_t len)
{
	const unsigned want =
	    (1u << (MPTCP_PM_CMD_USERSPACE_LAST - MPTCP_PM_CMD_USERSPACE_FIRST + 1)) - 1;
	const struct nlattr *attr, *op, *a;
	const void *payload;
	unsigned seen = 0;
	size_t plen;

	if (mptcp_genl_payload(nlh, len, &payload, &plen))
		return -EINVAL;
	mnl_attr_for_each_payload(payload, plen)
	{
		if (mnl_attr_get_type(attr) != CTRL_ATTR_OPS)
			continue;
		mnl_attr_for_each_nested(op, attr)
		{
			mnl_attr_for_each_nested(a, op)
			{
				uint32_t id;

				if (mnl_attr_get_type(a) != CTRL_ATTR_OP_ID ||
				    mnl_attr_validate(a, MNL_TYPE_U32))
					continue;
				id = mnl_attr_get_u32(a);
				if (id >= MPTCP_PM_CMD_USERSPACE_FIRST &&
				    id <= MPTCP_PM_CMD_USERSPACE_LAST)
					seen |= 1u << (id - MPTCP_PM_CMD_USERSPACE_FIRST);
			}
		}
	}
	return seen == want;
}

static const char *const mptcp_event_names[] = {
    [MPTCP_EV_CREATED] = "CREATED",
    [MPTCP_EV_ESTABLISHED] = "ESTABLISHED",
    [MPTCP_EV_CLOSED] = "CLOSED",
    [MPTCP_EV_ANNOUNCED] = "ANNOUNCED",
    [MPTCP_EV_REMOVED] = "REMOVED",
    [MPTCP_EV_SUB_ESTABLISHED] = "SUB_ESTABLISHED",
    [MPTCP_EV_SUB_CLOSED] = "SUB_CLOSED",
    [MPTCP_EV_SUB_PRIORITY] = "SUB_PRIORITY",
    [MPTCP_EV_LISTENER_CREATED] = "LISTENER_CREATED",
    [MPTCP_EV_LISTENER_CLOSED] = "LISTENER_CLOSED",
};

const char *mptcp_event_type_name(unsigned type)
{
	if (type >= sizeof(mptcp_event_names) / sizeof(mptcp_event_names[0]))
		return NULL;
	return mptcp_event_names[type];
}

const char *mptcp_event_type_str(unsigned type, char *buf, size_t len)
{
	const char *name = mptcp_event_type_name(type);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "UNKNOWN_%u", type);
	return buf;
}

const char *const mptcp_reset_names[MPTCP_RESET_NAMES] = {
    "unspec", "mptcp", "resource", "prohibit", "wq2big", "badperf", "middlebox",
};

const char *mptcp_reset_reason_name(uint32_t reason)
{
	if (reason >= MPTCP_RESET_NAMES)
		return NULL;
	return mptcp_reset_names[reason];
}

static const char *mptcp_addr_str(uint8_t family, const struct in6_addr *a, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (family && !inet_ntop(family, a, buf, len) && len)
		buf[0] = 0;
	return buf;
}

const char *mptcp_event_saddr_str(const struct mptcp_event *ev, char *buf, size_t len)
{
	return mptcp_addr_str(ev->saddr_family, &ev->saddr, buf, len);
}

const char *mptcp_event_daddr_str(const struct mptcp_event *ev, char *buf, size_t len)
{
	return mptcp_addr_str(ev->daddr_family, &ev->daddr, buf, len);
}

size_t mptcp_event_unknown_str(const struct mptcp_event *ev, char *buf, size_t len)
{
	size_t off = 0, kept;

	if (!len)
		return 0;
	buf[0] = 0;
	if (!ev->n_unknown)
		return 0;
	kept = ev->n_unknown < MPTCP_EV_MAX_UNKNOWN ? ev->n_unknown : MPTCP_EV_MAX_UNKNOWN;
	for (size_t i = 0; i < kept; i++) {
		char item[48];
		int n = snprintf(item, sizeof(item), "%s{\"type\":%u,\"len\":%u}", i ? "," : "[",
				 ev->unknown[i].type, ev->unknown[i].len);

		/* Keep room for the closing bracket. */
		if (off + n + 2 > len)
			break;
		memcpy(buf + off, item, n);
		off += n;
	}
	if (off == 0)
		return 0;
	buf[off++] = ']';
	buf[off] = 0;
	return off;
}
