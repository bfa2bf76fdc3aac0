// SPDX-License-Identifier: MIT
/* A history page as pcapng (history_pcapng.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/history_pcapng.h"
#include "api/pcapng.h"
#include "base/netns_name.h"
#include "storage/table_value.h"

static const struct event_column *col_named(const struct event_table *t, const char *name)
{
	for (const struct event_column *c = t->cols; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

bool history_pcapng_able(const struct event_table *t)
{
	const struct event_column *c = col_named(t, "capture");

	return c && c->type == COL_BLOB;
}

/* A column's value as text into buf ("" when NULL or absent). */
static const char *col_text(const struct event_table *t, const char *name, const void *row,
			    char *buf, size_t len)
{
	const struct event_column *c = col_named(t, name);
	struct col_value v;

	buf[0] = '\0';
	if (!c)
		return buf;
	col_value(c, row, &v);
	switch (v.kind) {
	case COLV_TEXT:
		snprintf(buf, len, "%.*s", (int)v.len, v.s);
		break;
	case COLV_INT:
	case COLV_BOOL:
		snprintf(buf, len, "%" PRId64, v.i);
		break;
	case COLV_UINT:
		snprintf(buf, len, "%" PRIu64, v.u);
		break;
	default:
		break;
	}
	return buf;
}

static int64_t col_num(const struct event_table *t, const char *name, const void *row)
{
	const struct event_column *c = col_named(t, name);
	struct col_value v;

	if (!c)
		return 0;
	col_value(c, row, &v);
	return v.kind == COLV_INT || v.kind == COLV_BOOL || v.kind == COLV_UINT ? v.i : 0;
}

struct pcap_if_key {
	int64_t netns, ifindex;
};

/* The interface block of a row's device: its name (or ifindex), and the
 * netns it is in (and that netns's name). */
static void page_interface(const struct event_table *t, const void *row,
			   const struct pcap_if_key *key, const char *netns, const char *nsname,
			   struct buf *out)
{
	char ifname[32], name[48], desc[128];
	struct pcapng_if ifc = {
	    .linktype = PCAPNG_LINKTYPE_LINUX_SLL2, .name = name, .description = desc};

	col_text(t, "ifname", row, ifname, sizeof(ifname));
	if (*ifname)
		snprintf(name, sizeof(name), "%s", ifname);
	else if (key->ifindex > 0)
		snprintf(name, sizeof(name), "ifindex %" PRId64, key->ifindex);
	else
		snprintf(name, sizeof(name), "(no device)");
	snprintf(desc, sizeof(desc), "ifindex %" PRId64 " in netns %s%s%s%s", key->ifindex, netns,
		 *nsname ? " (" : "", nsname, *nsname ? ")" : "");
	pcapng_interface(out, &ifc);
}

/* A packet's comment: its row id, reason, location, netns (and its name)
 * and container. */
static void packet_comment(const struct event_table *t, const void *row, int64_t id,
			   const char *netns, const char *nsname, char *comment, size_t len)
{
	char reason[96], loc[128], cont[80];

	col_text(t, "reason", row, reason, sizeof(reason));
	col_text(t, "location", row, loc, sizeof(loc));
	col_text(t, "container", row, cont, sizeof(cont));
	snprintf(comment, len, "id=%" PRId64 " reason=%s location=%s netns=%s%s%s%s", id,
		 *reason ? reason : "-", *loc ? loc : "-", netns, *nsname ? " netns_name=" : "",
		 nsname, *cont ? " container=" : "");
	if (*cont)
		snprintf(comment + strlen(comment), len - strlen(comment), "%s", cont);
}

int history_pcapng_page(const struct event_table *t, void *const *rows, const int64_t *ids,
			const int64_t *ts_ns, size_t n, int64_t next, struct buf *out)
{
	const struct event_column *c_cap = col_named(t, "capture");
	struct pcap_if_key *ifs = calloc(n ? n : 1, sizeof(*ifs));
	size_t n_ifs = 0;
	char cursor[48];

	if (!ifs || !c_cap) {
		free(ifs);
		return -ENOMEM;
	}
	/* the section's comment: a reader pages on with ?cursor= */
	snprintf(cursor, sizeof(cursor), "next_cursor=%" PRId64, next);
	pcapng_section(out, "sysobs", next > 0 ? cursor : NULL);
	for (size_t k = n; k-- > 0;) { /* oldest first */
		const void *row = rows[k];
		struct pcap_if_key key = {col_num(t, "netns", row), col_num(t, "ifindex", row)};
		char netns[16], nsname[64], comment[512];
		struct col_value cap;
		size_t i;

		for (i = 0; i < n_ifs; i++)
			if (ifs[i].netns == key.netns && ifs[i].ifindex == key.ifindex)
				break;
		col_text(t, "netns", row, netns, sizeof(netns));
		if (key.netns <= 0 ||
		    netns_name_lookup((uint32_t)key.netns, nsname, sizeof(nsname)))
			nsname[0] = '\0';
		if (i == n_ifs) {
			page_interface(t, row, &key, netns, nsname, out);
			ifs[n_ifs++] = key;
		}
		packet_comment(t, row, ids[k], netns, nsname, comment, sizeof(comment));
		col_value(c_cap, row, &cap);
		pcapng_packet(out, &(struct pcapng_packet){
				       .if_id = (uint32_t)i,
				       .ts_ns = ts_ns[k] > 0 ? (uint64_t)ts_ns[k] : 0,
				       .data = (const uint8_t *)cap.s,
				       .caplen = cap.kind == COLV_BLOB ? (uint32_t)cap.len : 0,
				       .origlen = (uint32_t)col_num(t, "orig_len", row),
				       .comment = comment,
				   });
	}
	free(ifs);
	return out->oom ? -ENOMEM : 0;
}
