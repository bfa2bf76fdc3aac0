/* SPDX-License-Identifier: MIT */
/*
 * The body of POST /api/v1/ifs/scans, parsed without the topology: what is
 * wrong with the JSON itself is a 400 here; whether a CPU or core exists,
 * is allowed and online is the route's to decide under the collector lock.
 *
 *   {"cpus": [3, 17]}                                CPU numbers
 *   {"cores": [{"package": 0, "core": 5}, 7]}        a core, or a bare core id
 *                                                    (that core in every package)
 *   optional "tests": ["scan", "array", "sbaf"]      default: every test the host runs
 */
#ifndef SYSOBS_IFS_REQUEST_H
#define SYSOBS_IFS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "collectors/ifs/ifs_sched.h"

#define IFS_REQUEST_MAX IFS_MAX_CPUS /* entries of "cpus" or "cores" */

struct ifs_scan_target {
	int package; /* -1: none given (a CPU, or a bare core id) */
	int id;	     /* CPU number, or core id */
};

struct ifs_scan_request {
	bool by_cpu;	/* "cpus" given, else "cores" */
	unsigned tests; /* bit 1 << enum ifs_test; 0: not given */
	size_t n;
	struct ifs_scan_target targets[IFS_REQUEST_MAX];
};

/*
 * Parses body (len bytes, need not be NUL-terminated; NULL = no body) into
 * out. 0, or -EINVAL with a message for the client in err: not a JSON
 * object, an unknown or repeated field, neither or both of "cpus" and
 * "cores", an empty or too long list, an entry of the wrong type or
 * negative, an entry or test listed twice, an unknown test. Pure.
 */
int ifs_scan_request_parse(const char *body, size_t len, struct ifs_scan_request *out, char *err,
			   size_t errlen);

#endif
