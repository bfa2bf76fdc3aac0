// SPDX-License-Identifier: MIT
/* Privilege separation and dropping (see privsep.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procfs.h"
#include "agent/privsep.h"
#include "collectors/privwrite.h"

#define IFS_DIR	  "/devices/virtual/misc/intel_ifs_"
#define DEV_MAX	  64
#define CPU_MAX	  65535
#define BATCH_MAX 0xffff

static struct {
	int fd;
	pid_t pid;
	char root[256];
	char cri[108]; /* the CRI runtime's socket, "" none */
	pthread_mutex_t lock;
} helper = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

pid_t privsep_helper_pid(void)
{
	return helper.pid;
}

/* ---- the helper ---- */

static void privsep_cri_socket_set(const char *path)
{
	snprintf(helper.cri, sizeof(helper.cri), "%s", path ? path : "");
}

/* A new connection to the CRI runtime's socket, as root (the socket is
 * root's, mode 0660: its owner needs no capability). Connected by path at
 * each request, so a runtime that restarted (a new socket at that path) is
 * reached again. The descriptor or -errno. */
static int helper_cri_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (!helper.cri[0])
		return -EPERM;
	memcpy(sa.sun_path, helper.cri, sizeof(helper.cri));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* The reply, with the descriptor fd (>= 0) attached as SCM_RIGHTS. */
static void helper_reply(int sock, const struct privsep_rep *rp, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)rp, .iov_len = sizeof(*rp)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* The path of the request under the sysfs root, relative to it, with no
 * symlink on the way (priv_write_beneath). The form under /devices is the
 * one without symlinks in real sysfs; /sys/class/misc/intel_ifs_<N> is a
 * symlink to it. */
static int helper_do(const struct privsep_req *rq, int rootfd, struct privsep_rep *rp)
{
	char path[128];
	bool at_open = false;

	rp->at_open = 0;
	if (rq->op == PRIVSEP_CRI_CONNECT) {
		int fd = helper_cri_connect();

		rp->rc = fd < 0 ? fd : 0;
		return fd < 0 ? (fd == -EPERM ? -1 : -2) : fd + 3;
	}
	if ((rq->op != PRIVSEP_RUN_TEST && rq->op != PRIVSEP_LOAD_BATCH) || rq->dev >= DEV_MAX ||
	    rq->value > (rq->op == PRIVSEP_RUN_TEST ? CPU_MAX : BATCH_MAX)) {
		rp->rc = -EPERM;
		return -1;
	}
	snprintf(path, sizeof(path), "%s%u/%s", &IFS_DIR[1] /* no leading '/' */, rq->dev,
		 rq->op == PRIVSEP_RUN_TEST ? "run_test" : "current_batch");
	rp->rc = priv_write_beneath(rootfd, path, rq->value, &at_open);
	rp->at_open = at_open;
	return 0;
}

int privsep_serve(int fd, int rootfd)
{
	int refused = 0;

	for (;;) {
		struct privsep_req rq;
		struct privsep_rep rp;
		ssize_t n = recv(fd, &rq, sizeof(rq), 0);
		int r;

		if (n == 0)
			return refused; /* the agent is gone */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return refused;
		}
		if (n != sizeof(rq)) {
			rp = (struct privsep_rep){.rc = -EPERM};
			refused++;
		} else if ((r = helper_do(&rq, rootfd, &rp)) == -1) {
			refused++;
		} else if (r >= 3) { /* a descriptor to pass: r - 3 */
			helper_reply(fd, &rp, r - 3);
			close(r - 3);
			continue;
		}
		helper_reply(fd, &rp, -1);
	}
}

/*
 * Empties this thread's sets that only an execve() uses: bounding, ambient
 * and inheritable; permitted and effective stay. Each is per thread. The
 * bounding set is walked up to the kernel's last capability (EINVAL), not
 * the headers'. Emptying it needs CAP_SETPCAP: without it (an agent started
 * unprivileged) it stays as inherited and *bounding_kept says so.
 */
static int caps_exec_clear(bool *bounding_kept)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	*bounding_kept = false;
	for (int c = 0; c < 64; c++) {
		if (!prctl(PR_CAPBSET_DROP, c, 0, 0, 0))
			continue;
		if (errno == EINVAL)
			break;
		if (errno != EPERM)
			return -errno;
		*bounding_kept = true;
		break;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[0].inheritable = d[1].inheritable = 0;
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Empties every set of this thread (the helper's only one). */
static int caps_clear(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	bool kept;
	int rc = caps_exec_clear(&kept);

	if (rc)
		return rc;
	if (kept)
		return -EPERM;
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Does this thread hold any permitted capability? */
static bool caps_permitted(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	return !syscall(SYS_capget, &h, d) && (d[0].permitted || d[1].permitted);
}

/* The number of threads of this process, 0 if /proc cannot tell. */
static int threads_count(void)
{
	uint64_t n;

	return procfs_status_field("Threads", 10, &n) || n > INT_MAX ? 0 : (int)n;
}

/*
 * The agent also gets socket() for its four families only (unix, inet,
 * inet6, netlink) and bpf() for commands on objects it already holds (map
 * reads and updates, object info, a test run of a loaded program), never a
 * load, attach or id lookup.
 */
static int agent_args_rules(scmp_filter_ctx ctx)
{
	static const int families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
	static const int bpf_cmds[] = {
	    BPF_MAP_LOOKUP_ELEM,    BPF_MAP_UPDATE_ELEM,
	    BPF_MAP_DELETE_ELEM,    BPF_MAP_GET_NEXT_KEY,
	    BPF_OBJ_GET_INFO_BY_FD, BPF_MAP_LOOKUP_AND_DELETE_ELEM,
	    BPF_MAP_LOOKUP_BATCH,   BPF_MAP_LOOKUP_AND_DELETE_BATCH,
	    BPF_MAP_UPDATE_BATCH,   BPF_MAP_DELETE_BATCH,
	    BPF_PROG_TEST_RUN, /* collectors/netns_live.c: a loaded walk */
	};
	int rc = 0;

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]) && !rc; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
	for (size_t i = 0; i < sizeof(bpf_cmds) / sizeof(bpf_cmds[0]) && !rc; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bpf), 1,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)bpf_cmds[i]));
	return rc;
}

static int seccomp_load_list(const int *calls, size_t n, uint32_t deflt, bool agent)
{
	scmp_filter_ctx ctx = seccomp_init(deflt);
	int rc = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		if (calls[i] >= 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0);
	if (!rc && agent)
		rc = agent_args_rules(ctx);
	/* Every thread of the agent, not only this one. */
	if (!rc && agent)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}

/* The helper opens files only with openat2() beneath rootfd, which it was
 * given open: open() and openat() are not in its filter. */
static void helper_main(int fd, int rootfd)
{
	static const int calls[] = {
	    SCMP_SYS(read),
	    SCMP_SYS(write),
	    SCMP_SYS(openat2),
	    SCMP_SYS(close),
	    SCMP_SYS(recvfrom),
	    SCMP_SYS(sendto),
	    SCMP_SYS(exit_group),
	    SCMP_SYS(exit),
	    SCMP_SYS(rt_sigreturn),
	    SCMP_SYS(restart_syscall),
	    /* the CRI runtime's socket: connected, passed, closed */
	    SCMP_SYS(socket),
	    SCMP_SYS(connect),
	    SCMP_SYS(sendmsg),
	};

	prctl(PR_SET_NAME, "sysobsd-priv", 0, 0, 0);
	/* Exit with the agent, whatever kills it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() == 1)
		_exit(1);
	if (caps_clear() || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		_exit(1);
	/* No filter on a kernel without seccomp (see privsep_drop). */
	if (!(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) &&
	    seccomp_load_list(calls, sizeof(calls) / sizeof(calls[0]), SCMP_ACT_KILL_PROCESS,
			      false))
		_exit(1);
	_exit(privsep_serve(fd, rootfd) ? 2 : 0);
}

/* ---- the agent's side ---- */

/* The collectors' privileged write, forwarded when it is one of the two
 * commands; anything else is refused here already. */
static int forward(const char *path, unsigned value, bool *at_open)
{
	size_t rl = strlen(helper.root), dl = strlen(IFS_DIR);
	struct privsep_req rq = {.value = value};
	struct privsep_rep rp = {.rc = -EIO};
	const char *p = path, *file;
	char *end;
	unsigned long dev;

	*at_open = false;
	if (strncmp(p, helper.root, rl) || strncmp(p + rl, IFS_DIR, dl))
		return -EPERM;
	p += rl + dl;
	if (*p < '0' || *p > '9')
		return -EPERM;
	dev = strtoul(p, &end, 10);
	if (*end != '/' || dev >= DEV_MAX)
		return -EPERM;
	file = end + 1;
	if (!strcmp(file, "run_test"))
		rq.op = PRIVSEP_RUN_TEST;
	else if (!strcmp(file, "current_batch"))
		rq.op = PRIVSEP_LOAD_BATCH;
	else
		return -EPERM;
	rq.dev = (unsigned)dev;

	pthread_mutex_lock(&helper.lock);
	if (send(helper.fd, &rq, sizeof(rq), MSG_NOSIGNAL) == sizeof(rq)) {
		ssize_t n;

		while ((n = recv(helper.fd, &rp, sizeof(rp), 0)) < 0 && errno == EINTR)
			;
		if (n != sizeof(rp))
			rp = (struct privsep_rep){.rc = -EIO};
	}
	pthread_mutex_unlock(&helper.lock);
	*at_open = rp.at_open;
	return rp.rc;
}

/* A connection to the CRI runtime from the helper, received as SCM_RIGHTS
 * (agent/names.h's connect function after the drop). fd or -errno. */
int privsep_cri_connect(void *arg)
{
	struct privsep_req rq = {.op = PRIVSEP_CRI_CONNECT};
	struct privsep_rep rp = {.rc = -EIO};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &rp, .iov_len = sizeof(rp)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	int fd = -1;

	(void)arg;
	if (helper.fd < 0)
		return -ENOTCONN;
	pthread_mutex_lock(&helper.lock);
	if (send(helper.fd, &rq, sizeof(rq), MSG_NOSIGNAL) == sizeof(rq)) {
		ssize_t n;

		while ((n = recvmsg(helper.fd, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
			;
		if (n != sizeof(rp))
			rp = (struct privsep_rep){.rc = -EIO};
		for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm;
		     cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	}
	pthread_mutex_unlock(&helper.lock);
	if (rp.rc == 0 && fd >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return rp.rc ? rp.rc : -EIO;
}

/*
 * The sysfs root is opened here, as configured (it is the operator's, so a
 * symlink in it is followed); what the helper opens under it is resolved
 * with no symlink at all. A kernel without openat2() is said once here: the
 * helper then refuses every write (priv_write_beneath).
 */
int privsep_helper_start(const char *sysfs_root, const char *cri_socket)
{
	int sv[2], rootfd, probe, rc;
	pid_t pid;

	if (strlen(sysfs_root) >= sizeof(helper.root) ||
	    (cri_socket && strlen(cri_socket) >= sizeof(helper.cri)))
		return -ENAMETOOLONG;
	privsep_cri_socket_set(cri_socket);
	rootfd = open(sysfs_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		rc = -errno;
		log_err("agent", "cannot open the sysfs root %s: %s", sysfs_root, strerror(-rc));
		return rc;
	}
	probe = priv_open_beneath(rootfd, ".", O_PATH);
	if (probe == -ENOSYS)
		log_warn("agent", "kernel without openat2(2) (Linux 5.6): the privileged helper "
				  "refuses every IFS write");
	else if (probe >= 0)
		close(probe);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		rc = -errno;
		goto out_close_root;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		goto out_close_root;
	}
	if (pid == 0) {
		/* Only the socket (3) and the sysfs root (4) stay open; both
		 * move above 4 first so that neither dup2() closes the other. */
		int s = fcntl(sv[1], F_DUPFD, 5), r = fcntl(rootfd, F_DUPFD, 5);

		if (s < 0 || r < 0 || dup2(s, 3) < 0 || dup2(r, 4) < 0)
			_exit(1);
		syscall(SYS_close_range, 5, ~0U, 0);
		helper_main(3, 4);
	}
	close(rootfd);
	close(sv[1]);
	helper.fd = sv[0];
	helper.pid = pid;
	strcpy(helper.root, sysfs_root);
	priv_write_install(forward);
	return 0;

out_close_root:
	close(rootfd);
	return rc;
}

/* What the running agent calls: the event loop, SQLite, libmicrohttpd,
 * libcurl (alerts, remote_write), BPF map and ring buffer reads, netlink,
 * /proc and sysfs reads. Found by running every collector and route under
 * [agent] seccomp = kill (integration.privsep). */
static const int agent_calls[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(pread64),
    SCMP_SYS(pwrite64),
    SCMP_SYS(open),
    SCMP_SYS(openat),
    SCMP_SYS(close),
    SCMP_SYS(close_range),
    SCMP_SYS(fstat),
    SCMP_SYS(stat),
    SCMP_SYS(lstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(statfs),
    SCMP_SYS(fstatfs),
    SCMP_SYS(lseek),
    SCMP_SYS(access),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(getdents64),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getcwd),
    SCMP_SYS(fcntl),
    SCMP_SYS(ioctl),
    SCMP_SYS(flock),
    SCMP_SYS(fsync),
    SCMP_SYS(fdatasync),
    SCMP_SYS(ftruncate),
    SCMP_SYS(fallocate),
    SCMP_SYS(unlink),
    SCMP_SYS(unlinkat),
    SCMP_SYS(rename),
    SCMP_SYS(renameat),
    SCMP_SYS(renameat2),
    SCMP_SYS(dup),
    SCMP_SYS(dup2),
    SCMP_SYS(dup3),
    SCMP_SYS(pipe2),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(mprotect),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(futex),
    SCMP_SYS(clone),
    SCMP_SYS(clone3),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(tgkill),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(getppid),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(time),
    SCMP_SYS(getrandom),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(select),
    SCMP_SYS(pselect6),
    SCMP_SYS(epoll_create1),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(eventfd2),
    SCMP_SYS(timerfd_create),
    SCMP_SYS(timerfd_settime),
    SCMP_SYS(timerfd_gettime),
    SCMP_SYS(signalfd4),
    SCMP_SYS(socketpair),
    SCMP_SYS(connect),
    SCMP_SYS(accept),
    SCMP_SYS(accept4),
    SCMP_SYS(bind),
    SCMP_SYS(listen),
    SCMP_SYS(getsockname),
    SCMP_SYS(getpeername),
    SCMP_SYS(setsockopt),
    SCMP_SYS(getsockopt),
    SCMP_SYS(sendto),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(shutdown),
    SCMP_SYS(uname),
    SCMP_SYS(sysinfo),
    SCMP_SYS(prlimit64),
    SCMP_SYS(getrlimit),
    SCMP_SYS(getrusage),
    SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(membarrier),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(prctl),
    SCMP_SYS(mincore),
    SCMP_SYS(umask),
    SCMP_SYS(fchmod),
    SCMP_SYS(getpriority),
    SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler),
    SCMP_SYS(fadvise64),
    SCMP_SYS(set_tid_address),
    /* The mptcp collector enters a watched namespace created again under
     * its path (a root agent; after the drop it fails for want of
     * CAP_SYS_ADMIN, which the collector logs). */
    SCMP_SYS(setns),
};

static void chown_db(const char *path, uid_t uid, gid_t gid)
{
	static const char *const sfx[] = {"", "-wal", "-shm"};
	char p[4096];

	for (size_t i = 0; path && i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		if (chown(p, uid, gid) && errno != ENOENT)
			log_warn("agent", "cannot give %s to uid %u: %s", p, (unsigned)uid,
				 strerror(errno));
	}
}

/* The user the agent would become: [agent] user, else (the default) nobody;
 * NULL to keep root. */
static struct passwd *target_user(const struct privsep_config *cfg, bool quiet)
{
	struct passwd *pw;

	if (geteuid() != 0 || !strcmp(cfg->user, "root"))
		return NULL;
	pw = getpwnam(cfg->user);
	if (pw || !cfg->user_is_default)
		return pw;
	if (!quiet)
		log_info("agent", "no user %s: running as nobody", cfg->user);
	pw = getpwnam("nobody");
	if (!pw && !quiet)
		log_warn("agent", "neither sysobs nor nobody exist: keeping root (set [agent] "
				  "user to an unprivileged user)");
	return pw;
}

int privsep_check_db_dir(const struct privsep_config *cfg, const char *db_path, char *err,
			 size_t errlen)
{
	struct passwd *pw = target_user(cfg, true);
	char copy[PATH_MAX];
	const char *dir;
	int status;
	pid_t pid;

	if (!pw)
		return 0;
	snprintf(copy, sizeof(copy), "%s", db_path);
	dir = dirname(copy); /* ".", "/" or the part before the last slash */
	pid = fork();
	if (pid < 0)
		return 0; /* cannot tell; the drop will say */
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
			_exit(0);
		_exit(access(dir, X_OK) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 1) {
		snprintf(err, errlen,
			 "the database directory %s is not reachable by %s, the user the agent "
			 "becomes after start-up: give it to that user, or set [agent] user",
			 dir, pw->pw_name);
		return -EACCES;
	}
	return 0;
}

/*
 * The bounding, ambient and inheritable sets and no_new_privs belong to each
 * thread, and nothing later reaches every thread for them: the uid change in
 * privsep_drop() clears permitted, effective and ambient on every thread
 * (glibc runs setresuid on each), not bounding or inheritable; seccomp's
 * TSYNC copies no_new_privs only along with a filter. So they are set here,
 * on the process's only thread, and every thread inherits them. Nothing at
 * start-up needs them: they only bound what an execve() could gain, and the
 * agent executes nothing (its helper and the database check are forks that
 * do not exec). With [agent] user = root the capabilities are kept.
 */
int privsep_prepare(const struct privsep_config *cfg, char *err, size_t errlen)
{
	int threads = threads_count(), rc;
	bool kept;

	if (threads > 1) {
		snprintf(err, errlen, "privileges are prepared after %d threads started", threads);
		return -EBUSY;
	}
	if (strcmp(cfg->user, "root")) {
		rc = caps_exec_clear(&kept);
		if (rc) {
			snprintf(err, errlen, "cannot clear the capability sets: %s",
				 strerror(-rc));
			return rc;
		}
		/* Started without CAP_SETPCAP (not as root): no_new_privs
		 * keeps execve() from gaining what the set allows. */
		if (kept)
			log_info("agent", "no CAP_SETPCAP: the capability bounding set stays as "
					  "inherited");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int privsep_drop(const struct privsep_config *cfg, char *err, size_t errlen)
{
	static const uint32_t actions[] = {
	    [PRIVSEP_SECCOMP_LOG] = SCMP_ACT_LOG,
	    [PRIVSEP_SECCOMP_ERRNO] = SCMP_ACT_ERRNO(EPERM),
	    [PRIVSEP_SECCOMP_KILL] = SCMP_ACT_KILL_PROCESS,
	};
	struct passwd *pw = target_user(cfg, false);
	int rc;

	if (pw) {
		const char *user = pw->pw_name;

		chown_db(cfg->db_path, pw->pw_uid, pw->pw_gid);
		if (setgroups(0, NULL) || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid)) {
			snprintf(err, errlen, "cannot switch to group %u: %s", (unsigned)pw->pw_gid,
				 strerror(errno));
			return -errno;
		}
		/* glibc changes the ids of every thread; leaving uid 0 clears
		 * their permitted, effective and ambient capabilities. The
		 * bounding and inheritable sets are empty since
		 * privsep_prepare(). */
		if (setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid)) {
			snprintf(err, errlen, "cannot switch to user %s: %s", user,
				 strerror(errno));
			return -errno;
		}
		if (setuid(0) == 0) {
			snprintf(err, errlen, "uid 0 could be regained after the drop");
			return -EPERM;
		}
		log_info("agent", "running as %s (uid %u) without capabilities", user,
			 (unsigned)pw->pw_uid);
	} else if (geteuid() == 0 && !strcmp(cfg->user, "root")) {
		log_warn("agent", "[agent] user = root: keeping every privilege");
	} else if (geteuid() != 0 && caps_permitted()) {
		/* capset() reaches one thread only; the uid change from 0 is
		 * what clears every thread's capabilities. */
		log_warn("agent",
			 "started as uid %u with capabilities: they are kept (start as "
			 "root to have them dropped)",
			 (unsigned)geteuid());
	}
	/* Set on every thread by privsep_prepare() already; a filter is
	 * loaded without CAP_SYS_ADMIN only by a thread that has it. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return -errno;
	}
	if (cfg->seccomp == PRIVSEP_SECCOMP_OFF)
		return 0;
#if defined(__SANITIZE_ADDRESS__) || defined(SYSOBS_SANITIZED)
	/* LeakSanitizer stops the threads with ptrace at exit, which the
	 * filter refuses: test builds with sanitizers run without it. */
	log_warn("agent", "sanitizer build: no system call filter");
	return 0;
#endif
	/* A kernel built without CONFIG_SECCOMP_FILTER (the VM test kernel,
	 * some embedded ones) has no filter to load: say so, run on. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
		log_warn("agent", "kernel without seccomp: no system call filter");
		return 0;
	}
	rc = seccomp_load_list(agent_calls, sizeof(agent_calls) / sizeof(agent_calls[0]),
			       actions[cfg->seccomp], true);
	if (rc) {
		snprintf(err, errlen, "seccomp: %s", strerror(-rc));
		return rc;
	}
	return 0;
}
