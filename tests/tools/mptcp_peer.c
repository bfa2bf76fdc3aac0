/* SPDX-License-Identifier: MIT */
/*
 * mptcp_peer: a small MPTCP client/server for the mptcp collector's tests and
 * benchmark. Sockets are opened with IPPROTO_MPTCP (262), so the kernel's
 * in-kernel path manager creates the extra subflows configured with
 * `ip mptcp endpoint`.
 *
 *   mptcp_peer server ADDR PORT [-T] [-k]
 *	Listens; every accepted connection is read until EOF and closed.
 *	Runs until SIGTERM/SIGINT. Prints "listening" once bound. -T: a plain
 *	TCP listener (an MPTCP client falls back). -k: keep connections open
 *	after EOF (the peer that shut down stays half-closed) until stopped;
 *	-S: as -k, and shut its own write side down at EOF (both directions
 *	closed, both sockets still held by their users).
 *   mptcp_peer client ADDR PORT [-s SUBFLOWS] [-t TIMEOUT_MS]
 *	Connects, waits until the connection has SUBFLOWS subflows (MPTCP_INFO),
 *	prints "token=<u32> subflows=<n>", then holds the connection until a
 *	line (or EOF) arrives on stdin, prints "closing" and closes. The line
 *	"send" writes 1 MiB first; "stream" writes until the next line, prints
 *	"idle" and waits for another line; "shut" shuts the write side down
 *	(prints "shut") and waits for another line; "reset" closes with SO_LINGER 0
 *	(MPTCP sends MP_FASTCLOSE).
 *   mptcp_peer burst ADDR PORT -n COUNT [-s SUBFLOWS] [-b BATCH] [-t TIMEOUT_MS] [-H]
 *	Opens COUNT connections, BATCH at a time; waits for each to reach
 *	SUBFLOWS subflows, then closes the batch. Prints a summary line:
 *	"connections=N reached=R elapsed_ms=E". With -H all COUNT connections
 *	are opened at once and held: it prints "held N reached=R" and closes
 *	them when a line (or EOF) arrives on stdin.
 *
 * Exit status: 0 ok, 1 error, 2 usage, 3 the subflow count was not reached.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/mptcp.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif

#define PEER_MAX_FDS 4096

static volatile sig_atomic_t peer_stop;

static void peer_on_signal(int sig)
{
	(void)sig;
	peer_stop = 1;
}

static int64_t peer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parses ADDR PORT into a sockaddr (IPv4 or IPv6). */
static int peer_addr_parse(const char *addr, const char *port, struct sockaddr_storage *ss,
			   socklen_t *sl)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	long p = strtol(port, NULL, 10);

	if (p <= 0 || p > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(p);
		*sl = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(p);
		*sl = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

/* Number of subflows and token of an MPTCP socket; -errno on failure. */
static int peer_info(int fd, uint32_t *token)
{
	struct mptcp_info mi;
	socklen_t len = sizeof(mi);

	memset(&mi, 0, sizeof(mi));
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, &mi, &len) < 0)
		return -errno;
	if (token)
		*token = mi.mptcpi_token;
	/* mptcpi_subflows counts the additional subflows only. */
	return mi.mptcpi_subflows + 1;
}

static int peer_server(const struct sockaddr_storage *ss, socklen_t sl, int tcp, int keep, int shut)
{
	static struct pollfd pfd[PEER_MAX_FDS];
	int one = 1, n = 1, lfd;
	char buf[4096];

	lfd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK, tcp ? IPPROTO_TCP : IPPROTO_MPTCP);
	if (lfd < 0) {
		perror("socket(IPPROTO_MPTCP)");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)ss, sl) < 0 || listen(lfd, 1024) < 0) {
		perror("bind/listen");
		close(lfd);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	pfd[0].fd = lfd;
	pfd[0].events = POLLIN;
	while (!peer_stop) {
		int r = poll(pfd, n, 200);

		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		for (int i = n - 1; i >= 1; i--) {
			ssize_t got;

			if (!pfd[i].revents)
				continue;
			got = read(pfd[i].fd, buf, sizeof(buf));
			if (got > 0 || (got < 0 && errno == EAGAIN))
				continue;
			if (keep && got == 0) {
				if (shut)
					shutdown(pfd[i].fd, SHUT_WR);
				/* Half-closed: held until stopped, out of the poll
				 * set (a negative fd is ignored by poll). */
				pfd[i].fd = ~pfd[i].fd;
				continue;
			}
			close(pfd[i].fd);
			pfd[i] = pfd[--n];
		}
		if (pfd[0].revents & POLLIN) {
			int cfd;

			while (n < PEER_MAX_FDS &&
			       (cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
				pfd[n].fd = cfd;
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				n++;
			}
		}
	}
	for (int i = 0; i < n; i++)
		close(pfd[i].fd < 0 ? ~pfd[i].fd : pfd[i].fd);
	return 0;
}

/* Waits up to timeout_ms until every fd has `want` subflows; returns how many did. */
static int peer_wait_subflows(const int *fds, int n, int want, int timeout_ms)
{
	int64_t end = peer_now_ms() + timeout_ms;
	int reached = 0;
	bool done[PEER_MAX_FDS] = {0};

	while (!peer_stop) {
		for (int i = 0; i < n; i++) {
			if (!done[i] && fds[i] >= 0 && peer_info(fds[i], NULL) >= want) {
				done[i] = true;
				reached++;
			}
		}
		if (reached == n || peer_now_ms() >= end)
			break;
		usleep(1000);
	}
	return reached;
}

static int peer_connect(const struct sockaddr_storage *ss, socklen_t sl)
{
	int fd = socket(ss->ss_family, SOCK_STREAM, IPPROTO_MPTCP);

	if (fd < 0) {
		perror("socket(IPPROTO_MPTCP)");
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)ss, sl) < 0) {
		perror("connect");
		close(fd);
		return -1;
	}
	/* A few bytes so the server side sees data and the MPTCP handshake's
	 * third ACK carries the keys (the connection becomes fully established). */
	if (write(fd, "hello", 5) != 5) {
		perror("write");
		close(fd);
		return -1;
	}
	return fd;
}

static int peer_client(const struct sockaddr_storage *ss, socklen_t sl, int want, int timeout_ms)
{
	char line[256];
	uint32_t token = 0;
	int fd, reached, n;

	fd = peer_connect(ss, sl);
	if (fd < 0)
		return 1;
	reached = peer_wait_subflows(&fd, 1, want, timeout_ms);
	n = peer_info(fd, &token);
	printf("token=%u subflows=%d\n", token, n);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	/* Bulk data until the next line: the subflows carry a load (their
	 * RTT, cwnd and retransmits move), then the connection idles. */
	if (!strncmp(line, "stream", 6)) {
		static char data[65536];
		struct pollfd sp[2] = {{.fd = 0, .events = POLLIN}, {.fd = fd, .events = POLLOUT}};

		while (!peer_stop && poll(sp, 2, 1000) >= 0 &&
		       !(sp[0].revents & (POLLIN | POLLHUP)))
			if ((sp[1].revents & POLLOUT) && write(fd, data, sizeof(data)) < 0)
				break;
		/* The line that stopped it, then the next command. */
		if (fgets(line, sizeof(line), stdin)) {
			printf("idle\n");
			fflush(stdout);
		}
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
	}
	/* Optional payload before closing, to exercise a path that went down. */
	if (!strncmp(line, "send", 4)) {
		static char data[65536];

		for (int i = 0; i < 16; i++)
			if (write(fd, data, sizeof(data)) < 0)
				break;
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
	}
	if (!strncmp(line, "shut", 4)) {
		shutdown(fd, SHUT_WR);
		printf("shut\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
	}
	if (!strncmp(line, "reset", 5)) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	printf("closing\n");
	fflush(stdout);
	close(fd);
	return reached == 1 ? 0 : 3;
}

static int peer_burst(const struct sockaddr_storage *ss, socklen_t sl, int count, int want,
		      int batch, int timeout_ms, int hold)
{
	static int fds[PEER_MAX_FDS];
	int64_t t0 = peer_now_ms();
	int done = 0, reached = 0, failed = 0;

	if (hold) {
		char line[64];

		if (count > PEER_MAX_FDS)
			count = PEER_MAX_FDS;
		for (int i = 0; i < count; i++) {
			fds[i] = peer_connect(ss, sl);
			if (fds[i] < 0)
				failed++;
		}
		reached = peer_wait_subflows(fds, count, want, timeout_ms);
		printf("held %d reached=%d failed=%d\n", count, reached, failed);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		for (int i = 0; i < count; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return failed ? 1 : reached == count ? 0 : 3;
	}
	if (batch < 1 || batch > PEER_MAX_FDS)
		batch = 50;
	while (done < count && !peer_stop) {
		int n = count - done < batch ? count - done : batch;

		for (int i = 0; i < n; i++) {
			fds[i] = peer_connect(ss, sl);
			if (fds[i] < 0)
				failed++;
		}
		reached += peer_wait_subflows(fds, n, want, timeout_ms);
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		done += n;
	}
	printf("connections=%d reached=%d failed=%d elapsed_ms=%lld\n", done, reached, failed,
	       (long long)(peer_now_ms() - t0));
	return failed ? 1 : reached == done ? 0 : 3;
}

static int peer_usage(void)
{
	fprintf(stderr, "usage: mptcp_peer server ADDR PORT [-T] [-k|-S]\n"
			"       mptcp_peer client ADDR PORT [-s SUBFLOWS] [-t TIMEOUT_MS]\n"
			"       mptcp_peer burst ADDR PORT -n COUNT [-s SUBFLOWS] [-b BATCH] "
			"[-t TIMEOUT_MS] [-H]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct sigaction sa = {.sa_handler = peer_on_signal};
	int want = 2, timeout_ms = 5000, count = 1, batch = 50, hold = 0, tcp = 0, keep = 0,
	    shut = 0, opt;
	socklen_t sl;

	if (argc < 4)
		return peer_usage();
	if (peer_addr_parse(argv[2], argv[3], &ss, &sl) < 0)
		return peer_usage();
	optind = 4;
	while ((opt = getopt(argc, argv, "s:t:n:b:HTkS")) != -1) {
		switch (opt) {
		case 's':
			want = atoi(optarg);
			break;
		case 't':
			timeout_ms = atoi(optarg);
			break;
		case 'n':
			count = atoi(optarg);
			break;
		case 'b':
			batch = atoi(optarg);
			break;
		case 'H':
			hold = 1;
			break;
		case 'T':
			tcp = 1;
			break;
		case 'k':
			keep = 1;
			break;
		case 'S':
			keep = shut = 1;
			break;
		default:
			return peer_usage();
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(argv[1], "server"))
		return peer_server(&ss, sl, tcp, keep, shut);
	if (!strcmp(argv[1], "client"))
		return peer_client(&ss, sl, want, timeout_ms);
	if (!strcmp(argv[1], "burst"))
		return peer_burst(&ss, sl, count, want, batch, timeout_ms, hold);
	return peer_usage();
}
