/* SPDX-License-Identifier: MIT */
/*
 * The agent's sections [agent], [http] and [storage] (agent/agent_config.c)
 * as the agent's parts take them, for agent.c. Each parse records every bad
 * value (cfg->errors) and returns 0 or -EINVAL; agent.h has the checks that
 * run them all.
 */
#ifndef SYSOBS_AGENT_CONFIG_H
#define SYSOBS_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/agent.h"
#include "agent/privsep.h"

struct event_table;
struct events_export;
struct export_identity_buf;

#define AGENT_MAX_TABLES 64

/* a->sysfs_root and a->hostname from [agent], and a->host: the hostname,
 * else gethostname(), "" if both fail (its errors: agent_privsep_config()). */
void agent_host_config(struct agent *a);
/* [storage] into sc, and a->snapshot_ms. */
int agent_storage_config(struct agent *a, struct store_config *sc);
/* [storage] table_retention = "TABLE=DURATION, ...": an unknown table or a
 * bad duration is a config error (file:line), never ignored. Into a->store;
 * without a store (a check), a table is known if a collector declares it. */
int agent_table_retention(struct agent *a);
/* [http] into hc; the web config file is read and parsed only with
 * read_files (not by a reload's check, after the drop). */
int agent_http_config(struct agent *a, struct http_config *hc, bool read_files);
/* [agent] user and seccomp (and the section's other keys checked). The user
 * is looked up only with lookup (not by a reload's check, which runs under
 * the agent's own seccomp filter, where NSS may not work). */
/* [kubernetes]: the CRI socket in effect ("" none; auto resolved now by
 * a stat of each candidate), the refresh and timeout. 0 or -EINVAL. */
struct names_config;
int agent_names_config(struct agent *a, struct names_config *nc);
int agent_privsep_config(struct agent *a, struct privsep_config *pc, bool lookup);
/* [http] listen must parse and be bindable now, before anything is loaded
 * or attached: a bad address, an address not on this host, a port below
 * net.ipv4.ip_unprivileged_port_start (the agent never counts on
 * CAP_NET_BIND_SERVICE, which its unit does not grant) or a port in use
 * (unless in_use_ok: --check-config beside the running agent) exits 2 at
 * once. The probe socket is closed again; http_start() binds for real. */
int agent_listen_check(struct agent *a, const char *listen, bool in_use_ok);
/* [storage] path's directory: exists, inside SYSOBS_WRITABLE_PATHS when
 * that is set (the unit's sandbox), reachable by the user the agent
 * becomes (pc; NULL: not asked). 0 or -EINVAL with the error recorded. */
int agent_db_dir_check(struct agent *a, const char *path, const struct privsep_config *pc);
/* Every event table any collector declares, NULL-terminated, into
 * tables[AGENT_MAX_TABLES + 1]: the store has them all, whichever run. */
size_t agent_all_tables(const struct event_table **tables);
/* [export.NAME] sections, with the host's identity (a failed resolution:
 * remote_write_check() names the key, and job and instance are ""). */
int agent_export_new(struct agent *a, const struct export_identity_buf *id, bool read_files,
		     struct events_export **out);

#endif
