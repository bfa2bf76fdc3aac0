/* SPDX-License-Identifier: MIT */
/*
 * The sysobs CLI's one way to the agent: a request with libcurl (TLS and
 * basic auth as Prometheus' http_config names them), its answer read into
 * a bounded buffer. Calls cli_print.c (errors); called by cli.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli_internal.h"

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (b->len + n > MAX_BODY)
		return 0; /* curl reports a write error */
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->data = p;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* The password file's first line, as Prometheus reads password_file. */
static int read_password(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(out, (int)size, f)) {
		fclose(f);
		out[0] = '\0';
		return 0;
	}
	fclose(f);
	n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	return 0;
}

/* Appends "&key=value" (escaped) to url. */
static void url_add(CURL *c, char *url, size_t size, const char *key, const char *value)
{
	char *k = curl_easy_escape(c, key, 0), *v = curl_easy_escape(c, value, 0);
	size_t n = strlen(url);

	snprintf(url + n, size - n, "%s%s=%s", strchr(url, '?') ? "&" : "?", k ? k : "",
		 v ? v : "");
	curl_free(k);
	curl_free(v);
}

/* server+path and the query's "key=value" items (escaped; items without
 * '=' dropped) into url. */
static void url_build(CURL *c, char *url, size_t size, const char *server, const char *path,
		      const char *const *query, size_t n_query)
{
	snprintf(url, size, "%s%s", server, path);
	for (size_t i = 0; i < n_query; i++) {
		char kv[2048], *eq;

		snprintf(kv, sizeof(kv), "%s", query[i]);
		eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		url_add(c, url, size, kv, eq + 1);
	}
}

/* Accept (--accept, else JSON or protobuf), and Content-Type for a POST. */
static struct curl_slist *headers_build(const struct opts *o, bool json, bool post)
{
	struct curl_slist *hdr = NULL;

	if (o->accept) {
		char accept[128];

		snprintf(accept, sizeof(accept), "Accept: %s", o->accept);
		hdr = curl_slist_append(hdr, accept);
	} else {
		hdr = curl_slist_append(hdr, json ? "Accept: application/json"
						  : "Accept: application/x-protobuf");
	}
	if (post)
		hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
	return hdr;
}

/* The CA, client certificate and key, and --insecure. */
static void tls_set(CURL *c, const struct opts *o)
{
	if (o->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, o->key_file);
	if (o->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/* Basic auth as "user:password" in auth (the password from
 * --password-file, else empty); the caller clears auth after the request.
 * 0, or -1 after an error line. */
static int auth_set(CURL *c, const struct opts *o, char *auth, size_t size)
{
	char pw[1024] = "";
	int e = o->password_file ? read_password(o->password_file, pw, sizeof(pw)) : 0;

	if (e) {
		err_line("cannot read %s: %s", o->password_file, strerror(-e));
		return -1;
	}
	snprintf(auth, size, "%s:%s", o->user, pw);
	curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	curl_easy_setopt(c, CURLOPT_USERPWD, auth);
	explicit_bzero(pw, sizeof(pw));
	return 0;
}

/*
 * One request: GET (or POST with a protobuf body) server+path with the
 * query parameters; the body lands in *out. Returns the HTTP status, or -1
 * after a one-line transport error.
 */
long http_call(const struct opts *o, const char *path, const char *const *query, size_t n_query,
	       bool json, const void *post, size_t post_len, struct body *out)
{
	char url[8192], errbuf[CURL_ERROR_SIZE] = "", auth[1280] = "";
	struct curl_slist *hdr;
	long code = -1;
	CURLcode rc;
	CURL *c;

	out->data = NULL;
	out->len = 0;
	c = curl_easy_init();
	if (!c) {
		err_line("cannot initialise libcurl");
		return -1;
	}
	url_build(c, url, sizeof(url), o->server, path, query, n_query);
	hdr = headers_build(o, json, post != NULL);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)o->timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sysobs/" SYSOBS_VERSION);
	tls_set(c, o);
	if (o->user && auth_set(c, o, auth, sizeof(auth)))
		goto out;
	if (post) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)post_len);
	}
	rc = curl_easy_perform(c);
	explicit_bzero(auth, sizeof(auth));
	if (rc != CURLE_OK) {
		err_line("%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return code;
}
