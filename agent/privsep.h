/* SPDX-License-Identifier: MIT */
/*
 * Least privilege. Everything privileged happens at start (BPF load and
 * attach, ring buffers and map fds, netlink sockets in every configured
 * netns, the database). Before the first thread starts, privsep_prepare()
 * empties the bounding, ambient and inheritable capability sets and sets
 * PR_SET_NO_NEW_PRIVS, all of them per-thread state that every thread then
 * inherits. After start-up:
 *
 *  1. Only if a collector that writes through it runs (the ifs collector
 *     found a device: agent_start()), privsep_helper_start() forks a
 *     helper that stays uid 0 with no capabilities, no new privileges and
 *     a seccomp filter of a handful of syscalls. It serves one fixed
 *     command set over a socketpair: write a CPU number to
 *     intel_ifs_<N>/run_test, write a batch number to
 *     intel_ifs_<N>/current_batch (root-owned 0200 files under the
 *     configured sysfs root, which root may write as their owner without any
 *     capability), resolved with openat2() beneath the root opened at start
 *     with no symlink in any component. It refuses anything else and exits
 *     with the agent. When a CRI runtime socket is configured ([kubernetes]
 *     cri_socket), the helper is forked for it too and serves one more
 *     command: connect to that socket (root's, 0660) and pass the connected
 *     descriptor back (SCM_RIGHTS), for the name service (agent/names.h),
 *     again after the runtime restarted.
 *  2. privsep_drop() switches the agent to [agent] user (default sysobs,
 *     else nobody): the database files change owner, supplementary groups
 *     go, uid/gid change on every thread (which clears the permitted,
 *     effective and ambient sets) and a seccomp allow-list of what the
 *     running agent uses is loaded on every thread (TSYNC).
 *
 * Kernel facts this relies on: operations on BPF map and ring buffer fds
 * already held need no capability since 5.19 (older kernels: keep user =
 * root there); joining a netns after start needs CAP_SYS_ADMIN, so
 * namespaces that appear later are not watched after the drop.
 */
#ifndef SYSOBS_PRIVSEP_H
#define SYSOBS_PRIVSEP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* In the order [agent] seccomp lists its names (agent/agent_config.c). */
enum privsep_seccomp {
	PRIVSEP_SECCOMP_ERRNO,
	PRIVSEP_SECCOMP_KILL,
	PRIVSEP_SECCOMP_LOG,
	PRIVSEP_SECCOMP_OFF,
};

struct privsep_config {
	const char *user;     /* "root": keep privileges */
	bool user_is_default; /* fall back to nobody when it does not exist */
	enum privsep_seccomp seccomp;
	const char *sysfs_root; /* the helper's only tree */
	const char *db_path;	/* chowned to the user with its -wal/-shm */
};

/* Before any thread exists (-EBUSY otherwise): the per-thread state above;
 * the capability sets only unless cfg->user is "root", the bounding set only
 * with CAP_SETPCAP (an agent started unprivileged keeps it, harmless under
 * no_new_privs). 0, or -errno with a message in err. */
int privsep_prepare(const struct privsep_config *cfg, char *err, size_t errlen);
/* Forks the helper (as root, before the drop) and installs the forwarding
 * of collectors' privileged writes (collectors/privwrite.h). 0 or -errno. */
int privsep_helper_start(const char *sysfs_root, const char *cri_socket);
/* A connection to the CRI runtime's socket (cri_socket above, "" or NULL:
 * none) made by the helper and passed back as SCM_RIGHTS: what the name
 * service (agent/names.h) connects with after the drop. fd or -errno
 * (-ENOTCONN without a helper, -EPERM when it has no socket). */
int privsep_cri_connect(void *arg);
pid_t privsep_helper_pid(void);

/* Before anything starts: can the user the agent will become reach the
 * directory of the database at db_path? 0, or -EACCES with a message in err. */
int privsep_check_db_dir(const struct privsep_config *cfg, const char *db_path, char *err,
			 size_t errlen);
/* Drops privileges as described above. 0, or -errno with a message in err. */
int privsep_drop(const struct privsep_config *cfg, char *err, size_t errlen);

/* Commands of the helper's wire protocol (tests speak it directly). */
enum privsep_op { PRIVSEP_RUN_TEST = 1, PRIVSEP_LOAD_BATCH = 2, PRIVSEP_CRI_CONNECT = 3 };
struct privsep_req {
	unsigned op, dev, value;
};
struct privsep_rep {
	int rc; /* 0 or -errno; -EPERM for a refused command */
	int at_open;
};
/* The helper's loop on fd, for the forked child and for tests: serves until
 * EOF, writing beneath rootfd (an open directory, O_PATH is enough).
 * Returns the number of refused commands. */
int privsep_serve(int fd, int rootfd);

#endif
