// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/drops: sampled drop records, newest first, filtered by reason,
 * protocol, address (source or destination) and port (source or
 * destination), paged with start/end/limit/cursor like every history
 * route. One parameterised statement; absent filters bind NULL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "api/query.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "storage/store_query.h"

static const char *const drops_api_params[] = {
    "reason", "protocol", "addr", "port", "netns", QUERY_WINDOW_PARAMS, NULL,
};

static const char drops_api_sql[] =
    "SELECT id, ts, reason, reason_code, location, ifindex, ifname, netns, l3, protocol,"
    " saddr, daddr, sport, dport, icmp_type, icmp_code, tcp_flags, len, cpu"
    " FROM drop_samples"
    " WHERE id < ?1 AND ts >= ?2 AND ts < ?3"
    " AND (?4 IS NULL OR reason = ?4)"
    " AND (?5 IS NULL OR protocol = ?5)"
    " AND (?6 IS NULL OR saddr = ?6 OR daddr = ?6)"
    " AND (?7 IS NULL OR sport = ?7 OR dport = ?7)"
    " AND (?9 IS NULL OR netns = ?9)"
    " ORDER BY id DESC LIMIT ?8";

/* Addresses are stored as inet_ntop() prints them; normalise the filter the
 * same way so "::0001" finds "::1". */
static int normalise_addr(const char *in, char *out, size_t len)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, in, buf) == 1)
		return inet_ntop(AF_INET, buf, out, len) ? 0 : -EINVAL;
	if (inet_pton(AF_INET6, in, buf) == 1)
		return inet_ntop(AF_INET6, buf, out, len) ? 0 : -EINVAL;
	return -EINVAL;
}

static bool token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

void drops_api_get(const struct http_request *req, struct http_response *res, void *arg)
{
	struct collector *c = arg;
	struct store *store = c->agent->store;
	const char *reason = http_query(req, "reason");
	const char *proto = http_query(req, "protocol");
	const char *addr = http_query(req, "addr");
	const char *port_s = http_query(req, "port");
	const char *netns_s = http_query(req, "netns");
	uint64_t netns = 0;
	char addr_norm[INET6_ADDRSTRLEN];
	struct query_window w;
	sqlite3_stmt *st = NULL;
	json_t *body;
	uint64_t port = 0;
	sqlite3 *db;
	int rc;

	if (query_params_check(req, drops_api_params, res) || query_window_parse(req, &w, res))
		return;
	if (reason && !token_ok(reason, 63)) {
		http_reply_error(res, 400, "bad_request", "reason: expected a drop reason name");
		return;
	}
	if (proto && !token_ok(proto, 7)) {
		http_reply_error(res, 400, "bad_request", "protocol: expected e.g. udp, tcp, icmp");
		return;
	}
	if (addr && normalise_addr(addr, addr_norm, sizeof(addr_norm))) {
		http_reply_error(res, 400, "bad_request", "addr: expected an IPv4 or IPv6 address");
		return;
	}
	if (port_s && (cfg_parse_u64(port_s, &port) || port > 65535)) {
		http_reply_error(res, 400, "bad_request", "port: expected 0..65535");
		return;
	}

	if (netns_s && (cfg_parse_u64(netns_s, &netns) || !netns || netns > UINT32_MAX)) {
		http_reply_error(res, 400, "bad_request",
				 "netns: expected a network namespace inode number");
		return;
	}

	db = store_reader_get(store);
	if (!db) {
		http_reply_error(res, 503, "unavailable", "no database reader free");
		return;
	}
	rc = sqlite3_prepare_v2(db, drops_api_sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto err_db;
	sqlite3_bind_int64(st, 1, w.cursor);
	sqlite3_bind_int64(st, 2, w.start_ns);
	sqlite3_bind_int64(st, 3, w.end_ns);
	if (reason)
		sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
	if (proto)
		sqlite3_bind_text(st, 5, proto, -1, SQLITE_STATIC);
	if (addr)
		sqlite3_bind_text(st, 6, addr_norm, -1, SQLITE_STATIC);
	if (port_s)
		sqlite3_bind_int64(st, 7, (int64_t)port);
	if (netns_s)
		sqlite3_bind_int64(st, 9, (int64_t)netns);
	/* One row more than asked tells whether there is a next page. */
	sqlite3_bind_int64(st, 8, (int64_t)w.limit + 1);

	body = store_page_json(st, w.limit, "data", NULL, &rc);
	if (!body && rc != -ENOMEM)
		goto err_db;
	sqlite3_finalize(st);
	store_reader_put(store, db);
	if (!body)
		http_reply_error(res, 500, "internal", "out of memory");
	else
		http_reply_json(res, 200, body);
	return;

err_db:
	http_reply_error(res, 500, "internal", "database: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	store_reader_put(store, db);
}
