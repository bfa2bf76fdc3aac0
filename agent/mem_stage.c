// SPDX-License-Identifier: MIT
/* Start-up memory by stage (see mem_stage.h). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/procfs.h"
#include "agent/mem_stage.h"

/* A /proc/self/status field in kB; -1 if missing. */
static long mem_stage_status_kb(const char *key)
{
	uint64_t v;

	return procfs_status_field(key, 10, &v) ? -1 : (long)v;
}

void mem_stage(const char *stage)
{
	static int enabled = -1;
	struct mallinfo2 mi;
	FILE *f;

	if (enabled < 0) {
		const char *env = getenv("SYSOBS_MEM_STAGES");

		enabled = env && *env && strcmp(env, "0");
	}
	if (!enabled)
		return;
	mi = mallinfo2();
	log_msg(LOG_LVL_WARN, "mem",
		"stage=\"%s\" rss_kib=%ld hwm_kib=%ld anon_kib=%ld heap_used_kib=%zu "
		"heap_held_kib=%zu",
		stage, mem_stage_status_kb("VmRSS"), mem_stage_status_kb("VmHWM"),
		mem_stage_status_kb("RssAnon"), mi.uordblks / 1024, (mi.arena + mi.hblkhd) / 1024);
	/* the next stage's peak starts from here */
	f = fopen("/proc/self/clear_refs", "we");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}
