/* SPDX-License-Identifier: MIT */
/*
 * The collector host: each collector's lifecycle in the agent (collector
 * contract in docs/DESIGN.md). init runs for every enabled collector after
 * every section parsed; start wires its fd and timer into the event loop;
 * a failure at any point leaves that collector FAILED or UNAVAILABLE, with
 * its reason, and the agent serving. sysobs_collector_up and
 * sysobs_collector_state follow every change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/collector_host.h"
#include "base/log.h"
#include "agent/mem_stage.h"
#include "agent/sink_impl.h"
#include "collectors/collector.h"

static void collector_set_up(struct collector *c)
{
	static const char *const labels[] = {"collector", NULL};
	static const char *const state_labels[] = {"collector", "state", NULL};
	static const enum collector_state states[] = {COLLECTOR_DISABLED, COLLECTOR_UNAVAILABLE,
						      COLLECTOR_RUNNING, COLLECTOR_FAILED};
	struct metric *up =
	    metrics_gauge(((struct agent *)c->owner)->metrics, "sysobs_collector_up",
			  "1 if the collector is running, 0 if it is disabled, "
			  "unavailable or failed.",
			  labels);
	/* A state set: "unavailable" (the host lacks the feature) must not page
	 * anyone, "failed" (it ran, or should have, and broke) should. */
	struct metric *state =
	    metrics_gauge(((struct agent *)c->owner)->metrics, "sysobs_collector_state",
			  "1 for the collector's current state (disabled, unavailable, running, "
			  "failed), 0 for the others.",
			  state_labels);
	const char *v[] = {c->ops->name, NULL};
	struct metric_series *s = up ? metric_series(up, v) : NULL;

	if (s)
		series_set(s, c->state == COLLECTOR_RUNNING);
	for (size_t i = 0; state && i < sizeof(states) / sizeof(states[0]); i++) {
		v[1] = collector_state_name(states[i]);
		if ((s = metric_series(state, v)))
			series_set(s, c->state == states[i]);
	}
}

static void collector_fail(struct collector *c, int err, const char *what)
{
	if (!c->why[0] || c->state == COLLECTOR_RUNNING)
		snprintf(c->why, sizeof(c->why), "%s: %s", what, strerror(-err));
	c->state = COLLECTOR_FAILED;
	log_err(c->ops->name, "failed: %s", c->why);
	loop_remove(((struct agent *)c->owner)->loop, c->loop_fd_src);
	loop_remove(((struct agent *)c->owner)->loop, c->loop_timer_src);
	c->loop_fd_src = c->loop_timer_src = NULL;
	collector_set_up(c);
	/* Its series say nothing any more: gone, removed after the grace. */
	metrics_owner_gone(((struct agent *)c->owner)->metrics, c->ops->name, clock_mono_ns());
}

static int collector_fd_ready(int fd, void *arg)
{
	struct collector *c = arg;
	int err;

	c->last_activity_ns = clock_wall_ns();
	err = c->ops->on_ready(c);
	if (err < 0) {
		c->errors++;
		c->why[0] = '\0';
		collector_fail(c, err, "on_ready");
		return 0; /* collector_fail removed the source already */
	}
	return 0;
}

static int collector_tick(int fd, void *arg)
{
	struct collector *c = arg;
	int err;

	c->last_activity_ns = clock_wall_ns();
	err = c->ops->collect(c);
	if (err == -ENODEV) {
		/* The feature went away (a module unloaded): unavailable, up 0,
		 * and still polled, so it can come back. */
		if (c->state == COLLECTOR_RUNNING) {
			c->state = COLLECTOR_UNAVAILABLE;
			log_warn(c->ops->name, "unavailable: %s", c->why);
			collector_set_up(c);
		}
		return 0;
	}
	if (err >= 0 && c->state == COLLECTOR_UNAVAILABLE) {
		c->state = COLLECTOR_RUNNING;
		c->why[0] = '\0';
		log_info(c->ops->name, "available again: running");
		collector_set_up(c);
	}
	if (err < 0) {
		static struct log_ratelimit rl;

		c->errors++;
		log_ratelimited(&rl, 10000, LOG_LVL_WARN, c->ops->name, "collect failed: %s",
				strerror(-err));
	}
	return 0;
}

/* An unavailable collector's feature appeared: say once what using it
 * needs (the reason the collector wrote) and stop asking. */
static int collector_recheck(int fd, void *arg)
{
	struct collector *c = arg;

	if (c->state != COLLECTOR_UNAVAILABLE || c->ops->recheck(c) <= 0)
		return 0;
	log_warn(c->ops->name, "%s", c->why);
	c->loop_timer_src = NULL;
	return -1; /* the loop removes this timer */
}

/* collector_config_error() of a check: recorded with the config's errors,
 * at the key's file:line. */
static void collector_config_record(struct collector *c)
{
	cfg_error(&((struct agent *)c->owner)->cfg, c->section, c->cfg_err_key, "%s", c->why);
}

/* The collector's own checks of its parsed config: every error recorded.
 * 0, or -EINVAL. */
static int collector_check(struct collector *c)
{
	int err;

	if (!c->ops->check_config)
		return 0;
	c->config_error_hook = collector_config_record;
	err = c->ops->check_config(c);
	c->config_error_hook = NULL;
	c->cfg_err_key = NULL;
	c->why[0] = '\0';
	return err ? -EINVAL : 0;
}

int collectors_config_check(struct agent *a)
{
	int bad = 0;

	for (size_t i = 0; collector_registry[i]; i++) {
		struct collector c = {.ops = collector_registry[i], .owner = a, .fd = -1};
		bool enabled = false;
		void *cfg;

		snprintf(c.section, sizeof(c.section), "collector.%s", c.ops->name);
		if (cfg_get_bool(&a->cfg, c.section, "enabled", &enabled)) {
			bad = -EINVAL;
			continue;
		}
		if (!enabled)
			continue; /* as at start: its other keys are not read */
		cfg = calloc(1, c.ops->cfg_size ? c.ops->cfg_size : 1);
		if (!cfg)
			return -ENOMEM;
		c.cfg = cfg;
		c.sysfs_root = a->sysfs_root ? a->sysfs_root : "/sys";
		c.hostname = a->host;
		bad |= cfg_section_parse(&a->cfg, c.section, cfg);
		bad |= collector_check(&c);
		free(cfg);
	}
	return bad ? -EINVAL : 0;
}

/* Registers every family of ops->metrics, its handle in c->families[i]
 * for the collector's lifetime, so start() looks none up again. -1 if one
 * could not be (the sink logged why): exit 2, nothing started. */
static int collector_families_register(struct collector *c)
{
	size_t n = 0;

	while (c->ops->metrics && c->ops->metrics[n].name)
		n++;
	c->families = calloc(n ? n : 1, sizeof(*c->families));
	if (!c->families) {
		log_err("agent", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!(c->families[i] = sink_family(c->sink, &c->ops->metrics[i])))
			return -1;
	return 0;
}

/* The collector's typed config and its sink, before init. -1 after logging
 * a config error, for exit status 2. */
static int collector_config(struct agent *a, struct collector *c)
{
	void *cfg = calloc(1, c->ops->cfg_size ? c->ops->cfg_size : 1);

	c->cfg = cfg;
	c->sink = agent_sink_new(c->ops->name, a->metrics, &a->store);
	if (!cfg || !c->sink) {
		log_err("agent", "out of memory");
		return -1;
	}
	if (cfg_section_parse(&a->cfg, c->section, cfg) | collector_check(c)) {
		agent_config_errors_log(a);
		return -1;
	}
	return collector_families_register(c);
}

/* init every enabled collector; 2 on a config error, else 0. */
int collectors_init(struct agent *a)
{
	size_t n = 0;

	while (collector_registry[n])
		n++;
	a->collectors = calloc(n, sizeof(*a->collectors));
	if (!a->collectors)
		return 1;
	a->n_collectors = n;
	for (size_t i = 0; i < n; i++) {
		struct collector *c = &a->collectors[i];
		bool enabled;

		c->ops = collector_registry[i];
		c->owner = a;
		c->sysfs_root = a->sysfs_root ? a->sysfs_root : "/sys";
		c->hostname = a->host;
		c->admin = a->admin;
		c->fd = -1;
		snprintf(c->section, sizeof(c->section), "collector.%s", c->ops->name);
		if (cfg_get_bool(&a->cfg, c->section, "enabled", &enabled)) {
			agent_config_errors_log(a);
			return 2;
		}
		if (!enabled) {
			c->state = COLLECTOR_DISABLED;
			snprintf(c->why, sizeof(c->why), "disabled in the config");
			continue;
		}
		if (collector_config(a, c))
			return 2;
	}
	/* Every section parsed before the first init (which may load BPF):
	 * a bad value anywhere exits 2 with nothing loaded. */
	for (size_t i = 0; i < n; i++) {
		struct collector *c = &a->collectors[i];
		char stage[64];
		int err;

		if (!c->cfg) /* disabled: collector_config() not run */
			continue;
		err = c->ops->init(c);
		snprintf(stage, sizeof(stage), "collector %s init", c->ops->name);
		mem_stage(stage);
		if (err == -EINVAL)
			c->state =
			    COLLECTOR_UNAVAILABLE; /* agent_stop() calls stop(): frees priv */
		if (err == -EINVAL && c->cfg_err_key) {
			cfg_error(&a->cfg, c->section, c->cfg_err_key, "%s", c->why);
			agent_config_errors_log(a);
			return 2;
		}
		if (err == -EINVAL && a->cfg.err[0]) {
			agent_config_errors_log(a);
			return 2;
		}
		if (err) {
			c->state = COLLECTOR_UNAVAILABLE;
			if (!c->why[0])
				snprintf(c->why, sizeof(c->why), "%s", strerror(-err));
			log_warn(c->ops->name, "unavailable: %s", c->why);
			continue;
		}
		c->state = COLLECTOR_RUNNING;
	}
	return 0;
}

void collectors_start(struct agent *a)
{
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];
		char stage[64];
		int err;

		if (c->state == COLLECTOR_UNAVAILABLE && c->ops->recheck) {
			c->loop_timer_src =
			    loop_add_timer(a->loop, COLLECTOR_RECHECK_MS, collector_recheck, c);
			if (!c->loop_timer_src)
				log_warn(c->ops->name, "cannot watch for the feature to appear: %s",
					 strerror(errno));
		}
		if (c->state != COLLECTOR_RUNNING)
			goto publish;
		err = c->ops->start ? c->ops->start(c) : 0;
		snprintf(stage, sizeof(stage), "collector %s start", c->ops->name);
		mem_stage(stage);
		if (err) {
			c->state = COLLECTOR_FAILED;
			if (!c->why[0])
				snprintf(c->why, sizeof(c->why), "start: %s", strerror(-err));
			log_err(c->ops->name, "failed to start: %s", c->why);
			goto publish;
		}
		if (c->fd >= 0 && c->ops->on_ready) {
			c->loop_fd_src = loop_add_fd(a->loop, c->fd, collector_fd_ready, c);
			if (!c->loop_fd_src) {
				collector_fail(c, -errno, "watch fd");
				goto publish;
			}
		}
		if (c->interval_ms && c->ops->collect) {
			c->loop_timer_src =
			    loop_add_timer(a->loop, c->interval_ms, collector_tick, c);
			if (!c->loop_timer_src) {
				collector_fail(c, -errno, "timer");
				goto publish;
			}
			collector_tick(-1, c); /* first sample now, not one interval later */
		}
		log_info(c->ops->name, "running");
	publish:
		collector_set_up(c);
	}
}

bool collectors_need_priv_writes(const struct agent *a)
{
	for (size_t i = 0; i < a->n_collectors; i++)
		if (a->collectors[i].state == COLLECTOR_RUNNING &&
		    a->collectors[i].ops->priv_writes)
			return true;
	return false;
}

void collectors_stop(struct agent *a)
{
	for (size_t i = 0; i < a->n_collectors; i++) {
		struct collector *c = &a->collectors[i];

		if (c->state != COLLECTOR_DISABLED && c->ops->stop)
			c->ops->stop(c);
		agent_sink_free(c->sink);
		free(c->families);
		free((void *)c->cfg);
	}
	free(a->collectors);
	a->collectors = NULL;
	a->n_collectors = 0;
}
