/* SPDX-License-Identifier: MIT */
/*
 * mptcp collector: decode + live state + store throughput, replaying the
 * event messages recorded from a real kernel (tests/data/mptcp/).
 *
 *   bench_mptcp [events] [data_dir]
 *	events    default 1,000,000
 *	data_dir  default $SYSOBS_SRC/tests/data/mptcp
 *
 * Prints events/s for:
 *   decode             mptcp_event_decode() alone
 *   decode+state       + mptcp_state_apply() (the live view, under its lock)
 *   main thread        decode+state+mptcp_row_fill()+store_submit() into a
 *                      queue with room: what the collector's event loop pays
 *                      per event (the row's text is formatted here)
 *   decode+state+store + store_submit() into a real SQLite store (WAL, temp
 *                      file) and store_flush(): every row committed. The
 *                      producer retries on -EAGAIN, so this is the sustained
 *                      end-to-end ceiling of the collector's hot path.
 *   reconcile merge    mptcp_state_reconcile() of 10,000 connections x 2
 *                      subflows against two identical dumps (the periodic
 *                      reconciliation's in-memory part)
 *   tcp_info decode    mptcp_tcp_info_decode() of a 280-byte tcp_info (6.18)
 *   subflow take       mptcp_subflow_info_take() of the same 20,000 subflows'
 *                      figures into the live state, with the counting
 *                      callback (the subflow health part of a reconciliation)
 *   sock_diag dump     with BENCH_MPTCP_DUMP=1 (root, run inside a netns with
 *                      live MPTCP connections: ip netns exec NS bench_mptcp):
 *                      one mptcp_diag_dump() of that netns, the reconciliation's
 *                      kernel part
 * Figures only, no assertions. The database goes to $TMPDIR (default /tmp).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_decode.h"
#include "collectors/mptcp/mptcp_diag.h"
#include "collectors/mptcp/mptcp_state.h"
#include "collectors/mptcp/mptcp_subflow_info.h"
#include "storage/store.h"

#define BENCH_MAX_MSGS 256

struct bench_msg {
	char buf[1024] __attribute__((aligned(8)));
	size_t len;
	char name[256];
};

static struct bench_msg msgs[BENCH_MAX_MSGS];
static size_t n_msgs;

static unsigned long bench_samples;

static void bench_on_sample(const struct mptcp_subflow_delta *d, void *arg)
{
	(void)arg;
	bench_samples += d->acked + 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bench_msg *)a)->name, ((const struct bench_msg *)b)->name);
}

/* Loads every recorded event message (CREATED... of both sides), in file
 * name order so each connection's events come in kernel order. */
static int load(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n_msgs < BENCH_MAX_MSGS) {
		struct bench_msg *m = &msgs[n_msgs];
		struct mptcp_event ev;
		char path[4096];
		FILE *f;

		if (!strstr(e->d_name, ".bin") || strncmp(e->d_name, "client-", 7))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		m->len = fread(m->buf, 1, sizeof(m->buf), f);
		fclose(f);
		if (mptcp_event_decode((struct nlmsghdr *)m->buf, m->len, &ev) ||
		    !mptcp_event_type_name(ev.type))
			continue;
		snprintf(m->name, sizeof(m->name), "%s", e->d_name);
		n_msgs++;
	}
	closedir(d);
	qsort(msgs, n_msgs, sizeof(msgs[0]), name_cmp);
	return n_msgs ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	long events = argc > 1 ? atol(argv[1]) : 1000000;
	const char *src = getenv("SYSOBS_SRC");
	const char *tmp = getenv("TMPDIR");
	char dir[4096], dbpath[4096], err[512];
	struct store_config sc = {0};
	const struct event_table *tables[] = {&mptcp_events_table, NULL};
	struct mptcp_state *st;
	struct store_stats stats;
	struct store *s;
	struct mptcp_event ev;
	struct mptcp_row row;
	double t0, t;
	long retries = 0;
	volatile unsigned sink = 0;

	if (argc > 2)
		snprintf(dir, sizeof(dir), "%s", argv[2]);
	else
		snprintf(dir, sizeof(dir), "%s/tests/data/mptcp", src ? src : ".");
	if (load(dir)) {
		fprintf(stderr, "bench_mptcp: no recorded messages in %s (set SYSOBS_SRC)\n", dir);
		return 1;
	}
	printf("bench_mptcp: %ld events replayed from %zu recorded kernel messages (%s)\n", events,
	       n_msgs, dir);

	/* 1. decode */
	t0 = now_s();
	for (long i = 0; i < events; i++) {
		const struct bench_msg *m = &msgs[i % n_msgs];

		mptcp_event_decode((const struct nlmsghdr *)m->buf, m->len, &ev);
		sink += ev.type;
	}
	t = now_s() - t0;
	printf("  decode              %10.0f events/s  (%.0f ns/event)\n", events / t,
	       t / events * 1e9);

	/* 2. decode + live state */
	st = mptcp_state_new();
	t0 = now_s();
	for (long i = 0; i < events; i++) {
		const struct bench_msg *m = &msgs[i % n_msgs];

		mptcp_event_decode((const struct nlmsghdr *)m->buf, m->len, &ev);
		mptcp_state_apply(st, 1, &ev, i, NULL, NULL);
	}
	t = now_s() - t0;
	printf("  decode+state        %10.0f events/s  (%.0f ns/event)\n", events / t,
	       t / events * 1e9);

	/* 3. decode + live state + store, every row committed */
	snprintf(dbpath, sizeof(dbpath), "%s/bench_mptcp.%d.db", tmp ? tmp : "/tmp", getpid());
	sc.path = dbpath;
	sc.queue_rows = 65536;
	sc.batch_rows = 4096;
	sc.batch_ms = 50;
	s = store_open(&sc, tables, err, sizeof(err));
	if (!s || store_start(s)) {
		fprintf(stderr, "bench_mptcp: store: %s\n", s ? "cannot start" : err);
		return 1;
	}
	/* 3a. what the collector's main thread pays per event: decode, state,
	 * store_submit into a queue with room (the writer drains it after). */
	{
		long burst = events < 60000 ? events : 60000;

		t0 = now_s();
		for (long i = 0; i < burst; i++) {
			const struct bench_msg *m = &msgs[i % n_msgs];

			mptcp_event_decode((const struct nlmsghdr *)m->buf, m->len, &ev);
			mptcp_state_apply(st, 1, &ev, i, NULL, NULL);
			mptcp_row_fill(&ev, 4026531840u, &row);
			if (store_submit(s, &mptcp_events_table, 1000000000ll + i, &row))
				retries++;
		}
		t = now_s() - t0;
		printf("  main thread         %10.0f events/s  (%.0f ns/event: "
		       "decode+state+row+submit, "
		       "%ld events, %ld refused)\n",
		       burst / t, t / burst * 1e9, burst, retries);
		store_flush(s);
		retries = 0;
	}
	t0 = now_s();
	for (long i = 0; i < events; i++) {
		const struct bench_msg *m = &msgs[i % n_msgs];

		mptcp_event_decode((const struct nlmsghdr *)m->buf, m->len, &ev);
		mptcp_state_apply(st, 1, &ev, i, NULL, NULL);
		mptcp_row_fill(&ev, 4026531840u, &row);
		while (store_submit(s, &mptcp_events_table, 1000000000ll + i, &row) == -EAGAIN) {
			retries++;
			usleep(200);
		}
	}
	store_flush(s);
	t = now_s() - t0;
	store_get_stats(s, &stats);
	printf("  decode+state+store  %10.0f events/s  (%.0f ns/event; %llu rows committed in "
	       "%llu batches, %ld producer retries on a full queue)\n",
	       events / t, t / events * 1e9, (unsigned long long)stats.rows_written,
	       (unsigned long long)stats.batches, retries);
	store_close(s);
	mptcp_state_free(st);

	/* 4. reconciliation, in memory: nothing to correct, every lookup made */
	{
		struct mptcp_state *live = mptcp_state_new(), *prev = mptcp_state_new(),
				   *fresh = mptcp_state_new();
		struct mptcp_state *all[3] = {live, prev, fresh};
		struct mptcp_reconcile_stats rs = {0};
		const int n_conn = 10000, rounds = 50;

		for (int k = 0; k < 3; k++) {
			for (int i = 1; i <= n_conn; i++) {
				struct mptcp_conn *c =
				    mptcp_state_conn_get(all[k], 1, (uint32_t)i, 1);
				struct mptcp_subflow sf = {.t = {.family = 2}};

				c->created_ns = 1;
				for (int j = 0; j < 2; j++) {
					sf.t.sport = (uint16_t)(1000 + j);
					sf.since_ns = 1;
					mptcp_state_subflow_put(all[k], c, &sf);
				}
			}
		}
		t0 = now_s();
		for (int r = 0; r < rounds; r++)
			mptcp_state_reconcile(live, 1, fresh, prev, 2, &rs);
		t = now_s() - t0;
		printf("  reconcile merge     %10.2f ms per pass of %d connections x 2 subflows "
		       "(%u corrections)\n",
		       t / rounds * 1e3, n_conn, rs.conns_removed + rs.conns_added);
		{
			static char ti[280] __attribute__((aligned(8)));
			struct mptcp_tcp_stats ts;
			const long n_dec = 10000000;
			long sum = 0;

			t0 = now_s();
			for (long i = 0; i < n_dec; i++) {
				ti[0] = (char)i; /* not hoisted out of the loop */
				mptcp_tcp_info_decode(ti, sizeof(ti), &ts);
				sum += ts.state;
			}
			t = now_s() - t0;
			printf("  tcp_info decode     %10.1f ns per subflow (280 bytes; %ld)\n",
			       t / n_dec * 1e9, sum & 1);
		}
		{
			struct hash_node *node, *tmp;
			size_t b;

			hash_for_each_safe(&fresh->conns, b, node, tmp) {
				struct mptcp_conn *c = hash_entry(node, struct mptcp_conn, node);

				for (uint32_t j = 0; j < c->n_sf; j++)
					c->sf[j].tcp.have = MPTCP_TCPI_BASE;
			}
			t0 = now_s();
			for (int r = 0; r < rounds; r++)
				mptcp_subflow_info_take(live, 1, fresh, bench_on_sample, NULL);
			t = now_s() - t0;
			printf("  subflow take        %10.2f ms per pass of %d connections x 2 "
			       "subflows "
			       "(%.0f ns per subflow)\n",
			       t / rounds * 1e3, n_conn, t / rounds / (2.0 * n_conn) * 1e9);
		}
		for (int k = 0; k < 3; k++)
			mptcp_state_free(all[k]);
	}
	/* 5. the kernel part: one socket dump of this netns */
	if (getenv("BENCH_MPTCP_DUMP")) {
		int fd = mptcp_diag_open(), n = 0;
		const int rounds = 20;

		if (fd < 0) {
			fprintf(stderr, "bench_mptcp: sock_diag: %s\n", strerror(-fd));
		} else {
			struct timespec c0, c1;

			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
			t0 = now_s();
			for (int r = 0; r < rounds; r++) {
				struct mptcp_state *d = mptcp_state_new();

				n = mptcp_diag_dump(fd, 1, d, 1);
				mptcp_state_free(d);
			}
			t = now_s() - t0;
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
			printf("  sock_diag dump      %10.2f ms per dump (%d sockets: connections, "
			       "listeners, subflows; %.2f ms CPU in the kernel and here)\n",
			       t / rounds * 1e3, n,
			       ((c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9) /
				   rounds * 1e3);
			close(fd);
		}
	}
	unlink(dbpath);
	snprintf(err, sizeof(err), "%s-wal", dbpath);
	unlink(err);
	snprintf(err, sizeof(err), "%s-shm", dbpath);
	unlink(err);
	return sink == 0xdeadbeef;
}
