/* SPDX-License-Identifier: MIT */
/*
 * Kernel text symbols from /proc/kallsyms, to name the location a drop came
 * from ("__udp4_lib_rcv+0x5a4"). libbpf keeps its kallsyms reader private.
 *
 * Nothing of kallsyms is kept in memory (120,000 text symbols would be ~6 MiB
 * of the idle agent): each address not seen before costs one streaming pass
 * over the file (~30 ms), and its text is cached. Drop sites are a small set
 * of kernel call sites, so the cache stays small; it is bounded all the same
 * (see drops_ksyms_set_cache_max()).
 *
 * Addresses read as 0 when kptr_restrict hides them from this process; there
 * are then no symbols and locations print as hex.
 */
#ifndef SYSOBS_DROPS_KSYM_H
#define SYSOBS_DROPS_KSYM_H

#include <stddef.h>
#include <stdint.h>

struct drops_ksyms;

#define DROPS_KSYM_TEXT_MAX  128  /* "sym+0xoff [module]" */
#define DROPS_KSYM_CACHE_MAX 4096 /* resolved addresses kept */

/* Symbols from kallsyms text ("addr type name [module]" lines) held in
 * memory (a copy): for tests. Text symbols are t, T, w, W. NULL + ENOMEM. */
struct drops_ksyms *drops_ksyms_parse(const char *text, size_t len);
/* Symbols from a file (normally /proc/kallsyms), read again on each cache
 * miss; this first pass counts them. NULL + errno when it cannot be read. */
struct drops_ksyms *drops_ksyms_load(const char *path);
void drops_ksyms_free(struct drops_ksyms *k); /* accepts NULL */
/* Text symbols with visible addresses (0: restricted or none). */
size_t drops_ksyms_count(const struct drops_ksyms *k);
/* Passes over the source made to resolve addresses (cache misses). */
uint64_t drops_ksyms_scans(const struct drops_ksyms *k);
/* Addresses kept (default DROPS_KSYM_CACHE_MAX). Past it, a new address
 * prints as hex without a pass over the file: a flood of distinct locations
 * cannot stall the event loop 30 ms per record. */
void drops_ksyms_set_cache_max(struct drops_ksyms *k, size_t max);

/* "sym+0xoff" (or "sym+0xoff [module]") into buf; "0x<addr>" and -ENOENT
 * when no symbol covers addr (k may be NULL). */
int drops_ksyms_format(struct drops_ksyms *k, uint64_t addr, char *buf, size_t len);

#endif
