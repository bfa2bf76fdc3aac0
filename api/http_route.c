/* SPDX-License-Identifier: MIT */
/*
 * Routing: the route table (fixed before start), the most specific route
 * for a request's method and path (405 with Allow when only the method
 * does not match), the request's query arguments, and the dispatch of a
 * request to its handler.
 *
 * Calls http_auth.c (state-changing routes) and http_respond.c; called by
 * http.c (the access handler).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "api/http.h"
#include "api/http_internal.h"
#include "metrics/metrics.h"

int http_route(struct http_server *h, const char *method, const char *path, bool prefix,
	       http_handler fn, void *arg)
{
	struct http_route_entry *r;

	if (!h || !method || !path || path[0] != '/' || !fn)
		return -EINVAL;
	if (h->daemon)
		return -EBUSY; /* the table is read without a lock once running */
	for (size_t i = 0; i < h->n_routes; i++) {
		r = &h->routes[i];
		if (!strcmp(r->method, method) && !strcmp(r->path, path) && r->prefix == prefix)
			return -EEXIST;
	}
	if (h->n_routes == h->cap_routes) {
		size_t cap = h->cap_routes ? h->cap_routes * 2 : 16;
		struct http_route_entry *t = realloc(h->routes, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		h->routes = t;
		h->cap_routes = cap;
	}
	r = &h->routes[h->n_routes];
	memset(r, 0, sizeof(*r));
	r->method = strdup(method);
	r->path = strdup(path);
	if (!r->method || !r->path) {
		free(r->method);
		free(r->path);
		return -ENOMEM;
	}
	r->path_len = strlen(path);
	/* "/api/v1/x/" as a prefix means the same as "/api/v1/x". */
	if (prefix && r->path_len > 1 && path[r->path_len - 1] == '/')
		r->path[--r->path_len] = '\0';
	r->prefix = prefix;
	r->fn = fn;
	r->arg = arg;
	if (h->m_duration) {
		const char *v[] = {r->path};

		r->duration = metric_series(h->m_duration, v);
	}
	h->n_routes++;
	return 0;
}

/* How well r matches path: 0 not at all, else higher is more specific. */
static size_t route_match(const struct http_route_entry *r, const char *path)
{
	if (!r->prefix)
		return strcmp(r->path, path) ? 0 : r->path_len + 2;
	if (r->path_len == 1) /* prefix "/" matches everything */
		return 1;
	if (strncmp(path, r->path, r->path_len))
		return 0;
	if (path[r->path_len] != '\0' && path[r->path_len] != '/')
		return 0;
	return r->path_len + 1;
}

static bool method_matches(const char *route_method, const char *method)
{
	if (!strcmp(route_method, method))
		return true;
	/* HEAD is GET without a body; MHD drops the body. */
	return !strcmp(method, MHD_HTTP_METHOD_HEAD) && !strcmp(route_method, MHD_HTTP_METHOD_GET);
}

/*
 * Finds the most specific route for (method, path). When the path matches
 * but the method does not, returns NULL with *path_route set to the most
 * specific route for the path and allow filled with its methods.
 */
static const struct http_route_entry *route_find(const struct http_server *h, const char *method,
						 const char *path,
						 const struct http_route_entry **path_route,
						 char *allow, size_t allow_len)
{
	const struct http_route_entry *best = NULL, *best_path = NULL;
	size_t best_q = 0, best_path_q = 0;

	for (size_t i = 0; i < h->n_routes; i++) {
		const struct http_route_entry *r = &h->routes[i];
		size_t q = route_match(r, path);

		if (!q)
			continue;
		if (q > best_path_q) {
			best_path_q = q;
			best_path = r;
		}
		if (method_matches(r->method, method) && q > best_q) {
			best_q = q;
			best = r;
		}
	}
	*path_route = best_path;
	if (best || !best_path)
		return best;

	/* Allow: the methods of every route as specific as the best one. */
	size_t n = 0;
	bool get = false, head = false;

	allow[0] = '\0';
	for (size_t i = 0; i < h->n_routes; i++) {
		const struct http_route_entry *r = &h->routes[i];

		if (route_match(r, path) != best_path_q || strstr(allow, r->method))
			continue;
		get |= !strcmp(r->method, MHD_HTTP_METHOD_GET);
		head |= !strcmp(r->method, MHD_HTTP_METHOD_HEAD);
		n += snprintf(allow + n, n < allow_len ? allow_len - n : 0, "%s%s", n ? ", " : "",
			      r->method);
	}
	if (get && !head && n < allow_len)
		snprintf(allow + n, allow_len - n, ", HEAD");
	return NULL;
}

/* ---- query arguments ---- */

const char *http_query(const struct http_request *req, const char *key)
{
	if (!req || !key || !req->args)
		return NULL;
	for (size_t i = 0; i < req->n_args; i++) {
		if (!strcmp(req->args[2 * i], key))
			return req->args[2 * i + 1];
	}
	return NULL;
}

size_t http_query_all(const struct http_request *req, const char *key, const char **vals,
		      size_t max)
{
	size_t n = 0;

	if (!req || !key || !req->args)
		return 0;
	for (size_t i = 0; i < req->n_args && n < max; i++) {
		if (!strcmp(req->args[2 * i], key))
			vals[n++] = req->args[2 * i + 1];
	}
	return n;
}

static enum MHD_Result arg_collect(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct http_conn *c = cls;

	if (c->n_args >= HTTP_ARGS_MAX) {
		c->too_many_args = true;
		return MHD_NO;
	}
	c->args[2 * c->n_args] = key;
	c->args[2 * c->n_args + 1] = value ? value : "";
	c->n_args++;
	return MHD_YES;
}

enum MHD_Result http_dispatch(struct http_server *h, struct MHD_Connection *conn,
			      struct http_conn *c, const char *url, const char *method)
{
	const struct http_route_entry *r, *path_route;
	struct http_response res = {0};
	struct http_request req = {0};
	char allow[128], msg[512];
	enum MHD_Result ret;

	r = route_find(h, method, url, &path_route, allow, sizeof(allow));
	if (!r && path_route) {
		snprintf(msg, sizeof(msg), "method %s not allowed on %.128s (allowed: %s)", method,
			 url, allow);
		return http_reply_error_now(h, conn, c, path_route, 405, "method_not_allowed", msg,
					    allow);
	}
	if (!r) {
		snprintf(msg, sizeof(msg), "no such route: %.200s", url);
		return http_reply_error_now(h, conn, c, NULL, 404, "not_found", msg, NULL);
	}
	if (strcmp(r->method, MHD_HTTP_METHOD_GET) && strcmp(r->method, MHD_HTTP_METHOD_HEAD)) {
		int status = http_admin_check(h, conn, method, msg, sizeof(msg));

		if (status)
			return http_reply_error_now(
			    h, conn, c, r, status,
			    status == 415 ? "unsupported_media_type" : "forbidden", msg, NULL);
	}
	if (c->too_large) {
		snprintf(msg, sizeof(msg), "request body larger than %u bytes", HTTP_BODY_MAX);
		return http_reply_error_now(h, conn, c, r, 413, "payload_too_large", msg, NULL);
	}
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, arg_collect, c);
	if (c->too_many_args) {
		snprintf(msg, sizeof(msg), "more than %d query parameters", HTTP_ARGS_MAX);
		return http_reply_error_now(h, conn, c, r, 400, "bad_request", msg, NULL);
	}

	req.method = method;
	req.path = url;
	req.subpath = r->prefix && r->path_len > 1 ? url + r->path_len : "";
	req.conn = conn;
	req.body = c->body;
	req.body_len = c->body_len;
	req.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	req.content_type =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.args = c->args;
	req.n_args = c->n_args;
	r->fn(&req, &res, r->arg);
	if (res.status < 100 || res.status > 599) {
		log_err("http", "handler of %s %s gave no status", r->method, r->path);
		http_reply_error(&res, 500, "internal", "the handler produced no response");
	}
	ret = http_queue(h, conn, &res, NULL);
	free(res.body);
	http_count_request(h, r, c, res.status);
	return ret;
}
