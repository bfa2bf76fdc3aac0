/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/log.h"

static enum log_level log_level = LOG_LVL_INFO;
static enum log_format log_format = LOG_FMT_TEXT;
static bool log_journal;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
const char *const log_level_names[] = {"error", "warn", "info", "debug", NULL};
const char *const log_format_names[] = {"text", "logfmt", "json", NULL};
/* syslog priorities (sd-daemon.h SD_ERR ... SD_DEBUG) of the levels */
static const int level_prio[] = {3, 4, 6, 7};

void log_set_level(enum log_level lvl)
{
	__atomic_store_n(&log_level, lvl, __ATOMIC_RELAXED); /* SIGHUP changes it live */
}

void log_set_format(enum log_format fmt)
{
	__atomic_store_n(&log_format, fmt, __ATOMIC_RELAXED);
}

void log_set_journal(bool on)
{
	__atomic_store_n(&log_journal, on, __ATOMIC_RELAXED);
}

/* systemd sets JOURNAL_STREAM=DEV:INODE for a service whose stdout/stderr is
 * the journal; a child that redirected stderr elsewhere must not think so,
 * hence the comparison with fd 2 (systemd.exec(5), "Environment Variables"). */
bool log_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!env || sscanf(env, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

enum log_level log_get_level(void)
{
	return log_level;
}

int64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends s to buf[*n..size) quoted for fmt: logfmt and JSON quote '"' and
 * '\\' and escape control characters; text copies as is. Hand-written: the
 * logger is in the base layer, which links no JSON library, and it must not
 * allocate. */
static void log_put_escaped(char *buf, size_t size, size_t *n, enum log_format fmt, const char *s)
{
	for (; *s && *n + 7 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (fmt == LOG_FMT_TEXT) {
			buf[(*n)++] = (char)c;
		} else if (c == '"' || c == '\\') {
			buf[(*n)++] = '\\';
			buf[(*n)++] = (char)c;
		} else if (c == '\n') {
			buf[(*n)++] = '\\';
			buf[(*n)++] = 'n';
		} else if (c == '\t') {
			buf[(*n)++] = '\\';
			buf[(*n)++] = 't';
		} else if (c < 0x20 || c == 0x7f) {
			*n += (size_t)snprintf(buf + *n, size - *n, "\\u%04x", c);
		} else {
			buf[(*n)++] = (char)c;
		}
	}
	buf[*n] = '\0';
}

static void log_put(char *buf, size_t size, size_t *n, const char *s)
{
	int k = snprintf(buf + *n, size - *n, "%s", s);

	if (k > 0)
		*n = *n + (size_t)k < size ? *n + (size_t)k : size - 1;
}

/* The fields of one line; ts is NULL under journald, which stamps lines. */
struct log_fields {
	const char *ts, *level, *component, *msg;
};

/* wall_ns as an RFC 3339 UTC time with milliseconds. */
static void log_timestamp(int64_t wall_ns, char *ts, size_t len)
{
	time_t sec = (time_t)(wall_ns / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(ts, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)(wall_ns % 1000000000 / 1000000));
}

static void log_line_logfmt(char *buf, size_t size, size_t *n, const struct log_fields *f)
{
	if (f->ts) {
		log_put(buf, size, n, "ts=");
		log_put(buf, size, n, f->ts);
		log_put(buf, size, n, " ");
	}
	log_put(buf, size, n, "level=");
	log_put(buf, size, n, f->level);
	log_put(buf, size, n, " component=");
	log_put_escaped(buf, size, n, LOG_FMT_LOGFMT, f->component);
	log_put(buf, size, n, " msg=\"");
	log_put_escaped(buf, size, n, LOG_FMT_LOGFMT, f->msg);
	log_put(buf, size, n, "\"");
}

static void log_line_json(char *buf, size_t size, size_t *n, const struct log_fields *f)
{
	log_put(buf, size, n, "{");
	if (f->ts) {
		log_put(buf, size, n, "\"ts\":\"");
		log_put(buf, size, n, f->ts);
		log_put(buf, size, n, "\",");
	}
	log_put(buf, size, n, "\"level\":\"");
	log_put(buf, size, n, f->level);
	log_put(buf, size, n, "\",\"component\":\"");
	log_put_escaped(buf, size, n, LOG_FMT_JSON, f->component);
	log_put(buf, size, n, "\",\"msg\":\"");
	log_put_escaped(buf, size, n, LOG_FMT_JSON, f->msg);
	/* a cut message still closes its string and object */
	if (*n + 3 >= size)
		*n = size - 3;
	buf[(*n)++] = '"';
	buf[(*n)++] = '}';
	buf[*n] = '\0';
}

static void log_line_text(char *buf, size_t size, size_t *n, const struct log_fields *f)
{
	if (f->ts) {
		log_put(buf, size, n, f->ts);
		log_put(buf, size, n, " ");
		*n += (size_t)snprintf(buf + *n, size - *n, "%-5s ", f->level);
		if (*n >= size)
			*n = size - 1;
	}
	log_put(buf, size, n, f->component);
	log_put(buf, size, n, ": ");
	log_put(buf, size, n, f->msg);
}

size_t log_format_line(char *buf, size_t size, enum log_format fmt, bool journal, int64_t wall_ns,
		       enum log_level lvl, const char *component, const char *msg)
{
	char ts[40] = "", prio[8] = "";
	struct log_fields f = {.msg = msg};
	size_t n = 0;

	if (size < 16) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	buf[0] = '\0';
	if ((unsigned)lvl > LOG_LVL_DEBUG)
		lvl = LOG_LVL_DEBUG;
	f.level = log_level_names[lvl];
	f.component = component ? component : "agent";
	if (journal) {
		snprintf(prio, sizeof(prio), "<%d>", level_prio[lvl]);
	} else {
		log_timestamp(wall_ns, ts, sizeof(ts));
		f.ts = ts;
	}
	log_put(buf, size, &n, prio);
	if (fmt == LOG_FMT_LOGFMT)
		log_line_logfmt(buf, size, &n, &f);
	else if (fmt == LOG_FMT_JSON)
		log_line_json(buf, size, &n, &f);
	else
		log_line_text(buf, size, &n, &f);
	return n;
}

void log_vmsg(enum log_level lvl, const char *component, const char *fmt, va_list ap)
{
	char msg[1024], line[2048];
	size_t n;

	if (lvl > __atomic_load_n(&log_level, __ATOMIC_RELAXED))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Strip the caller's trailing newline (libbpf adds one); we add our own. */
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	n = log_format_line(line, sizeof(line), __atomic_load_n(&log_format, __ATOMIC_RELAXED),
			    __atomic_load_n(&log_journal, __ATOMIC_RELAXED), clock_wall_ns(), lvl,
			    component, msg);
	/* One write per line keeps lines from threads whole. */
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%.*s\n", (int)n, line);
	pthread_mutex_unlock(&log_lock);
}

void log_msg(enum log_level lvl, const char *component, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(lvl, component, fmt, ap);
	va_end(ap);
}

void log_ratelimited(struct log_ratelimit *rl, unsigned interval_ms, enum log_level lvl,
		     const char *component, const char *fmt, ...)
{
	int64_t now = clock_mono_ns();
	va_list ap;

	if (now < rl->next_ns) {
		__atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
		return;
	}
	rl->next_ns = now + (int64_t)interval_ms * 1000000;
	va_start(ap, fmt);
	log_vmsg(lvl, component, fmt, ap);
	va_end(ap);
	uint64_t n = __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED);
	if (n)
		log_msg(lvl, component, "(%llu similar messages suppressed)",
			(unsigned long long)n);
}

void log_printable(char *out, size_t outlen, const char *s, size_t n, bool first_line)
{
	size_t i = 0, j = 0;

	while (i < n && isspace((unsigned char)s[i]))
		i++;
	for (; i < n && j + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (first_line && (c == '\n' || c == '\r'))
			break;
		out[j++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[j] = '\0';
}
