/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the mptcp collector's recording reader (mptcp_rec.c), the
 * input of [collector.mptcp] replay = FILE: the whole file checked as the
 * replay does at init, then, when it checks, every record read back and
 * each datagram's messages decoded as the replay hands them to the event
 * path. The corpus is tests/fuzz/corpus/mptcp_rec/ (golden.mptcp's
 * recording and cuts of it).
 */
#include <libmnl/libmnl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_rec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[MPTCP_REC_MAX_PAYLOAD] __attribute__((aligned(8)));
	char err[256];
	struct mptcp_rec r;
	size_t off = 0;
	long n;

	if (size > 1 << 20)
		return 0;
	n = mptcp_rec_check(data, size, 64, err, sizeof(err));
	if (n < 0)
		return 0;
	while (mptcp_rec_next(data, size, &off, &r, err, sizeof(err)) == 1) {
		const struct nlmsghdr *nlh;
		struct mptcp_event ev;
		size_t left;

		if (r.kind != MPTCP_REC_DGRAM)
			continue;
		memcpy(buf, r.data, r.len);
		mptcp_nlmsg_for_each(nlh, buf, r.len, left)
		{
			mptcp_event_decode(nlh, nlh->nlmsg_len, &ev);
		}
	}
	return 0;
}
