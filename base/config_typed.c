// SPDX-License-Identifier: MIT
/*
 * Typed config keys: the agent parses and range-checks a section's keys
 * into its owner's config struct (see struct cfg_key), so a collector reads
 * plain fields and never parses text itself.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/config.h"

static int cfg_parse_choice(struct config *cfg, const char *section, const struct cfg_key *k,
			    unsigned *out)
{
	const char *v = cfg_get(cfg_section(cfg, section), k->key);
	char allowed[256] = "";
	size_t off = 0;

	for (unsigned i = 0; k->choices && k->choices[i]; i++) {
		if (v && !strcmp(v, k->choices[i])) {
			*out = i;
			return 0;
		}
		off += (size_t)snprintf(allowed + off,
					off < sizeof(allowed) ? sizeof(allowed) - off : 0, "%s%s",
					i ? ", " : "", k->choices[i]);
	}
	return cfg_error(cfg, section, k->key, "must be one of %s", allowed);
}

int cfg_section_parse(struct config *cfg, const char *section, void *out)
{
	struct cfg_section *sec = cfg_section(cfg, section);
	int err = 0, bad = 0;

	if (!sec)
		return -ENOENT;
	/* Every key, past a bad one: each bad value is recorded (cfg_fail()). */
	for (const struct cfg_key *k = sec->keys; k && k->key; k++, bad |= err) {
		void *p = (char *)out + k->offset;

		switch (k->type) {
		case CFG_UNTYPED:
			break;
		case CFG_STRING:
			*(const char **)p = cfg_get(sec, k->key);
			if (!*(const char **)p)
				*(const char **)p = "";
			break;
		case CFG_BOOL:
			err = cfg_get_bool(cfg, section, k->key, p);
			break;
		case CFG_U64:
			err = cfg_get_u64(cfg, section, k->key, k->min, k->max, p);
			break;
		case CFG_DURATION:
			err = cfg_get_duration_ms(cfg, section, k->key, k->min, k->max, p);
			break;
		case CFG_SIZE:
			err = cfg_get_size(cfg, section, k->key, k->min, k->max, p);
			break;
		case CFG_CHOICE:
			err = cfg_parse_choice(cfg, section, k, p);
			break;
		}
	}
	return bad ? -EINVAL : 0;
}
