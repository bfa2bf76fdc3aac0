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
 *   mptcp_capture --diag DIR
 *	Records the sock_diag replies the collector's resync reads (MPTCP and
 *	TCP sockets, IPv4 and IPv6) as DIR/diag-<proto>-<family>-NN.bin.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

/* One sock_diag dump, every reply datagram saved as a file. */
static int capture_diag_one(int fd, const char *dir, int family, int proto)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *req;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int files = 0;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = 1;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = family;
	req->sdiag_protocol = proto & 0xff;
	req->idiag_ext = 1 << (INET_DIAG_INFO - 1);
	req->idiag_states = ~0u;
	if (proto > 0xff)
		mnl_attr_put_u32(nlh, INET_DIAG_REQ_PROTOCOL, proto);
	if (sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		const struct nlmsghdr *h;
		char path[4096];
		size_t left;
		int done = 0;
		FILE *f;

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		mptcp_nlmsg_for_each(h, buf, (size_t)n, left) if (h->nlmsg_type == NLMSG_DONE ||
								  h->nlmsg_type == NLMSG_ERROR)
		    done = 1;
		snprintf(path, sizeof(path), "%s/diag-%s-%s-%02d.bin", dir,
			 proto == IPPROTO_TCP ? "tcp" : "mptcp",
			 family == AF_INET ? "ipv4" : "ipv6", files++);
		f = fopen(path, "wb");
		if (f) {
			fwrite(buf, 1, n, f);
			fclose(f);
		}
		if (done)
			return files;
	}
}

static int capture_diag(const char *dir)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0) {
		perror("socket(NETLINK_SOCK_DIAG)");
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		int family = i & 1 ? AF_INET6 : AF_INET, proto = i < 2 ? 262 : IPPROTO_TCP;
		int r = capture_diag_one(fd, dir, family, proto);

		printf("diag proto %d family %d: %d datagrams\n", proto, family, r);
	}
	close(fd);
	return 0;
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
		fprintf(stderr, "usage: mptcp_capture DIR [-t SECONDS] | --diag DIR\n");
		return 2;
	}
	if (!strcmp(argv[1], "--diag"))
		return argc > 2 ? capture_diag(argv[2]) : 2;
	optind = 2;
	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt == 't')
			secs = atoi(optarg);
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	nl = mptcp_events_open(1 << 22, &family, NULL, &err);
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
