/* SPDX-License-Identifier: MIT */
/*
 * Configuration: an INI file (inih's syntax, read by base/config.c in
 * whole lines of any length) over embedded defaults, then command-line
 * flags over both. Sections: [agent], [http], [storage], [collector.NAME].
 *
 * Every key is declared in a table of struct cfg_key with its default and a
 * help line; an undeclared key, a bad value or an unreadable file is an error
 * naming file:line, and sysobsd exits with status 2. So is a key given twice
 * in a section, a section header given twice, or an indented line (which
 * inih would take as a continuation of the key above): the error names both
 * lines. No key takes several lines; a list is one comma-separated value.
 *
 * Values are kept as strings with the file and line they came from, so a
 * collector can validate its own keys at init and still point at the
 * offending line.
 *
 * Layers: cfg_load("X.ini") reads X.ini, then every *.ini file of the
 * drop-in directory X.d/ in strcmp() order; a later file's value replaces an
 * earlier one (within one file a key or header given twice stays an error).
 * Parsing goes on past an error, and every error is kept in cfg->errors, so
 * a check (sysobsd --check-config) reports all of them at once.
 */
#ifndef SYSOBS_CONFIG_H
#define SYSOBS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How cfg_section_parse() stores a key's value in the owner's config struct
 * (CFG_UNTYPED keys are only kept as text, read with cfg_get()). */
enum cfg_type {
	CFG_UNTYPED,
	CFG_STRING,   /* const char *, valid while the config lives */
	CFG_BOOL,     /* bool */
	CFG_U64,      /* uint64_t in [min, max] */
	CFG_DURATION, /* uint64_t milliseconds in [min, max] */
	CFG_SIZE,     /* uint64_t bytes in [min, max] ("64k", "10M") */
	CFG_CHOICE,   /* unsigned: index of the value in choices (an enum's
		       * names, in the enum's order) */
	CFG_INT,      /* int in [(int64_t)min, (int64_t)max] */
	CFG_DOUBLE,   /* double, finite, in [min, max] */
};

struct cfg_key {
	const char *key;
	const char *def; /* default as text; NULL = no default (empty) */
	const char *help;
	enum cfg_type type;
	size_t offset;		    /* of the field in the owner's config struct */
	uint64_t min, max;	    /* CFG_U64, CFG_DURATION (ms), CFG_SIZE, CFG_INT
				     * (as int64_t), CFG_DOUBLE */
	const char *const *choices; /* CFG_CHOICE, NULL-terminated */
	/* CFG_CHOICE: other spellings still accepted, as pairs "alias",
	 * "choice", ..., NULL (never shown in errors or --print-config). */
	const char *const *aliases;
};

/* A typed key: CFG_KEY(struct my_cfg, field, CFG_DURATION, "5s", 100, 3600000, "help"). */
/* clang-format 14 breaks the stringified field name in these two macros. */
// clang-format off
#define CFG_KEY(st, f, t, d, lo, hi, h) {#f, (d), (h), (t), offsetof(st, f), (lo), (hi), NULL, NULL}
#define CFG_KEY_CHOICE(st, f, d, ch, h) {#f, (d), (h), CFG_CHOICE, offsetof(st, f), 0, 0, (ch), NULL}
#define CFG_KEY_CHOICE_ALIAS(st, f, d, ch, al, h) {#f, (d), (h), CFG_CHOICE, offsetof(st, f), 0, 0, (ch), (al)}
// clang-format on

struct cfg_value {
	char *key;
	char *value;
	const char *file; /* one of config's files; NULL = command line */
	int line;	  /* 0 = default or command line */
};

struct cfg_section {
	char *name;		    /* "http", "collector.mptcp", ... */
	const struct cfg_key *keys; /* declared keys, {0}-terminated */
	struct cfg_value *values;
	size_t n_values;
	int line;	  /* of its last [header]; 0 = not in a file */
	const char *file; /* the file of that header */
};

struct config {
	char *path; /* main file read, or NULL for embedded defaults */
	struct cfg_section *sections;
	size_t n_sections;
	char err[512]; /* last error, "file:line: message" (after a failed
			* cfg_load(): its first) */
	char **files;  /* every file read: main file, then drop-ins */
	size_t n_files;
	char **errors; /* every error formatted into err, in order */
	size_t n_errors;
	/* Families of sections named "<prefix>.<NAME>" (cfg_declare_family). */
	struct cfg_family {
		const char *prefix, *help;
		const struct cfg_key *keys; /* static */
	} families[4];
	size_t n_families;
};

/* Declares a section and its keys; must be done before cfg_load(). */
int cfg_declare(struct config *cfg, const char *section, const struct cfg_key *keys);
/*
 * Declares a family of sections, [prefix.NAME] for any NAME of 1 to 32
 * [a-z0-9_-] (e.g. [export.clickhouse]), each with keys (static, {0}-ended):
 * a header of that form in a file declares its section. help names what
 * one section is, for --print-config. Before cfg_load(); -ENOSPC, -EEXIST.
 */
int cfg_declare_family(struct config *cfg, const char *prefix, const struct cfg_key *keys,
		       const char *help);
/* The NAME of a section of family prefix, or NULL when sec is not one. */
const char *cfg_family_name(const struct cfg_section *sec, const char *prefix);
/* A config file is read whole, at most CFG_MAX_BYTES, within
 * CFG_READ_DEADLINE_MS (a FIFO, a device: never a hang at start). */
#define CFG_MAX_BYTES	     (1u << 20)
#define CFG_READ_DEADLINE_MS 1000u

/* Reads an INI file, then its drop-in directory (cfg_dropin_dir()), into a
 * config that holds no file yet. Every file is read even after an error.
 * Returns 0, or the first error's -errno / -EINVAL with cfg->err set to its
 * message (-EFBIG: too large, -ETIMEDOUT: not read in time). */
int cfg_load(struct config *cfg, const char *path);
/* Parses len bytes of INI text (need not be NUL-terminated), named name in
 * errors, over what the config holds (a later layer). A NUL byte is an
 * error. What cfg_load() does after reading each file. */
int cfg_load_buffer(struct config *cfg, const char *name, const char *buf, size_t len);
/* The drop-in directory of a config file: "X.d" for "X.ini" (else path +
 * ".d"). 0, or -ENAMETOOLONG. */
int cfg_dropin_dir(const char *path, char *out, size_t len);
/* Formats cfg->err printf-style and records it in cfg->errors. -EINVAL. */
int cfg_fail(struct config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets a value (command-line override). Same validation as the file. */
int cfg_set(struct config *cfg, const char *section, const char *key, const char *value);
void cfg_free(struct config *cfg);

struct cfg_section *cfg_section(const struct config *cfg, const char *section);
/* Value or declared default; NULL if the key is not declared. */
const char *cfg_get(const struct cfg_section *sec, const char *key);
/* Line the value came from (0 if default / flag). */
int cfg_line(const struct cfg_section *sec, const char *key);
/* File the value came from (NULL if default / flag). */
const char *cfg_file(const struct cfg_section *sec, const char *key);

/* Typed getters: parse, range-check, and on error format cfg->err as
 * "file:line: [section] key: reason" and return -EINVAL. */
int cfg_get_bool(struct config *cfg, const char *section, const char *key, bool *out);
int cfg_get_u64(struct config *cfg, const char *section, const char *key, uint64_t min,
		uint64_t max, uint64_t *out);
/* Durations in duration_parse_ns()'s grammar (base/timeutil.h): "250ms",
 * "15s", "5m", "1h30m", "7d", "1y"; a plain number is seconds ("30", "0.5"). */
int cfg_get_duration_ms(struct config *cfg, const char *section, const char *key, uint64_t min_ms,
			uint64_t max_ms, uint64_t *out);
/* Sizes: "512", "64k", "10M", "1G" (powers of 1024). */
int cfg_get_size(struct config *cfg, const char *section, const char *key, uint64_t min,
		 uint64_t max, uint64_t *out);
/* Formats cfg->err for a key with a reason of the caller's; returns -EINVAL. */
int cfg_error(struct config *cfg, const char *section, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Pure parsers used by the getters (unit-tested). 0 or -EINVAL. */
int cfg_parse_bool(const char *s, bool *out);
int cfg_parse_u64(const char *s, uint64_t *out);
/* duration_parse_ns() in whole ms: -EINVAL too when below 1 ms precision. */
int cfg_parse_duration_ms(const char *s, uint64_t *out);
int cfg_parse_size(const char *s, uint64_t *out);

/* For list values ("a=1, b=2", "x, y") split by the caller with strtok_r():
 * cfg_trim() cuts blanks from both ends in place and returns the start;
 * cfg_kv_split() cuts "key = value" at its first '=' into two trimmed
 * strings (0), or -EINVAL without '='. */
char *cfg_trim(char *s);
int cfg_kv_split(char *tok, char **key, char **value);

/*
 * Parses every typed key of a declared section into out (the owner's config
 * struct, laid out as the keys' offsets say). Every bad value is recorded as
 * "file:line: [section] key: reason" (cfg->err: the last) and the return is
 * -EINVAL; the other keys are still parsed.
 */
int cfg_section_parse(struct config *cfg, const char *section, void *out);

/* Writes every declared section and key with default and help, INI-formatted. */
void cfg_print_defaults(const struct config *cfg, FILE *out);
/* Writes the values in effect, each after a comment naming where it came
 * from ("from FILE:LINE", "default", "command line"): an INI file that
 * loads to the same values. */
void cfg_print_effective(const struct config *cfg, FILE *out);

#endif
