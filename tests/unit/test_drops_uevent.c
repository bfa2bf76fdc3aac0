// SPDX-License-Identifier: MIT
/* The kernel uevent parser of the drops collector's module watch. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/drops/drops_uevent.h"

/* A string literal with its embedded NULs and its final one. */
#define MSG(s) (s), sizeof(s)

static int parse(const char *buf, size_t len, char *name)
{
	return drops_uevent_parse(buf, len, name);
}

/* What lib/kobject_uevent.c sends for a module, and for a synthetic
 * "add" written to /sys/module/<name>/uevent. */
static void test_module(void **state)
{
	char name[DROPS_UEVENT_NAME_MAX];

	assert_int_equal(parse(MSG("add@/module/openvswitch\0ACTION=add\0DEVPATH=/module/"
				   "openvswitch\0SUBSYSTEM=module\0SEQNUM=4711"),
			       name),
			 DROPS_UEVENT_MODULE_ADD);
	assert_string_equal(name, "openvswitch");
	assert_int_equal(parse(MSG("remove@/module/nf_conntrack\0ACTION=remove\0DEVPATH=/module/"
				   "nf_conntrack\0SUBSYSTEM=module\0SEQNUM=4712"),
			       name),
			 DROPS_UEVENT_MODULE_REMOVE);
	assert_string_equal(name, "nf_conntrack");
	assert_int_equal(parse(MSG("add@/module/tcp-cubic\0ACTION=add\0DEVPATH=/module/tcp-cubic\0"
				   "SUBSYSTEM=module\0SYNTH_UUID=0\0SEQNUM=9"),
			       name),
			 DROPS_UEVENT_MODULE_ADD);
	assert_string_equal(name, "tcp-cubic");
	/* key order is not fixed */
	assert_int_equal(parse(MSG("add@/module/m\0SEQNUM=1\0SUBSYSTEM=module\0DEVPATH=/module/"
				   "m\0ACTION=add"),
			       name),
			 DROPS_UEVENT_MODULE_ADD);
	assert_string_equal(name, "m");
}

/* Well-formed, but nothing the collector acts on. */
static void test_other(void **state)
{
	char name[DROPS_UEVENT_NAME_MAX];

	assert_int_equal(parse(MSG("add@/devices/virtual/net/veth0\0ACTION=add\0DEVPATH=/devices/"
				   "virtual/net/veth0\0SUBSYSTEM=net\0INTERFACE=veth0\0SEQNUM=3"),
			       name),
			 DROPS_UEVENT_OTHER);
	assert_string_equal(name, "");
	/* another subsystem's object under /module */
	assert_int_equal(
	    parse(MSG("add@/module/x\0ACTION=add\0DEVPATH=/module/x\0SUBSYSTEM=drivers"), name),
	    DROPS_UEVENT_OTHER);
	/* no SUBSYSTEM: not the module kset's */
	assert_int_equal(parse(MSG("add@/module/x\0ACTION=add\0DEVPATH=/module/x"), name),
			 DROPS_UEVENT_OTHER);
	/* an object below a module's */
	assert_int_equal(parse(MSG("add@/module/x/drivers\0ACTION=add\0DEVPATH=/module/x/drivers\0"
				   "SUBSYSTEM=module"),
			       name),
			 DROPS_UEVENT_OTHER);
	/* other actions on a module */
	assert_int_equal(
	    parse(MSG("change@/module/x\0ACTION=change\0DEVPATH=/module/x\0SUBSYSTEM=module"),
		  name),
	    DROPS_UEVENT_OTHER);
	assert_int_equal(
	    parse(MSG("bind@/module/x\0ACTION=bind\0DEVPATH=/module/x\0SUBSYSTEM=module"), name),
	    DROPS_UEVENT_OTHER);
	/* "/modules/..." is not "/module/..." */
	assert_int_equal(
	    parse(MSG("add@/modulex/y\0ACTION=add\0DEVPATH=/modulex/y\0SUBSYSTEM=module"), name),
	    DROPS_UEVENT_OTHER);
	assert_string_equal(name, "");
}

static void test_malformed(void **state)
{
	static const char ok[] = "add@/module/m\0ACTION=add\0DEVPATH=/module/m\0SUBSYSTEM=module";
	char name[DROPS_UEVENT_NAME_MAX];

	/* empty, and the last string not terminated */
	assert_int_equal(parse(ok, 0, name), -EINVAL);
	assert_int_equal(parse(ok, sizeof(ok) - 1, name), -EINVAL);
	assert_int_equal(parse("add@/module/m", 13, name), -EINVAL);
	/* header without '@', with nothing on one side of it */
	assert_int_equal(
	    parse(MSG("add/module/m\0ACTION=add\0DEVPATH=/module/m\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("@/module/m\0ACTION=\0DEVPATH=/module/m\0SUBSYSTEM=module"), name), -EINVAL);
	assert_int_equal(parse(MSG("add@\0ACTION=add\0DEVPATH=\0SUBSYSTEM=module"), name), -EINVAL);
	/* udevd's re-broadcast: "libudev" and a binary header */
	assert_int_equal(parse(MSG("libudev\0\xfe\xed\xca\xfe\0ACTION=add"), name), -EINVAL);
	/* ACTION or DEVPATH missing, twice, or not what the header says */
	assert_int_equal(parse(MSG("add@/module/m\0DEVPATH=/module/m\0SUBSYSTEM=module"), name),
			 -EINVAL);
	assert_int_equal(parse(MSG("add@/module/m\0ACTION=add\0SUBSYSTEM=module"), name), -EINVAL);
	assert_int_equal(parse(MSG("add@/module/m\0ACTION=add\0ACTION=add\0DEVPATH=/module/"
				   "m\0SUBSYSTEM=module"),
			       name),
			 -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/m\0ACTION=remove\0DEVPATH=/module/m\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/m\0ACTION=ad\0DEVPATH=/module/m\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/m\0ACTION=add\0DEVPATH=/module/n\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/m\0ACTION=add\0DEVPATH=/module/m\0SUBSYSTEM=module\0"
		      "SUBSYSTEM=module"),
		  name),
	    -EINVAL);
	/* an empty string, a string that is not KEY=VALUE */
	assert_int_equal(
	    parse(MSG("add@/module/m\0\0ACTION=add\0DEVPATH=/module/m\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/m\0ACTION=add\0garbage\0DEVPATH=/module/m\0SUBSYSTEM=module"),
		  name),
	    -EINVAL);
	/* module names the kernel never makes */
	assert_int_equal(
	    parse(MSG("add@/module/\0ACTION=add\0DEVPATH=/module/\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/a b\0ACTION=add\0DEVPATH=/module/a b\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_int_equal(
	    parse(MSG("add@/module/a\n\0ACTION=add\0DEVPATH=/module/a\n\0SUBSYSTEM=module"), name),
	    -EINVAL);
	assert_string_equal(name, "");
}

/* Sizes: a module name up to DROPS_UEVENT_NAME_MAX - 1, a datagram up to
 * DROPS_UEVENT_MSG_MAX. */
static void test_bounds(void **state)
{
	char buf[DROPS_UEVENT_MSG_MAX + 64], name[DROPS_UEVENT_NAME_MAX],
	    mod[DROPS_UEVENT_NAME_MAX + 1];
	size_t len;

	for (int n = DROPS_UEVENT_NAME_MAX - 1; n <= DROPS_UEVENT_NAME_MAX; n++) {
		memset(mod, 'm', (size_t)n);
		mod[n] = '\0';
		len = (size_t)snprintf(buf, sizeof(buf), "add@/module/%s", mod) + 1;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "ACTION=add") + 1;
		len +=
		    (size_t)snprintf(buf + len, sizeof(buf) - len, "DEVPATH=/module/%s", mod) + 1;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "SUBSYSTEM=module") + 1;
		assert_int_equal(parse(buf, len, name),
				 n < DROPS_UEVENT_NAME_MAX ? DROPS_UEVENT_MODULE_ADD : -EINVAL);
		if (n < DROPS_UEVENT_NAME_MAX)
			assert_string_equal(name, mod);
	}
	/* a long key pads the datagram to exactly the limit, then one past */
	len = (size_t)snprintf(buf, sizeof(buf), "add@/module/m") + 1;
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "ACTION=add") + 1;
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "DEVPATH=/module/m") + 1;
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "SUBSYSTEM=module") + 1;
	memcpy(buf + len, "PAD=", 4);
	memset(buf + len + 4, 'x', DROPS_UEVENT_MSG_MAX - len - 5);
	buf[DROPS_UEVENT_MSG_MAX - 1] = '\0';
	assert_int_equal(parse(buf, DROPS_UEVENT_MSG_MAX, name), DROPS_UEVENT_MODULE_ADD);
	buf[DROPS_UEVENT_MSG_MAX - 1] = 'x';
	buf[DROPS_UEVENT_MSG_MAX] = '\0';
	assert_int_equal(parse(buf, DROPS_UEVENT_MSG_MAX + 1, name), -EINVAL);
	/* a message of NULs only */
	memset(buf, 0, 64);
	assert_int_equal(parse(buf, 64, name), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_module),
	    cmocka_unit_test(test_other),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
