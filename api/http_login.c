/* SPDX-License-Identifier: MIT */
/*
 * Password checks off the HTTP threads. A request whose basic-auth pair is
 * not in webconfig.c's cache is held (its connection suspended, no thread
 * asleep) while one login thread runs bcrypt on it, so that guessed
 * passwords cost a core at most and never a request thread: a scrape whose
 * pair is cached is answered by the request threads as if nobody guessed.
 *
 * What an attacker can time is the same for every wrong pair: a refusal
 * leaves at a fixed time after the request began (HTTP_AUTH_DELAY_MS, or
 * twice the dearest bcrypt's recent time when that is longer), whether the user
 * exists or not and whatever its cost (an unknown user is checked against
 * the dearest known user's hash, webconfig.c). Failed logins are limited
 * per client address (an IPv4 address, an IPv6 /64): LOGIN_BURST of them,
 * then one per LOGIN_REFILL_MS, and LOGIN_PENDING_PER_ADDR of its pairs
 * waiting for the login thread at most; past that a request is answered 429
 * at the same fixed time without a bcrypt. A cached good pair is never
 * limited.
 *
 * Called by http_auth.c (http_basic_auth); calls webconfig.c and
 * http_conn.c (hold and release a connection).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/http_internal.h"
#include "api/webconfig.h"
#include "base/log.h"
#include "metrics/metrics.h"

#define LOGIN_BURST	       10   /* failed logins an address may make at once */
#define LOGIN_REFILL_MS	       5000 /* ... then one per this */
#define LOGIN_QUEUE_MAX	       32   /* pairs waiting for a bcrypt; past it: 429 */
#define LOGIN_PENDING_PER_ADDR 2    /* ... of them from one address */

struct http_login_job {
	struct http_login_job *next;
	struct MHD_Connection *conn;
	struct http_conn *c;
	char *user, *pass;
	struct login_key key;
	int64_t refuse_at; /* a refusal leaves then (or when the bcrypt ends) */
};

static const char *const outcome_names[LOGIN_N] = {"ok", "refused", "limited", "busy"};

/* A refusal leaves this long after its request began: the fixed delay, or
 * twice the dearest check's recent time when that is longer. */
static int64_t fail_delay_ns(const struct http_login *l)
{
	int64_t d = (int64_t)HTTP_AUTH_DELAY_MS * 1000000, s = 2 * l->slowest_ns;

	return s > d ? s : d;
}

/* The client address the limit counts by: the address itself, an IPv6
 * one by its /64 (a host has a whole /64 to pick from). */
static struct login_key key_of(const struct sockaddr *sa)
{
	struct login_key k = {0};

	if (sa && sa->sa_family == AF_INET) {
		k.family = AF_INET;
		memcpy(k.addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		k.family = AF_INET6;
		memcpy(k.addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 8);
	}
	return k;
}

/* The bucket of an address (lock held): its own, or the least recently
 * used one, refilled. */
static struct login_bucket *bucket_of(struct http_login *l, const struct login_key *k, int64_t now)
{
	struct login_bucket *b = NULL;

	for (size_t i = 0; i < LOGIN_BUCKETS; i++) {
		struct login_bucket *e = &l->buckets[i];

		if (e->used && !memcmp(&e->key, k, sizeof(*k))) {
			b = e;
			break;
		}
		if (!b || !e->used || (b->used && e->last_ns < b->last_ns))
			b = e;
	}
	if (!b->used || memcmp(&b->key, k, sizeof(*k))) {
		b->used = true;
		b->key = *k;
		b->tokens = LOGIN_BURST;
		b->last_ns = now;
	}
	b->tokens += (double)(now - b->last_ns) / (LOGIN_REFILL_MS * 1e6);
	if (b->tokens > LOGIN_BURST)
		b->tokens = LOGIN_BURST;
	b->last_ns = now;
	return b;
}

static void job_free(struct http_login_job *j)
{
	if (!j)
		return;
	free(j->user);
	if (j->pass)
		explicit_bzero(j->pass, strlen(j->pass));
	free(j->pass);
	free(j);
}

/* A bcrypt of an address is over (lock held): ok gives its token back. */
static void bucket_done(struct http_login *l, const struct login_key *k, bool ok)
{
	struct login_bucket *b = bucket_of(l, k, clock_mono_ns());

	if (b->pending)
		b->pending--;
	if (ok)
		b->tokens += 1;
}

static void count(struct http_login *l, enum login_outcome o)
{
	if (l->outcome[o])
		series_add(l->outcome[o], 1);
}

/* Answers a refused request (deny_status set) at the fixed time after its
 * start, or now when the connection cannot be held. */
static int refuse_later(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c)
{
	int64_t at;

	pthread_mutex_lock(&h->login.lock);
	at = c->start_ns + fail_delay_ns(&h->login);
	pthread_mutex_unlock(&h->login.lock);
	return http_conns_hold(h, conn, at) ? c->deny_status : HTTP_AUTH_PENDING;
}

static void deny(struct http_conn *c, int status, const char *msg)
{
	c->deny_status = status;
	snprintf(c->deny_msg, sizeof(c->deny_msg), "%s", msg);
}

/* A token of k's bucket for a check that may fail (refused from the
 * cache, or a bcrypt: a pending place too), given back when the bcrypt says
 * yes; at most LOGIN_PENDING_PER_ADDR bcrypts of one address waiting, so
 * that one address never fills the queue ahead of the others. false: the
 * address is over its limit. */
static bool bucket_take(struct http_login *l, const struct login_key *k, bool bcrypt)
{
	struct login_bucket *b;
	bool limited;

	pthread_mutex_lock(&l->lock);
	b = bucket_of(l, k, clock_mono_ns());
	limited = b->tokens < 1 || (bcrypt && b->pending >= LOGIN_PENDING_PER_ADDR);
	if (!limited) {
		b->tokens -= 1;
		b->pending += bcrypt;
	}
	pthread_mutex_unlock(&l->lock);
	return !limited;
}

/* The token and pending place of a bcrypt that will not run, back. */
static void bucket_give_back(struct http_login *l, const struct login_key *k)
{
	pthread_mutex_lock(&l->lock);
	bucket_done(l, k, true);
	pthread_mutex_unlock(&l->lock);
}

static struct http_login_job *job_new(struct MHD_Connection *conn, struct http_conn *c,
				      const struct login_key *key, const char *user,
				      const char *pass)
{
	struct http_login_job *j = calloc(1, sizeof(*j));

	if (!j || !(j->user = strdup(user)) || !(j->pass = strdup(pass))) {
		job_free(j);
		return NULL;
	}
	j->conn = conn;
	j->c = c;
	j->key = *key;
	return j;
}

/* j onto the login thread's queue, to be refused no earlier than the fixed
 * time after its request began. false (its token back) when the queue is
 * full or the thread is not running; j is the caller's then. */
static bool job_enqueue(struct http_login *l, struct http_login_job *j)
{
	bool queued = false;

	pthread_mutex_lock(&l->lock);
	j->refuse_at = j->c->start_ns + fail_delay_ns(l);
	if (l->running && !l->stop && l->n_queued < LOGIN_QUEUE_MAX) {
		if (l->tail)
			l->tail->next = j;
		else
			l->head = j;
		l->tail = j;
		l->n_queued++;
		pthread_cond_signal(&l->cond);
		queued = true;
	} else {
		bucket_done(l, &j->key, true);
	}
	pthread_mutex_unlock(&l->lock);
	return queued;
}

int http_login_check(struct http_server *h, struct MHD_Connection *conn, struct http_conn *c,
		     const char *user, const char *pass)
{
	struct http_login *l = &h->login;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct http_login_job *j;
	struct login_key key = key_of(ci ? ci->client_addr : NULL);
	int verdict = web_auth_cached(h->web, user, pass);
	int64_t at;

	if (verdict > 0) {
		count(l, LOGIN_OK);
		return 0;
	}
	if (!bucket_take(l, &key, verdict < 0)) {
		count(l, LOGIN_LIMITED);
		deny(c, 429, "too many failed logins from this address; try again later");
		return refuse_later(h, conn, c);
	}
	if (!verdict) {
		count(l, LOGIN_REFUSED);
		deny(c, 401, "wrong user name or password");
		return refuse_later(h, conn, c);
	}
	j = job_new(conn, c, &key, user, pass);
	if (!j) {
		bucket_give_back(l, &key);
		count(l, LOGIN_BUSY);
		deny(c, 503, "out of memory");
		return c->deny_status;
	}
	/* Held before the login thread can see it, so that its release
	 * always finds the connection (a release before the suspend only
	 * sets the time: http_conn.c). */
	if (http_conns_hold(h, conn, INT64_MAX)) {
		job_free(j);
		bucket_give_back(l, &key);
		deny(c, 503, "the server is stopping");
		return c->deny_status;
	}
	if (!job_enqueue(l, j)) {
		at = j->refuse_at;
		job_free(j);
		count(l, LOGIN_BUSY);
		deny(c, 429, "too many logins being checked; try again later");
		http_conns_release(h, conn, at);
	}
	return HTTP_AUTH_PENDING;
}

static void *login_thread(void *arg)
{
	struct http_server *h = arg;
	struct http_login *l = &h->login;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct http_login_job *j;
		int64_t t0, took, at;
		unsigned shift;
		bool ok;

		while (!l->stop && !l->head)
			pthread_cond_wait(&l->cond, &l->lock);
		if (l->stop)
			break;
		j = l->head;
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
		l->n_queued--;
		pthread_mutex_unlock(&l->lock);

		t0 = clock_mono_ns();
		ok = web_auth_check(h->web, j->user, j->pass);
		took = clock_mono_ns() - t0;

		/* A check's time scaled to the dearest cost (each step of the
		 * cost doubles it), as a maximum that decays: the refusal time
		 * follows the machine's load without one slow check setting it
		 * for good. */
		shift = web_auth_cost(h->web, NULL) - web_auth_cost(h->web, j->user);
		took = shift < 31 ? took << shift : INT64_MAX / 4;
		pthread_mutex_lock(&l->lock);
		l->slowest_ns = l->slowest_ns * 15 / 16;
		if (took > l->slowest_ns)
			l->slowest_ns = took;
		bucket_done(l, &j->key, ok);
		at = ok ? 0 : j->refuse_at;
		pthread_mutex_unlock(&l->lock);
		count(l, ok ? LOGIN_OK : LOGIN_REFUSED);
		if (!ok)
			deny(j->c, 401, "wrong user name or password");
		http_conns_release(h, j->conn, at);
		job_free(j);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int http_login_init(struct http_server *h)
{
	static const char *const labels[] = {"result", NULL};
	struct http_login *l = &h->login;
	struct metric *m;

	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->initialized = true;
	if (!h->metrics || !h->web || !h->web->n_users)
		return 0;
	m = metrics_counter(h->metrics, "sysobs_http_logins_total",
			    "Basic-auth checks by result: ok (the pair matched, from the cache or "
			    "a bcrypt), refused (a wrong user name or password: 401), limited "
			    "(too many failed logins from the client's address: 429 without a "
			    "bcrypt), busy (too many pairs waiting for a bcrypt: 429).",
			    labels);
	if (!m)
		return -ENOMEM;
	for (int i = 0; i < LOGIN_N; i++) {
		const char *v[] = {outcome_names[i]};

		l->outcome[i] = metric_series(m, v);
	}
	return 0;
}

int http_login_start(struct http_server *h)
{
	struct http_login *l = &h->login;
	int err;

	if (!h->web || !h->web->n_users)
		return 0;
	err = pthread_create(&l->thread, NULL, login_thread, h);
	if (err)
		return -err;
	pthread_setname_np(l->thread, "sysobs-login");
	l->running = true;
	return 0;
}

void http_login_stop(struct http_server *h)
{
	struct http_login *l = &h->login;
	struct http_login_job *j;

	if (!l->initialized)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (l->running)
		pthread_join(l->thread, NULL);
	l->running = false;
	/* What is still queued is answered 503 (the connections are resumed
	 * by http_conns_stop, which comes after). */
	while ((j = l->head)) {
		l->head = j->next;
		deny(j->c, 503, "the server is stopping");
		http_conns_release(h, j->conn, 0);
		job_free(j);
	}
	l->tail = NULL;
	l->n_queued = 0;
}

void http_login_free(struct http_server *h)
{
	struct http_login *l = &h->login;

	if (!l->initialized)
		return;
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	l->initialized = false;
}
