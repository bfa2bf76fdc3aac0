/* SPDX-License-Identifier: MIT */
/*
 * Config values as text: booleans, integers, durations and sizes parsed
 * (pure), and the untyped getters that check a key's range and say
 * file:line when it is out (see config.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/timeutil.h"

int cfg_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Leading decimal digits into *out; returns the rest or NULL on overflow/none. */
static const char *parse_digits(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	while (*p >= '0' && *p <= '9') {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return NULL;
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

char *cfg_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	for (end = s + strlen(s); end > s && isspace((unsigned char)end[-1]);)
		*--end = '\0';
	return s;
}

int cfg_kv_split(char *tok, char **key, char **value)
{
	char *eq = strchr(tok, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	*key = cfg_trim(tok);
	*value = cfg_trim(eq + 1);
	return 0;
}

int cfg_parse_u64(const char *s, uint64_t *out)
{
	const char *rest = parse_digits(s, out);

	return rest && !*rest ? 0 : -EINVAL;
}

static int mul_checked(uint64_t v, uint64_t m, uint64_t *out)
{
	if (m && v > UINT64_MAX / m)
		return -ERANGE;
	*out = v * m;
	return 0;
}

/* timeutil's duration grammar, in whole milliseconds: a value with a
 * sub-millisecond part ("0.0005") is refused rather than rounded. */
int cfg_parse_duration_ms(const char *s, uint64_t *out)
{
	int64_t ns;

	if (duration_parse_ns(s, &ns) || ns % NSEC_PER_MSEC)
		return -EINVAL;
	*out = (uint64_t)(ns / NSEC_PER_MSEC);
	return 0;
}

int cfg_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		unsigned shift;
	} units[] = {{"", 0},	  {"b", 0},  {"k", 10},	  {"kib", 10}, {"m", 20},
		     {"mib", 20}, {"g", 30}, {"gib", 30}, {"t", 40},   {"tib", 40}};
	uint64_t v;
	const char *rest = parse_digits(s, &v);

	if (!rest)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(rest, units[i].unit))
			return mul_checked(v, 1ull << units[i].shift, out) ? -EINVAL : 0;
	return -EINVAL;
}

static const char *get_or_err(struct config *cfg, const char *section, const char *key)
{
	const char *v = cfg_get(cfg_section(cfg, section), key);

	if (!v)
		cfg_fail(cfg, "internal: key [%s] %s not declared", section, key);
	return v;
}

int cfg_get_bool(struct config *cfg, const char *section, const char *key, bool *out)
{
	const char *v = get_or_err(cfg, section, key);

	if (!v)
		return -EINVAL;
	if (cfg_parse_bool(v, out))
		return cfg_error(cfg, section, key, "expected true or false");
	return 0;
}

static int check_range(struct config *cfg, const char *section, const char *key, uint64_t v,
		       uint64_t min, uint64_t max, const char *unit)
{
	if (v < min || v > max)
		return cfg_error(cfg, section, key, "out of range [%llu, %llu]%s",
				 (unsigned long long)min, (unsigned long long)max, unit);
	return 0;
}

int cfg_get_u64(struct config *cfg, const char *section, const char *key, uint64_t min,
		uint64_t max, uint64_t *out)
{
	const char *v = get_or_err(cfg, section, key);

	if (!v)
		return -EINVAL;
	if (cfg_parse_u64(v, out))
		return cfg_error(cfg, section, key, "expected a non-negative integer");
	return check_range(cfg, section, key, *out, min, max, "");
}

int cfg_get_duration_ms(struct config *cfg, const char *section, const char *key, uint64_t min_ms,
			uint64_t max_ms, uint64_t *out)
{
	const char *v = get_or_err(cfg, section, key);

	if (!v)
		return -EINVAL;
	if (cfg_parse_duration_ms(v, out))
		return cfg_error(cfg, section, key,
				 "expected a duration such as 250ms, 15s, 5m, 1h30m or 7d (at most "
				 "292y)");
	return check_range(cfg, section, key, *out, min_ms, max_ms, " ms");
}

int cfg_get_size(struct config *cfg, const char *section, const char *key, uint64_t min,
		 uint64_t max, uint64_t *out)
{
	const char *v = get_or_err(cfg, section, key);

	if (!v)
		return -EINVAL;
	if (cfg_parse_size(v, out))
		return cfg_error(cfg, section, key, "expected a size such as 512k, 64M or 1G");
	return check_range(cfg, section, key, *out, min, max, " bytes");
}
