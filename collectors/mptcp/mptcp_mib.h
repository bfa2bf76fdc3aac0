/* SPDX-License-Identifier: MIT */
/*
 * The MPTcpExt MIB of a network namespace (/proc/net/netstat, the lines
 * "MPTcpExt: NAME..." and "MPTcpExt: VALUE..."; net/mptcp/mib.c): joins,
 * fallbacks, fast closes, MP_RST, dropped ADD_ADDR... Counters that an event
 * overrun cannot lose and that cover what sends no event at all. The parser
 * is pure (unit-tested with a text); the collector reads the file through a
 * descriptor opened inside each watched netns.
 */
#ifndef SYSOBS_MPTCP_MIB_H
#define SYSOBS_MPTCP_MIB_H

#include <stddef.h>
#include <stdint.h>

#define MPTCP_MIB_MAX	   192 /* counters kept (6.18 has 76) */
#define MPTCP_MIB_NAME_MAX 48

struct mptcp_mib {
	size_t n;
	char name[MPTCP_MIB_MAX][MPTCP_MIB_NAME_MAX]; /* without "MPTcpExt" */
	uint64_t value[MPTCP_MIB_MAX];
};

/*
 * Parses the text of /proc/net/netstat (len bytes, need not be terminated).
 * Returns the number of counters (0 when the kernel has no MPTcpExt lines:
 * no MPTCP), or -EINVAL when the two lines do not agree (count, a value that
 * is not a number, a name too long). Counters past MPTCP_MIB_MAX are left out.
 */
int mptcp_mib_parse(const char *text, size_t len, struct mptcp_mib *out);

/* 1 for the MIB entries that are gauges, not counters (MPCurrEstab, 6.10+). */
int mptcp_mib_is_gauge(const char *name);

#endif
