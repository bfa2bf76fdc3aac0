// SPDX-License-Identifier: MIT
/* Drop reason names from kernel BTF (see drops_btf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "base/buf.h"
#include "collectors/drops/drops_btf.h"

#define SUBSYS_SHIFT 16

struct reason_ent {
	uint32_t value;
	char name[DROPS_REASON_NAME_MAX];
};

struct drops_reasons {
	struct reason_ent *v; /* sorted by value once built */
	size_t n, cap;
	bool have_not_dropped, have_consumed;
	uint32_t not_dropped, consumed;
	char (*subsys)[DROPS_REASON_NAME_MAX]; /* index = subsystem number */
	size_t n_subsys;
};

static int ent_cmp(const void *a, const void *b)
{
	const struct reason_ent *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static const struct reason_ent *ent_find(const struct drops_reasons *r, uint32_t value)
{
	struct reason_ent key = {.value = value};

	if (!r || !r->n)
		return NULL;
	return bsearch(&key, r->v, r->n, sizeof(*r->v), ent_cmp);
}

/* Appends unless the value is already named (first name wins). Call
 * reasons_sort() after a batch. */
static int ent_add(struct drops_reasons *r, uint32_t value, const char *name)
{
	struct reason_ent *v;

	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].value == value)
			return 0;
	v = array_grow(r->v, &r->cap, r->n, sizeof(*r->v), 256);
	if (!v)
		return -ENOMEM;
	r->v = v;
	r->v[r->n].value = value;
	snprintf(r->v[r->n].name, sizeof(r->v[r->n].name), "%s", name);
	r->n++;
	return 1;
}

static void reasons_sort(struct drops_reasons *r)
{
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), ent_cmp);
}

static const char *strip_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) == 0 && s[n] ? s + n : s;
}

int drops_btf_kfree_skb_nargs(const struct btf *btf)
{
	const struct btf_type *t;
	int id;

	/* Every tracepoint has "typedef void (*btf_trace_<name>)(void *, args...)". */
	id = btf__find_by_name_kind(btf, "btf_trace_kfree_skb", BTF_KIND_TYPEDEF);
	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_ptr(t))
		return -ENOENT;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -ENOENT;
	return btf_vlen(t) - 1; /* minus the leading void *__data */
}

/* enum skb_drop_reason_subsys { SKB_DROP_REASON_SUBSYS_CORE, ..., _NUM }
 * arrived in v6.4 ("net: extend drop reasons for multiple subsystems");
 * older kernels have no subsystem reasons at all. */
static int load_subsys(struct drops_reasons *r, const struct btf *btf)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	uint32_t max = 0;
	int id;

	id = btf__find_by_name_kind(btf, "skb_drop_reason_subsys", BTF_KIND_ENUM);
	if (id < 0)
		return 0;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++)
		if ((uint32_t)e[i].val < 0x10000 && (uint32_t)e[i].val + 1 > max)
			max = (uint32_t)e[i].val + 1;
	r->subsys = calloc(max ? max : 1, sizeof(*r->subsys));
	if (!r->subsys)
		return -ENOMEM;
	r->n_subsys = max;
	for (int i = 0; i < btf_vlen(t); i++) {
		const char *name = btf__name_by_offset(btf, e[i].name_off);
		uint32_t v = (uint32_t)e[i].val;

		if (!name || v >= max || !strcmp(name, "SKB_DROP_REASON_SUBSYS_NUM"))
			continue;
		snprintf(r->subsys[v], sizeof(r->subsys[v]), "%s",
			 strip_prefix(name, "SKB_DROP_REASON_SUBSYS_"));
	}
	return 0;
}

static bool subsys_known(const struct drops_reasons *r, uint32_t value)
{
	uint32_t s = value >> SUBSYS_SHIFT;

	return s != 0 && s < r->n_subsys && r->subsys[s][0];
}

/*
 * Subsystem enums (enum ovs_drop_reason, enum mac80211_drop_reason, ...)
 * declare their values as (subsys << 16) | local. Any enum whose name
 * contains "drop_reason" contributes the enumerators that carry a subsystem
 * the kernel declared; "__"-prefixed markers and *_MAX bounds are skipped.
 */
static int scan_subsys_enums(struct drops_reasons *r, const struct btf *btf)
{
	const struct btf *base = btf__base_btf(btf);
	uint32_t start = base ? btf__type_cnt(base) : 1;
	uint32_t cnt = btf__type_cnt(btf);
	int added = 0, err;

	if (!r->n_subsys)
		return 0;
	for (uint32_t id = start; id < cnt; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;
		const char *tname;

		if (!t || !btf_is_enum(t))
			continue;
		tname = btf__name_by_offset(btf, t->name_off);
		if (!tname || !strstr(tname, "drop_reason") || !strcmp(tname, "skb_drop_reason") ||
		    !strcmp(tname, "skb_drop_reason_subsys"))
			continue;
		e = btf_enum(t);
		for (int i = 0; i < btf_vlen(t); i++) {
			const char *name = btf__name_by_offset(btf, e[i].name_off);
			uint32_t v = (uint32_t)e[i].val;
			size_t len;

			if (!name || !subsys_known(r, v) || !strncmp(name, "__", 2))
				continue;
			len = strlen(name);
			if (len >= 4 && !strcmp(name + len - 4, "_MAX"))
				continue;
			err = ent_add(r, v, name);
			if (err < 0)
				return err;
			added += err;
		}
	}
	return added;
}

struct drops_reasons *drops_reasons_new(const struct btf *btf)
{
	struct drops_reasons *r;
	const struct btf_type *t;
	const struct btf_enum *e;
	int id, err;

	id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
	if (id < 0) {
		errno = ENOENT;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++) {
		const char *name = btf__name_by_offset(btf, e[i].name_off);
		uint32_t v = (uint32_t)e[i].val;

		if (!name)
			continue;
		/* Bounds and masks, not reasons. */
		if (!strcmp(name, "SKB_DROP_REASON_MAX") ||
		    !strcmp(name, "SKB_DROP_REASON_SUBSYS_MASK"))
			continue;
		if (!strcmp(name, "SKB_NOT_DROPPED_YET")) {
			r->have_not_dropped = true;
			r->not_dropped = v;
		} else if (!strcmp(name, "SKB_CONSUMED")) {
			r->have_consumed = true;
			r->consumed = v;
		}
		/* One prefix only: SKB_DROP_REASON_SKB_CSUM is "SKB_CSUM". */
		if (!strncmp(name, "SKB_DROP_REASON_", 16))
			name = strip_prefix(name, "SKB_DROP_REASON_");
		else
			name = strip_prefix(name, "SKB_");
		if (ent_add(r, v, name) < 0)
			goto err_free;
	}
	err = load_subsys(r, btf);
	if (!err)
		err = scan_subsys_enums(r, btf);
	if (err < 0)
		goto err_free;
	reasons_sort(r);
	return r;

err_free:
	drops_reasons_free(r);
	errno = ENOMEM;
	return NULL;
}

int drops_reasons_add_btf(struct drops_reasons *r, const struct btf *btf)
{
	int added = scan_subsys_enums(r, btf);

	reasons_sort(r);
	return added;
}

struct drops_reasons *drops_reasons_new_named(void)
{
	return calloc(1, sizeof(struct drops_reasons));
}

int drops_reasons_add_name(struct drops_reasons *r, uint32_t value, const char *name)
{
	int added = ent_add(r, value, name);

	if (added > 0 && !strcmp(name, "NOT_DROPPED_YET")) {
		r->have_not_dropped = true;
		r->not_dropped = value;
	} else if (added > 0 && !strcmp(name, "CONSUMED")) {
		r->have_consumed = true;
		r->consumed = value;
	}
	reasons_sort(r);
	return added;
}

void drops_reasons_free(struct drops_reasons *r)
{
	if (!r)
		return;
	free(r->v);
	free(r->subsys);
	free(r);
}

const char *drops_reason_name(const struct drops_reasons *r, uint32_t value)
{
	const struct reason_ent *e = ent_find(r, value);

	return e ? e->name : NULL;
}

const char *drops_reason_format(const struct drops_reasons *r, uint32_t value, char *buf,
				size_t len)
{
	const char *name = drops_reason_name(r, value);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "UNKNOWN_%u", value);
	return buf;
}

int drops_reason_value(const struct drops_reasons *r, const char *name, uint32_t *value)
{
	for (size_t i = 0; r && i < r->n; i++) {
		if (!strcmp(r->v[i].name, name)) {
			*value = r->v[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

bool drops_reason_is_drop(const struct drops_reasons *r, uint32_t value)
{
	if (r->have_not_dropped && value == r->not_dropped)
		return false;
	if (r->have_consumed && value == r->consumed)
		return false;
	return true;
}

bool drops_reason_subsys_unnamed(const struct drops_reasons *r, uint32_t value)
{
	return subsys_known(r, value) && !ent_find(r, value);
}

size_t drops_reasons_count(const struct drops_reasons *r)
{
	return r ? r->n : 0;
}

const char *drops_reason_at(const struct drops_reasons *r, size_t i)
{
	return r && i < r->n ? r->v[i].name : NULL;
}
