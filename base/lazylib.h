/* SPDX-License-Identifier: MIT */
/*
 * lazylib: libcurl and snappy, loaded with dlopen() by the features that
 * need them (remote_write, [export.NAME], the IFS alert push: all in
 * exporters/), never linked.
 *
 * Why: both are off by default, but a linked libcurl maps its whole
 * dependency tree (OpenSSL, Kerberos, LDAP, SSH, nghttp2, ...: ~3.3 MiB of
 * resident file pages) and snappy libstdc++ (~1 MiB) into every agent,
 * a third of its idle RSS (issue #23, docs/performance.md).
 *
 * Each library is opened once, on the first call of its accessor (from any
 * thread), by its run-time soname, and its functions resolved into a typed
 * table whose prototypes come from the library's own headers. It is never
 * closed. A failure is not remembered: a later call tries again (the
 * package may have been installed meanwhile). In base: the exporters use
 * it, and the agent's --version names what it would load. Its curl and
 * snappy headers reach the exporters' layer only (exporters/CMakeLists.txt).
 */
#ifndef SYSOBS_LAZYLIB_H
#define SYSOBS_LAZYLIB_H

#include <stddef.h>

#include <curl/curl.h>
#include <snappy-c.h>

/* The run-time sonames, and the Debian packages that ship them. */
#define LAZYLIB_CURL_SONAME    "libcurl.so.4"
#define LAZYLIB_CURL_PACKAGE   "libcurl4"
#define LAZYLIB_SNAPPY_SONAME  "libsnappy.so.1"
#define LAZYLIB_SNAPPY_PACKAGE "libsnappy1v5"

struct lazylib_curl {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_version_info) *version_info;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	/* curl_easy_setopt and _getinfo are variadic; without typecheck-gcc.h's
	 * macro around them, pass a long, a pointer or a curl_off_t exactly as
	 * the option's documentation says. */
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_free) *free;
	__typeof__(curl_getdate) *getdate;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_cleanup) *url_cleanup;
};

struct lazylib_snappy {
	__typeof__(snappy_compress) *compress;
	__typeof__(snappy_max_compressed_length) *max_compressed_length;
};

/*
 * The table, the library loaded on the first call. NULL when it cannot be
 * loaded: then why (if not NULL) points to a message that names the file,
 * dlerror()'s reason and the package to install, valid until the next
 * failed call.
 */
const struct lazylib_curl *lazylib_curl(const char **why);
const struct lazylib_snappy *lazylib_snappy(const char **why);

#endif
