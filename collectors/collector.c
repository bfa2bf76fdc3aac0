/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "agent/agent.h"
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

const char *collector_cfg(const struct collector *c, const char *key)
{
	return cfg_get(cfg_section(&c->agent->cfg, c->section), key);
}

bool collector_have_bpf_caps(void)
{
	enum { CAP_SYS_ADMIN_BIT = 21, CAP_PERFMON_BIT = 38, CAP_BPF_BIT = 39 };
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> CAP_SYS_ADMIN_BIT & 1) ||
	       ((eff >> CAP_BPF_BIT & 1) && (eff >> CAP_PERFMON_BIT & 1));
}
