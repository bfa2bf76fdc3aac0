/* SPDX-License-Identifier: MIT */
/*
 * exporter-toolkit web configuration (see webconfig.h): YAML through libyaml's
 * document API, bcrypt through libxcrypt's crypt_rn(), the verification
 * cache keyed with GnuTLS's HMAC-SHA256.
 */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <gnutls/gnutls.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "api/webconfig.h"
#include "base/file.h"

#define WEB_FILE_MAX	(1 << 20) /* a web-config or PEM file larger than this is refused */
#define AUTH_CACHE_SIZE 64
#define DIGEST_LEN	32

struct auth_entry {
	unsigned char digest[DIGEST_LEN]; /* HMAC(key, user NUL password) */
	bool used, ok;
	uint64_t tick;
};

struct web_auth_cache {
	pthread_mutex_t lock;
	unsigned char key[DIGEST_LEN];
	struct auth_entry e[AUTH_CACHE_SIZE];
	uint64_t tick;
};

/* A valid bcrypt hash of a random password: checked for unknown users so
 * that they cost the same as known ones. */
static const char dummy_hash[] = "$2y$10$GGZoXS5gq.M57hpFD.Ao..GolClGdfNiVpWukqv78eYiyhxQfgEkK";

struct parse_ctx {
	yaml_document_t *doc;
	const char *path;
	char *err;
	size_t errlen;
	char dir[4096];
};

static int fail(struct parse_ctx *p, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct parse_ctx *p, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		snprintf(p->err, p->errlen, "%s:%zu: %s", p->path, n->start_mark.line + 1, msg);
	else
		snprintf(p->err, p->errlen, "%s: %s", p->path, msg);
	return -EINVAL;
}

/* Reads a whole (small) file. */
char *web_file_read(const char *path, size_t *len, char *err, size_t errlen)
{
	char *buf, why[64];
	int ret = file_read(path, WEB_FILE_MAX, &buf, len);

	if (ret)
		snprintf(err, errlen, "cannot read %s: %s", path,
			 file_read_strerror(ret, WEB_FILE_MAX, why, sizeof(why)));
	return buf;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A YAML null: "", "~" or "null" written plainly. */
static bool is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return !n || (s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		      (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
		       !strcmp(s, "NULL")));
}

/* Reads a PEM file named relative to the web-config file's folder. */
static int load_pem(struct parse_ctx *p, const yaml_node_t *v, const char *key, char **out,
		    char **path_out)
{
	char path[8192], msg[512];
	const char *s = scalar(v);
	size_t len;

	if (!s || !*s)
		return fail(p, v, "%s: expected a file name", key);
	if (s[0] == '/')
		snprintf(path, sizeof(path), "%s", s);
	else
		snprintf(path, sizeof(path), "%s/%s", p->dir, s);
	free(*out);
	*out = web_file_read(path, &len, msg, sizeof(msg));
	if (!*out)
		return fail(p, v, "%s: %s", key, msg);
	if (!strstr(*out, "-----BEGIN "))
		return fail(p, v, "%s: %s is not PEM", key, path);
	if (path_out) {
		free(*path_out);
		*path_out = strdup(path);
		if (!*path_out)
			return -ENOMEM;
	}
	return 0;
}

/* A list that may only be empty: settings this build cannot honour. */
static int want_empty(struct parse_ctx *p, const yaml_node_t *v, const char *key, const char *why)
{
	if (is_null(v) || (v->type == YAML_SEQUENCE_NODE &&
			   v->data.sequence.items.top == v->data.sequence.items.start))
		return 0;
	return fail(p, v, "%s is not supported: %s", key, why);
}

static int tls_version(struct parse_ctx *p, const yaml_node_t *v, const char *key, int *out)
{
	static const char *const names[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
	const char *s = scalar(v);

	for (int i = 0; s && i < 4; i++)
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	return fail(p, v, "%s: expected TLS10, TLS11, TLS12 or TLS13", key);
}

/* What the server's start would refuse of the PEM files, by the same
 * GnuTLS calls libmicrohttpd makes (a key that does not match its
 * certificate, a CA file without a certificate): refused here, at load,
 * so that --check-config says so and the start exits 2 for it (issue 30:
 * the check said valid, the start exited 1). */
/*
 * Does the key belong to the (first) certificate, and will the server take
 * the pair? Compared by public key id before GnuTLS's own
 * gnutls_certificate_set_x509_key_mem() is asked:
 * 3.7.9 leaks the parsed certificate when it finds a mismatch (LSan), and
 * a refused pair is what a reload of a renewed certificate may meet.
 */
int web_tls_pair_check(const char *cert_pem, const char *key_pem, char *msg, size_t msglen)
{
	gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
	unsigned char cid[64], kid[64];
	size_t clen = sizeof(cid), klen = sizeof(kid);
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_x509_privkey_t pk = NULL;
	int rc, ret = -EINVAL;

	if ((rc = gnutls_x509_crt_init(&crt)) < 0 ||
	    (rc = gnutls_x509_crt_import(crt, &cert, GNUTLS_X509_FMT_PEM)) < 0) {
		snprintf(msg, msglen, "certificate: %s", gnutls_strerror(rc));
		goto out;
	}
	if ((rc = gnutls_x509_privkey_init(&pk)) < 0 ||
	    (rc = gnutls_x509_privkey_import2(pk, &key, GNUTLS_X509_FMT_PEM, NULL,
					      GNUTLS_PKCS_PLAIN)) < 0) {
		snprintf(msg, msglen, "key: %s", gnutls_strerror(rc));
		goto out;
	}
	if ((rc = gnutls_x509_crt_get_key_id(crt, 0, cid, &clen)) < 0 ||
	    (rc = gnutls_x509_privkey_get_key_id(pk, 0, kid, &klen)) < 0) {
		snprintf(msg, msglen, "%s", gnutls_strerror(rc));
		goto out;
	}
	if (clen != klen || memcmp(cid, kid, clen)) {
		snprintf(msg, msglen, "%s", gnutls_strerror(GNUTLS_E_CERTIFICATE_KEY_MISMATCH));
		goto out;
	}
	/* then as the server will take them (libmicrohttpd makes this call) */
	if ((rc = gnutls_certificate_allocate_credentials(&cred)) < 0 ||
	    (rc = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM)) <
		0) {
		snprintf(msg, msglen, "%s", gnutls_strerror(rc));
		goto out;
	}
	ret = 0;
out:
	if (cred)
		gnutls_certificate_free_credentials(cred);
	if (pk)
		gnutls_x509_privkey_deinit(pk);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	return ret;
}

static int tls_files_check(struct parse_ctx *p, const struct web_config *wc,
			   const yaml_node_t *key_node, const yaml_node_t *ca_node)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t ca;
	char msg[160];
	int rc, err = 0;

	if (web_tls_pair_check(wc->cert_pem, wc->key_pem, msg, sizeof(msg)))
		return fail(p, key_node, "key_file and cert_file: %s", msg);
	if (!wc->client_ca_pem)
		return 0;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return fail(p, ca_node, "out of memory");
	ca = (gnutls_datum_t){(unsigned char *)wc->client_ca_pem,
			      (unsigned)strlen(wc->client_ca_pem)};
	rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
	if (rc <= 0)
		err = fail(p, ca_node, "client_ca_file: %s",
			   rc < 0 ? gnutls_strerror(rc) : "no certificate in it");
	gnutls_certificate_free_credentials(cred);
	return err;
}

#define FOR_PAIRS(p, map, pair)                                                                    \
	for (yaml_node_pair_t *pair = (map)->data.mapping.pairs.start;                             \
	     pair < (map)->data.mapping.pairs.top; pair++)

/* A key given twice in one mapping (libyaml keeps both; the toolkit's
 * strict YAML refuses it, and a second tls_server_config or user would
 * silently replace the first): -EINVAL with both lines. */
static int unique_keys(struct parse_ctx *p, const yaml_node_t *map)
{
	FOR_PAIRS(p, map, a)
	{
		const yaml_node_t *ka = yaml_document_get_node(p->doc, a->key);
		const char *sa = scalar(ka);

		for (const yaml_node_pair_t *b = map->data.mapping.pairs.start; sa && b < a; b++) {
			const yaml_node_t *kb = yaml_document_get_node(p->doc, b->key);
			const char *sb = scalar(kb);

			if (sb && !strcmp(sa, sb))
				return fail(p, ka, "\"%s\" given twice (first on line %zu)", sa,
					    kb->start_mark.line + 1);
		}
	}
	return 0;
}

/* client_auth_type's values, in enum web_client_auth order. */
static const char *const client_auth_names[] = {"NoClientCert", "RequestClientCert",
						"RequireAnyClientCert", "VerifyClientCertIfGiven",
						"RequireAndVerifyClientCert"};

/* What tls_server_config said beside the files it loaded into wc. */
struct tls_section {
	int min_v, max_v;		       /* TLS1.<n> */
	bool have_auth;			       /* client_auth_type given */
	const yaml_node_t *key_node, *ca_node; /* for errors on the files */
};

static int client_auth_parse(struct parse_ctx *p, const yaml_node_t *v, struct web_config *wc)
{
	const char *s = scalar(v);
	int i;

	for (i = 0; s && i < 5 && strcmp(s, client_auth_names[i]); i++)
		;
	if (!s || i == 5)
		return fail(p, v,
			    "client_auth_type: expected NoClientCert, RequestClientCert, "
			    "RequireAnyClientCert, VerifyClientCertIfGiven or "
			    "RequireAndVerifyClientCert");
	wc->client_auth = (enum web_client_auth)i;
	return 0;
}

/* One key of tls_server_config into wc and ts. */
static int tls_key_parse(struct parse_ctx *p, const yaml_node_t *k, const yaml_node_t *v,
			 struct web_config *wc, struct tls_section *ts)
{
	const char *key = scalar(k);

	if (!key)
		return fail(p, k, "tls_server_config: keys must be strings");
	if (!strcmp(key, "cert_file"))
		return load_pem(p, v, key, &wc->cert_pem, &wc->cert_file);
	if (!strcmp(key, "key_file")) {
		ts->key_node = v;
		return load_pem(p, v, key, &wc->key_pem, &wc->key_file);
	}
	if (!strcmp(key, "client_ca_file")) {
		ts->ca_node = v;
		return is_null(v) ? 0 : load_pem(p, v, key, &wc->client_ca_pem, NULL);
	}
	if (!strcmp(key, "client_auth_type")) {
		ts->have_auth = true;
		return client_auth_parse(p, v, wc);
	}
	if (!strcmp(key, "min_version"))
		return tls_version(p, v, key, &ts->min_v);
	if (!strcmp(key, "max_version"))
		return tls_version(p, v, key, &ts->max_v);
	if (!strcmp(key, "cipher_suites"))
		return want_empty(p, v, key,
				  "the GnuTLS defaults for the allowed versions are used");
	if (!strcmp(key, "curve_preferences"))
		return want_empty(p, v, key, "the GnuTLS defaults are used");
	if (!strcmp(key, "client_allowed_sans"))
		return want_empty(p, v, key, "use a dedicated client CA instead");
	if (!strcmp(key, "prefer_server_cipher_suites"))
		return 0; /* a preference; GnuTLS chooses by its priority list */
	return fail(p, k, "tls_server_config: unknown key \"%s\"", key);
}

/* The settings of a non-empty section together: both files, a client CA
 * with a client_auth_type that asks for certificates (the toolkit's
 * default with a CA), versions in order. */
static int tls_section_check(struct parse_ctx *p, const yaml_node_t *map, struct web_config *wc,
			     const struct tls_section *ts)
{
	if (!wc->cert_pem || !wc->key_pem)
		return fail(p, map, "tls_server_config needs both cert_file and key_file");
	if (wc->client_ca_pem && wc->client_auth == WEB_CLIENT_NONE && ts->have_auth)
		return fail(p, map, "client_ca_file is set but client_auth_type is NoClientCert");
	if (wc->client_ca_pem && !ts->have_auth)
		wc->client_auth = WEB_CLIENT_REQUIRE_AND_VERIFY;
	if (wc->client_auth != WEB_CLIENT_NONE && !wc->client_ca_pem)
		return fail(p, map,
			    "client_auth_type %s needs client_ca_file here (libmicrohttpd asks for "
			    "a client certificate only when it has a trust list)",
			    client_auth_names[wc->client_auth]);
	if (ts->min_v > ts->max_v)
		return fail(p, map, "min_version is above max_version");
	return 0;
}

/* The GnuTLS priority string: its NORMAL set, only the protocol versions
 * TLS1.min_v to TLS1.max_v. Malloc'ed, or NULL. */
static char *tls_priorities(int min_v, int max_v)
{
	char prio[128];
	size_t n = (size_t)snprintf(prio, sizeof(prio), "NORMAL:-VERS-ALL");

	for (int v = max_v; v >= min_v; v--)
		n += (size_t)snprintf(prio + n, sizeof(prio) - n, ":+VERS-TLS1.%d", v);
	return strdup(prio);
}

static int parse_tls(struct parse_ctx *p, const yaml_node_t *map, struct web_config *wc)
{
	struct tls_section ts = {.min_v = 2, .max_v = 3, .key_node = map, .ca_node = map};
	int err;

	if (is_null(map))
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail(p, map, "tls_server_config: expected a mapping");
	if (unique_keys(p, map))
		return -EINVAL;
	FOR_PAIRS(p, map, pair)
	{
		err = tls_key_parse(p, yaml_document_get_node(p->doc, pair->key),
				    yaml_document_get_node(p->doc, pair->value), wc, &ts);
		if (err)
			return err;
	}
	if (!wc->cert_pem && !wc->key_pem && !wc->client_ca_pem && !ts.have_auth)
		return 0; /* an empty section: no TLS, as in the toolkit */
	err = tls_section_check(p, map, wc, &ts);
	if (!err)
		err = tls_files_check(p, wc, ts.key_node, ts.ca_node);
	if (err)
		return err;
	wc->tls_priorities = tls_priorities(ts.min_v, ts.max_v);
	return wc->tls_priorities ? 0 : -ENOMEM;
}

/* http_server_config.headers: the response headers the toolkit lets one
 * set, each a one-line string, into wc->headers (names in canonical case). */
static int parse_headers(struct parse_ctx *p, const yaml_node_t *map, struct web_config *wc)
{
	static const char *const allowed[] = {"Strict-Transport-Security", "X-Frame-Options",
					      "X-Content-Type-Options", "X-XSS-Protection",
					      "Content-Security-Policy"};

	if (is_null(map))
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail(p, map, "headers: expected a mapping");
	if (unique_keys(p, map))
		return -EINVAL;
	FOR_PAIRS(p, map, hp)
	{
		yaml_node_t *hk = yaml_document_get_node(p->doc, hp->key);
		yaml_node_t *hv = yaml_document_get_node(p->doc, hp->value);
		const char *name = scalar(hk), *value = scalar(hv);
		struct web_header *t;
		size_t i;

		for (i = 0; name && i < 5 && strcasecmp(name, allowed[i]); i++)
			;
		if (!name || i == 5)
			return fail(p, hk,
				    "headers: \"%s\" cannot be set (allowed: "
				    "Strict-Transport-Security, X-Frame-Options, "
				    "X-Content-Type-Options, X-XSS-Protection, "
				    "Content-Security-Policy)",
				    name ? name : "?");
		if (!value || strpbrk(value, "\r\n"))
			return fail(p, hv, "headers: %s: expected a one-line string", name);
		t = realloc(wc->headers, (wc->n_headers + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		wc->headers = t;
		t[wc->n_headers].name = strdup(allowed[i]);
		t[wc->n_headers].value = strdup(value);
		wc->n_headers++;
		if (!t[wc->n_headers - 1].name || !t[wc->n_headers - 1].value)
			return -ENOMEM;
	}
	return 0;
}

static int parse_server(struct parse_ctx *p, const yaml_node_t *map, struct web_config *wc)
{
	if (is_null(map))
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail(p, map, "http_server_config: expected a mapping");
	if (unique_keys(p, map))
		return -EINVAL;
	FOR_PAIRS(p, map, pair)
	{
		yaml_node_t *k = yaml_document_get_node(p->doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
		const char *key = scalar(k);
		int err;

		if (!key)
			return fail(p, k, "http_server_config: keys must be strings");
		if (!strcmp(key, "http2")) {
			/* libmicrohttpd speaks HTTP/1.1 only; clients fall back. */
			if (!scalar(v))
				return fail(p, v, "http2: expected true or false");
			continue;
		}
		if (strcmp(key, "headers"))
			return fail(p, k, "http_server_config: unknown key \"%s\"", key);
		err = parse_headers(p, v, wc);
		if (err)
			return err;
	}
	return 0;
}

/* The cost of a bcrypt hash ("$2y$10$..."), or -1 when it has none. */
static int bcrypt_cost(const char *h)
{
	if (strncmp(h, "$2y$", 4) && strncmp(h, "$2b$", 4) && strncmp(h, "$2a$", 4))
		return -1;
	if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return -1;
	return (h[4] - '0') * 10 + (h[5] - '0');
}

/* The hash's form, checked by libxcrypt at the lowest cost: a hash is
 * never run at its own cost here ($2b$31$ took hours, at start). */
static bool bcrypt_hash_valid(const char *h)
{
	struct crypt_data *cd;
	const char *r;
	char *low;
	bool ok;

	if (bcrypt_cost(h) < 0 || !(low = strdup(h)))
		return false;
	low[4] = '0';
	low[5] = '4';
	cd = calloc(1, sizeof(*cd));
	if (!cd) {
		free(low);
		return false;
	}
	/* A malformed setting makes crypt_rn fail (NULL or a "*" string). */
	r = crypt_rn("x", low, cd, sizeof(*cd));
	ok = r && r[0] == '$' && strlen(r) == strlen(h);
	free(cd);
	free(low);
	return ok;
}

static int parse_users(struct parse_ctx *p, const yaml_node_t *map, struct web_config *wc)
{
	if (is_null(map))
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail(p, map, "basic_auth_users: expected a mapping of user: bcrypt hash");
	FOR_PAIRS(p, map, pair)
	{
		yaml_node_t *k = yaml_document_get_node(p->doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
		const char *user = scalar(k), *hash = scalar(v);
		struct web_user *t;
		int cost;

		if (!user || !*user || strchr(user, ':'))
			return fail(p, k, "basic_auth_users: a user name is a string without ':'");
		if (!hash || !bcrypt_hash_valid(hash))
			return fail(p, v,
				    "basic_auth_users: %s: expected a bcrypt hash ($2y$, $2b$ or "
				    "$2a$), e.g. from htpasswd -nbBC 10 USER PASSWORD",
				    user);
		cost = bcrypt_cost(hash);
		if (cost < WEB_BCRYPT_COST_MIN || cost > WEB_BCRYPT_COST_MAX)
			return fail(
			    p, v,
			    "basic_auth_users: %s: bcrypt cost %d outside %d-%d (one check "
			    "at cost 14 takes 1.5 s on a 2-CPU machine; htpasswd -nbBC 10 USER "
			    "PASSWORD makes one of cost 10)",
			    user, cost, WEB_BCRYPT_COST_MIN, WEB_BCRYPT_COST_MAX);
		for (size_t i = 0; i < wc->n_users; i++)
			if (!strcmp(wc->users[i].name, user))
				return fail(p, k, "basic_auth_users: %s given twice", user);
		t = realloc(wc->users, (wc->n_users + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		wc->users = t;
		t[wc->n_users].name = strdup(user);
		t[wc->n_users].hash = strdup(hash);
		t[wc->n_users].cost = cost;
		wc->n_users++;
		if (!t[wc->n_users - 1].name || !t[wc->n_users - 1].hash)
			return -ENOMEM;
	}
	return 0;
}

/* The document's top level: a mapping of the three sections, or empty. */
static int parse_root(struct parse_ctx *p, const yaml_node_t *root, struct web_config *wc)
{
	int rc;

	if (!root || is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return fail(p, root, "expected a mapping at the top");
	if (unique_keys(p, root))
		return -EINVAL;
	FOR_PAIRS(p, root, pair)
	{
		yaml_node_t *k = yaml_document_get_node(p->doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
		const char *key = scalar(k);

		if (key && !strcmp(key, "tls_server_config"))
			rc = parse_tls(p, v, wc);
		else if (key && !strcmp(key, "http_server_config"))
			rc = parse_server(p, v, wc);
		else if (key && !strcmp(key, "basic_auth_users"))
			rc = parse_users(p, v, wc);
		else
			rc = fail(p, k,
				  "unknown key \"%s\" (known: tls_server_config, "
				  "http_server_config, basic_auth_users)",
				  key ? key : "?");
		if (rc)
			return rc;
	}
	return 0;
}

/* The cache of recent password checks, keyed by a random HMAC key. */
static int auth_cache_init(struct parse_ctx *p, struct web_config *wc)
{
	wc->cache = calloc(1, sizeof(*wc->cache));
	if (!wc->cache ||
	    getrandom(wc->cache->key, sizeof(wc->cache->key), 0) != (ssize_t)sizeof(wc->cache->key))
		return fail(p, NULL, "cannot set up the authentication cache");
	pthread_mutex_init(&wc->cache->lock, NULL);
	return 0;
}

struct web_config *web_config_parse(const char *text, size_t len, const char *path, char *err,
				    size_t errlen)
{
	struct parse_ctx p = {.path = path, .err = err, .errlen = errlen};
	yaml_parser_t parser;
	yaml_document_t doc;
	struct web_config *wc;
	char tmp[4096];
	int rc;

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(p.dir, sizeof(p.dir), "%s", dirname(tmp));
	wc = calloc(1, sizeof(*wc));
	if (!wc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "out of memory");
		free(wc);
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "%s:%zu: %s", path, parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "YAML syntax error");
		yaml_parser_delete(&parser);
		free(wc);
		return NULL;
	}
	p.doc = &doc;
	rc = parse_root(&p, yaml_document_get_root_node(&doc), wc);
	if (!rc)
		rc = auth_cache_init(&p, wc);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc) {
		web_config_free(wc);
		return NULL;
	}
	return wc;
}

struct web_config *web_config_load(const char *path, char *err, size_t errlen)
{
	struct web_config *wc;
	size_t len;
	char *text = web_file_read(path, &len, err, errlen);

	if (!text)
		return NULL;
	wc = web_config_parse(text, len, path, err, errlen);
	free(text);
	return wc;
}

void web_config_free(struct web_config *wc)
{
	if (!wc)
		return;
	free(wc->cert_pem);
	free(wc->cert_file);
	free(wc->key_file);
	if (wc->key_pem) {
		explicit_bzero(wc->key_pem, strlen(wc->key_pem));
		free(wc->key_pem);
	}
	free(wc->client_ca_pem);
	free(wc->tls_priorities);
	for (size_t i = 0; i < wc->n_headers; i++) {
		free(wc->headers[i].name);
		free(wc->headers[i].value);
	}
	free(wc->headers);
	for (size_t i = 0; i < wc->n_users; i++) {
		free(wc->users[i].name);
		free(wc->users[i].hash);
	}
	free(wc->users);
	if (wc->cache) {
		pthread_mutex_destroy(&wc->cache->lock);
		explicit_bzero(wc->cache, sizeof(*wc->cache));
		free(wc->cache);
	}
	free(wc);
}

/* ---- authentication ---- */

static bool digest_equal(const unsigned char *a, const unsigned char *b)
{
	unsigned char d = 0;

	for (size_t i = 0; i < DIGEST_LEN; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

static bool bcrypt_check(const char *hash, const char *password)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *r;
	bool ok = false;

	if (!cd)
		return false;
	r = crypt_rn(password, hash, cd, sizeof(*cd));
	if (r && strlen(r) == strlen(hash)) {
		unsigned char d = 0;

		for (size_t i = 0; hash[i]; i++)
			d |= (unsigned char)(r[i] ^ hash[i]);
		ok = d == 0;
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok;
}

/* HMAC(process key, user NUL password): what the cache keeps, never the
 * password itself. */
static bool auth_digest(const struct web_auth_cache *c, const char *user, const char *password,
			unsigned char digest[DIGEST_LEN])
{
	gnutls_hmac_hd_t hm;

	if (gnutls_hmac_init(&hm, GNUTLS_MAC_SHA256, c->key, sizeof(c->key)) < 0)
		return false;
	gnutls_hmac(hm, user, strlen(user) + 1);
	gnutls_hmac(hm, password, strlen(password));
	gnutls_hmac_deinit(hm, digest);
	return true;
}

/* The cached verdict of a digest: 1 ok, 0 refused, -1 not cached. */
static int cache_lookup(struct web_auth_cache *c, const unsigned char *digest)
{
	int verdict = -1;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < AUTH_CACHE_SIZE; i++) {
		struct auth_entry *e = &c->e[i];

		if (e->used && digest_equal(e->digest, digest)) {
			e->tick = ++c->tick;
			verdict = e->ok;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return verdict;
}

static void cache_store(struct web_auth_cache *c, const unsigned char *digest, bool ok)
{
	struct auth_entry *slot = NULL;

	/* A free entry, else the oldest refusal, else (for a good pair) the
	 * oldest good one: refused pairs never push a good one out, so that
	 * guessed passwords cannot make a scraper's pair need a bcrypt. */
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < AUTH_CACHE_SIZE; i++) {
		struct auth_entry *e = &c->e[i];

		if (!e->used) {
			slot = e;
			break;
		}
		if (e->ok && !ok)
			continue;
		if (!slot || (slot->ok && !e->ok) || (slot->ok == e->ok && e->tick < slot->tick))
			slot = e;
	}
	if (!slot) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	memcpy(slot->digest, digest, DIGEST_LEN);
	slot->used = true;
	slot->ok = ok;
	slot->tick = ++c->tick;
	pthread_mutex_unlock(&c->lock);
}

/* What an unknown user's password is checked against, so that it costs
 * what the dearest known user costs: that user's own hash (the verdict is
 * thrown away), or the built-in dummy when there are no users. */
static const char *dummy_for(const struct web_config *wc)
{
	const char *h = dummy_hash;
	int best = 0;

	for (size_t i = 0; i < wc->n_users; i++)
		if (wc->users[i].cost > best) {
			best = wc->users[i].cost;
			h = wc->users[i].hash;
		}
	return h;
}

unsigned web_auth_cost(const struct web_config *wc, const char *user)
{
	if (!wc)
		return 0;
	int c;

	for (size_t i = 0; user && i < wc->n_users; i++)
		if (!strcmp(wc->users[i].name, user))
			return (unsigned)wc->users[i].cost;
	c = bcrypt_cost(dummy_for(wc));
	return c > 0 ? (unsigned)c : 0;
}

int web_auth_cached(struct web_config *wc, const char *user, const char *password)
{
	unsigned char digest[DIGEST_LEN];
	int verdict;

	if (!wc || !wc->cache || !user || !password)
		return 0;
	if (!auth_digest(wc->cache, user, password, digest))
		return 0;
	verdict = cache_lookup(wc->cache, digest);
	explicit_bzero(digest, sizeof(digest));
	return verdict;
}

bool web_auth_check(struct web_config *wc, const char *user, const char *password)
{
	unsigned char digest[DIGEST_LEN];
	const struct web_user *u = NULL;
	int verdict;
	bool ok;

	if (!wc || !wc->cache || !user || !password)
		return false;
	for (size_t i = 0; i < wc->n_users; i++)
		if (!strcmp(wc->users[i].name, user))
			u = &wc->users[i];
	if (!auth_digest(wc->cache, user, password, digest))
		return false;
	verdict = cache_lookup(wc->cache, digest);
	if (verdict >= 0) {
		explicit_bzero(digest, sizeof(digest));
		return verdict;
	}
	/* Not seen: one bcrypt (an unknown user against the dearest known
	 * user's hash, so that it takes as long). */
	ok = bcrypt_check(u ? u->hash : dummy_for(wc), password) && u;
	cache_store(wc->cache, digest, ok);
	explicit_bzero(digest, sizeof(digest));
	return ok;
}
