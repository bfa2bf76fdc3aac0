// SPDX-License-Identifier: MIT
/*
 * The read-back check of native histograms (remote_write_probe.h): one
 * instant query, count by (__name__) ({__name__=~"NAME|CONTROL",identity}),
 * against the receiver's Prometheus HTTP API. count() keeps the answer a
 * couple of hundred bytes whatever the labels (the sender keeps
 * SENDER_RESP_MAX of a body), and both Prometheus and VictoriaMetrics
 * answer it; the 5 min lookback of an instant query covers the check's
 * delay.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/lazylib.h"
#include "exporters/remote_write.h"
#include "exporters/remote_write_probe.h"
#include "exporters/sender.h"

#define RW_WRITE_PATH "/api/v1/write"

char *rw_probe_base(const char *url, const char *query_url)
{
	size_t n, w = strlen(RW_WRITE_PATH);
	char *b;

	if (query_url && *query_url) {
		n = strlen(query_url);
		while (n && query_url[n - 1] == '/')
			n--;
		b = strndup(query_url, n);
	} else {
		n = strlen(url);
		if (n <= w || strcmp(url + n - w, RW_WRITE_PATH)) {
			errno = ENOENT;
			return NULL;
		}
		b = strndup(url, n - w);
	}
	if (!b)
		errno = ENOMEM;
	return b;
}

int rw_probe_selector(char *out, size_t len, const char *name, const struct rw_label *l, size_t n)
{
	size_t o = 0;

#define PUT(c)                                                                                     \
	do {                                                                                       \
		if (o + 1 >= len)                                                                  \
			return -ENOSPC;                                                            \
		out[o++] = (c);                                                                    \
	} while (0)
	for (const char *p = name; *p; p++)
		PUT(*p);
	PUT('{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			PUT(',');
		for (const char *p = l[i].name; *p; p++)
			PUT(*p);
		PUT('=');
		PUT('"');
		for (const char *p = l[i].value; *p; p++) {
			if (*p == '"' || *p == '\\')
				PUT('\\');
			if (*p == '\n') {
				PUT('\\');
				PUT('n');
				continue;
			}
			PUT(*p);
		}
		PUT('"');
	}
	PUT('}');
#undef PUT
	out[o] = '\0';
	return 0;
}

int rw_probe_answer(const char *body, size_t len, const char *name)
{
	json_t *root = json_loadb(body, len, 0, NULL);
	json_t *res = json_object_get(json_object_get(root, "data"), "result");
	const char *st = json_string_value(json_object_get(root, "status"));
	bool hist = false, control = false;
	size_t i;
	json_t *r;

	if (!st || strcmp(st, "success") || !json_is_array(res)) {
		json_decref(root);
		return -EINVAL;
	}
	json_array_foreach(res, i, r)
	{
		const char *n =
		    json_string_value(json_object_get(json_object_get(r, "metric"), "__name__"));

		hist |= n && !strcmp(n, name);
		control |= n && !strcmp(n, RW_PROBE_CONTROL);
	}
	json_decref(root);
	return !control ? -EAGAIN : hist;
}

int rw_probe_init(struct rw_probe *p, const char *url, const char *query_url)
{
	memset(p, 0, sizeof(*p));
	p->base = rw_probe_base(url, query_url);
	if (!p->base)
		return -errno;
	p->base_public = sender_url_public(p->base);
	if (!p->base_public && errno == ENOMEM)
		return -ENOMEM;
	if (!p->base_public && !(p->base_public = strdup("the receiver")))
		return -ENOMEM;
	return 0;
}

int rw_probe_arm(struct rw_probe *p, const char *name, const struct rw_label *l, size_t n,
		 int64_t due_ns)
{
	const struct lazylib_curl *cu = lazylib_curl(NULL); /* the sender loaded it */
	char q[sizeof(p->selector) + 2 * sizeof(p->name) + 64], *esc;
	size_t k = strlen(name);
	int err = rw_probe_selector(p->selector, sizeof(p->selector), name, l, n);

	if (err)
		return err;
	if (k >= sizeof(p->name))
		return -ENOSPC;
	memcpy(p->name, name, k + 1);
	/* {__name__=~"NAME|CONTROL",identity}: the selector's labels reused */
	snprintf(q, sizeof(q), "count by (__name__) ({__name__=~\"%s|%s\"%s%s)", name,
		 RW_PROBE_CONTROL, n ? "," : "", p->selector + k + 1);
	esc = cu->easy_escape(NULL, q, 0);
	free(p->query);
	p->query = NULL;
	if (!esc || asprintf(&p->query, "%s/api/v1/query?query=%s", p->base, esc) < 0)
		p->query = NULL;
	cu->free(esc);
	if (!p->query)
		return -ENOMEM;
	p->due_ns = due_ns;
	return 0;
}

int rw_probe_run(struct rw_probe *p, struct sender *s)
{
	int rc;

	p->tries++;
	if (sender_get(s, p->query) != SENDER_SENT || s->status != 200)
		return -EIO;
	rc = rw_probe_answer(s->resp, s->resp_len, p->name);
	return rc == -EINVAL ? -EIO : rc;
}

void rw_probe_free(struct rw_probe *p)
{
	free(p->base);
	free(p->base_public);
	free(p->query);
	memset(p, 0, sizeof(*p));
}
