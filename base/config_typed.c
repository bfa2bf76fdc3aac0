// SPDX-License-Identifier: MIT
/*
 * Typed config keys: the agent parses and range-checks a section's keys
 * into its owner's config struct (see struct cfg_key), so a collector reads
 * plain fields and never parses text itself.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

/* The value's index in k->choices, else "must be a, b or c". */
static int cfg_parse_choice(struct config *cfg, const char *section, const struct cfg_key *k,
			    unsigned *out)
{
	const char *v = cfg_get(cfg_section(cfg, section), k->key);
	char allowed[256] = "";
	size_t off = 0;
	unsigned n = 0;

	for (size_t i = 0; v && k->aliases && k->aliases[i]; i += 2)
		if (!strcmp(v, k->aliases[i]))
			v = k->aliases[i + 1];
	while (k->choices && k->choices[n]) {
		if (v && !strcmp(v, k->choices[n])) {
			*out = n;
			return 0;
		}
		n++;
	}
	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(allowed + off,
					off < sizeof(allowed) ? sizeof(allowed) - off : 0, "%s%s",
					!i	    ? ""
					: i + 1 < n ? ", "
						    : " or ",
					k->choices[i]);
	return cfg_error(cfg, section, k->key, "must be %s%s", n == 1 ? "one of " : "", allowed);
}

/* A signed integer in [(int64_t)k->min, (int64_t)k->max]. */
static int cfg_parse_int(struct config *cfg, const char *section, const struct cfg_key *k, int *out)
{
	const char *v = cfg_get(cfg_section(cfg, section), k->key);
	long long lo = (long long)(int64_t)k->min, hi = (long long)(int64_t)k->max, n;
	char *end;

	errno = 0;
	n = v ? strtoll(v, &end, 10) : 0;
	if (!v || errno || end == v || *end || n < lo || n > hi)
		return cfg_error(cfg, section, k->key, "must be an integer from %lld to %lld", lo,
				 hi);
	*out = (int)n;
	return 0;
}

/* A finite number in [k->min, k->max]. */
static int cfg_parse_double(struct config *cfg, const char *section, const struct cfg_key *k,
			    double *out)
{
	const char *v = cfg_get(cfg_section(cfg, section), k->key);
	char *end;
	double d;

	errno = 0;
	d = v ? strtod(v, &end) : 0;
	if (!v || errno || end == v || *end || !isfinite(d) || d < (double)k->min ||
	    d > (double)k->max) {
		if (k->max == UINT64_MAX)
			return cfg_error(cfg, section, k->key, "must be a number of at least %llu",
					 (unsigned long long)k->min);
		return cfg_error(cfg, section, k->key, "must be a number from %llu to %llu",
				 (unsigned long long)k->min, (unsigned long long)k->max);
	}
	*out = d;
	return 0;
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
		case CFG_INT:
			err = cfg_parse_int(cfg, section, k, p);
			break;
		case CFG_DOUBLE:
			err = cfg_parse_double(cfg, section, k, p);
			break;
		}
	}
	return bad ? -EINVAL : 0;
}
