/* SPDX-License-Identifier: MIT */
/*
 * One logger for the whole agent. Every line carries a level and a component
 * ("agent", "store", "http", or a collector name). Lines go to stderr, which
 * systemd's journal or the terminal picks up, in one of three formats
 * ([agent] log_format):
 *   text    2026-01-02T03:04:05.678Z info  agent: message
 *   logfmt  ts=2026-01-02T03:04:05.678Z level=info component=agent msg="message"
 *   json    {"ts":"2026-01-02T03:04:05.678Z","level":"info","component":"agent","msg":"message"}
 * When stderr is the journal (JOURNAL_STREAM names it, see systemd.exec(5))
 * the time stamp is left out, as the journal keeps its own, and each line
 * starts with the syslog priority prefix "<N>" that journald turns into the
 * entry's PRIORITY, so `journalctl -p warning` works.
 *
 * log_ratelimited() lets a hot failure path (disk full, ring buffer loss) log
 * at most once per interval per call site and say how many were suppressed.
 */
#ifndef SYSOBS_LOG_H
#define SYSOBS_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

enum log_format { LOG_FMT_TEXT, LOG_FMT_LOGFMT, LOG_FMT_JSON };

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* The names of the levels and formats, indexed by the enums and
 * NULL-terminated: the choices of [agent] log_level and log_format. */
extern const char *const log_level_names[];
extern const char *const log_format_names[];
void log_set_format(enum log_format fmt);
/* Journal mode (no time stamps, "<N>" priority prefixes) on or off. */
void log_set_journal(bool on);
/* True when JOURNAL_STREAM names the device:inode of our stderr. */
bool log_stderr_is_journal(void);
/* Formats one line without the trailing newline into buf (pure; unit-tested):
 * wall_ns is the time stamp, ignored in journal mode. Returns the length. */
size_t log_format_line(char *buf, size_t size, enum log_format fmt, bool journal, int64_t wall_ns,
		       enum log_level lvl, const char *component, const char *msg);

void log_msg(enum log_level lvl, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(enum log_level lvl, const char *component, const char *fmt, va_list ap);

struct log_ratelimit {
	int64_t next_ns;     /* monotonic time the next line may be printed */
	uint64_t suppressed; /* lines swallowed since the last one printed */
};

/* Logs at most once per interval_ms for this state; thread-safe enough for
 * counters (a lost suppressed count is harmless). */
void log_ratelimited(struct log_ratelimit *rl, unsigned interval_ms, enum log_level lvl,
		     const char *component, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define log_err(comp, ...)   log_msg(LOG_LVL_ERR, comp, __VA_ARGS__)
#define log_warn(comp, ...)  log_msg(LOG_LVL_WARN, comp, __VA_ARGS__)
#define log_info(comp, ...)  log_msg(LOG_LVL_INFO, comp, __VA_ARGS__)
#define log_debug(comp, ...) log_msg(LOG_LVL_DEBUG, comp, __VA_ARGS__)

/* Collector-flavoured variants: prefix the collector's own name. */
#define clog_err(c, ...)   log_msg(LOG_LVL_ERR, (c)->ops->name, __VA_ARGS__)
#define clog_warn(c, ...)  log_msg(LOG_LVL_WARN, (c)->ops->name, __VA_ARGS__)
#define clog_info(c, ...)  log_msg(LOG_LVL_INFO, (c)->ops->name, __VA_ARGS__)
#define clog_debug(c, ...) log_msg(LOG_LVL_DEBUG, (c)->ops->name, __VA_ARGS__)

/*
 * A peer's text (a reply body, an error message) for a log line: s[0..n)
 * into out as printable ASCII, any other byte '?', leading blanks skipped,
 * up to the first line break when first_line is set; truncated to outlen,
 * NUL-terminated (outlen > 0).
 */
void log_printable(char *out, size_t outlen, const char *s, size_t n, bool first_line);

/* Monotonic and wall clocks in nanoseconds. */
int64_t clock_mono_ns(void);
int64_t clock_wall_ns(void);

#endif
