/* SPDX-License-Identifier: MIT */
/*
 * [http] allow: the client addresses the server answers, checked by the
 * accepting thread (http_accept.c) right after accept(), before a byte of
 * the request is read. A refused connection is reset, counted in
 * sysobs_http_connections_closed_total{reason="not_allowed"} and logged
 * (rate-limited).
 *
 * Why the agent filters itself: the filter used to be the systemd unit's
 * IPAddressDeny=any / IPAddressAllow=localhost, which the config could not
 * see. [http] listen = 0.0.0.0:9559 then logged "listening" and every
 * scrape from another host timed out: one intent took two changes in two
 * places, and nothing said so. Here the filter is config next to listen,
 * and its default follows listen, so a change of listen alone is enough
 * and the filter is never looser than what the config says.
 *
 * Grammar: addresses or CIDRs (IPv4 or IPv6) separated by commas or white
 * space, and the words "loopback" (127.0.0.0/8, ::1) and "any". Empty (the
 * default): "loopback" when listen is a loopback address, else "any".
 * Clients with IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are matched as
 * the IPv4 address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "api/http_allow.h"

static const struct http_cidr loopback4 = {.family = AF_INET, .bits = 8, .addr = {127}};
static const struct http_cidr loopback6 = {
    .family = AF_INET6, .bits = 128, .addr = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};

static int add(struct http_allow *al, const struct http_cidr *c)
{
	if (al->n == HTTP_ALLOW_MAX)
		return -E2BIG;
	al->v[al->n++] = *c;
	return 0;
}

/* Zeroes the host bits, so that 10.1.2.3/8 matches as 10.0.0.0/8 does. */
static void cidr_mask(struct http_cidr *c)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned keep = c->bits > 8 * i ? c->bits - 8 * i : 0;

		if (keep < 8)
			c->addr[i] &= (unsigned char)(0xff00 >> keep);
	}
}

/* One word of the list: 0, or -EINVAL with the reason in msg. */
static int word_parse(struct http_allow *al, const char *w, char *msg, size_t msglen)
{
	char host[INET6_ADDRSTRLEN + 1];
	struct http_cidr c = {0};
	const char *slash = strchr(w, '/');
	size_t hlen = slash ? (size_t)(slash - w) : strlen(w);
	unsigned long bits;
	char *end;

	if (!strcmp(w, "any")) {
		al->any = true;
		return 0;
	}
	if (!strcmp(w, "loopback") || !strcmp(w, "localhost")) {
		if (add(al, &loopback4) || add(al, &loopback6))
			goto too_many;
		return 0;
	}
	if (hlen >= sizeof(host))
		goto bad;
	memcpy(host, w, hlen);
	host[hlen] = '\0';
	if (inet_pton(AF_INET, host, c.addr) == 1)
		c.family = AF_INET;
	else if (inet_pton(AF_INET6, host, c.addr) == 1)
		c.family = AF_INET6;
	else
		goto bad;
	c.bits = c.family == AF_INET ? 32 : 128;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			goto bad;
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (errno || *end || bits > c.bits)
			goto bad;
		c.bits = (unsigned char)bits;
	}
	cidr_mask(&c);
	if (add(al, &c))
		goto too_many;
	return 0;

bad:
	snprintf(msg, msglen,
		 "\"%.64s\" is not an address, ADDRESS/PREFIX, \"loopback\" or \"any\"", w);
	return -EINVAL;
too_many:
	snprintf(msg, msglen, "more than %d entries", HTTP_ALLOW_MAX);
	return -EINVAL;
}

bool http_addr_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

int http_allow_parse(const char *spec, const struct sockaddr_storage *listen, struct http_allow *al,
		     char *msg, size_t msglen)
{
	char buf[1024], *save = NULL, *w;
	int err;

	memset(al, 0, sizeof(*al));
	if (!spec || !spec[strspn(spec, ", \t")]) {
		/* The default follows listen: one change of listen suffices. */
		al->automatic = true;
		spec = listen && http_addr_is_loopback(listen) ? "loopback" : "any";
	}
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(msg, msglen, "longer than %zu characters", sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (w = strtok_r(buf, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
		err = word_parse(al, w, msg, msglen);
		if (err)
			return err;
	}
	return 0;
}

int http_allow_check(const char *spec, char *msg, size_t msglen)
{
	struct http_allow al;

	return http_allow_parse(spec, NULL, &al, msg, msglen);
}

static bool cidr_match(const struct http_cidr *c, int family, const unsigned char *a)
{
	unsigned full = c->bits / 8, rest = c->bits % 8;

	if (c->family != family || memcmp(c->addr, a, full))
		return false;
	return !rest || !((c->addr[full] ^ a[full]) & (unsigned char)(0xff00 >> rest));
}

bool http_allow_match(const struct http_allow *al, const struct sockaddr_storage *client)
{
	const unsigned char *a;
	int family = client->ss_family;

	if (al->any)
		return true;
	if (family == AF_INET) {
		a = (const unsigned char *)&((const struct sockaddr_in *)client)->sin_addr;
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)client)->sin6_addr;

		a = a6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			family = AF_INET;
			a += 12;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < al->n; i++)
		if (cidr_match(&al->v[i], family, a))
			return true;
	return false;
}

bool http_allow_remote(const struct http_allow *al)
{
	if (al->any)
		return true;
	for (size_t i = 0; i < al->n; i++) {
		const struct http_cidr *c = &al->v[i];

		if (!cidr_match(&loopback4, c->family, c->addr) &&
		    !cidr_match(&loopback6, c->family, c->addr))
			return true;
	}
	return false;
}

void http_allow_describe(const struct http_allow *al, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (al->any) {
		snprintf(buf, len, "any");
		return;
	}
	for (size_t i = 0; i < al->n && off < len; i++) {
		char a[INET6_ADDRSTRLEN];
		int n;

		inet_ntop(al->v[i].family, al->v[i].addr, a, sizeof(a));
		n = snprintf(buf + off, len - off, "%s%s/%u", i ? ", " : "", a, al->v[i].bits);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
}
