/* SPDX-License-Identifier: MIT */
/*
 * The privileged helper's command set (agent/privsep.c): the two IFS writes
 * under its sysfs root are done, everything else is refused — an unknown
 * command, a device or value out of range, a short message, and, on the
 * agent's side, any path that is not intel_ifs_<N>/run_test or
 * current_batch under the root (never sent to the helper at all). The
 * helper here is the real forked one, with its seccomp filter.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/privsep.h"
#include "collectors/privwrite.h"

static char root[64];

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

static void read_file(const char *rel, char *out, size_t n)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/devices/virtual/misc/intel_ifs_1/%s", root, rel);
	f = fopen(p, "r");
	assert_non_null(f);
	out[fread(out, 1, n - 1, f)] = '\0';
	fclose(f);
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
	int sv[2];
	pid_t pid;
	char buf[32];
	int status;

	make_tree();
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(privsep_serve(sv[1], root));
	}
	close(sv[1]);
	struct privsep_req ok = {PRIVSEP_RUN_TEST, 1, 7};
	assert_int_equal(ask(sv[0], &ok, sizeof(ok)).rc, 0);
	read_file("run_test", buf, sizeof(buf));
	assert_string_equal(buf, "7\n");
	struct privsep_req batch = {PRIVSEP_LOAD_BATCH, 1, 2};
	assert_int_equal(ask(sv[0], &batch, sizeof(batch)).rc, 0);
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
		assert_int_equal(ask(sv[0], &bad[i], sizeof(bad[i])).rc, -EPERM);
	assert_int_equal(ask(sv[0], "x", 1).rc, -EPERM); /* short message */
	/* A device that does not exist: the write's own error, from open. */
	struct privsep_req missing = {PRIVSEP_RUN_TEST, 2, 1};
	struct privsep_rep r = ask(sv[0], &missing, sizeof(missing));
	assert_int_equal(r.rc, -ENOENT);
	assert_int_equal(r.at_open, 1);
	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 6); /* 6 refused */
}

static void test_forwarded_writes(void **state)
{
	char path[256], buf[32];
	bool at_open;

	make_tree();
	assert_int_equal(privsep_helper_start(root), 0);
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_serve_command_set),
	    cmocka_unit_test(test_forwarded_writes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/sysobs-privsep.*");
	if (system(cmd)) {
	}
	return rc;
}
