/* SPDX-License-Identifier: MIT */
/*
 * Kernel text symbols from /proc/kallsyms, to name the location a drop came
 * from ("__udp4_lib_rcv+0x5a4"). libbpf keeps its kallsyms reader private,
 * so this is a compact sorted table with a binary search, read at start
 * (~40 ms) and again after a module load or unload: 12 bytes a symbol plus
 * its name, __pfx_ padding symbols left out, ~2 MiB for a 6.x kernel. A
 * lookup never touches the file, so the event loop never waits on it
 * (reading the file per new address cost 30 ms a time and made a busy MPTCP
 * netlink socket overrun).
 *
 * Addresses read as 0 when kptr_restrict hides them from this process; the
 * table is then empty and locations print as hex.
 */
#ifndef SYSOBS_DROPS_KSYM_H
#define SYSOBS_DROPS_KSYM_H

#include <stddef.h>
#include <stdint.h>

struct drops_ksyms;

/* Parses kallsyms text ("addr type name [module]" lines); keeps text
 * symbols (t, T, w, W). Pure. NULL + errno ENOMEM. */
struct drops_ksyms *drops_ksyms_parse(const char *text, size_t len);
/* Reads and parses a file (normally /proc/kallsyms). NULL + errno. */
struct drops_ksyms *drops_ksyms_load(const char *path);
/*
 * The same from an open fd, read again from offset 0: the collector keeps
 * /proc/kallsyms open from start-up, because the kernel decides at open
 * (file->f_cred, kernel/kallsyms.c kallsyms_open) whether a reader sees
 * addresses, and a re-read after the agent dropped its privileges through a
 * new open would show zeros. NULL + errno.
 */
struct drops_ksyms *drops_ksyms_read_fd(int fd);
void drops_ksyms_free(struct drops_ksyms *k); /* accepts NULL */
size_t drops_ksyms_count(const struct drops_ksyms *k);
/* Heap bytes the table holds. */
size_t drops_ksyms_bytes(const struct drops_ksyms *k);

/* Text range [*start, *end) of the vmlinux symbol `name`: from its address
 * to the next symbol's. 0; -ENOENT when absent, -EEXIST when more than one
 * vmlinux symbol has that name (static functions of the same name). */
int drops_ksyms_range(const struct drops_ksyms *k, const char *name, uint64_t *start,
		      uint64_t *end);

/* "sym+0xoff" (or "sym+0xoff [module]") into buf; "0x<addr>" and -ENOENT
 * when no symbol covers addr (k may be NULL). */
int drops_ksyms_format(const struct drops_ksyms *k, uint64_t addr, char *buf, size_t len);
/* The kallsyms line of the symbol covering addr ("<start> t name" or
 * "<start> t name\t[module]", what drops_ksyms_parse() reads), its start
 * address in *start: a drops recording keeps the symbols its samples name.
 * 0; -ENOENT (no symbol), -ENAMETOOLONG (len too small). */
int drops_ksyms_line(const struct drops_ksyms *k, uint64_t addr, uint64_t *start, char *buf,
		     size_t len);

#endif
