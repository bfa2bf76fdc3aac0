/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the config parser (base/config.c through inih, on a
 * buffer as cfg_load() reads it) over every section the agent declares, and
 * of the typed parse of each section (bools, sizes, durations, choices) as
 * collectors and the agent do it. Any text loads or is refused with a
 * message; a loaded config parses section by section or names the key;
 * every value comes whole from the line it names (a line is never split
 * into several: issue 30).
 */
#include "agent/agent.h"
#include "base/config.h"
#include "tests/fuzz/fuzz_common.h"

/* Line n (from 1) of text, NUL-terminated in a new buffer; NULL past the end. */
static char *line_at(const char *text, size_t size, int n)
{
	const char *p = text, *end = text + size, *eol;

	for (int i = 1; i < n; i++) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return NULL;
		p = eol + 1;
	}
	eol = memchr(p, '\n', (size_t)(end - p));
	return fuzz_strndup((const uint8_t *)p, (size_t)((eol ? eol : end) - p));
}

/* Every value read from the text: its key and its value are in the line it
 * names, which exists. */
static void values_whole(const struct config *cfg, const char *text, size_t size)
{
	for (size_t i = 0; i < cfg->n_sections; i++) {
		const struct cfg_section *sec = &cfg->sections[i];

		for (size_t j = 0; j < sec->n_values; j++) {
			const struct cfg_value *v = &sec->values[j];
			char *line;

			if (v->line <= 0)
				continue;
			line = line_at(text, size, v->line);
			FUZZ_CHECK(line, "[%s] %s from line %d of a shorter text", sec->name,
				   v->key, v->line);
			FUZZ_CHECK(strstr(line, v->key) && strstr(line, v->value),
				   "[%s] %s = '%.40s' not in its line %d", sec->name, v->key,
				   v->value, v->line);
			free(line);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent a = {0};
	int rc;

	if (size > CFG_MAX_BYTES + 1)
		return 0;
	if (agent_config_declare(&a))
		return 0;
	rc = cfg_load_buffer(&a.cfg, "fuzz.ini", (const char *)data, size);
	FUZZ_CHECK(rc == 0 || a.cfg.err[0], "load failed (%d) without a message", rc);
	if (!memchr(data, '\0', size))
		values_whole(&a.cfg, (const char *)data, size);
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
