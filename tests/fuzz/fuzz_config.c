/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the config parser (base/config.c through inih, on a
 * buffer as cfg_load() reads it) over every section the agent declares, and
 * of the typed parse of each section (bools, sizes, durations, choices) as
 * collectors and the agent do it. Any text loads or is refused with a
 * message; a loaded config parses section by section or names the key.
 */
#include "agent/agent.h"
#include "base/config.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent a = {0};
	int rc;

	if (size > 64 * 1024)
		return 0;
	if (agent_config_declare(&a))
		return 0;
	rc = cfg_load_buffer(&a.cfg, "fuzz.ini", (const char *)data, size);
	FUZZ_CHECK(rc == 0 || a.cfg.err[0], "load failed (%d) without a message", rc);
	for (size_t i = 0; rc == 0 && i < a.cfg.n_sections; i++) {
		const struct cfg_section *sec = &a.cfg.sections[i];
		size_t need = 8;
		void *out;

		for (const struct cfg_key *k = sec->keys; k && k->key; k++)
			if (k->type != CFG_UNTYPED && k->offset + 8 > need)
				need = k->offset + 8;
		out = calloc(1, need);
		if (!out)
			break;
		a.cfg.err[0] = '\0';
		if (cfg_section_parse(&a.cfg, sec->name, out))
			FUZZ_CHECK(a.cfg.err[0], "[%s] refused without a message", sec->name);
		free(out);
	}
	cfg_free(&a.cfg);
	return 0;
}
