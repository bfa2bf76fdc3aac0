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
 *   drops_gen deliver -d ADDR -p PORT -n COUNT [-l LEN]
 *       COUNT datagrams of LEN bytes into a socket bound to PORT, all read
 *       back: nothing is dropped (LEN above the MTU: reassembled datagrams).
 *   drops_gen ping   -d ADDR -n COUNT [-l LEN]
 *       COUNT echo requests of LEN bytes through an ICMP ping socket (needs
 *       net.ipv4.ping_group_range to include the caller's group), replies read.
 *   drops_gen tcpfin -d ADDR -p PORT -n COUNT
 *       COUNT TCP connections to a listener of our own; the client closes
 *       first, then the server: the server's FIN reaches the client in
 *       FIN_WAIT2 and is queued, and freed when the socket is destroyed
 *       (QUEUE_PURGE: skb->sk set, skb->dev cleared, skb_iif the device).
 *   drops_gen pingq  -d ADDR -n COUNT
 *       Like ping, but the replies are left in the socket, which is closed
 *       with them queued (QUEUE_PURGE: skb->sk set, skb->dev cleared).
 *   drops_gen unread -d ADDR -p PORT -n COUNT [-l LEN]
 *       COUNT datagrams into a bound socket that is closed without reading:
 *       the kernel frees them from its receive queue when it closes it.
 *   drops_gen short  -d ADDR -n COUNT
 *       COUNT IP packets of protocol UDP carrying only 2 bytes (a truncated
 *       UDP header), through a raw socket.
 *   drops_gen proto  -d IPV4ADDR -p PROTO -n COUNT
 *       COUNT IPv4 packets of an IP protocol nobody handles (e.g. 253), built
 *       whole through an IPPROTO_RAW socket (a raw socket of that protocol
 *       would receive them itself): one IP_NOPROTO drop each.
 *   drops_gen synflood -d ADDR -p PORT -n COUNT
 *       A listener on PORT with a backlog of 1 that never accepts, and COUNT
 *       non-blocking connects to it, kept open 1.5 s (SYN retransmits
 *       included), then closed: the SYNs the full queue refuses are freed
 *       with consume_skb(), not kfree_skb (ListenOverflows, ListenDrops).
 *   drops_gen frag   -d ADDR -n COUNT
 *       COUNT UDP datagrams of which only two fragments are sent (64 bytes
 *       at offset 0 and at offset 64, both with more to come), through a
 *       raw socket (IPPROTO_RAW): each queue expires after ipfrag_time /
 *       ip6frag_time and frees two fragments (FRAG_REASM_TIMEOUT).
 * udp and deliver take -l LEN (payload bytes, default 1), udp takes -D: an
 * IPv6 Destination Options header (PadN) on every datagram, and -R N: N
 * IPv4 packets of protocol 253 (IP_NOPROTO drops) spread through the
 * stream, one after every 16 batches of 64, from the same thread (no pause in the
 * stream around them).
 * Prints "sent N" (and "received R dropped D" for rcvbuf, "received R" for
 * deliver and ping) on stdout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
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
	size_t len;	    /* payload bytes */
	bool dstopts;	    /* IPv6 Destination Options header */
	unsigned long rare; /* -R: protocol-253 packets within the stream */
};

static int proto_socket(void)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

	if (fd < 0) {
		perror("IPPROTO_RAW socket");
		exit(1);
	}
	return fd;
}

/* An IPv4 packet of protocol `proto` to dst, built whole (IPPROTO_RAW: a
 * raw socket of that protocol would receive it itself); the kernel fills
 * the checksum, the id and the source address. */
static int send_proto(int fd, const struct sockaddr_in *dst, unsigned proto)
{
	unsigned char pkt[28] = {0x45, 0, 0, sizeof(pkt), 0, 0, 0x40, 0, 64, 0};

	pkt[9] = (unsigned char)proto;
	memcpy(pkt + 16, &dst->sin_addr, 4);
	return sendto(fd, pkt, sizeof(pkt), 0, (const struct sockaddr *)dst, sizeof(*dst)) < 0 ? -1
											       : 0;
}

static char payload[65000];

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
	struct mmsghdr msgs[BATCH];
	struct iovec iov = {payload, o->len};
	int64_t start = now_ns(), end = start + (int64_t)(o->seconds * 1e9);
	unsigned long sent = 0, batches = 0, rare = 0;
	int rare_fd = o->rare ? proto_socket() : -1;

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
		if (rare < o->rare && batches++ % 16 == 8) {
			if (dst->ss_family != AF_INET ||
			    send_proto(rare_fd, (const struct sockaddr_in *)dst, 253)) {
				perror("-R (IPv4 only)");
				exit(1);
			}
			rare++;
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
	if (rare < o->rare) {
		fprintf(stderr, "-R: only %lu of %lu rare packets fit in the stream\n", rare,
			o->rare);
		exit(1);
	}
	if (rare_fd >= 0)
		close(rare_fd);
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

	if (o->dstopts) {
		/* next header (set by the kernel), length 0 (8 bytes), PadN of 4 */
		static const unsigned char opt[8] = {0, 0, 1, 4, 0, 0, 0, 0};

		if (dst.ss_family != AF_INET6 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_DSTOPTS, opt, sizeof(opt))) {
			perror("IPV6_DSTOPTS (IPv6 only)");
			exit(1);
		}
	}

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

/* Reads datagrams until none arrives for 500 ms or `want` are in. */
static unsigned long read_all(int fd, unsigned long want)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	unsigned long got = 0;

	while (got < want && poll(&pfd, 1, 500) == 1)
		if (recv(fd, payload, sizeof(payload), MSG_DONTWAIT) >= 0)
			got++;
	return got;
}

static int bound_udp(const struct opts *o, struct sockaddr_storage *dst, socklen_t *dlen)
{
	int rx;

	*dlen = make_addr(o->addr, o->port, dst);
	rx = socket(dst->ss_family, SOCK_DGRAM, 0);
	if (rx < 0 || bind(rx, (struct sockaddr *)dst, *dlen)) {
		perror("receiver");
		exit(1);
	}
	return rx;
}

static int run_deliver(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen;
	int rx = bound_udp(o, &dst, &dlen), tx = udp_socket(dst.ss_family, o->sport);
	unsigned long sent = send_udp(o, tx, &dst, dlen);

	printf("sent %lu received %lu\n", sent, read_all(rx, sent));
	close(tx);
	close(rx);
	return 0;
}

static int run_unread(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen;
	int rx = bound_udp(o, &dst, &dlen), tx = udp_socket(dst.ss_family, o->sport);
	unsigned long sent = send_udp(o, tx, &dst, dlen);

	close(rx); /* with every datagram still queued */
	close(tx);
	printf("sent %lu\n", sent);
	return 0;
}

static int run_ping(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, 0, &dst);
	bool v6 = dst.ss_family == AF_INET6;
	int fd = socket(dst.ss_family, SOCK_DGRAM, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
	unsigned long sent = 0;

	if (fd < 0) {
		perror("ping socket (net.ipv4.ping_group_range?)");
		return 1;
	}
	for (unsigned long i = 0; i < o->count; i++) {
		/* type, code, checksum, id, sequence: the kernel fills the
		 * checksum and the id of a ping socket */
		payload[0] = v6 ? (char)128 : 8;
		payload[1] = 0;
		payload[6] = (char)(i >> 8);
		payload[7] = (char)i;
		if (sendto(fd, payload, 8 + o->len, 0, (struct sockaddr *)&dst, dlen) < 0) {
			perror("sendto");
			return 1;
		}
		sent++;
	}
	if (!strcmp(o->mode, "pingq")) {
		struct timespec ts = {0, 300 * 1000 * 1000}; /* the replies are in */

		nanosleep(&ts, NULL);
		printf("sent %lu\n", sent);
	} else {
		printf("sent %lu received %lu\n", sent, read_all(fd, sent));
	}
	close(fd);
	return 0;
}

static int run_tcpfin(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, o->port, &dst);
	int lfd = socket(dst.ss_family, SOCK_STREAM, 0), one = 1;
	unsigned long done = 0;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&dst, dlen) || listen(lfd, 128)) {
		perror("listener");
		return 1;
	}
	for (unsigned long i = 0; i < o->count; i++) {
		int c = socket(dst.ss_family, SOCK_STREAM, 0), a;

		if (c < 0 || connect(c, (struct sockaddr *)&dst, dlen) ||
		    (a = accept(lfd, NULL, NULL)) < 0) {
			perror("connect/accept");
			return 1;
		}
		close(c); /* client first: FIN_WAIT2 */
		read_all(a, 1);
		close(a); /* the server's FIN */
		done++;
	}
	close(lfd);
	printf("sent %lu\n", done);
	return 0;
}

/* Raw IP packets of protocol `proto` with `len` bytes of payload. */
static int run_raw(const struct opts *o, int proto, size_t len)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, 0, &dst);
	int fd = socket(dst.ss_family, SOCK_RAW, proto);
	unsigned long sent = 0;

	if (fd < 0) {
		perror("raw socket");
		return 1;
	}
	for (unsigned long i = 0; i < o->count; i++) {
		if (sendto(fd, payload, len, 0, (struct sockaddr *)&dst, dlen) < 0) {
			perror("sendto");
			return 1;
		}
		sent++;
	}
	printf("sent %lu\n", sent);
	close(fd);
	return 0;
}

static int run_proto(const struct opts *o)
{
	struct sockaddr_storage dst;
	unsigned long sent = 0;
	int fd;

	make_addr(o->addr, 0, &dst);
	if (dst.ss_family != AF_INET) {
		fprintf(stderr, "proto: IPv4 only\n");
		return 1;
	}
	fd = proto_socket();
	for (unsigned long i = 0; i < o->count; i++) {
		if (send_proto(fd, (struct sockaddr_in *)&dst, o->port)) {
			perror("sendto");
			return 1;
		}
		sent++;
	}
	printf("sent %lu\n", sent);
	close(fd);
	return 0;
}

/* A listener with a backlog of 1 that never accepts, flooded with
 * connects: what the kernel refuses is counted only in its MIB. */
static int run_synflood(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, o->port, &dst);
	int lfd = socket(dst.ss_family, SOCK_STREAM, 0), one = 1;
	int *fds = calloc(o->count ? o->count : 1, sizeof(*fds));
	unsigned long sent = 0;

	if (lfd < 0 || !fds || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&dst, dlen) || listen(lfd, 1)) {
		perror("listener");
		return 1;
	}
	for (unsigned long i = 0; i < o->count; i++) {
		fds[i] = socket(dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fds[i] < 0) {
			perror("socket");
			return 1;
		}
		if (connect(fds[i], (struct sockaddr *)&dst, dlen) && errno != EINPROGRESS) {
			perror("connect");
			return 1;
		}
		sent++;
	}
	usleep(1500 * 1000);
	for (unsigned long i = 0; i < o->count; i++)
		close(fds[i]);
	close(lfd);
	free(fds);
	printf("sent %lu\n", sent);
	return 0;
}

static uint16_t csum16(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* First fragments whose datagram never completes: IPv4 with MF set and
 * offset 0, or IPv6 with a Fragment header (M set, offset 0), 64 bytes of
 * UDP each. The IPv4 source is the sender's own address, the IPv6 source
 * the destination (accepted, not martian, in IPv6). */
static int run_frag(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen = make_addr(o->addr, 0, &dst);
	int fd = socket(dst.ss_family, SOCK_RAW, IPPROTO_RAW);
	unsigned char pkt[128];
	unsigned long sent = 0;
	size_t len;

	if (fd < 0) {
		perror("IPPROTO_RAW socket");
		return 1;
	}
	for (unsigned long i = 0; i < o->count; i++) {
		uint32_t id = (uint32_t)(now_ns() ^ (i * 2654435761u));

		memset(pkt, 0, sizeof(pkt));
		if (dst.ss_family == AF_INET) {
			struct sockaddr_in *in4 = (struct sockaddr_in *)&dst;

			len = 20 + 64;
			pkt[0] = 0x45;
			pkt[2] = len >> 8;
			pkt[3] = len & 0xff;
			pkt[4] = id >> 8;
			pkt[5] = id & 0xff;
			pkt[6] = 0x20; /* MF, offset 0 */
			pkt[8] = 64;
			pkt[9] = IPPROTO_UDP;
			/* source 0: the kernel fills in its own (IP_HDRINCL) */
			memcpy(pkt + 16, &in4->sin_addr, 4);
			pkt[10] = 0;
			pkt[11] = 0;
			{
				uint16_t c = csum16(pkt, 20);

				pkt[10] = c >> 8;
				pkt[11] = c & 0xff;
			}
			pkt[20] = 0x9c; /* UDP 40000 -> 9 */
			pkt[21] = 0x40;
			pkt[23] = 9;
			pkt[24] = 0x01; /* length 400: more to come */
			pkt[25] = 0x90;
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&dst;

			len = 40 + 8 + 64;
			pkt[0] = 0x60;
			pkt[4] = (len - 40) >> 8;
			pkt[5] = (len - 40) & 0xff;
			pkt[6] = 44; /* Fragment header */
			pkt[7] = 64;
			memcpy(pkt + 8, &in6->sin6_addr, 16);
			memcpy(pkt + 24, &in6->sin6_addr, 16);
			pkt[40] = IPPROTO_UDP;
			pkt[43] = 1; /* offset 0, M */
			memcpy(pkt + 44, &id, 4);
			pkt[48] = 0x9c;
			pkt[49] = 0x40;
			pkt[51] = 9;
			pkt[52] = 0x01;
			pkt[53] = 0x90;
		}
		if (sendto(fd, pkt, len, 0, (struct sockaddr *)&dst, dlen) < 0) {
			perror("sendto");
			return 1;
		}
		/* the second fragment: 64 bytes at offset 64, more to come */
		memset(pkt + len - 64, 'y', 64);
		if (dst.ss_family == AF_INET) {
			pkt[6] = 0x20;
			pkt[7] = 8; /* offset in 8-byte units */
			pkt[10] = pkt[11] = 0;
			{
				uint16_t c = csum16(pkt, 20);

				pkt[10] = c >> 8;
				pkt[11] = c & 0xff;
			}
		} else {
			pkt[42] = 0;
			pkt[43] = (8 << 3) | 1; /* offset 64 bytes, M */
		}
		if (sendto(fd, pkt, len, 0, (struct sockaddr *)&dst, dlen) < 0) {
			perror("sendto");
			return 1;
		}
		sent++;
	}
	printf("sent %lu\n", sent);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.addr = "127.0.0.1", .port = 9, .len = 1};
	int c;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s "
			"udp|tcp|rcvbuf|deliver|ping|pingq|tcpfin|unread|short|proto|synflood|frag "
			"-d ADDR "
			"-p PORT -n COUNT [-s SPORT] [-r PPS] [-t SECONDS] [-l LEN] [-D] [-R N]\n",
			argv[0]);
		return 2;
	}
	o.mode = argv[1];
	optind = 2;
	memset(payload, 'x', sizeof(payload));
	while ((c = getopt(argc, argv, "d:p:n:s:r:t:l:DR:")) != -1) {
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
		case 'l':
			o.len = strtoul(optarg, NULL, 10);
			if (o.len > sizeof(payload) - 8) {
				fprintf(stderr, "-l: at most %zu\n", sizeof(payload) - 8);
				return 2;
			}
			break;
		case 'D':
			o.dstopts = true;
			break;
		case 'R':
			o.rare = strtoul(optarg, NULL, 10);
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
	if (!strcmp(o.mode, "deliver"))
		return run_deliver(&o);
	if (!strcmp(o.mode, "unread"))
		return run_unread(&o);
	if (!strcmp(o.mode, "tcpfin"))
		return run_tcpfin(&o);
	if (!strcmp(o.mode, "ping") || !strcmp(o.mode, "pingq"))
		return run_ping(&o);
	if (!strcmp(o.mode, "short"))
		return run_raw(&o, IPPROTO_UDP, 2);
	if (!strcmp(o.mode, "proto"))
		return run_proto(&o);
	if (!strcmp(o.mode, "synflood"))
		return run_synflood(&o);
	if (!strcmp(o.mode, "frag"))
		return run_frag(&o);
	fprintf(stderr, "unknown mode %s\n", o.mode);
	return 2;
}
