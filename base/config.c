/* SPDX-License-Identifier: MIT */
/*
 * INI configuration over declared keys, read line by line here (inih's
 * syntax, whole lines of any length: parse_line()) so every value remembers
 * the file and line it came from, for errors that point at file:line, and so
 * a key or a section given twice in one file is refused naming both lines.
 * Drop-in files are later layers over the main file (cfg_load()).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "base/timeutil.h"

struct parse_ctx {
	struct config *cfg;
	const char *file; /* interned name of the file parsed */
	int line;
	int failed;
	char *section;	   /* of the last header; NULL before the first */
	char *key;	   /* of the last key line since that header */
	bool key_seen;	   /* a key line since the last header */
	bool skip_section; /* keys under a refused header: not reported again */
	bool unknown_said; /* this header's unknown section already reported */
};

int cfg_fail(struct config *cfg, const char *fmt, ...)
{
	char **errs;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cfg->err, sizeof(cfg->err), fmt, ap);
	va_end(ap);
	errs = realloc(cfg->errors, (cfg->n_errors + 1) * sizeof(*errs));
	if (errs) {
		cfg->errors = errs;
		errs[cfg->n_errors] = strdup(cfg->err);
		if (errs[cfg->n_errors])
			cfg->n_errors++;
	}
	return -EINVAL;
}

/* The config's own copy of a file name, for values to point at. */
static const char *file_intern(struct config *cfg, const char *name)
{
	char **files;

	for (size_t i = 0; i < cfg->n_files; i++)
		if (!strcmp(cfg->files[i], name))
			return cfg->files[i];
	files = realloc(cfg->files, (cfg->n_files + 1) * sizeof(*files));
	if (!files)
		return NULL;
	cfg->files = files;
	files[cfg->n_files] = strdup(name);
	return files[cfg->n_files] ? files[cfg->n_files++] : NULL;
}

static size_t keys_count(const struct cfg_key *keys)
{
	size_t n = 0;

	while (keys && keys[n].key)
		n++;
	return n;
}

int cfg_declare(struct config *cfg, const char *section, const struct cfg_key *keys)
{
	struct cfg_section *secs, *sec;
	struct cfg_key *copy;
	size_t n = keys_count(keys);

	if (cfg_section(cfg, section))
		return -EEXIST;
	secs = realloc(cfg->sections, (cfg->n_sections + 1) * sizeof(*secs));
	if (!secs)
		return -ENOMEM;
	cfg->sections = secs;
	copy = calloc(n + 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, keys, n * sizeof(*copy));
	sec = &secs[cfg->n_sections];
	memset(sec, 0, sizeof(*sec));
	sec->name = strdup(section);
	sec->keys = copy;
	if (!sec->name) {
		free(copy);
		return -ENOMEM;
	}
	cfg->n_sections++;
	return 0;
}

struct cfg_section *cfg_section(const struct config *cfg, const char *section)
{
	if (!section) /* a key before any [section] */
		return NULL;
	for (size_t i = 0; i < cfg->n_sections; i++)
		if (!strcmp(cfg->sections[i].name, section))
			return &cfg->sections[i];
	return NULL;
}

static const struct cfg_key *section_key(const struct cfg_section *sec, const char *key)
{
	for (const struct cfg_key *k = sec->keys; k && k->key; k++)
		if (!strcmp(k->key, key))
			return k;
	return NULL;
}

static struct cfg_value *section_value(const struct cfg_section *sec, const char *key)
{
	for (size_t i = 0; i < sec->n_values; i++)
		if (!strcmp(sec->values[i].key, key))
			return &sec->values[i];
	return NULL;
}

const char *cfg_get(const struct cfg_section *sec, const char *key)
{
	const struct cfg_value *v;
	const struct cfg_key *k;

	if (!sec)
		return NULL;
	v = section_value(sec, key);
	if (v)
		return v->value;
	k = section_key(sec, key);
	if (!k)
		return NULL;
	return k->def ? k->def : "";
}

int cfg_line(const struct cfg_section *sec, const char *key)
{
	const struct cfg_value *v = sec ? section_value(sec, key) : NULL;

	return v ? v->line : 0;
}

const char *cfg_file(const struct cfg_section *sec, const char *key)
{
	const struct cfg_value *v = sec ? section_value(sec, key) : NULL;

	return v && v->line > 0 ? v->file : NULL;
}

static int section_store(struct cfg_section *sec, const char *key, const char *value,
			 const char *file, int line)
{
	struct cfg_value *v = section_value(sec, key), *vals;
	char *nv = strdup(value);

	if (!nv)
		return -ENOMEM;
	if (v) {
		/* A later layer's value over an earlier one's: a drop-in
		 * over the main file, a flag over both (set_at() refuses a
		 * file's second line for a key). */
		free(v->value);
		v->value = nv;
		v->file = file;
		v->line = line;
		return 0;
	}
	vals = realloc(sec->values, (sec->n_values + 1) * sizeof(*vals));
	if (!vals) {
		free(nv);
		return -ENOMEM;
	}
	sec->values = vals;
	v = &vals[sec->n_values];
	v->key = strdup(key);
	v->value = nv;
	v->file = file;
	v->line = line;
	if (!v->key) {
		free(nv);
		return -ENOMEM;
	}
	sec->n_values++;
	return 0;
}

int cfg_declare_family(struct config *cfg, const char *prefix, const struct cfg_key *keys,
		       const char *help)
{
	if (cfg->n_families == sizeof(cfg->families) / sizeof(cfg->families[0]))
		return -ENOSPC;
	for (size_t i = 0; i < cfg->n_families; i++)
		if (!strcmp(cfg->families[i].prefix, prefix))
			return -EEXIST;
	cfg->families[cfg->n_families++] =
	    (struct cfg_family){.prefix = prefix, .help = help, .keys = keys};
	return 0;
}

const char *cfg_family_name(const struct cfg_section *sec, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(sec->name, prefix, n) || sec->name[n] != '.')
		return NULL;
	return sec->name + n + 1;
}

/* A section of a declared family, declared on its first header. */
static struct cfg_section *family_section(struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_families; i++) {
		const struct cfg_family *f = &cfg->families[i];
		size_t n = strlen(f->prefix);
		const char *rest = name + n + 1;
		size_t len = strlen(rest);

		if (strncmp(name, f->prefix, n) || name[n] != '.')
			continue;
		if (!len || len > 32 ||
		    strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789_-") != len)
			return NULL;
		if (cfg_declare(cfg, name, f->keys))
			return NULL;
		return cfg_section(cfg, name);
	}
	return NULL;
}

static void where(const char *file, int line, char *buf, size_t len)
{
	if (line > 0)
		snprintf(buf, len, "%s:%d", file ? file : "config", line);
	else
		snprintf(buf, len, "%s", line == 0 ? "command line" : "config");
}

static void known_sections(const struct config *cfg, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < cfg->n_sections && off < len; i++)
		off +=
		    snprintf(buf + off, len - off, "%s[%s]", i ? ", " : "", cfg->sections[i].name);
}

static int set_at(struct config *cfg, const char *section, const char *key, const char *value,
		  const char *file, int line)
{
	struct cfg_section *sec = cfg_section(cfg, section);
	char at[300], first[300], list[400];
	const struct cfg_value *v;

	where(file, line, at, sizeof(at));
	if (!sec) {
		known_sections(cfg, list, sizeof(list));
		cfg_fail(cfg, "%s: unknown section [%s] (known: %s)", at, section, list);
		return -EINVAL;
	}
	if (!section_key(sec, key)) {
		size_t off = 0;

		list[0] = '\0';
		for (const struct cfg_key *k = sec->keys; k && k->key && off < sizeof(list); k++)
			off += snprintf(list + off, sizeof(list) - off, "%s%s",
					k == sec->keys ? "" : ", ", k->key);
		cfg_fail(cfg, "%s: unknown key '%s' in [%s] (known: %s)", at, key, section, list);
		return -EINVAL;
	}
	v = section_value(sec, key);
	if (line > 0 && v && v->line > 0 && v->file == file) {
		/* Which one was meant is a guess either way: refuse both. */
		where(v->file, v->line, first, sizeof(first));
		cfg_fail(cfg, "%s: [%s] %s given twice (first at %s)", at, section, key, first);
		return -EINVAL;
	}
	if (section_store(sec, key, value, file, line)) {
		cfg_fail(cfg, "%s: out of memory", at);
		return -ENOMEM;
	}
	return 0;
}

int cfg_set(struct config *cfg, const char *section, const char *key, const char *value)
{
	return set_at(cfg, section, key, value, NULL, 0);
}

/* A key line's name and value, where the line is in ctx. An error is
 * recorded and parsing goes on, for a check that reports every error of a
 * file at once. */
static void key_line(struct parse_ctx *ctx, const char *name, const char *value)
{
	struct config *cfg = ctx->cfg;
	const char *section = ctx->section ? ctx->section : "";

	ctx->key_seen = true;
	if (ctx->skip_section)
		return;
	if (!section[0]) {
		cfg_fail(cfg, "%s:%d: key '%s' outside a section", ctx->file, ctx->line, name);
		ctx->failed = 1;
		return;
	}
	if (!cfg_section(cfg, section)) {
		/* named once, at its first key */
		if (ctx->unknown_said)
			return;
		ctx->unknown_said = true;
	}
	if (set_at(cfg, section, name, value, ctx->file, ctx->line))
		ctx->failed = 1;
}

/* A [section] header at this line: a declared section's second header in
 * one file is an error naming both lines (in a later file, a new layer of
 * it). An undeclared one is left to key_line(), which names it at its
 * first key. */
static int section_header(struct parse_ctx *ctx, const char *name)
{
	struct config *cfg = ctx->cfg;
	struct cfg_section *sec;
	char first[300];

	ctx->skip_section = false;
	ctx->unknown_said = false;
	ctx->key_seen = false;
	free(ctx->section);
	ctx->section = strdup(name);
	if (!ctx->section)
		return cfg_fail(cfg, "%s:%d: out of memory", ctx->file, ctx->line), -ENOMEM;
	free(ctx->key);
	ctx->key = NULL;
	sec = cfg_section(cfg, name);
	if (!sec && strlen(name) < 64) /* longer than any declared section */
		sec = family_section(cfg, name);
	if (!sec)
		return 0;
	if (sec->line > 0 && sec->file == ctx->file) {
		where(sec->file, sec->line, first, sizeof(first));
		cfg_fail(cfg, "%s:%d: [%s] given twice (first at %s)", ctx->file, ctx->line, name,
			 first);
		/* its keys would each be "given twice" too: one error is enough */
		ctx->skip_section = true;
		return -EINVAL;
	}
	sec->line = ctx->line;
	sec->file = ctx->file;
	return 0;
}

static char *lskip(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

static char *rstrip(char *s)
{
	char *p = s + strlen(s);

	while (p > s && isspace((unsigned char)p[-1]))
		*--p = '\0';
	return s;
}

/* The first of chars in s (any char: NULL), or an inline comment's ';'
 * (one after a blank), or the end. */
static char *find_chars_or_comment(char *s, const char *chars)
{
	bool space = false;

	while (*s && (!chars || !strchr(chars, *s)) && !(space && *s == ';')) {
		space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

/*
 * One whole line, of any length (the file's limit is CFG_MAX_BYTES): the
 * rules of inih (version 55 as Debian builds it), which this reader
 * replaces: Debian's libinih is built with a 200-byte line buffer on the
 * stack (INI_MAX_LINE, fixed at its build), reads a longer line in pieces
 * and takes each further piece for a line of its own (issue 30: a long
 * comment hid "admin = true", a 2 KB token was a syntax error). Blank lines and
 * lines starting with ';' or '#' are comments; "[name]" starts a section;
 * "key = value" (or "key: value") sets a key, a ';' after a blank starting
 * an inline comment; an indented line after a key is an error (inih would
 * take it as continuing the key's value). 0, or -EINVAL with the error
 * recorded.
 */
static int parse_line(struct parse_ctx *ctx, char *line)
{
	char *s = line, *start, *end, *value;

	if (ctx->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))
		s += 3; /* a UTF-8 byte order mark */
	rstrip(s);
	start = lskip(s);
	if (!*start || *start == ';' || *start == '#')
		return 0; /* blank, or a comment */
	if (start > line && ctx->key_seen) {
		/* a multi-line value would lose its first line's value */
		const struct cfg_section *sec = cfg_section(ctx->cfg, ctx->section);
		const char *key = ctx->key ? ctx->key : "";
		char first[300];

		where(cfg_file(sec, key) ? cfg_file(sec, key) : ctx->file, cfg_line(sec, key),
		      first, sizeof(first));
		return cfg_fail(ctx->cfg,
				"%s:%d: indented line taken as continuing [%s] %s (%s): a value is "
				"one line, and keys start at the beginning of the line",
				ctx->file, ctx->line, ctx->section, key, first);
	}
	if (*start == '[') {
		end = find_chars_or_comment(start + 1, "]");
		if (*end != ']')
			return cfg_fail(ctx->cfg,
					"%s:%d: syntax error (a [section] header without ']')",
					ctx->file, ctx->line);
		*end = '\0';
		return section_header(ctx, start + 1);
	}
	end = find_chars_or_comment(start, "=:");
	if (*end != '=' && *end != ':')
		return cfg_fail(ctx->cfg, "%s:%d: syntax error (expected [section] or key = value)",
				ctx->file, ctx->line);
	*end = '\0';
	rstrip(start);
	value = end + 1;
	*find_chars_or_comment(value, NULL) = '\0';
	value = rstrip(lskip(value));
	free(ctx->key);
	ctx->key = strdup(start);
	if (!ctx->key)
		return cfg_fail(ctx->cfg, "%s:%d: out of memory", ctx->file, ctx->line), -ENOMEM;
	key_line(ctx, start, value);
	return 0;
}

/* Parses one file's text as a layer over what the config holds: line by
 * line, every line whole, going on past an error. */
static int load_layer(struct config *cfg, const char *name, const char *buf, size_t len)
{
	struct parse_ctx ctx = {.cfg = cfg};
	const char *nul = memchr(buf, '\0', len);
	char *text, *p, *eol;

	ctx.file = file_intern(cfg, name);
	if (!ctx.file)
		return cfg_fail(cfg, "%s: out of memory", name), -ENOMEM;
	if (len > CFG_MAX_BYTES)
		return cfg_fail(cfg, "%s: config larger than %u bytes", name, CFG_MAX_BYTES),
		       -EFBIG;
	if (nul) {
		/* a line would end at it, the rest taken for gone */
		size_t line = 1;

		for (const char *q = buf; q < nul; q++)
			line += *q == '\n';
		return cfg_fail(cfg, "%s:%zu: NUL byte in the config (binary file?)", name, line);
	}
	text = malloc(len + 1);
	if (!text)
		return cfg_fail(cfg, "%s: out of memory", name), -ENOMEM;
	memcpy(text, buf, len);
	text[len] = '\0';
	for (p = text; *p; p = eol ? eol + 1 : p + strlen(p)) {
		eol = strchr(p, '\n');
		if (eol)
			*eol = '\0';
		ctx.line++;
		if (parse_line(&ctx, p))
			ctx.failed = 1;
	}
	free(text);
	free(ctx.section);
	free(ctx.key);
	return ctx.failed ? -EINVAL : 0;
}

int cfg_load_buffer(struct config *cfg, const char *name, const char *buf, size_t len)
{
	size_t first = cfg->n_errors;
	int rc;

	if (!cfg->path && !(cfg->path = strdup(name)))
		return cfg_fail(cfg, "%s: out of memory", name), -ENOMEM;
	rc = load_layer(cfg, name, buf, len);
	/* the first of this file's errors, as one read would have said */
	if (rc && cfg->n_errors > first)
		snprintf(cfg->err, sizeof(cfg->err), "%s", cfg->errors[first]);
	return rc;
}

/*
 * Reads path into a new buffer (*out, *len): at most CFG_MAX_BYTES, within
 * CFG_READ_DEADLINE_MS. Non-blocking and polled, so a FIFO without a writer
 * or a slow writer, or an endless device (/dev/zero), fails in bounded time
 * instead of hanging the start (with SIGTERM still blocked). A regular file
 * on a hung network file system can still block in read(): no poll() helps
 * there. Returns 0 or -errno with cfg->err set.
 */
static int cfg_read_file(struct config *cfg, const char *path, char **out, size_t *len)
{
	int64_t deadline = clock_mono_ns() / 1000000 + CFG_READ_DEADLINE_MS;
	size_t cap = 4096, n = 0;
	char *buf = NULL, *nb;
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		cfg_fail(cfg, "%s: cannot read config: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		cfg_fail(cfg, "%s: cannot read config: %s", path, strerror(EISDIR));
		err = -EISDIR;
		goto out_close;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - clock_mono_ns() / 1000000;
		ssize_t r;

		if (n == cap || !buf) {
			cap = buf ? cap * 2 : cap;
			nb = realloc(buf, cap);
			if (!nb) {
				cfg_fail(cfg, "%s: out of memory", path);
				err = -ENOMEM;
				goto out_close;
			}
			buf = nb;
		}
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			cfg_fail(cfg, "%s: config not read within %u ms (a FIFO without a writer?)",
				 path, CFG_READ_DEADLINE_MS);
			err = -ETIMEDOUT;
			goto out_close;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			err = -errno;
			cfg_fail(cfg, "%s: cannot read config: %s", path, strerror(errno));
			goto out_close;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > CFG_MAX_BYTES) {
			cfg_fail(cfg, "%s: config larger than %u bytes", path, CFG_MAX_BYTES);
			err = -EFBIG;
			goto out_close;
		}
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;

out_close:
	close(fd);
	free(buf);
	return err;
}

/* One file read and parsed as a layer. */
static int load_file(struct config *cfg, const char *path)
{
	size_t len = 0;
	char *buf = NULL;
	int rc;

	rc = cfg_read_file(cfg, path, &buf, &len);
	if (rc)
		return rc;
	rc = load_layer(cfg, path, buf, len);
	free(buf);
	return rc;
}

int cfg_dropin_dir(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);
	int w;

	if (n > 4 && !strcmp(path + n - 4, ".ini"))
		n -= 4;
	w = snprintf(out, len, "%.*s.d", (int)n, path);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* Drop-ins are *.ini files; anything else there (foo.ini.dpkg-old, an
 * editor's backup foo.ini~, .foo.ini.swp) is not a layer. Hidden files are
 * skipped as editors' temporaries. */
static int dropin_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 4 && !strcmp(d->d_name + n - 4, ".ini");
}

/* C-locale order, whatever LC_COLLATE says (alphasort() uses strcoll()). */
static int dropin_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The drop-in files of path, in order, each a layer: 0, or the first error
 * (every file is still read). A missing directory is no error. */
static int load_dropins(struct config *cfg, const char *path)
{
	char dir[PATH_MAX], file[PATH_MAX + 256];
	struct dirent **names = NULL;
	int n, rc = 0;

	if (cfg_dropin_dir(path, dir, sizeof(dir)))
		return cfg_fail(cfg, "%s: drop-in directory name too long", path);
	n = scandir(dir, &names, dropin_filter, dropin_cmp);
	if (n < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		rc = -errno;
		cfg_fail(cfg, "%s: cannot read drop-in directory: %s", dir, strerror(errno));
		return rc;
	}
	for (int i = 0; i < n; i++) {
		int err;

		snprintf(file, sizeof(file), "%s/%s", dir, names[i]->d_name);
		err = load_file(cfg, file);
		if (err && !rc)
			rc = err;
		free(names[i]);
	}
	free(names);
	return rc;
}

int cfg_load(struct config *cfg, const char *path)
{
	size_t first = cfg->n_errors;
	int rc, err;

	free(cfg->path);
	cfg->path = strdup(path);
	if (!cfg->path)
		return cfg_fail(cfg, "%s: out of memory", path), -ENOMEM;
	rc = load_file(cfg, path);
	err = load_dropins(cfg, path);
	if (!rc)
		rc = err;
	if (rc && cfg->n_errors > first)
		snprintf(cfg->err, sizeof(cfg->err), "%s", cfg->errors[first]);
	return rc;
}

void cfg_free(struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_sections; i++) {
		struct cfg_section *sec = &cfg->sections[i];

		for (size_t j = 0; j < sec->n_values; j++) {
			free(sec->values[j].key);
			free(sec->values[j].value);
		}
		free(sec->values);
		free((void *)sec->keys);
		free(sec->name);
	}
	free(cfg->sections);
	free(cfg->path);
	for (size_t i = 0; i < cfg->n_files; i++)
		free(cfg->files[i]);
	free(cfg->files);
	for (size_t i = 0; i < cfg->n_errors; i++)
		free(cfg->errors[i]);
	free(cfg->errors);
	cfg->sections = NULL;
	cfg->n_sections = 0;
	cfg->path = NULL;
	cfg->files = NULL;
	cfg->n_files = 0;
	cfg->errors = NULL;
	cfg->n_errors = 0;
}

int cfg_error(struct config *cfg, const char *section, const char *key, const char *fmt, ...)
{
	const struct cfg_section *sec = cfg_section(cfg, section);
	char at[300], msg[256];
	va_list ap;

	where(cfg_file(sec, key), cfg_line(sec, key), at, sizeof(at));
	if (sec && !section_value(sec, key))
		snprintf(at, sizeof(at), "default");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cfg_fail(cfg, "%s: [%s] %s = '%s': %s", at, section, key,
		 sec ? cfg_get(sec, key) ? cfg_get(sec, key) : "" : "", msg);
	return -EINVAL;
}

void cfg_print_defaults(const struct config *cfg, FILE *out)
{
	for (size_t i = 0; i < cfg->n_sections; i++) {
		const struct cfg_section *sec = &cfg->sections[i];

		fprintf(out, "%s[%s]\n", i ? "\n" : "", sec->name);
		for (const struct cfg_key *k = sec->keys; k && k->key; k++)
			fprintf(out, "# %s\n%s = %s\n", k->help ? k->help : "", k->key,
				k->def ? k->def : "");
	}
	/* A family has no section until a file names one: its keys as a
	 * commented-out template. */
	for (size_t i = 0; i < cfg->n_families; i++) {
		const struct cfg_family *f = &cfg->families[i];

		fprintf(out, "\n# [%s.NAME]: %s\n", f->prefix, f->help);
		for (const struct cfg_key *k = f->keys; k->key; k++)
			fprintf(out, "## %s\n#%s = %s\n", k->help ? k->help : "", k->key,
				k->def ? k->def : "");
	}
}

void cfg_print_effective(const struct config *cfg, FILE *out)
{
	for (size_t i = 0; i < cfg->n_sections; i++) {
		const struct cfg_section *sec = &cfg->sections[i];

		fprintf(out, "%s[%s]\n", i ? "\n" : "", sec->name);
		for (const struct cfg_key *k = sec->keys; k && k->key; k++) {
			const struct cfg_value *v = section_value(sec, k->key);

			fprintf(out, "# %s\n", k->help ? k->help : "");
			if (!v)
				fprintf(out, "# default\n");
			else if (v->line > 0)
				fprintf(out, "# from %s:%d\n", v->file ? v->file : "config",
					v->line);
			else
				fprintf(out, "# command line\n");
			fprintf(out, "%s = %s\n", k->key, cfg_get(sec, k->key));
		}
	}
}
