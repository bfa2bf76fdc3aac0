/* SPDX-License-Identifier: MIT */
/*
 * The web configuration file of the Prometheus exporter-toolkit
 * (--web.config.file), so that a node_exporter web-config works unchanged:
 *
 *   tls_server_config:
 *     cert_file: server.crt
 *     key_file: server.key
 *     client_auth_type: RequireAndVerifyClientCert
 *     client_ca_file: ca.crt
 *     min_version: TLS12
 *   http_server_config:
 *     headers: {Strict-Transport-Security: max-age=31536000}
 *   basic_auth_users:
 *     alice: $2y$10$...   # bcrypt
 *
 * The files are read at load time (before the agent drops privileges);
 * relative paths are relative to the web-config file, as in the toolkit.
 * A key this build does not know or cannot honour is an error, never
 * silently ignored.
 */
#ifndef SYSOBS_WEBCONFIG_H
#define SYSOBS_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum web_client_auth {
	WEB_CLIENT_NONE,	       /* NoClientCert */
	WEB_CLIENT_REQUEST,	       /* RequestClientCert */
	WEB_CLIENT_REQUIRE_ANY,	       /* RequireAnyClientCert */
	WEB_CLIENT_VERIFY_IF_GIVEN,    /* VerifyClientCertIfGiven */
	WEB_CLIENT_REQUIRE_AND_VERIFY, /* RequireAndVerifyClientCert */
};

struct web_header {
	char *name, *value;
};

/* The bcrypt costs a basic_auth_users hash may have: what htpasswd and
 * exporter-toolkit users generate (htpasswd -B: 5, Go's bcrypt: 10). A
 * cost outside is refused at load, file:line, before any hash is run
 * ($2b$31$ hung the start for hours, deaf to SIGTERM). */
#define WEB_BCRYPT_COST_MIN 4
#define WEB_BCRYPT_COST_MAX 14

struct web_user {
	char *name;
	char *hash; /* bcrypt, "$2y$..." / "$2b$..." / "$2a$..." */
	int cost;   /* the hash's, WEB_BCRYPT_COST_MIN to _MAX */
};

struct web_auth_cache;

struct web_config {
	/* TLS: PEM text read from the files; NULL when TLS is off. */
	char *cert_pem, *key_pem, *client_ca_pem;
	char *cert_file, *key_file; /* their paths: re-read when they change */
	enum web_client_auth client_auth;
	char *tls_priorities; /* GnuTLS priority string from min/max_version */
	/* http_server_config.headers: added to every response. */
	struct web_header *headers;
	size_t n_headers;
	/* basic_auth_users; none: no authentication. */
	struct web_user *users;
	size_t n_users;
	struct web_auth_cache *cache;
};

/* A regular file of at most 1 MiB, NUL-terminated (*len its
 * length); NULL with a message in err. */
char *web_file_read(const char *path, size_t *len, char *err, size_t errlen);

/* 0 when the PEM key belongs to the PEM certificate (the first of a
 * chain); -EINVAL with msg otherwise. */
int web_tls_pair_check(const char *cert_pem, const char *key_pem, char *msg, size_t msglen);

/* Loads and validates FILE. NULL with a message in err on any problem. */
struct web_config *web_config_load(const char *path, char *err, size_t errlen);
void web_config_free(struct web_config *wc); /* accepts NULL */

/* Parses YAML text (path only for messages and relative file names). */
struct web_config *web_config_parse(const char *text, size_t len, const char *path, char *err,
				    size_t errlen);

/*
 * Checks a user and password against basic_auth_users: bcrypt once per
 * (user, password), then a keyed SHA-256 of the pair from a small cache,
 * compared in constant time. An unknown user costs one bcrypt as well, at
 * the cost of the dearest known user. Thread-safe. true when they match.
 * Slow on a cache miss (a bcrypt): the HTTP server calls it from its login
 * thread (api/http_login.c), never from a request thread.
 */
bool web_auth_check(struct web_config *wc, const char *user, const char *password);
/* The cached verdict only, without a bcrypt: 1 match, 0 refused, -1 not
 * cached (web_auth_check must decide). Fast; thread-safe. */
int web_auth_cached(struct web_config *wc, const char *user, const char *password);
/* The bcrypt cost a check of USER runs at: its hash's, or for an unknown
 * user (and for NULL) the dearest known user's. */
unsigned web_auth_cost(const struct web_config *wc, const char *user);

#endif
