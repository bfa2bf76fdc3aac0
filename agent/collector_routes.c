// SPDX-License-Identifier: MIT
/*
 * Collectors' own routes on the HTTP server. A collector route sees no HTTP:
 * the agent negotiates the encoding, refuses unknown parameters, checks the
 * admin gate, decodes the body into the route's message (JSON or protobuf),
 * calls the route with an arena for its reply, and encodes what it answers
 * with the one encoder (api/reply.c). Runs on libmicrohttpd's threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "base/arena.h"
#include "agent/collector_routes.h"
#include "base/log.h"
#include "api/query.h"
#include "api/reply.h"
#include "api/schema.h"
#include "collectors/collector.h"

struct route_binding {
	struct collector *c;
	const struct collector_route *r;
};

static void collector_route_serve(const struct http_request *req, struct http_response *res,
				  void *arg)
{
	static const char *const none[] = {NULL};
	const struct route_binding *b = arg;
	const struct collector_route *r = b->r;
	struct collector *c = b->c;
	struct route_reply rep = {.status = 200};
	struct arena ar = {0};
	struct route_request rq = {
	    .subpath = req->subpath ? req->subpath : "",
	    .args = req->args,
	    .n_args = req->n_args,
	    .arena = &ar,
	};
	ProtobufCMessage *body = NULL;
	int enc = api_encoding(req, res);
	enum collector_state st;

	if (enc < 0 || query_params_check(req, r->params ? r->params : none, res))
		return;
	st = (enum collector_state)__atomic_load_n((const int *)&c->state, __ATOMIC_RELAXED);
	if (st != COLLECTOR_RUNNING) {
		api_error(res, enc, 503, "unavailable", "the %s collector is %s", c->ops->name,
			  collector_state_name(st));
		return;
	}
	if (r->admin && !c->admin) {
		api_error(res, enc, 403, "forbidden",
			  "%s %s changes the host: enable it with [http] admin = true",
			  r->method ? r->method : "GET", r->path);
		return;
	}
	if (r->body) {
		body = api_request_body(req, res, enc, r->body);
		if (!body)
			return;
		rq.body = body;
	}
	r->fn(c, &rq, &rep);
	if (rep.status >= 400 || !rep.msg)
		api_error(res, enc, rep.status >= 400 ? rep.status : 500,
			  rep.code[0] ? rep.code : "internal", "%s",
			  rep.message[0] ? rep.message : "the route gave no answer");
	else if (ar.oom)
		api_error(res, enc, 500, "internal", "out of memory");
	else
		api_reply(res, rep.status, enc, rep.msg);
	if (body)
		protobuf_c_message_free_unpacked(body, NULL);
	arena_free(&ar);
}

/* A list route says its message and columns in GET /api/v1/schema. */
static int route_schema_add(const struct collector *c, const struct collector_route *r)
{
	const struct schema_route sr = {
	    .path = r->path,
	    .collector = c->ops->name,
	    .list = r->list,
	    .columns = r->show,
	};

	return r->list ? schema_add(&sr) : 0;
}

int collector_routes_register(struct agent *a)
{
	size_t n = 0, k = 0;
	struct route_binding *bs;

	for (size_t i = 0; i < a->n_collectors; i++)
		for (const struct collector_route *r = a->collectors[i].ops->routes; r && r->path;
		     r++)
			n++;
	bs = calloc(n ? n : 1, sizeof(*bs));
	if (!bs)
		return -ENOMEM;
	a->route_bindings = bs; /* freed by agent_stop() after the server */
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];

		if (c->state == COLLECTOR_DISABLED || !c->ops->routes)
			continue;
		for (const struct collector_route *r = c->ops->routes; r->path; r++) {
			struct route_binding *b = &bs[k++];
			int err;

			b->c = c;
			b->r = r;
			err = route_schema_add(c, r);
			if (!err)
				err = http_route(a->http, r->method ? r->method : "GET", r->path,
						 r->prefix, collector_route_serve, b);
			if (err) {
				log_err(c->ops->name, "cannot register %s %s: %s",
					r->method ? r->method : "GET", r->path, strerror(-err));
				return err;
			}
		}
	}
	return 0;
}
