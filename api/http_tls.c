/* SPDX-License-Identifier: MIT */
/*
 * The server's certificate and key, given to libmicrohttpd per handshake
 * (MHD_OPTION_HTTPS_CERT_CALLBACK) instead of once at start, so that a
 * renewed certificate is served without a restart: as exporter-toolkit
 * does, the files are looked at again (at most once a second, by their
 * inode, size and mtime) when a handshake asks, and on SIGHUP
 * (http_tls_reload). A new pair that does not load, or whose key does not
 * match its certificate, is refused with a log line and the old one stays.
 *
 * A pair that was replaced is kept until the server stops: a handshake in
 * progress may still use it (reloads are rare; each costs a few KiB).
 *
 * The callback has no argument of its own: the one server with TLS in the
 * process is a file-scope pointer.
 */
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/http_internal.h"
#include "api/webconfig.h"
#include "base/log.h"

#define TLS_CHAIN_MAX  16
#define TLS_RECHECK_NS 1000000000LL /* files looked at no more often */

struct http_tls_pair {
	struct http_tls_pair *older;
	gnutls_pcert_st pcert[TLS_CHAIN_MAX];
	unsigned n_pcert;
	gnutls_privkey_t key;
};

static struct http_tls *the_tls; /* the process's one TLS server */

static void pair_free(struct http_tls_pair *p)
{
	while (p) {
		struct http_tls_pair *older = p->older;

		for (unsigned i = 0; i < p->n_pcert; i++)
			gnutls_pcert_deinit(&p->pcert[i]);
		if (p->key)
			gnutls_privkey_deinit(p->key);
		free(p);
		p = older;
	}
}

/* A pair from PEM text, the key checked against the certificate as the
 * server's own start checks it (webconfig.c). NULL with msg. */
static struct http_tls_pair *pair_load(const char *cert_pem, const char *key_pem, char *msg,
				       size_t msglen)
{
	gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
	struct http_tls_pair *p;
	int rc;

	if (web_tls_pair_check(cert_pem, key_pem, msg, msglen))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	p->n_pcert = TLS_CHAIN_MAX;
	rc =
	    gnutls_pcert_list_import_x509_raw(p->pcert, &p->n_pcert, &cert, GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0) {
		p->n_pcert = 0;
		goto out_fail;
	}
	rc = gnutls_privkey_init(&p->key);
	if (rc >= 0)
		rc = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0)
		goto out_fail;
	return p;

out_fail:
	snprintf(msg, msglen, "%s", gnutls_strerror(rc));
	pair_free(p);
	return NULL;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Looks at the files (lock held): a changed pair is loaded and served from
 * now on; a bad one is logged once per change and the old one kept. 1 when
 * a new pair is served, 0 unchanged, -1 refused.
 */
static int tls_check(struct http_tls *t)
{
	struct stat cs, ks;
	char msg[256];
	char *cert = NULL, *key = NULL;
	struct http_tls_pair *p;
	size_t len;
	int ret = -1;

	if (stat(t->cert_file, &cs) || stat(t->key_file, &ks)) {
		if (!t->refused)
			log_warn("http",
				 "TLS: cannot read %s or %s (%s): serving the certificate "
				 "loaded before",
				 t->cert_file, t->key_file, strerror(errno));
		t->refused = true;
		return -1;
	}
	if (same_file(&cs, &t->cert_st) && same_file(&ks, &t->key_st))
		return 0;
	if (t->refused && same_file(&cs, &t->bad_cert_st) && same_file(&ks, &t->bad_key_st))
		return -1; /* the bad pair already said */
	/* read after the stat: a file replaced in between is read again at
	 * the next look, its stat then differing from the one kept */
	cert = web_file_read(t->cert_file, &len, msg, sizeof(msg));
	key = cert ? web_file_read(t->key_file, &len, msg, sizeof(msg)) : NULL;
	p = key ? pair_load(cert, key, msg, sizeof(msg)) : NULL;
	if (!p) {
		log_warn("http",
			 "TLS: the new %s / %s cannot be used (%s): serving the "
			 "certificate loaded before",
			 t->cert_file, t->key_file, msg);
		t->refused = true;
		t->bad_cert_st = cs;
		t->bad_key_st = ks;
		goto out;
	}
	p->older = t->pair;
	t->pair = p;
	t->cert_st = cs;
	t->key_st = ks;
	t->refused = false;
	t->reloads++;
	log_info("http", "TLS: serving the certificate of %s (changed)", t->cert_file);
	ret = 1;
out:
	free(cert);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	return ret;
}

static int cert_cb(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
		   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
		   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
	struct http_tls *t = the_tls;
	int64_t now = clock_mono_ns();

	(void)session;
	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!t)
		return -1;
	pthread_mutex_lock(&t->lock);
	if (now - t->checked_ns >= TLS_RECHECK_NS) {
		t->checked_ns = now;
		tls_check(t);
	}
	*pcert = t->pair->pcert;
	*pcert_length = t->pair->n_pcert;
	*privkey = t->pair->key;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void *http_tls_callback(void)
{
	return (void *)cert_cb;
}

int http_tls_init(struct http_server *h)
{
	struct http_tls *t = &h->tls_state;
	const struct web_config *w = h->web;
	char msg[256];

	if (!h->tls || !w || !w->cert_file || !w->key_file)
		return 0;
	if (the_tls)
		return -EBUSY;
	t->pair = pair_load(w->cert_pem, w->key_pem, msg, sizeof(msg));
	if (!t->pair) {
		log_err("http", "TLS: %s / %s: %s", w->cert_file, w->key_file, msg);
		return -EINVAL;
	}
	t->cert_file = strdup(w->cert_file);
	t->key_file = strdup(w->key_file);
	if (!t->cert_file || !t->key_file)
		return -ENOMEM;
	/* What was read at load: a file replaced since is read again at the
	 * first handshake. */
	if (stat(t->cert_file, &t->cert_st) || stat(t->key_file, &t->key_st))
		memset(&t->cert_st, 0, sizeof(t->cert_st));
	t->checked_ns = clock_mono_ns();
	pthread_mutex_init(&t->lock, NULL);
	t->initialized = true;
	the_tls = t;
	return 0;
}

int http_tls_reload(struct http_server *h)
{
	struct http_tls *t = h ? &h->tls_state : NULL;
	int r;

	if (!t || !t->initialized)
		return 0;
	pthread_mutex_lock(&t->lock);
	t->checked_ns = clock_mono_ns();
	r = tls_check(t);
	if (r == 0)
		log_info("http", "TLS: %s unchanged", t->cert_file);
	pthread_mutex_unlock(&t->lock);
	return r;
}

void http_tls_free(struct http_server *h)
{
	struct http_tls *t = &h->tls_state;

	if (the_tls == t)
		the_tls = NULL;
	if (t->initialized)
		pthread_mutex_destroy(&t->lock);
	pair_free(t->pair);
	free(t->cert_file);
	free(t->key_file);
	memset(t, 0, sizeof(*t));
}
