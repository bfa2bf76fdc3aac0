// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the web config (--web.config.file, the exporter-toolkit
 * YAML: web_config_parse, api/webconfig.c). The config's relative file
 * names resolve in a directory of the target's own holding cert.pem and
 * key.pem, a real self-signed ECDSA pair (openssl), so the TLS checks run
 * on real files. Any input is a config or NULL with a message; a config
 * frees cleanly. The seeds are the forms exporter-toolkit's
 * docs/web-configuration.md documents (TLS, mutual TLS, headers, bcrypt
 * users at cost 4), and refusals: a missing file, inline PEM, a bad or
 * over-cost hash, YAML that is no mapping, an alias loop, flow junk.
 */
#include <stdbool.h>
#include <unistd.h>

#include "api/webconfig.h"
#include "tests/fuzz/fuzz_common.h"

static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\n"
			       "MIIBgDCCASWgAwIBAgIUUdALqJsmIWL1OXYgfWtSy56qcSMwCgYIKoZIzj0EAwIw\n"
			       "FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwNjIwMTEyOFoYDzIxMjYxMTEy\n"
			       "MjAxMTI4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
			       "PQMBBwNCAATN9qjyCI9Dp5zyXM0vhoIRuVl3zWJDva69oKR4y8HLPiECnVp/Vdz/\n"
			       "Km6YzYgk31EuRVhEgMFrJgUPpzwIJASSo1MwUTAdBgNVHQ4EFgQU120K1kEwPjBp\n"
			       "1Kkr8FMbaHm8tYwwHwYDVR0jBBgwFoAU120K1kEwPjBp1Kkr8FMbaHm8tYwwDwYD\n"
			       "VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA4FJTXcUISRrFAbWkh8kX\n"
			       "xT07Id2K2X8bq/WPmHrg574CIQDZHmwouP5PvHLq57rSbuZwe9ctEev75fC4E5zt\n"
			       "Nst/hA==\n"
			       "-----END CERTIFICATE-----\n";
static const char key_pem[] = "-----BEGIN EC PRIVATE KEY-----\n"
			      "MHcCAQEEIG3Ayc955grSWKBbeLMW/uzmR0m0SoiJgRHJkh3LpBHEoAoGCCqGSM49\n"
			      "AwEHoUQDQgAEzfao8giPQ6ec8lzNL4aCEblZd81iQ72uvaCkeMvByz4hAp1af1Xc\n"
			      "/ypumM2IJN9RLkVYRIDBayYFD6c8CCQEkg==\n"
			      "-----END EC PRIVATE KEY-----\n";

static char dir[64];

static void cleanup(void)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/cert.pem", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/key.pem", dir);
	unlink(p);
	rmdir(dir);
}

static bool put(const char *name, const char *text)
{
	char p[96];
	FILE *f;
	bool ok;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f)
		return false;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

/* The directory of the config, made once (the replay has no initializer). */
static const char *config_path(void)
{
	static char path[96];

	if (!path[0]) {
		snprintf(dir, sizeof(dir), "/tmp/sysobs-fuzz-webconfig.XXXXXX");
		FUZZ_CHECK(mkdtemp(dir), "mkdtemp");
		atexit(cleanup);
		FUZZ_CHECK(put("cert.pem", cert_pem) && put("key.pem", key_pem), "PEM files");
		snprintf(path, sizeof(path), "%s/web.yml", dir);
	}
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct web_config *wc;
	char err[512];

	if (size > 1 << 16)
		return 0;
	err[0] = '\0';
	wc = web_config_parse((const char *)data, size, config_path(), err, sizeof(err));
	if (!wc) {
		FUZZ_CHECK(err[0] && strnlen(err, sizeof(err)) < sizeof(err),
			   "refused without a message");
		return 0;
	}
	for (size_t i = 0; i < wc->n_users; i++)
		FUZZ_CHECK(wc->users[i].name && wc->users[i].hash, "user %zu", i);
	web_config_free(wc);
	return 0;
}
