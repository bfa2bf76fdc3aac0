// SPDX-License-Identifier: MIT
/*
 * Run-time loading of libcurl and snappy (base/lazylib.h): one generic
 * loader over a list of {symbol, offset in the table} per library.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/lazylib.h"

struct lazylib_sym {
	const char *name;
	size_t off; /* of the function pointer in the table */
};

struct lazylib {
	const char *soname, *package;
	const struct lazylib_sym *syms;
	size_t n_syms;
	void *table;
	bool loaded; /* read without the lock once true (acquire/release) */
};

#define SYM(type, member, sym)                                                                     \
	{                                                                                          \
#sym, offsetof(type, member)                                                       \
	}
#define CURL_SYM(member, sym) SYM(struct lazylib_curl, member, sym)

static const struct lazylib_sym curl_syms[] = {
    CURL_SYM(global_init, curl_global_init),
    CURL_SYM(global_cleanup, curl_global_cleanup),
    CURL_SYM(version_info, curl_version_info),
    CURL_SYM(easy_init, curl_easy_init),
    CURL_SYM(easy_reset, curl_easy_reset),
    CURL_SYM(easy_cleanup, curl_easy_cleanup),
    CURL_SYM(easy_setopt, curl_easy_setopt),
    CURL_SYM(easy_getinfo, curl_easy_getinfo),
    CURL_SYM(easy_perform, curl_easy_perform),
    CURL_SYM(easy_strerror, curl_easy_strerror),
    CURL_SYM(easy_escape, curl_easy_escape),
    CURL_SYM(slist_append, curl_slist_append),
    CURL_SYM(slist_free_all, curl_slist_free_all),
    CURL_SYM(free, curl_free),
    CURL_SYM(getdate, curl_getdate),
    CURL_SYM(url, curl_url),
    CURL_SYM(url_set, curl_url_set),
    CURL_SYM(url_get, curl_url_get),
    CURL_SYM(url_cleanup, curl_url_cleanup),
};

static const struct lazylib_sym snappy_syms[] = {
    SYM(struct lazylib_snappy, compress, snappy_compress),
    SYM(struct lazylib_snappy, max_compressed_length, snappy_max_compressed_length),
};

static struct lazylib_curl curl_table;
static struct lazylib_snappy snappy_table;

static struct lazylib curl_lib = {LAZYLIB_CURL_SONAME, LAZYLIB_CURL_PACKAGE, curl_syms,
				  sizeof(curl_syms) / sizeof(curl_syms[0]), &curl_table};
static struct lazylib snappy_lib = {LAZYLIB_SNAPPY_SONAME, LAZYLIB_SNAPPY_PACKAGE, snappy_syms,
				    sizeof(snappy_syms) / sizeof(snappy_syms[0]), &snappy_table};

static pthread_mutex_t lazylib_lock = PTHREAD_MUTEX_INITIALIZER;
/* The failing caller's message: per thread, so a concurrent failure in
 * another thread does not rewrite it under the caller. */
static __thread char lazylib_why[512];

/* 0, or -1 with lazylib_why set. Under lazylib_lock. */
static int lazylib_open(struct lazylib *l)
{
	/* RTLD_LOCAL: the symbols are reached through the table only.
	 * Never closed: libcurl's TLS backends keep state past cleanup, and a
	 * function pointer taken from the table must stay valid. */
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	char *tmp = l->table;

	if (!h) {
		snprintf(lazylib_why, sizeof(lazylib_why), "%s (install the package %s)", dlerror(),
			 l->package);
		return -1;
	}
	for (size_t i = 0; i < l->n_syms; i++) {
		void *f = dlsym(h, l->syms[i].name);

		if (!f) {
			snprintf(lazylib_why, sizeof(lazylib_why),
				 "%s has no %s: too old (upgrade the package %s)", l->soname,
				 l->syms[i].name, l->package);
			dlclose(h); /* no pointer of it was handed out */
			return -1;
		}
		/* POSIX guarantees a function pointer round-trips through void *
		 * (dlsym's own contract). */
		memcpy(tmp + l->syms[i].off, &f, sizeof(f));
	}
	return 0;
}

static const void *lazylib_get(struct lazylib *l, const char **why)
{
	if (!__atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE)) {
		int rc;

		pthread_mutex_lock(&lazylib_lock);
		rc = l->loaded ? 0 : lazylib_open(l);
		if (!rc)
			__atomic_store_n(&l->loaded, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&lazylib_lock);
		if (rc) {
			if (why)
				*why = lazylib_why;
			return NULL;
		}
	}
	return l->table;
}

const struct lazylib_curl *lazylib_curl(const char **why)
{
	return lazylib_get(&curl_lib, why);
}

const struct lazylib_snappy *lazylib_snappy(const char **why)
{
	return lazylib_get(&snappy_lib, why);
}
