/* SPDX-License-Identifier: MIT */
/*
 * Does the receiver keep the native histograms it accepts? A remote-write
 * receiver may answer 2xx to a WriteRequest and store none of its
 * histograms (VictoriaMetrics before native histogram support, 1.79
 * included; Prometheus without --enable-feature=native-histograms), and
 * then the agent counts samples sent while the histograms are nowhere.
 * After the first accepted request that carried one, and
 * [remote_write] native_histograms_check later, the sender asks the
 * receiver's Prometheus query API (query_url, or the url without its
 * /api/v1/write) for that histogram and for a float series sent with it
 * (RW_PROBE_CONTROL), both under the agent's identity. The float series
 * says the receiver shows what it took (VictoriaMetrics hides the last 30 s
 * by default, -search.latencyOffset): until it does, the check is made
 * again, up to RW_PROBE_TRIES times. Float there and histogram absent: the
 * sender logs an error, counts it and sends classic _bucket series from
 * then on (remote_write.c). docs/remote_write.md has the receivers' table.
 */
#ifndef SYSOBS_REMOTE_WRITE_PROBE_H
#define SYSOBS_REMOTE_WRITE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rw_label;
struct sender;

#define RW_PROBE_CONTROL "sysobs_build_info" /* in every snapshot */
#define RW_PROBE_TRIES	 12

struct rw_probe {
	char *base;	     /* the query API's base URL; NULL: cannot check */
	char *base_public;   /* the same without user:password@, for the log */
	char *query;	     /* the request URL, once armed */
	char selector[1024]; /* NAME{identity}, for the log */
	char name[256];	     /* NAME */
	int64_t due_ns;	     /* CLOCK_MONOTONIC of the check; 0: not armed */
	unsigned tries;	     /* checks made */
	bool done;	     /* checked (or never to be): the form is settled */
};

/*
 * The query API's base of a receiver: query_url when set (a trailing /
 * removed), else url without a trailing "/api/v1/write" (Prometheus,
 * VictoriaMetrics single-node), else NULL (errno ENOENT: not derivable,
 * e.g. Mimir's /api/v1/push; ENOMEM). malloc'ed. Pure.
 */
char *rw_probe_base(const char *url, const char *query_url);
/* name{k="v",...} of the labels l[n] (values escaped as PromQL strings)
 * into out[len]. -ENOSPC when it does not fit. Pure. */
int rw_probe_selector(char *out, size_t len, const char *name, const struct rw_label *l, size_t n);
/* A /api/v1/query answer to count by (__name__) of name and
 * RW_PROBE_CONTROL: 1 when both are there (the histogram is stored), 0 when
 * only the control is (it is not), -EAGAIN when the control is not (the
 * receiver shows nothing of it yet), -EINVAL when it is no such answer.
 * Pure. */
int rw_probe_answer(const char *body, size_t len, const char *name);

/* The base from rw_probe_base(); 0, -ENOENT (no check possible), -ENOMEM. */
int rw_probe_init(struct rw_probe *p, const char *url, const char *query_url);
/* After an accepted request with native histogram name: the check at
 * due_ns, of name under the labels l[n]. 0 or -ENOMEM, -ENOSPC. */
int rw_probe_arm(struct rw_probe *p, const char *name, const struct rw_label *l, size_t n,
		 int64_t due_ns);
/* Asks the receiver (s's handle, auth and TLS): 1 stored, 0 not stored,
 * -EAGAIN nothing to tell yet, -EIO no answer of a query API (s->status,
 * s->resp, s->errbuf say why). */
int rw_probe_run(struct rw_probe *p, struct sender *s);
void rw_probe_free(struct rw_probe *p);

#endif
