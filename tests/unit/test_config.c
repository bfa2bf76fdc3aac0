/* SPDX-License-Identifier: MIT */
/* Config: parsers, declared keys, file:line errors, overrides. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/config.h"
#include "base/log.h"

static const struct cfg_key http_keys[] = {
    {"listen", "127.0.0.1:9559", "address"},
    {"threads", "2", "workers"},
    {"admin", "false", "admin"},
    {"timeout", "10s", "timeout"},
    {0},
};

static const struct cfg_key storage_keys[] = {
    {"max_size", "1G", "cap"},
    {0},
};

struct tk {
	uint64_t a;
	bool b;
	uint64_t c;
};

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/sysobs-test-config.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void declare(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	assert_int_equal(cfg_declare(cfg, "http", http_keys), 0);
	assert_int_equal(cfg_declare(cfg, "storage", storage_keys), 0);
}

static void test_bool_parser_accepts_the_usual_spellings(void **state)
{
	bool b;

	assert_int_equal(cfg_parse_bool("true", &b), 0);
	assert_true(b);
	assert_int_equal(cfg_parse_bool("Off", &b), 0);
	assert_false(b);
	assert_int_equal(cfg_parse_bool("1", &b), 0);
	assert_true(b);
	assert_int_equal(cfg_parse_bool("maybe", &b), -EINVAL);
	assert_int_equal(cfg_parse_bool("", &b), -EINVAL);
}

static void test_u64_parser_rejects_junk_and_overflow(void **state)
{
	uint64_t v;

	assert_int_equal(cfg_parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cfg_parse_u64("18446744073709551616", &v), -EINVAL);
	assert_int_equal(cfg_parse_u64("-1", &v), -EINVAL);
	assert_int_equal(cfg_parse_u64("12abc", &v), -EINVAL);
	assert_int_equal(cfg_parse_u64("", &v), -EINVAL);
}

static void test_durations_have_units(void **state)
{
	uint64_t ms;

	assert_int_equal(cfg_parse_duration_ms("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(cfg_parse_duration_ms("15s", &ms), 0);
	assert_int_equal(ms, 15000);
	assert_int_equal(cfg_parse_duration_ms("15", &ms), 0);
	assert_int_equal(ms, 15000);
	assert_int_equal(cfg_parse_duration_ms("5m", &ms), 0);
	assert_int_equal(ms, 300000);
	assert_int_equal(cfg_parse_duration_ms("24h", &ms), 0);
	assert_int_equal(ms, 86400000);
	assert_int_equal(cfg_parse_duration_ms("7d", &ms), 0);
	assert_int_equal(ms, 7 * 86400000ull);
	assert_int_equal(cfg_parse_duration_ms("30", &ms), 0);
	assert_int_equal(ms, 30000);
	assert_int_equal(cfg_parse_duration_ms("0", &ms), 0); /* "0 = off" keys */
	assert_int_equal(ms, 0);
	assert_int_equal(cfg_parse_duration_ms("2w", &ms), 0);
	assert_int_equal(ms, 14 * 86400000ull);
	ms = 77;
	assert_int_equal(cfg_parse_duration_ms("1.5s", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("10 s", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("99999999999999999999d", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("-1s", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("15S", &ms), -EINVAL);
	assert_int_equal(ms, 77);
}

/* The config takes timeutil's grammar: composites, years, fractions of plain
 * seconds; but only whole milliseconds. */
static void test_durations_share_the_api_grammar(void **state)
{
	uint64_t ms = 77;

	assert_int_equal(cfg_parse_duration_ms("1h30m", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(cfg_parse_duration_ms("1d12h", &ms), 0);
	assert_int_equal(ms, 36 * 3600000ull);
	assert_int_equal(cfg_parse_duration_ms("1y", &ms), 0);
	assert_int_equal(ms, 365 * 86400000ull);
	assert_int_equal(cfg_parse_duration_ms("0.5", &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(cfg_parse_duration_ms("1s250ms", &ms), 0);
	assert_int_equal(ms, 1250);
	ms = 77;
	assert_int_equal(cfg_parse_duration_ms("0.0005", &ms), -EINVAL); /* below 1 ms */
	assert_int_equal(cfg_parse_duration_ms("1h1h", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("30m1h", &ms), -EINVAL);
	assert_int_equal(cfg_parse_duration_ms("293y", &ms), -EINVAL); /* past int64 ns */
	assert_int_equal(ms, 77);
}

static void test_duration_getter_explains_the_grammar(void **state)
{
	char *path = write_tmp("[http]\ntimeout = 10 seconds\n");
	struct config cfg;
	uint64_t ms;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_get_duration_ms(&cfg, "http", "timeout", 1000, 60000, &ms), 0);
	assert_int_equal(ms, 10000); /* the default, "10s" */
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg_get_duration_ms(&cfg, "http", "timeout", 1000, 60000, &ms), -EINVAL);
	snprintf(want, sizeof(want),
		 "%s:2: [http] timeout = '10 seconds': expected a duration such as 250ms, 15s, "
		 "5m, 1h30m or 7d",
		 path);
	assert_non_null(strstr(cfg.err, want));
	assert_int_equal(cfg_set(&cfg, "http", "timeout", "1m30s"), 0);
	assert_int_equal(cfg_get_duration_ms(&cfg, "http", "timeout", 1000, 60000, &ms), -EINVAL);
	assert_non_null(strstr(cfg.err, "out of range [1000, 60000] ms"));
	assert_int_equal(cfg_set(&cfg, "http", "timeout", "0.5"), 0);
	assert_int_equal(cfg_get_duration_ms(&cfg, "http", "timeout", 100, 60000, &ms), 0);
	assert_int_equal(ms, 500);
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_sizes_are_powers_of_1024(void **state)
{
	uint64_t b;

	assert_int_equal(cfg_parse_size("512", &b), 0);
	assert_int_equal(b, 512);
	assert_int_equal(cfg_parse_size("64k", &b), 0);
	assert_int_equal(b, 65536);
	assert_int_equal(cfg_parse_size("10M", &b), 0);
	assert_int_equal(b, 10 << 20);
	assert_int_equal(cfg_parse_size("1GiB", &b), 0);
	assert_int_equal(b, 1 << 30);
	assert_int_equal(cfg_parse_size("1X", &b), -EINVAL);
}

static void test_defaults_apply_without_a_file(void **state)
{
	struct config cfg;
	uint64_t threads;

	declare(&cfg);
	assert_string_equal(cfg_get(cfg_section(&cfg, "http"), "listen"), "127.0.0.1:9559");
	assert_int_equal(cfg_get_u64(&cfg, "http", "threads", 1, 64, &threads), 0);
	assert_int_equal(threads, 2);
	assert_null(cfg_get(cfg_section(&cfg, "http"), "nope"));
	cfg_free(&cfg);
}

static void test_file_values_override_defaults_and_keep_lines(void **state)
{
	char *path = write_tmp("; comment\n[http]\nlisten = 0.0.0.0:1\n\nthreads = 8\n");
	struct config cfg;
	uint64_t threads;

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_string_equal(cfg_get(cfg_section(&cfg, "http"), "listen"), "0.0.0.0:1");
	assert_int_equal(cfg_line(cfg_section(&cfg, "http"), "listen"), 3);
	assert_int_equal(cfg_line(cfg_section(&cfg, "http"), "threads"), 5);
	assert_int_equal(cfg_get_u64(&cfg, "http", "threads", 1, 64, &threads), 0);
	assert_int_equal(threads, 8);
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

/* A line is read whole, whatever its length (issue 30: inih split lines
 * longer than 199 bytes, and each piece was parsed as a line). */
static void test_long_lines_are_read_whole(void **state)
{
	size_t n = 100000, off = 0;
	char *text = malloc(n + 4096), *path;
	const struct cfg_section *http;
	struct config cfg;

	assert_non_null(text);
	/* a comment that inih cut after 199 bytes, its tail a key line */
	off += (size_t)sprintf(text + off, "[http]\n#");
	memset(text + off, 'a', 198);
	off += 198;
	off += (size_t)sprintf(text + off, "admin = true\n");
	/* a 100,000-byte comment */
	text[off++] = ';';
	memset(text + off, 'b', n);
	off += n;
	/* a 2 KB value, then a value after a long one with an inline comment */
	off += (size_t)sprintf(text + off, "\nlisten = ");
	memset(text + off, 'c', 2048);
	off += 2048;
	off += (size_t)sprintf(text + off, "\ntimeout = ");
	memset(text + off, 'd', 300);
	off += 300;
	off += (size_t)sprintf(text + off, " ; threads = 9\n");
	text[off] = '\0';
	path = write_tmp(text);
	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), 0);
	http = cfg_section(&cfg, "http");
	assert_string_equal(cfg_get(http, "admin"), "false");
	assert_int_equal(cfg_line(http, "admin"), 0);
	assert_int_equal(strlen(cfg_get(http, "listen")), 2048);
	assert_int_equal(cfg_line(http, "listen"), 4);
	assert_int_equal(strlen(cfg_get(http, "timeout")), 300);
	assert_int_equal(cfg_line(http, "timeout"), 5);
	assert_int_equal(cfg_line(http, "threads"), 0);
	assert_int_equal(cfg.n_errors, 0);
	cfg_free(&cfg);
	unlink(path);
	free(path);
	free(text);
}

/* A long line that is not valid is one error at its own line. */
static void test_long_bad_line_is_one_error(void **state)
{
	char *text = malloc(1000), *path;
	struct config cfg;
	char want[512];

	assert_non_null(text);
	sprintf(text, "[http]\n");
	memset(text + 7, 'x', 500);
	strcpy(text + 507, "\nthreads = 2\n");
	path = write_tmp(text);
	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	assert_int_equal(cfg.n_errors, 1);
	snprintf(want, sizeof(want), "%s:2: syntax error", path);
	assert_non_null(strstr(cfg.err, want));
	cfg_free(&cfg);
	unlink(path);
	free(path);
	free(text);
}

static void test_unknown_key_names_file_line_and_known_keys(void **state)
{
	char *path = write_tmp("[http]\nlisten = x\nthreds = 3\n");
	struct config cfg;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: unknown key 'threds' in [http]", path);
	assert_non_null(strstr(cfg.err, want));
	assert_non_null(strstr(cfg.err, "threads"));
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_unknown_section_is_an_error(void **state)
{
	char *path = write_tmp("[http]\nlisten = x\n[colector.ifs]\nenabled = 1\n");
	struct config cfg;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	snprintf(want, sizeof(want), "%s:4: unknown section [colector.ifs]", path);
	assert_non_null(strstr(cfg.err, want));
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_syntax_error_names_the_line(void **state)
{
	char *path = write_tmp("[http]\nlisten = x\nthis line has no equals sign\n");
	struct config cfg;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: syntax error", path);
	assert_non_null(strstr(cfg.err, want));
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_bad_value_names_file_line_section_and_range(void **state)
{
	char *path = write_tmp("[http]\nthreads = 900\nadmin = perhaps\n");
	struct config cfg;
	uint64_t threads;
	bool admin;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg_get_u64(&cfg, "http", "threads", 1, 64, &threads), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: [http] threads = '900': out of range [1, 64]", path);
	assert_non_null(strstr(cfg.err, want));
	assert_int_equal(cfg_get_bool(&cfg, "http", "admin", &admin), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: [http] admin = 'perhaps': expected true or false",
		 path);
	assert_non_null(strstr(cfg.err, want));
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_missing_file_is_an_error_with_reason(void **state)
{
	struct config cfg;

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, "/nonexistent/sysobs.ini"), -ENOENT);
	assert_non_null(strstr(cfg.err, "/nonexistent/sysobs.ini: cannot read config"));
	cfg_free(&cfg);
}

static void test_command_line_overrides_file(void **state)
{
	char *path = write_tmp("[http]\nlisten = 10.0.0.1:1\n");
	struct config cfg;

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg_set(&cfg, "http", "listen", "127.0.0.1:0"), 0);
	assert_string_equal(cfg_get(cfg_section(&cfg, "http"), "listen"), "127.0.0.1:0");
	assert_int_equal(cfg_line(cfg_section(&cfg, "http"), "listen"), 0);
	assert_int_equal(cfg_set(&cfg, "http", "bogus", "1"), -EINVAL);
	assert_non_null(strstr(cfg.err, "command line: unknown key 'bogus'"));
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

/* load_expect(TEXT, ERR): TEXT is refused with an error containing ERR, in
 * which "@" stands for the file's name. */
static void load_expect(const char *text, const char *err)
{
	char *path = write_tmp(text);
	struct config cfg;
	char want[512];
	size_t off = 0;

	for (const char *p = err; *p && off < sizeof(want) - 1; p++) {
		if (*p == '@')
			off += (size_t)snprintf(want + off, sizeof(want) - off, "%s", path);
		else
			want[off++] = *p;
		want[off < sizeof(want) ? off : sizeof(want) - 1] = '\0';
	}
	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	if (!strstr(cfg.err, want))
		fail_msg("error \"%s\" lacks \"%s\"", cfg.err, want);
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

/* A scratch directory with a main file and its drop-ins (NULL-terminated
 * name, text pairs); returns the main file's path. */
static char *layers(const char *main_text, ...)
{
	char *dir = strdup("/tmp/sysobs-test-dropin.XXXXXX"), path[512];
	const char *name, *text;
	va_list ap;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.d", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/s.ini", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(main_text, f);
	fclose(f);
	va_start(ap, main_text);
	while ((name = va_arg(ap, const char *))) {
		text = va_arg(ap, const char *);
		snprintf(path, sizeof(path), "%s/s.d/%s", dir, name);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	}
	va_end(ap);
	snprintf(path, sizeof(path), "%s/s.ini", dir);
	free(dir);
	return strdup(path);
}

static void layers_free(char *main_path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strrchr(main_path, '/') - main_path),
		 main_path);
	assert_int_equal(system(cmd), 0);
	free(main_path);
}

static void test_dropins_override_in_strcmp_order(void **state)
{
	char *path = layers("[http]\nthreads = 1\nlisten = a:1\n", "20-b.ini",
			    "[http]\nthreads = 2\n", "9-c.ini", "[http]\nthreads = 3\n", "10-a.ini",
			    "[http]\nthreads = 9\nlisten = b:2\n", "99.ini.dpkg-old", "junk\n",
			    "99.ini~", "junk\n", ".99.ini", "junk\n", NULL);
	const struct cfg_section *http;
	struct config cfg;
	char want[600];

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), 0);
	http = cfg_section(&cfg, "http");
	/* 10-a < 20-b < 9-c: the last one's 3, with its own file and line */
	assert_string_equal(cfg_get(http, "threads"), "3");
	snprintf(want, sizeof(want), "%.*s/s.d/9-c.ini", (int)(strlen(path) - 6), path);
	assert_string_equal(cfg_file(http, "threads"), want);
	assert_int_equal(cfg_line(http, "threads"), 2);
	assert_string_equal(cfg_get(http, "listen"), "b:2");
	assert_int_equal(cfg_line(http, "listen"), 3);
	assert_string_equal(cfg_get(http, "timeout"), "10s");
	assert_null(cfg_file(http, "timeout"));
	assert_int_equal(cfg.n_errors, 0);
	cfg_free(&cfg);
	layers_free(path);
}

static void test_every_error_of_every_layer_is_recorded(void **state)
{
	char *path = layers("[http]\nbogus = 1\nthreads = 1\nthreads = 2\nnot a line\n", "10-a.ini",
			    "[http]\nthreads = 3\nthreads = 4\n[nope]\nx = 1\ny = 2\n", NULL);
	struct config cfg;

	declare(&cfg);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	assert_int_equal(cfg.n_errors, 5);
	assert_non_null(strstr(cfg.errors[0], "s.ini:2: unknown key 'bogus'"));
	assert_non_null(strstr(cfg.errors[1], "s.ini:4: [http] threads given twice"));
	assert_non_null(strstr(cfg.errors[2], "s.ini:5: syntax error"));
	assert_non_null(strstr(cfg.errors[3], "s.d/10-a.ini:3: [http] threads given twice"));
	assert_non_null(strstr(cfg.errors[4], "s.d/10-a.ini:5: unknown section [nope]"));
	/* cfg.err: the first, as a single error would say */
	assert_string_equal(cfg.err, cfg.errors[0]);
	cfg_free(&cfg);
	layers_free(path);
}

static void test_dropin_dir_name(void **state)
{
	char d[64];

	assert_int_equal(cfg_dropin_dir("/etc/sysobs/sysobsd.ini", d, sizeof(d)), 0);
	assert_string_equal(d, "/etc/sysobs/sysobsd.d");
	assert_int_equal(cfg_dropin_dir("conf", d, sizeof(d)), 0);
	assert_string_equal(d, "conf.d");
	assert_int_equal(cfg_dropin_dir("/a/very/long/path/name/x.ini", d, 8), -ENAMETOOLONG);
}

static void test_typed_section_reports_every_bad_key(void **state)
{
	static const struct cfg_key keys[] = {
	    CFG_KEY(struct tk, a, CFG_U64, "1", 0, 10, "a"),
	    CFG_KEY(struct tk, b, CFG_BOOL, "true", 0, 0, "b"),
	    CFG_KEY(struct tk, c, CFG_DURATION, "1s", 0, 60000, "c"),
	    {0},
	};
	char *path = write_tmp("[t]\na = 11\nb = maybe\nc = 2s\n");
	struct tk out;
	struct config cfg;

	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(cfg_declare(&cfg, "t", keys), 0);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg_section_parse(&cfg, "t", &out), -EINVAL);
	assert_int_equal(cfg.n_errors, 2);
	assert_non_null(strstr(cfg.errors[0], ":2: [t] a = '11': out of range"));
	assert_non_null(strstr(cfg.errors[1], ":3: [t] b = 'maybe'"));
	assert_int_equal(out.c, 2000); /* the good key after them still parsed */
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

struct enum_cfg {
	unsigned log_format; /* enum log_format */
	int schema;
	double zero;
};

/* An enum key takes its names in the enum's order and lists them when a
 * value is none of them; signed integers and numbers have their ranges. */
static void test_enum_int_and_number_keys(void **state)
{
	static const char *const aliases[] = {"structured", "logfmt", NULL};
	static const struct cfg_key keys[] = {
	    CFG_KEY_CHOICE_ALIAS(struct enum_cfg, log_format, "text", log_format_names, aliases,
				 "format"),
	    CFG_KEY(struct enum_cfg, schema, CFG_INT, "3", (uint64_t)-4, 8, "schema"),
	    CFG_KEY(struct enum_cfg, zero, CFG_DOUBLE, "0.5", 0, UINT64_MAX, "threshold"),
	    {0},
	};
	char *good = write_tmp("[t]\nlog_format = json\nschema = -4\nzero = 1e-3\n");
	char *bad = write_tmp("[t]\nlog_format = JSON\nschema = 9\nzero = -1\n");
	struct enum_cfg out = {0};
	struct config cfg;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(cfg_declare(&cfg, "t", keys), 0);
	assert_int_equal(cfg_section_parse(&cfg, "t", &out), 0); /* the defaults */
	assert_int_equal(out.log_format, LOG_FMT_TEXT);
	assert_int_equal(out.schema, 3);
	assert_true(out.zero == 0.5);
	assert_int_equal(cfg_load(&cfg, good), 0);
	assert_int_equal(cfg_section_parse(&cfg, "t", &out), 0);
	assert_int_equal(out.log_format, LOG_FMT_JSON);
	assert_int_equal(out.schema, -4);
	assert_true(out.zero == 1e-3);
	cfg_free(&cfg);

	/* an alias is taken as its choice, and never offered in errors */
	unlink(good);
	free(good);
	good = write_tmp("[t]\nlog_format = structured\n");
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(cfg_declare(&cfg, "t", keys), 0);
	assert_int_equal(cfg_load(&cfg, good), 0);
	assert_int_equal(cfg_section_parse(&cfg, "t", &out), 0);
	assert_int_equal(out.log_format, LOG_FMT_LOGFMT);
	cfg_free(&cfg);

	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(cfg_declare(&cfg, "t", keys), 0);
	assert_int_equal(cfg_load(&cfg, bad), 0);
	assert_int_equal(cfg_section_parse(&cfg, "t", &out), -EINVAL);
	assert_int_equal(cfg.n_errors, 3);
	assert_non_null(strstr(cfg.errors[0], ":2: [t] log_format = 'JSON': must be text, "
					      "logfmt or json"));
	assert_non_null(strstr(cfg.errors[1], ":3: [t] schema = '9': must be an integer from "
					      "-4 to 8"));
	assert_non_null(strstr(cfg.errors[2], ":4: [t] zero = '-1': must be a number of at "
					      "least 0"));
	cfg_free(&cfg);
	unlink(good);
	unlink(bad);
	free(good);
	free(bad);
}

static void test_duplicate_key_names_both_lines(void **state)
{
	load_expect("[http]\nlisten = 10.0.0.1:1\nthreads = 2\nlisten = 10.0.0.2:2\n",
		    "@:4: [http] listen given twice (first at @:2)");
	/* the same, with the section in between given again */
	load_expect("[http]\nlisten = a\n[storage]\nmax_size = 2G\n[http]\nlisten = b\n",
		    "@:5: [http] given twice (first at @:1)");
}

static void test_duplicate_section_names_both_header_lines(void **state)
{
	load_expect(
	    "; x\n[http]\nlisten = a\n[storage]\nmax_size = 2G\n\n[http] ; again\nthreads = 3\n",
	    "@:7: [http] given twice (first at @:2)");
	/* empty ones too: no key needed to notice */
	load_expect("[storage]\n[storage]\n", "@:2: [storage] given twice (first at @:1)");
}

/* inih would hand an indented line to us as the key above again, with that
 * line alone as its value: refused, not a silent replacement. */
static void test_indented_continuation_line_is_refused(void **state)
{
	load_expect("[http]\n  listen = a\n  threads = 2\n",
		    "@:3: indented line taken as continuing [http] listen (@:2)");
}

struct demo_cfg {
	uint64_t interval_ms;
	const char *netns;
	uint64_t threads;
};

static const struct cfg_key demo_keys[] = {
    CFG_KEY(struct demo_cfg, interval_ms, CFG_DURATION, "1s", 100, 60000, "period"),
    CFG_KEY(struct demo_cfg, netns, CFG_STRING, "self", 0, 0, "list"),
    CFG_KEY(struct demo_cfg, threads, CFG_U64, "1", 1, 8, "the name [http] has too"),
    {0},
};

/* A collector's typed section is checked like the agent's; a key name that
 * two sections share is one key in each, and a list is one value. */
static void test_collector_section_duplicates_are_errors(void **state)
{
	char *path = write_tmp("[http]\nthreads = 4\n[collector.demo]\nthreads = 2\n"
			       "netns = self, /run/netns/a\ninterval_ms = 5s\n"
			       "interval_ms = 6s\n");
	struct demo_cfg d = {0};
	struct config cfg;
	char want[512];

	declare(&cfg);
	assert_int_equal(cfg_declare(&cfg, "collector.demo", demo_keys), 0);
	assert_int_equal(cfg_load(&cfg, path), -EINVAL);
	snprintf(want, sizeof(want),
		 "%s:7: [collector.demo] interval_ms given twice (first at %s:6)", path, path);
	if (!strstr(cfg.err, want))
		fail_msg("error \"%s\" lacks \"%s\"", cfg.err, want);
	cfg_free(&cfg);
	unlink(path);
	free(path);

	path = write_tmp("[http]\nthreads = 4\n[collector.demo]\nthreads = 2\n"
			 "netns = self, /run/netns/a\ninterval_ms = 5s\n");
	declare(&cfg);
	assert_int_equal(cfg_declare(&cfg, "collector.demo", demo_keys), 0);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg_section_parse(&cfg, "collector.demo", &d), 0);
	assert_int_equal(d.threads, 2);
	assert_int_equal(d.interval_ms, 5000);
	assert_string_equal(d.netns, "self, /run/netns/a");
	assert_string_equal(cfg_get(cfg_section(&cfg, "http"), "threads"), "4");
	/* a flag over a file value is not a duplicate */
	assert_int_equal(cfg_set(&cfg, "collector.demo", "threads", "3"), 0);
	assert_int_equal(cfg_section_parse(&cfg, "collector.demo", &d), 0);
	assert_int_equal(d.threads, 3);
	cfg_free(&cfg);
	unlink(path);
	free(path);
}

static void test_list_items_are_trimmed_and_split(void **state)
{
	char a[] = " \t self \t", b[] = "", c[] = " team = hw ops ", d[] = "k=", e[] = "no equals";
	char *k, *v;

	(void)state;
	assert_string_equal(cfg_trim(a), "self");
	assert_string_equal(cfg_trim(b), "");
	assert_int_equal(cfg_kv_split(c, &k, &v), 0);
	assert_string_equal(k, "team");
	assert_string_equal(v, "hw ops"); /* inner blanks stay */
	assert_int_equal(cfg_kv_split(d, &k, &v), 0);
	assert_string_equal(k, "k");
	assert_string_equal(v, "");
	assert_int_equal(cfg_kv_split(e, &k, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bool_parser_accepts_the_usual_spellings),
	    cmocka_unit_test(test_u64_parser_rejects_junk_and_overflow),
	    cmocka_unit_test(test_durations_have_units),
	    cmocka_unit_test(test_durations_share_the_api_grammar),
	    cmocka_unit_test(test_duration_getter_explains_the_grammar),
	    cmocka_unit_test(test_sizes_are_powers_of_1024),
	    cmocka_unit_test(test_defaults_apply_without_a_file),
	    cmocka_unit_test(test_file_values_override_defaults_and_keep_lines),
	    cmocka_unit_test(test_long_lines_are_read_whole),
	    cmocka_unit_test(test_long_bad_line_is_one_error),
	    cmocka_unit_test(test_unknown_key_names_file_line_and_known_keys),
	    cmocka_unit_test(test_unknown_section_is_an_error),
	    cmocka_unit_test(test_syntax_error_names_the_line),
	    cmocka_unit_test(test_bad_value_names_file_line_section_and_range),
	    cmocka_unit_test(test_missing_file_is_an_error_with_reason),
	    cmocka_unit_test(test_command_line_overrides_file),
	    cmocka_unit_test(test_list_items_are_trimmed_and_split),
	    cmocka_unit_test(test_duplicate_key_names_both_lines),
	    cmocka_unit_test(test_dropins_override_in_strcmp_order),
	    cmocka_unit_test(test_every_error_of_every_layer_is_recorded),
	    cmocka_unit_test(test_dropin_dir_name),
	    cmocka_unit_test(test_typed_section_reports_every_bad_key),
	    cmocka_unit_test(test_enum_int_and_number_keys),
	    cmocka_unit_test(test_duplicate_section_names_both_header_lines),
	    cmocka_unit_test(test_indented_continuation_line_is_refused),
	    cmocka_unit_test(test_collector_section_duplicates_are_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
