/* SPDX-License-Identifier: MIT */
/*
 * Accept negotiation (RFC 9110 section 12.5.1). Hand-written: libmicrohttpd
 * leaves header semantics to the application, and no Debian-packaged C
 * library implements media-range matching with parameters (Prometheus picks
 * its protobuf format by the proto= and encoding= parameters, so a
 * type/subtype comparison is not enough).
 *
 * The header is walked in place for every offer, without copying or
 * allocating: offers are few (two or three) and headers short, and a header
 * of any length or number of ranges costs no memory.
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "api/negotiate.h"

#define Q_MAX 1000 /* weights in thousandths: qvalue has 3 decimals */

struct tok {
	const char *p;
	size_t n;
};

struct param {
	struct tok name, val; /* val without its quotes, escapes still in */
	bool quoted;
};

/* A media type or range as it stands in its string. */
struct media {
	struct tok type, sub;
	const char *params, *end; /* ";a=b;c=d" up to end */
	unsigned q;		  /* Q_MAX when not given */
	unsigned n_params;	  /* without q */
};

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* RFC 9110 tchar. */
static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p, const char *end)
{
	while (p < end && is_ows(*p))
		p++;
	return p;
}

static struct tok token(const char **pp, const char *end)
{
	struct tok t = {*pp, 0};

	while (*pp < end && is_tchar(**pp))
		(*pp)++;
	t.n = (size_t)(*pp - t.p);
	return t;
}

static bool tok_is(struct tok t, const char *s)
{
	return t.n == strlen(s) && !strncasecmp(t.p, s, t.n);
}

static bool tok_eq(struct tok a, struct tok b)
{
	return a.n == b.n && !strncasecmp(a.p, b.p, a.n);
}

/*
 * The next parameter of a list "; a=b ;c="d" ;" in [*pp, end), advancing *pp:
 * 1 with *out filled, 0 at the end, -1 on a syntax error. Empty parameters
 * (";;", a trailing ';') are skipped, as RFC 9110 allows them. Blanks around
 * '=' are tolerated.
 */
static int param_next(const char **pp, const char *end, struct param *out)
{
	const char *p = *pp;

	for (;;) {
		p = skip_ows(p, end);
		if (p == end) {
			*pp = p;
			return 0;
		}
		if (*p != ';')
			return -1;
		p = skip_ows(p + 1, end);
		if (p < end && *p != ';')
			break;
	}
	out->name = token(&p, end);
	if (!out->name.n)
		return -1;
	p = skip_ows(p, end);
	if (p == end || *p != '=')
		return -1;
	p = skip_ows(p + 1, end);
	out->quoted = p < end && *p == '"';
	if (out->quoted) {
		out->val.p = ++p;
		for (; p < end && *p != '"'; p++) {
			if ((unsigned char)*p < 0x20 && *p != '\t')
				return -1;
			if (*p == '\\' && ++p == end)
				return -1;
		}
		if (p == end)
			return -1; /* unterminated */
		out->val.n = (size_t)(p - out->val.p);
		p++;
	} else {
		out->val = token(&p, end);
		if (!out->val.n)
			return -1;
	}
	*pp = p;
	return 1;
}

/* A qvalue, "0", "0.5", "1.000", in thousandths; lenient past RFC 9110's
 * grammar on two points only: more than three decimals (digits, ignored) and
 * values past 1 (counted as 1). */
static bool qvalue_parse(struct tok t, unsigned *q)
{
	unsigned ip = 0, frac = 0, scale = 100;
	size_t i = 0;

	if (!t.n || t.p[0] < '0' || t.p[0] > '9')
		return false;
	for (; i < t.n && t.p[i] >= '0' && t.p[i] <= '9'; i++)
		ip = ip > 1 ? 2 : ip * 10 + (unsigned)(t.p[i] - '0');
	if (i < t.n && t.p[i] == '.') {
		for (i++; i < t.n && t.p[i] >= '0' && t.p[i] <= '9'; i++) {
			frac += (unsigned)(t.p[i] - '0') * scale;
			scale /= 10;
		}
	}
	if (i != t.n)
		return false;
	*q = ip >= 1 ? Q_MAX : frac;
	return true;
}

/* Parses [p, end) as a media range (wildcards and q allowed) or an offer
 * (neither; a q there is an ordinary parameter). */
static bool media_parse(const char *p, const char *end, bool range, struct media *m)
{
	struct param prm;
	bool wild_type, wild_sub;
	int rc;

	p = skip_ows(p, end);
	m->type = token(&p, end);
	if (!m->type.n || p == end || *p != '/')
		return false;
	p++;
	m->sub = token(&p, end);
	if (!m->sub.n)
		return false;
	wild_type = tok_is(m->type, "*");
	wild_sub = tok_is(m->sub, "*");
	if ((wild_type && !wild_sub) || (!range && (wild_type || wild_sub)))
		return false;
	m->params = p;
	m->end = end;
	m->q = Q_MAX;
	m->n_params = 0;
	while ((rc = param_next(&p, end, &prm)) > 0) {
		if (!range || !tok_is(prm.name, "q"))
			m->n_params++;
		else if (prm.quoted || !qvalue_parse(prm.val, &m->q))
			return false;
	}
	return rc == 0;
}

/* The next character of a parameter value with quoted-pair escapes undone,
 * advancing *i; -1 at the end. */
static int val_char(const struct param *v, size_t *i)
{
	if (*i >= v->val.n)
		return -1;
	if (v->quoted && v->val.p[*i] == '\\')
		(*i)++; /* param_next() made sure a character follows */
	return (unsigned char)v->val.p[(*i)++];
}

static bool val_eq(const struct param *a, const struct param *b, bool ci)
{
	size_t i = 0, j = 0;
	int ca, cb;

	do {
		ca = val_char(a, &i);
		cb = val_char(b, &j);
		if (ci && ca >= 'A' && ca <= 'Z')
			ca += 'a' - 'A';
		if (ci && cb >= 'A' && cb <= 'Z')
			cb += 'a' - 'A';
		if (ca != cb)
			return false;
	} while (ca >= 0);
	return true;
}

/* Whether the offer carries parameter want (same name, same value). */
static bool offer_has(const struct media *offer, const struct param *want)
{
	const char *p = offer->params;
	struct param have;

	while (param_next(&p, offer->end, &have) > 0) {
		if (tok_eq(have.name, want->name) &&
		    val_eq(&have, want, tok_is(want->name, "charset")))
			return true;
	}
	return false;
}

/* How specifically range names offer: 0 if it does not match; otherwise
 * higher for a more specific range (full type, then more parameters). */
static unsigned range_match(const struct media *range, const struct media *offer)
{
	const char *p = range->params;
	struct param want;
	unsigned level;

	if (tok_is(range->type, "*")) {
		level = 1;
	} else if (!tok_eq(range->type, offer->type)) {
		return 0;
	} else if (tok_is(range->sub, "*")) {
		level = 2;
	} else if (!tok_eq(range->sub, offer->sub)) {
		return 0;
	} else {
		level = 3;
	}
	while (param_next(&p, range->end, &want) > 0) {
		if (tok_is(want.name, "q"))
			continue;
		if (!offer_has(offer, &want))
			return 0;
	}
	/* A range with 65535 parameters is a joke; the cap keeps the order. */
	return level << 16 | (range->n_params < 0xffff ? range->n_params : 0xffff);
}

/* The end of the list element starting at p: the first ',' outside a quoted
 * string, or the end of the string. */
static const char *element_end(const char *p)
{
	bool quoted = false;

	for (; *p; p++) {
		if (quoted) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quoted = false;
		} else if (*p == '"') {
			quoted = true;
		} else if (*p == ',') {
			break;
		}
	}
	return p;
}

/* No list element at all: NULL, "", blanks and commas. */
static bool accept_empty(const char *s)
{
	if (!s)
		return true;
	for (; *s; s++) {
		if (!is_ows(*s) && *s != ',')
			return false;
	}
	return true;
}

/* The weight the header gives offer: that of its most specific matching
 * range, the highest of equally specific ones; 0 if none matches. */
static unsigned offer_weight(const char *accept, const struct media *offer)
{
	unsigned best_spec = 0, q = 0;

	for (const char *p = accept, *e; *p; p = *e ? e + 1 : e) {
		struct media range;
		unsigned spec;

		e = element_end(p);
		if (!media_parse(p, e, true, &range))
			continue;
		spec = range_match(&range, offer);
		if (!spec || spec < best_spec)
			continue;
		if (spec > best_spec || range.q > q)
			q = range.q;
		best_spec = spec;
	}
	return q;
}

int http_negotiate(const char *accept, const char *const *offers, size_t n_offers)
{
	unsigned best_q = 0;
	int best = -1;

	if (!offers || !n_offers)
		return -1;
	if (accept_empty(accept))
		return 0;
	for (size_t i = 0; i < n_offers && i < (size_t)INT_MAX; i++) {
		struct media offer;
		unsigned q;

		if (!offers[i] ||
		    !media_parse(offers[i], offers[i] + strlen(offers[i]), false, &offer))
			continue; /* a server bug; never chosen */
		q = offer_weight(accept, &offer);
		if (q > best_q) {
			best_q = q;
			best = (int)i;
		}
	}
	return best;
}
