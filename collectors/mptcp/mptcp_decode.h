/* SPDX-License-Identifier: MIT */
/*
 * Pure decoder of MPTCP path-manager events (generic netlink family
 * "mptcp_pm", group "mptcp_pm_events"). No I/O: it takes one netlink message
 * as received and fills a struct mptcp_event, so recorded messages can be
 * replayed into it by unit tests, the fuzz target and the benchmark.
 *
 * Every attribute is optional (the set varies by kernel version and event
 * type); `present` says which ones were seen. Unknown event types are decoded
 * like known ones (mptcp_event_type_name() returns NULL for them); unknown
 * attributes and attributes of an unexpected size are counted and kept as
 * (type, length) pairs, never dereferenced.
 */
#ifndef SYSOBS_MPTCP_DECODE_H
#define SYSOBS_MPTCP_DECODE_H

#include <linux/netlink.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Event types (genlmsghdr.cmd), as in include/uapi/linux/mptcp.h. The two
 * listener events (Linux 6.1+) are missing from older UAPI headers, so the
 * values are spelled out here. */
enum mptcp_ev {
	MPTCP_EV_UNSPEC = 0,
	MPTCP_EV_CREATED = 1,
	MPTCP_EV_ESTABLISHED = 2,
	MPTCP_EV_CLOSED = 3,
	MPTCP_EV_ANNOUNCED = 6,
	MPTCP_EV_REMOVED = 7,
	MPTCP_EV_SUB_ESTABLISHED = 10,
	MPTCP_EV_SUB_CLOSED = 11,
	MPTCP_EV_SUB_PRIORITY = 13,
	MPTCP_EV_LISTENER_CREATED = 15,
	MPTCP_EV_LISTENER_CLOSED = 16,
	MPTCP_EV_MAX = 255, /* cmd is a u8 */
};

/* Event attributes (enum mptcp_event_attr). */
enum mptcp_ev_attr {
	MPTCP_EVA_TOKEN = 1,	     /* u32 */
	MPTCP_EVA_FAMILY = 2,	     /* u16 */
	MPTCP_EVA_LOC_ID = 3,	     /* u8 */
	MPTCP_EVA_REM_ID = 4,	     /* u8 */
	MPTCP_EVA_SADDR4 = 5,	     /* be32 */
	MPTCP_EVA_SADDR6 = 6,	     /* struct in6_addr */
	MPTCP_EVA_DADDR4 = 7,	     /* be32 */
	MPTCP_EVA_DADDR6 = 8,	     /* struct in6_addr */
	MPTCP_EVA_SPORT = 9,	     /* be16 */
	MPTCP_EVA_DPORT = 10,	     /* be16 */
	MPTCP_EVA_BACKUP = 11,	     /* u8 */
	MPTCP_EVA_ERROR = 12,	     /* u8 */
	MPTCP_EVA_FLAGS = 13,	     /* u16 */
	MPTCP_EVA_TIMEOUT = 14,	     /* u32 */
	MPTCP_EVA_IF_IDX = 15,	     /* s32 */
	MPTCP_EVA_RESET_REASON = 16, /* u32 */
	MPTCP_EVA_RESET_FLAGS = 17,  /* u32 */
	MPTCP_EVA_SERVER_SIDE = 18,  /* u8 */
	MPTCP_EVA_MAX = 18,
};

/* FLAGS attribute bits: bit 0 deny-join-id0 (6.2+), bit 1 server side
 * (newer kernels report it here instead of the SERVER_SIDE attribute). */
#define MPTCP_EV_FLAG_DENY_JOIN_ID0 (1u << 0)
#define MPTCP_EV_FLAG_SERVER_SIDE   (1u << 1)

#define MPTCP_EV_MAX_UNKNOWN 8 /* unknown attributes kept per event */

struct mptcp_ev_unknown {
	uint16_t type; /* nla_type without NLA_F_* bits */
	uint16_t len;  /* payload length */
};

struct mptcp_event {
	uint8_t type;	  /* genlmsghdr.cmd */
	uint8_t version;  /* genlmsghdr.version */
	uint32_t present; /* bit (1u << MPTCP_EVA_x) per attribute decoded */
	uint32_t token;
	uint16_t family; /* FAMILY attribute (AF_INET / AF_INET6) */
	uint8_t loc_id;
	uint8_t rem_id;
	uint8_t saddr_family; /* AF_INET (SADDR4) or AF_INET6 (SADDR6), else 0 */
	uint8_t daddr_family;
	struct in6_addr saddr; /* IPv4 in the first 4 bytes */
	struct in6_addr daddr;
	uint16_t sport; /* host order */
	uint16_t dport;
	uint8_t backup;
	uint8_t error;
	uint16_t flags;
	uint32_t timeout;
	int32_t if_idx;
	uint32_t reset_reason;
	uint32_t reset_flags;
	uint8_t server_side; /* SERVER_SIDE attribute, or FLAGS bit 1 */
	/* Which side the kernel said we are: 1 server, 0 client, -1 it did not
	 * say (no SERVER_SIDE, no FLAGS); see mptcp_event_side_resolve(). */
	int8_t side;
	uint16_t n_unknown; /* unknown or mis-sized attributes, all counted */
	struct mptcp_ev_unknown unknown[MPTCP_EV_MAX_UNKNOWN]; /* the first ones */
};

/*
 * Decodes one event message. len is the number of bytes available at nlh
 * (the message must fit: nlmsg_len <= len). Returns 0, or -EINVAL if the
 * buffer is not a generic netlink message (too short, inconsistent length).
 * Attribute trouble is never an error: it lands in n_unknown/unknown[].
 */
int mptcp_event_decode(const struct nlmsghdr *nlh, size_t len, struct mptcp_event *out);

static inline int mptcp_event_has(const struct mptcp_event *ev, unsigned attr)
{
	return attr <= 31 && (ev->present & (1u << attr));
}

/*
 * Walks the messages of one received datagram. libmnl's mnl_nlmsg_ok()
 * compares nlmsg_len as a signed int, so a length above INT_MAX passes its
 * check; these compare unsigned sizes.
 */
static inline int mptcp_nlmsg_ok(const struct nlmsghdr *nlh, size_t left)
{
	return left >= sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) && nlh->nlmsg_len <= left;
}

static inline const struct nlmsghdr *mptcp_nlmsg_next(const struct nlmsghdr *nlh, size_t *left)
{
	size_t step = NLMSG_ALIGN((size_t)nlh->nlmsg_len);

	*left = step < *left ? *left - step : 0;
	return (const struct nlmsghdr *)((const char *)nlh + step);
}

#define mptcp_nlmsg_for_each(nlh, buf, len, left)                                                  \
	for ((left) = (len), (nlh) = (const struct nlmsghdr *)(buf); mptcp_nlmsg_ok(nlh, left);    \
	     (nlh) = mptcp_nlmsg_next(nlh, &(left)))

/*
 * What a CREATED/ESTABLISHED without SERVER_SIDE and FLAGS means depends on
 * the kernel: 5.12-5.18 have no server-side information at all (unknown);
 * 5.19 added SERVER_SIDE, sent on both sides (0/1); newer kernels send FLAGS
 * with bit 1 and SERVER_SIDE=1 on the server side only and nothing on the
 * client side. absent_is_client (mptcp_genl_family_reports_side(): the
 * kernel reports the side) turns the absence into "client"; otherwise side
 * stays -1 (unknown).
 */
void mptcp_event_side_resolve(struct mptcp_event *ev, int absent_is_client);

/* ---- the "mptcp_pm" family (CTRL_CMD_NEWFAMILY replies) ---- */

#define MPTCP_GENL_NAME	      "mptcp_pm"
#define MPTCP_GENL_EVENTS_GRP "mptcp_pm_events"
/* The userspace path-manager commands, MPTCP_PM_CMD_ANNOUNCE (8) to
 * MPTCP_PM_CMD_SUBFLOW_DESTROY (11) in include/uapi/linux/mptcp.h, spelled
 * out for UAPI headers older than Linux 5.19. */
#define MPTCP_PM_CMD_USERSPACE_FIRST 8
#define MPTCP_PM_CMD_USERSPACE_LAST  11

/* Parses a CTRL_CMD_NEWFAMILY reply. Returns 0 with *family and *group set,
 * -ENOENT if the events group is not listed, -EINVAL if malformed. */
int mptcp_genl_family_parse(const struct nlmsghdr *nlh, size_t len, uint16_t *family,
			    uint32_t *group);
/*
 * Whether the kernel that sent this CTRL_CMD_NEWFAMILY reply reports the
 * side of a connection (MPTCP_ATTR_SERVER_SIDE, Linux 5.19): 1 when its ops
 * list holds every userspace path-manager command (the same release), 0
 * when not, -EINVAL if malformed.
 */
int mptcp_genl_family_reports_side(const struct nlmsghdr *nlh, size_t len);

/* "CREATED", "SUB_ESTABLISHED", ... or NULL for an unknown type. */
const char *mptcp_event_type_name(unsigned type);
/* "CREATED" or "UNKNOWN_<n>" into buf (at least 16 bytes); returns buf. */
const char *mptcp_event_type_str(unsigned type, char *buf, size_t len);
/* "unspec", "mptcp", "resource", "prohibit", "wq2big", "badperf",
 * "middlebox", or NULL for a reason this code does not know. */
const char *mptcp_reset_reason_name(uint32_t reason);
/* Those names by code (MPTCP_RST_* of include/uapi/linux/mptcp.h). */
#define MPTCP_RESET_NAMES 7
extern const char *const mptcp_reset_names[MPTCP_RESET_NAMES];
/* Address of the event as text ("" if absent); buf at least INET6_ADDRSTRLEN. */
const char *mptcp_event_saddr_str(const struct mptcp_event *ev, char *buf, size_t len);
const char *mptcp_event_daddr_str(const struct mptcp_event *ev, char *buf, size_t len);
/* Unknown attributes as JSON text: [{"type":19,"len":4},...] ("" if none).
 * Returns the length written (truncated to fit, always NUL-terminated). */
size_t mptcp_event_unknown_str(const struct mptcp_event *ev, char *buf, size_t len);

#endif
