/* SPDX-License-Identifier: MIT */
/*
 * The text encoders of the registry: Prometheus text format 0.0.4 and
 * OpenMetrics 1.0.0. They differ in a few places, all handled here:
 *   - OpenMetrics names a counter family without its _total suffix (the
 *     sample keeps it), declares # UNIT when the name ends in a unit, writes
 *     floats with a fraction ("1.0"), escapes quotes in HELP, adds
 *     _created samples where the start of a counter or histogram is known,
 *     carries exemplars ("# {sample_id="42"} 1.0 1733230000.5") on counter
 *     and bucket samples, and ends with "# EOF";
 *   - text 0.0.4 has none of these.
 * Both are hand-written: no Debian-packaged C library renders them
 * (prometheus-client-c is not packaged), and the formats are small.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "metrics/metrics_internal.h"

static void put_u64(struct buf *b, uint64_t v)
{
	char tmp[24];

	buf_append(b, tmp, metrics_fmt_u64(v, tmp));
}

/* A float as OpenMetrics writes it: as text 0.0.4, plus ".0" on integers. */
static size_t format_om(double v, char *out)
{
	size_t n = metrics_format_value(v, out);

	if (isfinite(v) && !memchr(out, '.', n) && !memchr(out, 'e', n)) {
		memcpy(out + n, ".0", 3);
		n += 2;
	}
	return n;
}

static void put_value(struct buf *b, double v, bool om)
{
	char tmp[METRICS_VALUE_MAX + 2];

	buf_append(b, tmp, om ? format_om(v, tmp) : metrics_format_value(v, tmp));
}

/* A series value through the series' one-entry cache of its text. */
static void put_value_cached(struct buf *b, struct metric_series *s, double v, bool om)
{
	if (v == trunc(v) || !isfinite(v)) {
		put_value(b, v, om); /* integers and specials are cheap */
		return;
	}
	if (!s->text_len || memcmp(&s->text_v, &v, sizeof(v))) {
		char tmp[METRICS_VALUE_MAX];
		size_t n = metrics_format_value(v, tmp);

		if (n >= sizeof(s->text)) {
			buf_append(b, tmp, n);
			return;
		}
		memcpy(s->text, tmp, n);
		s->text_len = (uint8_t)n;
		s->text_v = v;
	}
	buf_append(b, s->text, s->text_len);
}

/* Unix milliseconds as seconds with 3 decimals ("1733230000.250"): exact,
 * and ~20x cheaper than the shortest-round-trip float formatting. */
static void put_time_ms(struct buf *b, int64_t ms)
{
	char tmp[32];
	size_t n = metrics_fmt_u64((uint64_t)(ms / 1000), tmp);

	tmp[n++] = '.';
	tmp[n++] = (char)('0' + ms % 1000 / 100);
	tmp[n++] = (char)('0' + ms % 100 / 10);
	tmp[n++] = (char)('0' + ms % 10);
	buf_append(b, tmp, n);
}

/* `name{labels,le="x"} ` (the value follows). */
static void put_name_labels(struct buf *b, const char *name, const char *suffix,
			    const struct metric_series *s, const char *le, bool om)
{
	buf_puts(b, name);
	if (suffix)
		buf_puts(b, suffix);
	if (!le) {
		buf_append(b, s->labels, s->labels_len);
		buf_putc(b, ' ');
		return;
	}
	if (s->labels_len) {
		buf_append(b, s->labels, s->labels_len - 1);
		buf_append(b, ",le=\"", 5);
	} else {
		buf_append(b, "{le=\"", 5);
	}
	buf_puts(b, le);
	/* OpenMetrics bounds are floats: "1.0", not "1". */
	if (om && !strchr(le, '.') && !strchr(le, 'e') && !strchr(le, 'I'))
		buf_append(b, ".0", 2);
	buf_append(b, "\"} ", 3);
}

static void put_exemplar(struct buf *b, const struct metric_exemplar *e)
{
	if (!e || e->ts_ms <= 0)
		return;
	buf_append(b, " # {", 4);
	buf_append(b, e->text, e->name_len);
	buf_append(b, "=\"", 2);
	metrics_buf_escaped(b, e->text + e->name_len + 1, true);
	buf_append(b, "\"} ", 3);
	put_value(b, e->value, true);
	buf_putc(b, ' ');
	put_time_ms(b, e->ts_ms);
}

/* `fam_created{labels} <unix seconds>`: fam is the family name (fam_len
 * bytes of it: a counter's without _total). */
static void put_created(struct buf *b, const char *fam, size_t fam_len,
			const struct metric_series *s)
{
	buf_append(b, fam, fam_len);
	put_name_labels(b, "", "_created", s, NULL, true);
	put_time_ms(b, s->created_ms);
	buf_putc(b, '\n');
}

static const char *type_name(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER:
		return "counter";
	case METRIC_GAUGE:
		return "gauge";
	case METRIC_HISTOGRAM:
		return "histogram";
	}
	return "unknown";
}

static void put_meta(struct buf *b, const char *kind, const char *fam, size_t fam_len)
{
	buf_append(b, "# ", 2);
	buf_puts(b, kind);
	buf_putc(b, ' ');
	buf_append(b, fam, fam_len);
	buf_putc(b, ' ');
}

static void family_render(struct metric *f, struct buf *b, bool om)
{
	size_t fam_len = strlen(f->name);

	/* OpenMetrics: the counter family is the name before _total. */
	if (om && f->type == METRIC_COUNTER && fam_len > 6 &&
	    !strcmp(f->name + fam_len - 6, "_total"))
		fam_len -= 6;
	if (f->help[0]) {
		put_meta(b, "HELP", f->name, fam_len);
		metrics_buf_escaped(b, f->help, om); /* HELP: the quote in OpenMetrics only */
		buf_putc(b, '\n');
	}
	put_meta(b, "TYPE", f->name, fam_len);
	buf_puts(b, type_name(f->type));
	buf_putc(b, '\n');
	if (om && f->unit) {
		put_meta(b, "UNIT", f->name, fam_len);
		buf_puts(b, f->unit);
		buf_putc(b, '\n');
	}

	for (size_t i = 0; i < f->n_series; i++) {
		struct metric_series *s = f->order[i];
		uint64_t cum = 0;

		if (f->type != METRIC_HISTOGRAM) {
			/* A counter without _total still gets it in OpenMetrics. */
			bool add_total =
			    om && f->type == METRIC_COUNTER && fam_len == strlen(f->name);

			put_name_labels(b, f->name, add_total ? "_total" : NULL, s, NULL, om);
			put_value_cached(b, s, s->value, om);
			if (om && f->type == METRIC_COUNTER)
				put_exemplar(b, s->ex);
			buf_putc(b, '\n');
			if (om && f->type == METRIC_COUNTER && !s->created_unknown)
				put_created(b, f->name, fam_len, s);
			continue;
		}
		for (size_t j = 0; j <= f->n_bounds; j++) {
			cum += s->counts[j];
			put_name_labels(b, f->name_bucket, NULL, s, f->le[j], om);
			put_u64(b, cum);
			if (om && s->ex)
				put_exemplar(b, &s->ex[j]);
			buf_putc(b, '\n');
		}
		put_name_labels(b, f->name_sum, NULL, s, NULL, om);
		put_value_cached(b, s, s->sum, om);
		buf_putc(b, '\n');
		put_name_labels(b, f->name_count, NULL, s, NULL, om);
		put_u64(b, cum);
		buf_putc(b, '\n');
		if (om && !s->created_unknown)
			put_created(b, f->name, fam_len, s);
	}
}

int metrics_render_text_locked(struct metrics *m, bool om, const char *const *owners, struct buf *b)
{
	for (size_t i = 0; i < m->n_fams && !b->oom; i++) {
		struct metric *f = m->fams[i];

		/* No samples: no metadata either, like the Go client. */
		if (!f->n_series || !family_selected(f, owners))
			continue;
		if (family_order_locked(f))
			return -ENOMEM;
		family_render(f, b, om);
	}
	if (om)
		buf_append(b, "# EOF\n", 6);
	return b->oom ? -ENOMEM : 0;
}
