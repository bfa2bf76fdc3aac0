// SPDX-License-Identifier: MIT
/*
 * Traffic that the kernel drops, in exact amounts, for the drops collector's
 * integration test and benchmark. Runs inside a network namespace the caller
 * created; only loopback addresses are meant.
 *
 *   drops_gen udp    -d ADDR -p PORT -n COUNT [-s SPORT] [-r PPS] [-t SECONDS]
 *       COUNT (or, with -t, as many as fit in SECONDS) UDP datagrams to a
 *       port nobody listens on: one NO_SOCKET drop each. -r paces the rate.
 *   drops_gen tcp    -d ADDR -p PORT -n COUNT
 *       COUNT connects to a closed port: one dropped SYN each.
 *   drops_gen rcvbuf -d ADDR -p PORT -n COUNT
 *       COUNT datagrams into a bound socket with the smallest receive buffer
 *       that is never read while sending; then drains it. The datagrams that
 *       did not fit were dropped by the kernel (SOCKET_RCVBUFF).
 * Prints "sent N" (and "received R dropped D" for rcvbuf) on stdout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

struct opts {
	const char *mode, *addr;
	unsigned port, sport;
	unsigned long count, rate;
	double seconds;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static socklen_t make_addr(const char *addr, unsigned port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		return sizeof(*in4);
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return sizeof(*in6);
	}
	fprintf(stderr, "bad address %s\n", addr);
	exit(2);
}

/* Sends with sendmmsg in batches; paced when rate is set. A datagram to a
 * closed port makes the kernel queue an ICMP error on this socket, which
 * fails the next send with ECONNREFUSED only on a connected socket: this one
 * is not connected, so every datagram is sent. */
static unsigned long send_udp(const struct opts *o, int fd, const struct sockaddr_storage *dst,
			      socklen_t dlen)
{
	static char payload[2] = "x";
	struct mmsghdr msgs[BATCH];
	struct iovec iov = {payload, 1};
	int64_t start = now_ns(), end = start + (int64_t)(o->seconds * 1e9);
	unsigned long sent = 0;

	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_name = (void *)dst;
		msgs[i].msg_hdr.msg_namelen = dlen;
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		unsigned long want = BATCH;
		int n;

		if (o->seconds > 0) {
			if (now_ns() >= end)
				break;
		} else {
			if (sent >= o->count)
				break;
			if (o->count - sent < want)
				want = o->count - sent;
		}
		if (o->rate) {
			/* Sleep until this batch is due. */
			int64_t due = start + (int64_t)((double)sent * 1e9 / (double)o->rate);
			int64_t wait = due - now_ns();

			if (wait > 0) {
				struct timespec ts = {wait / 1000000000, wait % 1000000000};

				nanosleep(&ts, NULL);
			}
		}
		n = sendmmsg(fd, msgs, want, 0);
		if (n < 0) {
			if (errno == EINTR || errno == ECONNREFUSED || errno == ENOBUFS ||
			    errno == EAGAIN)
				continue;
			perror("sendmmsg");
			exit(1);
		}
		sent += n;
	}
	return sent;
}

static int udp_socket(int family, unsigned sport)
{
	int fd = socket(family, SOCK_DGRAM, 0), one = 1;

	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sport) {
		struct sockaddr_storage ss;
		socklen_t len = make_addr(family == AF_INET ? "0.0.0.0" : "::", sport, &ss);

		if (bind(fd, (struct sockaddr *)&ss, len)) {
			perror("bind source port");
			exit(1);
		}
	}
	return fd;
}

static int run_udp(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, o->port, &dst);
	int fd = udp_socket(dst.ss_family, o->sport);

	printf("sent %lu\n", send_udp(o, fd, &dst, dlen));
	close(fd);
	return 0;
}

static int run_tcp(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, o->port, &dst);
	unsigned long sent = 0;

	for (unsigned long i = 0; i < o->count; i++) {
		int fd = socket(dst.ss_family, SOCK_STREAM, 0);

		if (fd < 0) {
			perror("socket");
			return 1;
		}
		if (connect(fd, (struct sockaddr *)&dst, dlen) == 0) {
			fprintf(stderr, "port %u is open: nothing dropped\n", o->port);
			return 1;
		}
		if (errno != ECONNREFUSED) {
			perror("connect");
			return 1;
		}
		sent++;
		close(fd);
	}
	printf("sent %lu\n", sent);
	return 0;
}

static int run_rcvbuf(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, o->port, &dst);
	int rx = socket(dst.ss_family, SOCK_DGRAM, 0), tx = udp_socket(dst.ss_family, o->sport);
	int small = 1; /* the kernel rounds up to its minimum */
	unsigned long sent, received = 0;
	char buf[16];

	if (rx < 0 || setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) ||
	    bind(rx, (struct sockaddr *)&dst, dlen)) {
		perror("receiver");
		return 1;
	}
	sent = send_udp(o, tx, &dst, dlen);
	fcntl(rx, F_SETFL, O_NONBLOCK);
	while (recv(rx, buf, sizeof(buf), 0) >= 0)
		received++;
	printf("sent %lu received %lu dropped %lu\n", sent, received, sent - received);
	close(tx);
	close(rx);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.addr = "127.0.0.1", .port = 9};
	int c;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s udp|tcp|rcvbuf -d ADDR -p PORT -n COUNT [-s SPORT] "
			"[-r PPS] [-t SECONDS]\n",
			argv[0]);
		return 2;
	}
	o.mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "d:p:n:s:r:t:")) != -1) {
		switch (c) {
		case 'd':
			o.addr = optarg;
			break;
		case 'p':
			o.port = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			o.count = strtoul(optarg, NULL, 10);
			break;
		case 's':
			o.sport = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			o.rate = strtoul(optarg, NULL, 10);
			break;
		case 't':
			o.seconds = strtod(optarg, NULL);
			break;
		default:
			return 2;
		}
	}
	if (!strcmp(o.mode, "udp"))
		return run_udp(&o);
	if (!strcmp(o.mode, "tcp"))
		return run_tcp(&o);
	if (!strcmp(o.mode, "rcvbuf"))
		return run_rcvbuf(&o);
	fprintf(stderr, "unknown mode %s\n", o.mode);
	return 2;
}
