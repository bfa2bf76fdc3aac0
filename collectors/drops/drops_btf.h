/* SPDX-License-Identifier: MIT */
/*
 * Drop reason names from the running kernel's BTF.
 *
 * enum skb_drop_reason is not UAPI: values move between kernel versions, so
 * names are always looked up by value in the BTF of the kernel that reported
 * them, never by position or a built-in table. Subsystem reasons carry the
 * subsystem in bits 16-31 (enum skb_drop_reason_subsys); their names come
 * from the subsystem's own enum (e.g. enum ovs_drop_reason), found in
 * vmlinux or in a module's split BTF.
 *
 * Everything here is pure over struct btf objects, so tests can feed it
 * hand-built BTF.
 */
#ifndef SYSOBS_DROPS_BTF_H
#define SYSOBS_DROPS_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btf;
struct drops_reasons;

#define DROPS_REASON_NAME_MAX 64

/*
 * Number of arguments of the skb:kfree_skb tracepoint, from the
 * btf_trace_kfree_skb typedef (skb, location[, reason[, rx_sk]]).
 * -ENOENT when the kernel has no such tracepoint in BTF.
 */
int drops_btf_kfree_skb_nargs(const struct btf *btf);

/*
 * Builds the value -> name table from enum skb_drop_reason (prefix
 * SKB_DROP_REASON_ or SKB_ stripped), enum skb_drop_reason_subsys and any
 * subsystem enum in the same BTF. NULL with errno ENOENT when the BTF has no
 * enum skb_drop_reason; ENOMEM.
 */
struct drops_reasons *drops_reasons_new(const struct btf *vmlinux);
/* Adds subsystem reason names from a module's BTF (split on vmlinux).
 * Returns how many names were added, or -ENOMEM. */
int drops_reasons_add_btf(struct drops_reasons *r, const struct btf *btf);
void drops_reasons_free(struct drops_reasons *r); /* accepts NULL */
/* A table filled by name (a recording's, drops_replay.c): empty, NULL on
 * ENOMEM; then value -> name, the first name of a value kept (NOT_DROPPED_YET
 * and CONSUMED are no drops, as from BTF). 1 added, 0 known, -ENOMEM. */
struct drops_reasons *drops_reasons_new_named(void);
int drops_reasons_add_name(struct drops_reasons *r, uint32_t value, const char *name);

/* Name of a value, or NULL when the BTF does not name it. */
const char *drops_reason_name(const struct drops_reasons *r, uint32_t value);
/* Name or "UNKNOWN_<value>" into buf; returns buf. */
const char *drops_reason_format(const struct drops_reasons *r, uint32_t value, char *buf,
				size_t len);
/* Value of a name ("NO_SOCKET"); -ENOENT if none. */
int drops_reason_value(const struct drops_reasons *r, const char *name, uint32_t *value);
/* False for SKB_NOT_DROPPED_YET and SKB_CONSUMED. */
bool drops_reason_is_drop(const struct drops_reasons *r, uint32_t value);
/* True when value carries a subsystem the kernel declares but no loaded BTF
 * names yet (a module may have loaded since: worth a rescan). */
bool drops_reason_subsys_unnamed(const struct drops_reasons *r, uint32_t value);
size_t drops_reasons_count(const struct drops_reasons *r);
/* Name of the i-th reason (0 <= i < drops_reasons_count), for listing. */
const char *drops_reason_at(const struct drops_reasons *r, size_t i);

#endif
