/* SPDX-License-Identifier: MIT */
/*
 * A sampled drop's kernel stack as one folded line, the format flame-graph
 * tools take (Brendan Gregg's stackcollapse output): function names from
 * the outermost frame to the innermost, joined by ';'. Pure: unit-tested.
 */
#ifndef SYSOBS_DROPS_STACK_H
#define SYSOBS_DROPS_STACK_H

#include <stddef.h>
#include <stdint.h>

struct drops_ksyms;

/*
 * frames[0..n) are return addresses as bpf_get_stack() gives them,
 * innermost first. The frames of the BPF program and of the tracepoint
 * that ran it (bpf_*, __bpf_*, __traceiter_*, perf_trace_* and [bpf]
 * symbols) are left out, as the dropping function is what matters;
 * addresses no symbol covers stay as 0x<hex>; offsets and module names
 * are dropped, so one function is one frame whatever the call site. The
 * line is cut at its outer end (keeping the frames nearest the drop) to
 * fit len. Returns the frames written.
 */
size_t drops_stack_fold(const struct drops_ksyms *k, const uint64_t *frames, size_t n, char *buf,
			size_t len);

#endif
