/* SPDX-License-Identifier: MIT */
/* api/webconfig.c: exporter-toolkit web config parsing and the bcrypt check. */
#include <crypt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "api/webconfig.h"

static char dir[64], cfg_path[128];
static char hash_pw[128]; /* bcrypt of "pw", cost 4 */

static void write_file(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A new EC key as PEM into name, and (cert_name not NULL) a self-signed
 * certificate of it into cert_name. 0 or -1. */
static int write_key_cert(const char *key_name, const char *cert_name)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t out;
	unsigned char serial = 1;
	int rc = -1;

	if (gnutls_x509_privkey_init(&key) < 0)
		return -1;
	if (gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
	    gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out) < 0)
		goto out_key;
	write_file(key_name, (const char *)out.data);
	gnutls_free(out.data);
	if (!cert_name) {
		rc = 0;
		goto out_key;
	}
	if (gnutls_x509_crt_init(&crt) < 0)
		goto out_key;
	if (gnutls_x509_crt_set_version(crt, 3) >= 0 &&
	    gnutls_x509_crt_set_serial(crt, &serial, 1) >= 0 &&
	    gnutls_x509_crt_set_activation_time(crt, time(NULL) - 60) >= 0 &&
	    gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 3600) >= 0 &&
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9) >=
		0 &&
	    gnutls_x509_crt_set_key(crt, key) >= 0 &&
	    gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) >= 0 &&
	    gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &out) >= 0) {
		write_file(cert_name, (const char *)out.data);
		gnutls_free(out.data);
		rc = 0;
	}
	gnutls_x509_crt_deinit(crt);
out_key:
	gnutls_x509_privkey_deinit(key);
	return rc;
}

static int setup(void **state)
{
	struct crypt_data cd = {0};
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sysobs-webcfg.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(cfg_path, sizeof(cfg_path), "%s/web.yml", dir);
	if (write_key_cert("server.key", "server.crt") || write_key_cert("ca.key", "ca.crt") ||
	    write_key_cert("other.key", NULL))
		return -1;
	write_file("fake.crt", "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n");
	write_file("plain.txt", "not a certificate\n");
	if (!crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)))
		return -1;
	snprintf(hash_pw, sizeof(hash_pw), "%s", crypt_r("pw", salt, &cd));
	return strncmp(hash_pw, "$2b$04$", 7) ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static struct web_config *parse(const char *text, char *err, size_t errlen)
{
	err[0] = '\0';
	return web_config_parse(text, strlen(text), cfg_path, err, errlen);
}

static void test_node_exporter_file(void **state)
{
	char text[1024], err[512];
	struct web_config *wc;

	(void)state;
	snprintf(text, sizeof(text),
		 "# node_exporter\n"
		 "tls_server_config:\n"
		 "  cert_file: server.crt\n"
		 "  key_file: server.key\n"
		 "  min_version: TLS13\n"
		 "  prefer_server_cipher_suites: true\n"
		 "  cipher_suites: []\n"
		 "http_server_config:\n"
		 "  http2: false\n"
		 "  headers:\n"
		 "    x-frame-options: deny\n"
		 "basic_auth_users:\n"
		 "  alice: %s\n"
		 "  bob: '%s'\n",
		 hash_pw, hash_pw);
	wc = parse(text, err, sizeof(err));
	assert_non_null(wc);
	assert_non_null(strstr(wc->cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(wc->key_pem, "PRIVATE KEY"));
	assert_null(wc->client_ca_pem);
	assert_int_equal(wc->client_auth, WEB_CLIENT_NONE);
	assert_string_equal(wc->tls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
	assert_int_equal(wc->n_headers, 1);
	assert_string_equal(wc->headers[0].name, "X-Frame-Options"); /* canonical case */
	assert_string_equal(wc->headers[0].value, "deny");
	assert_int_equal(wc->n_users, 2);
	assert_string_equal(wc->users[1].name, "bob");
	web_config_free(wc);
}

static void test_empty_and_defaults(void **state)
{
	char err[512];
	struct web_config *wc;

	(void)state;
	wc = parse("", err, sizeof(err));
	assert_non_null(wc);
	assert_null(wc->cert_pem);
	assert_int_equal(wc->n_users, 0);
	web_config_free(wc);
	wc = parse("tls_server_config:\nbasic_auth_users: {}\n", err, sizeof(err));
	assert_non_null(wc);
	assert_null(wc->tls_priorities);
	web_config_free(wc);
	/* a client CA alone means RequireAndVerifyClientCert, TLS 1.2+ */
	wc = parse("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		   "  client_ca_file: ca.crt\n",
		   err, sizeof(err));
	assert_non_null(wc);
	assert_int_equal(wc->client_auth, WEB_CLIENT_REQUIRE_AND_VERIFY);
	assert_string_equal(wc->tls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	web_config_free(wc);
}

/* The file is refused, and the message names what and where. */
static void refused(const char *text, const char *needle)
{
	char err[512];
	struct web_config *wc = parse(text, err, sizeof(err));

	if (wc)
		fail_msg("accepted: %s", text);
	if (!strstr(err, needle))
		fail_msg("message \"%s\" lacks \"%s\"", err, needle);
}

static void test_refused(void **state)
{
	(void)state;
	refused("tls_server_confg: {}\n", "unknown key \"tls_server_confg\"");
	refused("basic_auth_users:\n  a: x\n", "web.yml:2:");
	refused("basic_auth_users:\n  a: plaintext\n", "bcrypt");
	refused("basic_auth_users:\n  a: $1$abc$def\n", "bcrypt"); /* MD5-crypt */
	refused("basic_auth_users:\n  'a:b': $2y$04$x\n", "without ':'");
	refused("basic_auth_users:\n  b: $2b$04$x\n", "expected a bcrypt hash");
	refused("basic_auth_users: [a, b]\n", "mapping");
	refused("tls_server_config:\n  cert_file: server.crt\n", "both cert_file and key_file");
	refused("tls_server_config:\n  cert_file: none.crt\n  key_file: server.key\n", "none.crt");
	refused("tls_server_config:\n  cert_file: plain.txt\n  key_file: server.key\n", "not PEM");
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"  client_auth_type: RequireAndVerifyClientCert\n",
		"needs client_ca_file");
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"  client_ca_file: ca.crt\n  client_auth_type: NoClientCert\n",
		"NoClientCert");
	refused("tls_server_config:\n  client_auth_type: Sometimes\n", "client_auth_type");
	/* what GnuTLS would refuse at the server's start (issue 30) */
	refused(
	    "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n",
	    "web.yml:3: key_file and cert_file: The certificate and the given key do not match");
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"  client_ca_file: fake.crt\n",
		"web.yml:4: client_ca_file: ");
	refused("tls_server_config:\n  cert_file: fake.crt\n  key_file: server.key\n",
		"web.yml:3: key_file and cert_file: ");
	refused("tls_server_config:\n  min_version: TLS14\n", "TLS10, TLS11");
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"  min_version: TLS13\n  max_version: TLS12\n",
		"min_version is above max_version");
	refused("tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		"cipher_suites is not supported");
	refused("tls_server_config:\n  client_allowed_sans: [a]\n", "client_allowed_sans");
	refused("http_server_config:\n  headers:\n    Set-Cookie: a=b\n", "cannot be set");
	refused("http_server_config:\n  hdrs: {}\n", "unknown key \"hdrs\"");
	refused("basic_auth_users: [\n", "web.yml:");
	refused("- a\n- b\n", "mapping at the top");
	/* A key given twice: the second section replaced the first's files
	 * and leaked its priorities (LeakSanitizer in fuzz.webconfig). */
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n",
		"web.yml:4: \"tls_server_config\" given twice (first on line 1)");
	refused("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"  cert_file: other.crt\n",
		"web.yml:4: \"cert_file\" given twice (first on line 2)");
	refused("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
		"    X-Frame-Options: sameorigin\n",
		"given twice (first on line 3)");
}

/* A hash's cost outside 4-14 is refused at once, naming its line; one
 * inside is kept with the user (issue 30: $2b$31$ hung the start). */
static void test_bcrypt_cost_policy(void **state)
{
	char text[512], err[512], hash[128];
	struct web_config *wc;
	struct timespec t0, t1;
	static const int costs[] = {3, 14, 31, 99};

	(void)state;
	for (size_t i = 0; i < sizeof(costs) / sizeof(costs[0]); i++) {
		int cost = costs[i];

		snprintf(hash, sizeof(hash), "%s", hash_pw);
		hash[4] = (char)('0' + cost / 10);
		hash[5] = (char)('0' + cost % 10);
		snprintf(text, sizeof(text), "basic_auth_users:\n  alice: %s\n  bob: %s\n", hash_pw,
			 hash);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		wc = parse(text, err, sizeof(err));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		/* the form is checked at cost 4: never seconds */
		assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec <
			    500000000L);
		if (cost == 14) {
			assert_non_null(wc);
			assert_int_equal(wc->users[0].cost, 4);
			assert_int_equal(wc->users[1].cost, 14);
			web_config_free(wc);
			continue;
		}
		assert_null(wc);
		snprintf(text, sizeof(text),
			 "web.yml:3: basic_auth_users: bob: bcrypt cost %d outside 4-14", cost);
		if (!strstr(err, text))
			fail_msg("message \"%s\" lacks \"%s\"", err, text);
	}
}

static void test_auth(void **state)
{
	char text[256], err[512];
	struct web_config *wc;

	(void)state;
	snprintf(text, sizeof(text), "basic_auth_users:\n  alice: %s\n", hash_pw);
	wc = parse(text, err, sizeof(err));
	assert_non_null(wc);
	assert_true(web_auth_check(wc, "alice", "pw"));
	assert_true(web_auth_check(wc, "alice", "pw")); /* from the cache */
	assert_false(web_auth_check(wc, "alice", "pw2"));
	assert_false(web_auth_check(wc, "alice", "pw2"));
	assert_false(web_auth_check(wc, "alice", ""));
	assert_false(web_auth_check(wc, "bob", "pw"));	 /* unknown user */
	assert_false(web_auth_check(wc, "alic", "epw")); /* the pair, not a concatenation */
	/* more distinct passwords than the cache holds: still right */
	for (int i = 0; i < 70; i++) {
		char pw[16];

		snprintf(pw, sizeof(pw), "x%d", i);
		assert_false(web_auth_check(wc, "alice", pw));
	}
	assert_true(web_auth_check(wc, "alice", "pw"));
	assert_false(web_auth_check(NULL, "alice", "pw"));
	assert_false(web_auth_check(wc, NULL, "pw"));
	web_config_free(wc);
	web_config_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_exporter_file),
	    cmocka_unit_test(test_empty_and_defaults),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_bcrypt_cost_policy),
	    cmocka_unit_test(test_auth),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
