/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/log.h"

static enum log_level log_level = LOG_LVL_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl)
{
	log_level = lvl;
}

enum log_level log_get_level(void)
{
	return log_level;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (!strcmp(s, "warning")) {
		*out = LOG_LVL_WARN;
		return 0;
	}
	return -EINVAL;
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

void log_vmsg(enum log_level lvl, const char *component, const char *fmt, va_list ap)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	int n;

	if (lvl > log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s %s: ", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, level_names[lvl], component ? component : "agent");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	/* One write per line keeps lines from threads whole; strip the caller's
	 * trailing newline (libbpf adds one) and add our own. */
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s\n", line);
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
