// SPDX-License-Identifier: MIT
/*
 * IFS device discovery and CPU topology from sysfs (see ifs_sysfs.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/ifs/ifs_sysfs.h"

int ifs_read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* sysfs hands the whole value to the first read. */
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

void ifs_device_dir(const char *root, int n, char *buf, size_t len)
{
	snprintf(buf, len, "%s/devices/virtual/misc/intel_ifs_%d", root, n);
}

int ifs_devices_discover(const char *root, unsigned *mask)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	*mask = 0;
	snprintf(path, sizeof(path), "%s/devices/virtual/misc", root);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int n;

		if (ifs_device_parse_name(e->d_name, &n) == 0 && n < IFS_TEST_MAX)
			*mask |= 1u << n;
	}
	closedir(d);
	return 0;
}

static int read_int(const char *path, int *out)
{
	char buf[32], *end;
	long v;
	int n = ifs_read_text(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int core_cmp(const void *a, const void *b)
{
	const struct ifs_core_info *x = a, *y = b;

	if (x->package != y->package)
		return x->package < y->package ? -1 : 1;
	return x->core_id < y->core_id ? -1 : x->core_id > y->core_id;
}

static int add_cpu(struct ifs_topology *t, int cpu, int package, int core_id, bool online)
{
	struct ifs_core_info *c = NULL;
	unsigned i;

	for (size_t k = 0; k < t->n_cores; k++) {
		if (t->cores[k].package == package && t->cores[k].core_id == core_id) {
			c = &t->cores[k];
			break;
		}
	}
	if (!c) {
		struct ifs_core_info *nc = realloc(t->cores, (t->n_cores + 1) * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		t->cores = nc;
		c = &t->cores[t->n_cores++];
		memset(c, 0, sizeof(*c));
		c->package = package;
		c->core_id = core_id;
	}
	if (c->n_cpus == IFS_MAX_SIBLINGS)
		return 0;
	/* Keep the threads ascending: the first online one is written. */
	for (i = c->n_cpus; i > 0 && c->cpus[i - 1] > cpu; i--) {
		c->cpus[i] = c->cpus[i - 1];
		c->online[i] = c->online[i - 1];
	}
	c->cpus[i] = cpu;
	c->online[i] = online;
	c->n_cpus++;
	return 0;
}

/* Sorts the cores by (package, core_id) and indexes their CPUs. */
static void index_cores(struct ifs_topology *t)
{
	qsort(t->cores, t->n_cores, sizeof(*t->cores), core_cmp);
	for (unsigned i = 0; i < IFS_MAX_CPUS; i++)
		t->cpu_core[i] = -1;
	for (size_t k = 0; k < t->n_cores; k++)
		for (unsigned i = 0; i < t->cores[k].n_cpus; i++)
			t->cpu_core[t->cores[k].cpus[i]] = (int)k;
}

/* "pkg_id:              3" lines of a topo/cpus/<N> file. */
static int hint_parse(const char *text, struct ifs_cpu_hint *h)
{
	bool pkg = false, core = false;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned v;

		if (sscanf(l, "pkg_id: %u", &v) == 1) {
			h->package = (int)v;
			pkg = true;
		} else if (sscanf(l, "core_id: %u", &v) == 1) {
			h->core_id = (int)v;
			core = true;
		}
	}
	/* Only "online:" for a CPU never brought up (!c->initialized). */
	h->known = pkg && core;
	return h->known ? 0 : -ENOENT;
}

int ifs_topology_hints_read(const char *root, struct ifs_cpu_hint *hints)
{
	char path[PATH_MAX], text[1024];
	struct dirent *e;
	int n = 0;
	DIR *d;

	memset(hints, 0, IFS_MAX_CPUS * sizeof(*hints));
	snprintf(path, sizeof(path), "%s/kernel/debug/x86/topo/cpus", root);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long cpu = strtol(e->d_name, &end, 10);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || cpu >= IFS_MAX_CPUS)
			continue;
		snprintf(path, sizeof(path), "%s/kernel/debug/x86/topo/cpus/%ld", root, cpu);
		if (ifs_read_text(path, text, sizeof(text)) < 0)
			continue;
		n += hint_parse(text, &hints[cpu]) == 0;
	}
	closedir(d);
	return n;
}

int ifs_topology_read(const char *root, const struct ifs_cpu_hint *hints, struct ifs_topology *t)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int err = 0;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int cpu, package, core_id, online = 1, n;
		char *end;

		if (strncmp(e->d_name, "cpu", 3) || e->d_name[3] < '0' || e->d_name[3] > '9')
			continue;
		cpu = (int)strtol(e->d_name + 3, &end, 10);
		if (*end || cpu < 0 || cpu >= IFS_MAX_CPUS)
			continue;
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/online", root, cpu);
		n = read_int(path, &online);
		if (n == -ENOENT)
			online = 1; /* no online file: cannot be offlined (cpu0) */
		else if (n < 0)
			continue;
		snprintf(path, sizeof(path),
			 "%s/devices/system/cpu/cpu%d/topology/physical_package_id", root, cpu);
		if (read_int(path, &package)) {
			if (online) /* online without topology: nothing to go on */
				continue;
			/* Offline, topology removed by the kernel: its core from
			 * the hints if they know it. */
			if (hints && hints[cpu].known) {
				err =
				    add_cpu(t, cpu, hints[cpu].package, hints[cpu].core_id, false);
				if (err)
					break;
				if ((unsigned)cpu + 1 > t->n_cpus)
					t->n_cpus = cpu + 1;
				continue;
			}
			t->offline[cpu / 64] |= 1ULL << (cpu % 64);
			continue;
		}
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/core_id", root,
			 cpu);
		if (read_int(path, &core_id))
			continue;
		err = add_cpu(t, cpu, package, core_id, online != 0);
		if (err)
			break;
		if ((unsigned)cpu + 1 > t->n_cpus)
			t->n_cpus = cpu + 1;
	}
	closedir(d);
	if (err) {
		ifs_topology_free(t);
		return err;
	}
	index_cores(t);
	return 0;
}

int ifs_topology_remember(struct ifs_topology *t, const struct ifs_topology *old)
{
	struct ifs_topology n = *t;
	bool added = false;

	if (!old || !old->n_cores)
		return 0;
	n.cores = malloc((t->n_cores + old->n_cores) * sizeof(*n.cores));
	if (!n.cores)
		return -ENOMEM;
	if (t->n_cores)
		memcpy(n.cores, t->cores, t->n_cores * sizeof(*n.cores));
	for (size_t k = 0; k < old->n_cores; k++) {
		const struct ifs_core_info *c = &old->cores[k];

		for (unsigned i = 0; i < c->n_cpus; i++) {
			int cpu = c->cpus[i];

			if (cpu < 0 || cpu >= IFS_MAX_CPUS || t->cpu_core[cpu] >= 0 ||
			    !ifs_cpu_isset(t->offline, (unsigned)cpu))
				continue;
			if (add_cpu(&n, cpu, c->package, c->core_id, false))
				continue;
			added = true;
		}
	}
	if (!added) {
		free(n.cores);
		return 0;
	}
	free(t->cores);
	*t = n;
	index_cores(t);
	return 0;
}

int ifs_topology_add_offline(struct ifs_topology *t, int cpu, int package, int core_id)
{
	int err;

	if (cpu < 0 || cpu >= IFS_MAX_CPUS)
		return -EINVAL;
	if (t->cpu_core[cpu] >= 0)
		return 0; /* known already */
	err = add_cpu(t, cpu, package, core_id, false);
	if (err)
		return err;
	if ((unsigned)cpu + 1 > t->n_cpus)
		t->n_cpus = cpu + 1;
	index_cores(t);
	return 0;
}

void ifs_topology_free(struct ifs_topology *t)
{
	if (!t)
		return;
	free(t->cores);
	t->cores = NULL;
	t->n_cores = 0;
}

void ifs_trim_nl(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}
