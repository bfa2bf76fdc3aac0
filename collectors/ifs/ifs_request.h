/* SPDX-License-Identifier: MIT */
/*
 * The body of POST /api/v1/ifs/scans, an IfsScanRequest (api/proto/
 * sysobs.proto) the agent decoded from JSON or protobuf, checked without
 * the topology: what is wrong with the request itself is a 400 here; whether
 * a CPU or core exists, is allowed and online is the route's to decide under
 * the collector lock.
 *
 *   {"cpus": [3, 17]}                                     CPU numbers
 *   {"cores": [{"package": 0, "core": 5}, {"core": 7}]}   a core, or a core id
 *                                                         in every package
 *   optional "tests": ["scan", "array", "sbaf"]           default: every test the host runs
 *
 * Field names and types (an unknown field, a string for a number, a negative
 * core) are the decoder's to refuse, before this sees the message.
 */
#ifndef SYSOBS_IFS_REQUEST_H
#define SYSOBS_IFS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/ifs/ifs_sched.h"

#define IFS_REQUEST_MAX IFS_MAX_CPUS /* entries of "cpus" or "cores" */

struct ifs_scan_target {
	int package; /* -1: none given (a CPU, or a core id in every package) */
	int id;	     /* CPU number, or core id */
};

struct ifs_scan_request {
	bool by_cpu;	/* "cpus" given, else "cores" */
	unsigned tests; /* bit 1 << enum ifs_test; 0: not given */
	size_t n;
	struct ifs_scan_target targets[IFS_REQUEST_MAX];
};

/*
 * Checks the decoded body m (NULL = none) and fills out. 0, or -EINVAL with
 * a message for the client in err: no body, neither or both of "cpus" and
 * "cores" non-empty, a list too long, a negative CPU or a core or package
 * above INT_MAX, an entry or test listed twice, an unknown test. Pure.
 */
int ifs_scan_request_parse(const Sysobs__V1__IfsScanRequest *m, struct ifs_scan_request *out,
			   char *err, size_t errlen);

#endif
