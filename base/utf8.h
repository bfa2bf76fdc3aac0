/* SPDX-License-Identifier: MIT */
/*
 * Well-formed UTF-8 (RFC 3629, Unicode Table 3-7): no overlong forms, no
 * surrogates, nothing past U+10FFFF. One definition for what the exposition
 * formats accept as label values and help text and what the JSON encoder
 * passes through as it is.
 */
#ifndef SYSOBS_UTF8_H
#define SYSOBS_UTF8_H

#include <stdbool.h>

/* Length (2 to 4) of the well-formed multi-byte sequence at p, 0 if there is
 * none (an ASCII byte included). p is NUL-terminated, and NUL is never a
 * continuation byte, so no byte past the terminator is read. */
int utf8_seq_len(const unsigned char *p);
/* s is well-formed UTF-8 throughout. */
bool utf8_valid(const char *s);

#endif
