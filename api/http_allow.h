/* SPDX-License-Identifier: MIT */
/*
 * [http] allow: which client addresses the HTTP server answers (api/http_allow.c).
 * Pure: parsing and matching, no I/O.
 */
#ifndef SYSOBS_HTTP_ALLOW_H
#define SYSOBS_HTTP_ALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define HTTP_ALLOW_MAX 64

struct http_cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char bits;
	unsigned char addr[16]; /* network order, host bits zero */
};

struct http_allow {
	bool any;
	bool automatic; /* the default, derived from listen */
	size_t n;
	struct http_cidr v[HTTP_ALLOW_MAX];
};

/*
 * Parses spec (addresses, ADDRESS/PREFIX, "loopback", "any"; commas or
 * white space between). An empty spec is "loopback" when listen is a
 * loopback address, else "any". 0, or -EINVAL with the reason in msg.
 */
int http_allow_parse(const char *spec, const struct sockaddr_storage *listen, struct http_allow *al,
		     char *msg, size_t msglen);
/* The grammar alone, for the config check: 0, or -EINVAL with msg. */
int http_allow_check(const char *spec, char *msg, size_t msglen);
bool http_allow_match(const struct http_allow *al, const struct sockaddr_storage *client);
/* Admits some address other than loopback ones. */
bool http_allow_remote(const struct http_allow *al);
/* "127.0.0.0/8, ::1/128" or "any", for a log line. */
void http_allow_describe(const struct http_allow *al, char *buf, size_t len);
/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
bool http_addr_is_loopback(const struct sockaddr_storage *ss);

#endif
