/* SPDX-License-Identifier: MIT */
/*
 * mptcp_capture: records MPTCP path-manager events of the current netns as
 * the kernel sends them, one file per received datagram, so that tests,
 * the fuzz corpus and the benchmark can replay real messages.
 *
 *   mptcp_capture DIR [-t SECONDS]
 *	Writes DIR/NNNN-<TYPE>.bin and prints one decoded line per event.
 *	Prints "ready" once subscribed. Stops on SIGTERM/SIGINT or after
 *	SECONDS (default 30).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_nl.h"

static volatile sig_atomic_t capture_stop;

static void capture_on_signal(int sig)
{
	(void)sig;
	capture_stop = 1;
}

static void capture_print(const struct nlmsghdr *nlh, size_t len)
{
	struct mptcp_event ev;
	char t[32], s[64], d[64];

	if (mptcp_event_decode(nlh, len, &ev) < 0) {
		printf("undecodable message (%zu bytes)\n", len);
		return;
	}
	printf("%s token=%08x family=%u loc_id=%u rem_id=%u saddr=%s daddr=%s sport=%u dport=%u "
	       "backup=%u error=%u flags=%#x if_idx=%d reset_reason=%u reset_flags=%#x "
	       "server_side=%u unknown=%u\n",
	       mptcp_event_type_str(ev.type, t, sizeof(t)), ev.token, ev.family, ev.loc_id,
	       ev.rem_id, mptcp_event_saddr_str(&ev, s, sizeof(s)),
	       mptcp_event_daddr_str(&ev, d, sizeof(d)), ev.sport, ev.dport, ev.backup, ev.error,
	       ev.flags, ev.if_idx, ev.reset_reason, ev.reset_flags, ev.server_side, ev.n_unknown);
}

int main(int argc, char **argv)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	struct sigaction sa = {.sa_handler = capture_on_signal};
	struct mnl_socket *nl;
	uint16_t family;
	unsigned seq = 0;
	int err = 0, secs = 30, opt;
	time_t end;

	if (argc < 2) {
		fprintf(stderr, "usage: mptcp_capture DIR [-t SECONDS]\n");
		return 2;
	}
	optind = 2;
	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt == 't')
			secs = atoi(optarg);
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	nl = mptcp_events_open(1 << 22, &family, &err);
	if (!nl) {
		fprintf(stderr, "mptcp_capture: %s\n", strerror(-err));
		return 1;
	}
	printf("ready\n");
	end = time(NULL) + secs;
	while (!capture_stop && time(NULL) < end) {
		struct pollfd pfd = {.fd = mnl_socket_get_fd(nl), .events = POLLIN};
		const struct nlmsghdr *nlh;
		ssize_t n;
		int left;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			fprintf(stderr, "recv: %s\n", strerror(errno));
			if (errno == ENOBUFS)
				continue;
			break;
		}
		left = (int)n;
		for (nlh = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type == family)
				capture_print(nlh, nlh->nlmsg_len);
		}
		{
			struct mptcp_event ev;
			char path[4096], t[32];
			FILE *f;

			mptcp_event_decode((const struct nlmsghdr *)buf, n, &ev);
			snprintf(path, sizeof(path), "%s/%04u-%s.bin", argv[1], seq++,
				 mptcp_event_type_str(ev.type, t, sizeof(t)));
			f = fopen(path, "wb");
			if (f) {
				fwrite(buf, 1, n, f);
				fclose(f);
			}
		}
	}
	mnl_socket_close(nl);
	return 0;
}
