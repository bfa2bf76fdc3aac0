/* SPDX-License-Identifier: MIT */
/*
 * agent/sd_notify: the datagram reaches a socket bound where NOTIFY_SOCKET
 * says, a path or an abstract name ('@'), byte for byte; without
 * NOTIFY_SOCKET nothing is sent and it is no error; an address it cannot
 * use and a socket nobody listens on are errors.
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
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/sd_notify.h"

/* A datagram socket bound to name (a path, or abstract for "@..."), as the
 * service manager binds its own. */
static int bind_notify(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(len < sizeof(sa.sun_path));
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
			 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	assert_int_equal(n, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
}

static void test_path(void **state)
{
	char dir[] = "/tmp/sysobs-notify-XXXXXX", path[128];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = bind_notify(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sd_notify_send("READY=1\nSTATUS=serving"), 0);
	expect_datagram(fd, "READY=1\nSTATUS=serving");
	assert_int_equal(sd_notify_send("STOPPING=1"), 0);
	expect_datagram(fd, "STOPPING=1");
	/* left set, as sd_notify(0, ...) leaves it */
	assert_string_equal(getenv("NOTIFY_SOCKET"), path);
	close(fd);
	unlink(path);
	/* nobody bound there any more */
	assert_int_equal(sd_notify_send("READY=1"), -ENOENT);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract(void **state)
{
	char name[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@sysobs-notify-test-%d", (int)getpid());
	fd = bind_notify(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sd_notify_send("READY=1"), 0);
	expect_datagram(fd, "READY=1");
	close(fd);
	assert_int_equal(sd_notify_send("READY=1"), -ECONNREFUSED);
	unsetenv("NOTIFY_SOCKET");
}

static void test_no_manager(void **state)
{
	char longname[200];

	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sd_notify_send("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sd_notify_send("READY=1"), 0);
	/* neither a path nor an abstract name, too short, too long */
	setenv("NOTIFY_SOCKET", "run/notify", 1);
	assert_int_equal(sd_notify_send("READY=1"), -EINVAL);
	setenv("NOTIFY_SOCKET", "@", 1);
	assert_int_equal(sd_notify_send("READY=1"), -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longname, 1);
	assert_int_equal(sd_notify_send("READY=1"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path),
	    cmocka_unit_test(test_abstract),
	    cmocka_unit_test(test_no_manager),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
