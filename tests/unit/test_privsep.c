/* SPDX-License-Identifier: MIT */
/*
 * The privileged helper's command set (agent/privsep.c): the two IFS writes
 * under its sysfs root are done, everything else is refused — an unknown
 * command, a device or value out of range, a short message, and, on the
 * agent's side, any path that is not intel_ifs_<N>/run_test or
 * current_batch under the root (never sent to the helper at all). The
 * helper resolves its path with no symlink in any component and never out
 * of its root: a symlinked directory (to outside the root or inside it), a
 * symlinked file and a ".." out of the root are refused, and what they point
 * at is left as it was. The helper in test_forwarded_writes is the real
 * forked one, with its seccomp filter.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/privsep.h"
#include "collectors/privwrite.h"

static char root[64];

/* "<root>/devices/virtual/misc/<rel>" */
static void ifs_path(char *p, size_t n, const char *rel)
{
	snprintf(p, n, "%s/devices/virtual/misc/%s", root, rel);
}

static void make_tree(void)
{
	char p[256];

	strcpy(root, "/tmp/sysobs-privsep.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/devices/virtual/misc/intel_ifs_1", root);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && : > %s/run_test && : > %s/current_batch", p, p,
		 p);
	assert_int_equal(system(cmd), 0);
}

/* Reads the file at p. */
static void read_path(const char *p, char *out, size_t n)
{
	FILE *f = fopen(p, "r");

	assert_non_null(f);
	out[fread(out, 1, n - 1, f)] = '\0';
	fclose(f);
}

/* Reads intel_ifs_1/<rel> of the tree. */
static void read_file(const char *rel, char *out, size_t n)
{
	char p[256], r[64];

	snprintf(r, sizeof(r), "intel_ifs_1/%s", rel);
	ifs_path(p, sizeof(p), r);
	read_path(p, out, n);
}

/* Writes "untouched" to p, creating it. */
static void write_path(const char *p)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs("untouched", f);
	fclose(f);
}

/* Forks privsep_serve() on a socketpair, beneath dir; *fd is our end. */
static pid_t serve_fork(const char *dir, int *fd)
{
	int sv[2], rootfd;
	pid_t pid;

	rootfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(privsep_serve(sv[1], rootfd));
	}
	close(rootfd);
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

/* Closes fd and returns the helper's exit status (its refused count). */
static int serve_end(pid_t pid, int fd)
{
	int status;

	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static struct privsep_rep ask(int fd, const void *req, size_t len)
{
	struct privsep_rep rep = {.rc = 1};

	assert_int_equal(send(fd, req, len, 0), (ssize_t)len);
	assert_int_equal(recv(fd, &rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
	return rep;
}

static void test_serve_command_set(void **state)
{
	pid_t pid;
	char buf[32];
	int fd;

	make_tree();
	pid = serve_fork(root, &fd);
	struct privsep_req ok = {PRIVSEP_RUN_TEST, 1, 7};
	assert_int_equal(ask(fd, &ok, sizeof(ok)).rc, 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "7\n");
	struct privsep_req batch = {PRIVSEP_LOAD_BATCH, 1, 2};
	assert_int_equal(ask(fd, &batch, sizeof(batch)).rc, 0);
	read_file("current_batch", buf, sizeof(buf));
	assert_string_equal(buf, "2\n");

	struct privsep_req bad[] = {
	    {3, 1, 7},			      /* unknown command */
	    {0, 1, 7},			      /* unknown command */
	    {PRIVSEP_RUN_TEST, 64, 7},	      /* device out of range */
	    {PRIVSEP_RUN_TEST, 1, 70000},     /* CPU out of range */
	    {PRIVSEP_LOAD_BATCH, 1, 0x10000}, /* batch out of range */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ask(fd, &bad[i], sizeof(bad[i])).rc, -EPERM);
	assert_int_equal(ask(fd, "x", 1).rc, -EPERM); /* short message */
	/* A device that does not exist: the write's own error, from open. */
	struct privsep_req missing = {PRIVSEP_RUN_TEST, 2, 1};
	struct privsep_rep r = ask(fd, &missing, sizeof(missing));
	assert_int_equal(r.rc, -ENOENT);
	assert_int_equal(r.at_open, 1);
	assert_int_equal(serve_end(pid, fd), 6); /* 6 refused */
}

/*
 * A symlink anywhere on the helper's path is refused with ELOOP, before
 * anything is written: intel_ifs_2 is a symlinked directory out of the root,
 * intel_ifs_3 one to intel_ifs_1 inside it, intel_ifs_4/run_test a
 * symlinked file, and in a second root "devices" itself is a symlink to the
 * first tree's. The plain intel_ifs_1 is still written. A ".." that climbs
 * out of the root is EXDEV (the wire protocol cannot carry one: this is the
 * helper's open itself).
 */
static void test_serve_no_symlink(void **state)
{
	char out[64], root2[64], p[256], q[256], buf[32];
	int fd, rootfd;
	bool at_open;
	pid_t pid;

	make_tree();
	strcpy(out, "/tmp/sysobs-privsep.XXXXXX");
	assert_non_null(mkdtemp(out));
	snprintf(p, sizeof(p), "%s/intel_ifs_2", out);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/intel_ifs_2/run_test", out);
	write_path(p);
	snprintf(q, sizeof(q), "%s/intel_ifs_2", out);
	ifs_path(p, sizeof(p), "intel_ifs_2");
	assert_int_equal(symlink(q, p), 0);
	ifs_path(p, sizeof(p), "intel_ifs_3");
	assert_int_equal(symlink("intel_ifs_1", p), 0);
	ifs_path(p, sizeof(p), "intel_ifs_4");
	assert_int_equal(mkdir(p, 0755), 0);
	ifs_path(p, sizeof(p), "intel_ifs_4/run_test");
	assert_int_equal(symlink("../intel_ifs_1/run_test", p), 0);
	ifs_path(p, sizeof(p), "intel_ifs_1/run_test");
	write_path(p);

	pid = serve_fork(root, &fd);
	for (unsigned dev = 2; dev <= 4; dev++) {
		struct privsep_req rq = {PRIVSEP_RUN_TEST, dev, 9};
		struct privsep_rep r = ask(fd, &rq, sizeof(rq));

		assert_int_equal(r.rc, -ELOOP);
		assert_int_equal(r.at_open, 1);
	}
	snprintf(p, sizeof(p), "%s/intel_ifs_2/run_test", out);
	read_path(p, buf, sizeof(buf));
	assert_string_equal(buf, "untouched");
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "untouched");
	ifs_path(p, sizeof(p), "intel_ifs_1/run_test");
	assert_int_equal(truncate(p, 0), 0); /* sysfs has no old content */
	struct privsep_req ok = {PRIVSEP_RUN_TEST, 1, 5};
	assert_int_equal(ask(fd, &ok, sizeof(ok)).rc, 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "5\n");
	assert_int_equal(serve_end(pid, fd), 0); /* errors of the write, not refusals */

	/* A symlink higher up: <root2>/devices -> <root>/devices. */
	strcpy(root2, "/tmp/sysobs-privsep.XXXXXX");
	assert_non_null(mkdtemp(root2));
	snprintf(p, sizeof(p), "%s/devices", root);
	snprintf(q, sizeof(q), "%s/devices", root2);
	assert_int_equal(symlink(p, q), 0);
	pid = serve_fork(root2, &fd);
	struct privsep_req via = {PRIVSEP_RUN_TEST, 1, 6};
	assert_int_equal(ask(fd, &via, sizeof(via)).rc, -ELOOP);
	assert_int_equal(serve_end(pid, fd), 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "5\n");

	/* ".." out of the root, to a file that exists: EXDEV, untouched. */
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	snprintf(p, sizeof(p), "devices/../../%s/intel_ifs_2/run_test", strrchr(out, '/') + 1);
	assert_int_equal(priv_write_beneath(rootfd, p, 7, &at_open), -EXDEV);
	assert_true(at_open);
	snprintf(p, sizeof(p), "%s/intel_ifs_2/run_test", out);
	assert_int_equal(priv_write_beneath(rootfd, p, 7, &at_open), -EXDEV); /* absolute */
	read_path(p, buf, sizeof(buf));
	assert_string_equal(buf, "untouched");
	/* A ".." that stays beneath the root is no escape. */
	assert_int_equal(priv_write_beneath(rootfd,
					    "devices/../devices/virtual/misc/intel_ifs_1/run_test",
					    8, &at_open),
			 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "8\n");
	close(rootfd);
}

/* A unix socket listening at path (a CRI runtime's stand-in). */
static int cri_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

/* The helper's connection reaches the listener: a byte goes through. */
static void cri_roundtrip(int lfd)
{
	int fd = privsep_cri_connect(NULL), peer;
	char c = 0;

	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	peer = accept(lfd, NULL, NULL);
	assert_true(peer >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(read(peer, &c, 1), 1);
	assert_int_equal(c, 'x');
	close(peer);
	close(fd);
}

static void test_forwarded_writes(void **state)
{
	char path[256], buf[32], cri[128];
	bool at_open;
	int lfd;

	make_tree();
	/* The CRI runtime's socket, connected by the (filtered) helper and
	 * passed back; again after the runtime restarted (a new socket at the
	 * same path); none while it is down. */
	snprintf(cri, sizeof(cri), "%s/cri.sock", root);
	lfd = cri_listen(cri);
	assert_int_equal(privsep_helper_start(root, cri), 0);
	cri_roundtrip(lfd);
	close(lfd);
	unlink(cri);
	assert_int_equal(privsep_cri_connect(NULL), -ENOENT);
	lfd = cri_listen(cri);
	cri_roundtrip(lfd);
	close(lfd);
	assert_true(privsep_helper_pid() > 0);
	snprintf(path, sizeof(path), "%s/devices/virtual/misc/intel_ifs_1/run_test", root);
	assert_int_equal(priv_write_number(path, 3, &at_open), 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "3\n");
	/* Refused on the agent's side: not one of the two files. */
	static const char *const refused[] = {
	    "/etc/passwd",
	    "%s/devices/virtual/misc/intel_ifs_1/../intel_ifs_1/run_test",
	    "%s/devices/virtual/misc/intel_ifs_1/status",
	    "%s/devices/virtual/misc/intel_ifs_x/run_test",
	    "%s/devices/virtual/misc/intel_ifs_99/run_test",
	    "%s/devices/system/cpu/cpu1/online",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(path, sizeof(path), refused[i], root);
		assert_int_equal(priv_write_number(path, 1, &at_open), -EPERM);
	}
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "3\n");

	/* The filtered helper refuses a symlinked directory (it is not
	 * killed by its filter for the openat2 either: a write follows). */
	ifs_path(path, sizeof(path), "intel_ifs_5");
	assert_int_equal(symlink("intel_ifs_1", path), 0);
	ifs_path(path, sizeof(path), "intel_ifs_5/run_test");
	assert_int_equal(priv_write_number(path, 4, &at_open), -ELOOP);
	assert_true(at_open);
	ifs_path(path, sizeof(path), "intel_ifs_1/current_batch");
	assert_int_equal(priv_write_number(path, 2, &at_open), 0);
	read_file("current_batch", buf, sizeof(buf));
	assert_string_equal(buf, "2\n");
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "3\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_serve_command_set),
	    cmocka_unit_test(test_serve_no_symlink),
	    cmocka_unit_test(test_forwarded_writes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/sysobs-privsep.*");
	if (system(cmd)) {
	}
	return rc;
}
