// SPDX-License-Identifier: MIT
/*
 * Collectors through their sink, without root or a kernel feature: the
 * recording sink (recording_sink.h) stands where the agent's would.
 *  - drops: the sample path (drops_on_sample(), the ring buffer's callback):
 *    a record becomes a drop_samples row with its netns cookie, and its id
 *    the exemplar of the drop counter's series; a corrupt record is counted,
 *    no row. And the counting path (drops_publish_counts()) through the
 *    collector's ops on a recording ([collector.drops] replay): per-CPU
 *    fast slots and hash keys of one series summed, the last collect's
 *    totals, the program's statistics summed over the CPUs.
 *  - mptcp: the restart recovery reads the collector's own history through
 *    sink_latest(): a CREATED row with the connection's tuple gives its
 *    start and side, another connection's row with the same token does not;
 *    the recording sink evaluates the recovery's typed filter (type,
 *    namespace, tokens) and its grouping as the store would.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/btf.h>

#include "bpf/drops.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_recfile.h"
#include "collectors/mptcp/mptcp.h"
#include "collectors/mptcp/mptcp_recover.h"
#include "collectors/mptcp/mptcp_state.h"
#include "base/config.h"
#include "recording_sink.h"

#define SEC 1000000000ll

static struct drops_reasons *reasons_of_a_fake_kernel(void)
{
	static const char *const names[] = {"SKB_NOT_DROPPED_YET", "SKB_CONSUMED",
					    "SKB_DROP_REASON_NOT_SPECIFIED",
					    "SKB_DROP_REASON_NO_SOCKET"};
	struct btf *btf = btf__new_empty();
	struct drops_reasons *r;

	assert_non_null(btf);
	assert_true(btf__add_enum(btf, "skb_drop_reason", 4) > 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(btf__add_enum_value(btf, names[i], i), 0);
	r = drops_reasons_new(btf);
	btf__free(btf);
	assert_non_null(r);
	return r;
}

static struct drops_record udp4_no_socket(void)
{
	struct drops_record r = {
	    .magic = DROPS_RECORD_MAGIC,
	    .version = DROPS_RECORD_VERSION,
	    .size = sizeof(r),
	    .ts_ns = 5 * SEC,
	    .location = 0xffffffff81abcdefull,
	    .reason = 3,
	    .netns = 4026532173u,
	    .netns_cookie = 14609,
	    .ifindex = 1,
	    .len = 28,
	    .cpu = 1,
	    .l3_proto = 0x0800,
	    .l4_proto = 17,
	    .flags = DROPS_F_L3_PARSED | DROPS_F_L4_PARSED | DROPS_F_HAS_DEV,
	    .saddr = {127, 0, 0, 1},
	    .daddr = {127, 0, 0, 1},
	    .sport = 41100,
	    .dport = 9,
	    .ifname = "lo",
	};
	return r;
}

static const char *const drops_labels[] = {"reason", "protocol", "netns", NULL};
static const struct metric_desc drops_total = {"sysobs_packet_drops_total", "test",
					       METRIC_KIND_COUNTER, drops_labels};

static void drops_sample_path(void **state)
{
	struct recording_sink rs;
	/* the exemplar names the series as the config labels it */
	struct drops_cfg cfg = {.netns_label = true};
	struct drops_state st = {.mono_to_wall_ns = 1000 * SEC, .cfg = &cfg};
	struct collector c = {.sink = &rs.sink, .priv = &st};
	struct drops_record rec = udp4_no_socket();
	const struct drops_row *row;
	struct rs_series *s;

	(void)state;
	rs_init(&rs, "drops");
	st.reasons = reasons_of_a_fake_kernel();
	st.drops = sink_family(&rs.sink, &drops_total);
	assert_int_equal(drops_on_sample(&c, &rec, sizeof(rec)), 0);

	assert_int_equal(rs.n_rows, 1);
	assert_ptr_equal(rs.rows[0].t, &drops_samples_table);
	assert_int_equal(rs.rows[0].ts_ns, 1005 * SEC); /* monotonic -> wall */
	row = (const struct drops_row *)rs.rows[0].row;
	assert_string_equal(row->reason, "NO_SOCKET");
	assert_string_equal(row->protocol, "udp");
	assert_string_equal(row->saddr, "127.0.0.1");
	assert_int_equal(row->dport, 9);
	assert_int_equal(row->netns, 4026532173u);
	assert_int_equal(row->netns_cookie, 14609);
	assert_string_equal(row->ifname, "lo");
	assert_string_equal(row->location, "0xffffffff81abcdef"); /* no kallsyms */
	s = rs_find(&rs, "sysobs_packet_drops_total", "NO_SOCKET,udp,4026532173");
	assert_non_null(s);
	assert_string_equal(s->exemplar, "sample_id=1");

	/* a corrupt record: counted, nothing stored */
	rec.magic ^= 1;
	assert_int_equal(drops_on_sample(&c, &rec, sizeof(rec)), 0);
	assert_int_equal(rs.n_rows, 1);
	assert_int_equal(st.invalid, 1);
	/* a short one */
	assert_int_equal(drops_on_sample(&c, &rec, 8), 0);
	assert_int_equal(st.invalid, 2);
	drops_reasons_free(st.reasons);
}

extern const struct collector_ops drops_collector;

/* Two collects of a host with 2 CPUs: a UDP key in slot 5 of both CPUs
 * and spilled to the hash; a TCP key in the hash from the second on. */
static void write_two_collects(const char *path, const struct drops_record *rec)
{
	struct drops_key udp = {
	    .reason = 3, .l3_proto = 0x0800, .l4_proto = 17, .netns = 11, .netns_cookie = 1};
	struct drops_key tcp = {
	    .reason = 3, .l3_proto = 0x0800, .l4_proto = 6, .netns = 12, .netns_cookie = 2};
	struct drops_slot slot[2] = {{.key = udp, .count = 4}, {.key = udp, .count = 3}};
	uint64_t spill[2] = {1, 2}, tcpc[2] = {5, 0}, samples[2] = {1, 1};
	uint32_t s5 = 5, stat = DROPS_STAT_SAMPLES;
	struct drops_rec_writer *w = drops_rec_create(path, 2, 0);

	assert_non_null(w);
	drops_rec_reason(w, 3, "NO_SOCKET");
	drops_rec_sample(w, 1000 * SEC, 0, rec, sizeof(*rec));
	drops_rec_map(w, DROPS_MAP_SLOTS, &s5, sizeof(s5), slot, sizeof(slot));
	drops_rec_map(w, DROPS_MAP_COUNTS, &udp, sizeof(udp), spill, sizeof(spill));
	drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), samples, sizeof(samples));
	drops_rec_collect(w, 1);
	slot[0].count = 10;
	drops_rec_map(w, DROPS_MAP_SLOTS, &s5, sizeof(s5), slot, sizeof(slot));
	drops_rec_map(w, DROPS_MAP_COUNTS, &udp, sizeof(udp), spill, sizeof(spill));
	drops_rec_map(w, DROPS_MAP_COUNTS, &tcp, sizeof(tcp), tcpc, sizeof(tcpc));
	drops_rec_map(w, DROPS_MAP_STATS, &stat, sizeof(stat), samples, sizeof(samples));
	assert_int_equal(drops_rec_collect(w, 2), 0);
	drops_rec_close(w);
}

static void drops_counting_path_replayed(void **state)
{
	char path[] = "/tmp/test_drops_counts.XXXXXX";
	struct drops_record rec = udp4_no_socket();
	struct recording_sink rs;
	struct config cfg = {0};
	struct collector c = {.ops = &drops_collector, .fd = -1};
	struct drops_cfg *dc;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_two_collects(path, &rec);
	rs_init(&rs, "drops");
	rs_collector_attach(&rs, &c);
	assert_int_equal(rs_collector_defaults(&c, &cfg), 0);
	dc = (struct drops_cfg *)c.cfg;
	dc->replay = path;
	dc->netns_label = true;
	assert_int_equal(drops_collector.init(&c), 0);
	assert_int_equal(drops_collector.start(&c), 0);
	assert_int_equal(c.fd, -1); /* no ring buffer */
	assert_int_equal(drops_collector.collect(&c), 0);
	/* the last collect: slot 5 on both CPUs (10 + 3) and the hash (1 + 2) */
	assert_non_null(rs_find(&rs, "sysobs_packet_drops_total", "NO_SOCKET,udp,11"));
	assert_true(rs_find(&rs, "sysobs_packet_drops_total", "NO_SOCKET,udp,11")->value == 16);
	assert_true(rs_find(&rs, "sysobs_packet_drops_total", "NO_SOCKET,tcp,12")->value == 5);
	assert_true(rs_find(&rs, "sysobs_drops_map_entries", "")->value == 2);
	assert_true(rs_find(&rs, "sysobs_drop_samples_total", "")->value == 2);
	/* the sample, stamped with the offset it was received with */
	assert_int_equal(rs.n_rows, 1);
	assert_int_equal(rs.rows[0].ts_ns, 1005 * SEC);
	/* nothing left to replay: the totals stay */
	assert_int_equal(drops_collector.collect(&c), 0);
	assert_true(rs_find(&rs, "sysobs_packet_drops_total", "NO_SOCKET,udp,11")->value == 16);
	assert_int_equal(rs.n_rows, 1);
	drops_collector.stop(&c);
	assert_null(c.priv);
	unlink(path);
	free((void *)c.cfg);
	cfg_free(&cfg);
}

static void mptcp_restart_recovery_through_sink(void **state)
{
	struct recording_sink rs;
	struct mptcp_state *st = mptcp_state_new(), *fresh = mptcp_state_new();
	struct mptcp_row created = {.token = 7,
				    .family = AF_INET,
				    .sport = 40002,
				    .dport = 8080,
				    .server_side = 0,
				    .netns = 1};
	struct mptcp_conn *c;

	(void)state;
	rs_init(&rs, "mptcp");
	/* the dump after a restart: connection 7, start unknown */
	c = mptcp_state_conn_get(fresh, 1, 7, 1);
	c->t.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", &c->t.saddr);
	inet_pton(AF_INET, "10.0.0.2", &c->t.daddr);
	c->t.sport = 40002;
	c->t.dport = 8080;
	c->resynced = 1;
	c->created_ns = 100 * SEC;
	mptcp_state_resync(st, 1, fresh);

	/* no history yet */
	assert_int_equal(mptcp_recover_starts(&rs.sink, st, 1), 0);
	/* an older connection that had token 7, from another port */
	strcpy(created.type, "CREATED");
	strcpy(created.saddr, "10.0.0.1");
	strcpy(created.daddr, "10.0.0.2");
	created.sport = 39999;
	rs_latest_add(&rs, &mptcp_events_table, 3 * SEC, &created);
	assert_int_equal(mptcp_recover_starts(&rs.sink, st, 1), 0);
	/* its own CREATED row */
	rs.n_latest = 0;
	created.sport = 40002;
	rs_latest_add(&rs, &mptcp_events_table, 5 * SEC, &created);
	assert_int_equal(mptcp_recover_starts(&rs.sink, st, 1), 1);
	c = mptcp_state_conn_get(st, 1, 7, 0);
	assert_int_equal(c->created_ns, 5 * SEC);
	assert_int_equal(c->created_known, 1);
	assert_int_equal(c->server_side, 0);
	/* nothing left unknown: no query */
	assert_int_equal(mptcp_recover_starts(&rs.sink, st, 1), 0);
	mptcp_state_free(fresh);
	mptcp_state_free(st);
}

/* Connection 7 of netns 1 as a dump after a restart shows it: start unknown. */
static struct mptcp_state *state_after_restart(void)
{
	struct mptcp_state *st = mptcp_state_new(), *fresh = mptcp_state_new();
	struct mptcp_conn *c = mptcp_state_conn_get(fresh, 1, 7, 1);

	c->t.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", &c->t.saddr);
	inet_pton(AF_INET, "10.0.0.2", &c->t.daddr);
	c->t.sport = 40002;
	c->t.dport = 8080;
	c->resynced = 1;
	c->created_ns = 100 * SEC;
	mptcp_state_resync(st, 1, fresh);
	mptcp_state_free(fresh);
	return st;
}

/*
 * The recovery's query, evaluated by the recording sink as the store
 * would: of the rows with the connection's token and tuple, only a CREATED
 * row of the same namespace counts (not another namespace's, not a CLOSED
 * row), and of those the newest (an older CREATED row of the same token is
 * grouped away), whatever their order of arrival.
 */
static void mptcp_recovery_query_filters_history(void **state)
{
	struct recording_sink rs;
	struct mptcp_state *st = state_after_restart();
	struct mptcp_row row = {.token = 7,
				.family = AF_INET,
				.sport = 40002,
				.dport = 8080,
				.saddr = "10.0.0.1",
				.daddr = "10.0.0.2"};
	struct mptcp_conn *c;

	(void)state;
	rs_init(&rs, "mptcp");
	row.netns = 2, row.server_side = 1;
	strcpy(row.type, "CREATED");
	rs_latest_add(&rs, &mptcp_events_table, 9 * SEC, &row); /* another namespace */
	row.netns = 1;
	strcpy(row.type, "CLOSED");
	rs_latest_add(&rs, &mptcp_events_table, 8 * SEC, &row); /* not a start */
	strcpy(row.type, "CREATED");
	rs_latest_add(&rs, &mptcp_events_table, 4 * SEC, &row); /* older: grouped away */
	row.server_side = 0;
	rs_latest_add(&rs, &mptcp_events_table, 5 * SEC, &row);
	row.token = 8;
	rs_latest_add(&rs, &mptcp_events_table, 6 * SEC, &row); /* not asked for */

	assert_int_equal(mptcp_recover_starts(&rs.sink, st, 1), 1);
	assert_int_equal(rs.n_latest_queries, 1);
	c = mptcp_state_conn_get(st, 1, 7, 0);
	assert_non_null(c);
	assert_int_equal(c->created_known, 1);
	assert_int_equal(c->created_ns, 5 * SEC);
	assert_int_equal(c->server_side, 0);
	mptcp_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(drops_sample_path),
	    cmocka_unit_test(drops_counting_path_replayed),
	    cmocka_unit_test(mptcp_restart_recovery_through_sink),
	    cmocka_unit_test(mptcp_recovery_query_filters_history),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
