/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "collectors/collector.h"

const char *collector_state_name(enum collector_state s)
{
	switch (s) {
	case COLLECTOR_DISABLED:
		return "disabled";
	case COLLECTOR_UNAVAILABLE:
		return "unavailable";
	case COLLECTOR_RUNNING:
		return "running";
	case COLLECTOR_FAILED:
		return "failed";
	}
	return "unknown";
}

int collector_unavailable(struct collector *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return err;
}

int collector_config_error(struct collector *c, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->cfg_err_key = key;
	if (c->config_error_hook)
		c->config_error_hook(c);
	return -EINVAL;
}

void route_error(struct route_reply *rep, int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	rep->status = status;
	snprintf(rep->code, sizeof(rep->code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(rep->message, sizeof(rep->message), fmt, ap);
	va_end(ap);
	rep->msg = NULL;
}

const char *route_arg(const struct route_request *req, const char *key)
{
	for (size_t i = 0; i < req->n_args; i++)
		if (!strcmp(req->args[2 * i], key))
			return req->args[2 * i + 1];
	return NULL;
}
