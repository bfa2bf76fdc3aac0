// SPDX-License-Identifier: MIT
/*
 * The checks of a database at open: its path before SQLite sees it, whether
 * the last stop was clean, and PRAGMA quick_check bounded in time (on a
 * thread of its own, going on in the background after an unclean stop).
 * Calls store_util.c; called by store.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_internal.h"

/* Checks the path before SQLite sees it: SQLite would happily open an
 * unwritable file read-only or create a file we cannot use. */
int store_check_path(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *copy;
	const char *dir;
	int ret = 0;

	if (!path || !*path) {
		snprintf(err, errlen, "storage path is empty");
		return -EINVAL;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s: not a regular file", path);
			return -EINVAL;
		}
		if (access(path, R_OK | W_OK) != 0) {
			snprintf(err, errlen, "%s: not writable: %s", path, strerror(errno));
			return -EACCES;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	copy = strdup(path);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	dir = dirname(copy); /* ".", "/" or the part before the last slash */
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: directory %s does not exist", path, dir);
		ret = -ENOENT;
	} else if (access(dir, W_OK | X_OK) != 0) {
		snprintf(err, errlen, "%s: directory %s is not writable: %s", path, dir,
			 strerror(errno));
		ret = -EACCES;
	}
	free(copy);
	return ret;
}

bool store_dir_full(const char *path)
{
	struct statvfs sv;
	char *copy = strdup(path);
	bool full;

	if (!copy)
		return false;
	full = statvfs(dirname(copy), &sv) == 0 && (sv.f_bavail == 0 || sv.f_favail == 0);
	free(copy);
	return full;
}

/* PRAGMA quick_check must say "ok"; a file that is not a database fails
 * already at prepare/step with SQLITE_NOTADB. -EINTR when interrupted
 * (sqlite3_interrupt() from another thread), -EUCLEAN with err set when
 * the file is not a sound database. */
static int store_check_integrity(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out_err;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		goto out_err;
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		snprintf(err, errlen,
			 "%s: database is corrupt (quick_check: %s); move it aside, it is not "
			 "re-created automatically",
			 path, sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		return -EUCLEAN;
	}
	sqlite3_finalize(st);
	return 0;

out_err:
	/* Interrupted by the stop, whichever step it reached (the prepare
	 * still reading the schema on a slow disk or an emulated VM
	 * included): stopped, not corrupt. */
	if ((rc & 0xff) == SQLITE_INTERRUPT || (sqlite3_errcode(db) & 0xff) == SQLITE_INTERRUPT)
		return -EINTR;
	snprintf(err, errlen, "%s: %s%s", path, sqlite3_errmsg(db),
		 (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT
		     ? " (not a sysobs database, or corrupt; it is not re-created "
		       "automatically)"
		     : "");
	return -EUCLEAN;
}

/* The quick_check thread, on its own read-only connection (a WAL reader:
 * the writer goes on meanwhile). store_open() waits STORE_OPEN_CHECK_MS for
 * it; past that, it either goes on in the background (ic_bg: it logs and
 * counts what it finds) or is interrupted. */
static void *store_ic_main(void *arg)
{
	struct store *s = arg;
	int64_t t0 = store_mono_ns();
	char err[512];
	bool bg;
	int rc;

	rc = store_check_integrity(s->ic_db, s->path, err, sizeof(err));
	pthread_mutex_lock(&s->ic_mu);
	s->ic_rc = rc;
	snprintf(s->ic_err, sizeof(s->ic_err), "%s", rc ? err : "");
	s->ic_done = true;
	bg = s->ic_bg;
	pthread_mutex_unlock(&s->ic_mu);
	if (!bg)
		return NULL;
	if (rc == 0) {
		store_log(s, NULL, 0, STORE_LOG_INFO, "background quick_check: ok (%.1f s)",
			  (store_mono_ns() - t0) / 1e9);
	} else if (rc == -EINTR) {
		store_log(s, NULL, 0, STORE_LOG_INFO,
			  "background quick_check interrupted by the stop (%.1f s)",
			  (store_mono_ns() - t0) / 1e9);
	} else {
		store_count_error(s, STORE_OP_INTEGRITY);
		store_log(s, NULL, 0, STORE_LOG_ERR, "%s (found in the background)", err);
	}
	return NULL;
}

void store_ic_stop(struct store *s)
{
	if (!s->ic_started)
		return;
	sqlite3_interrupt(s->ic_db);
	pthread_join(s->ic_thread, NULL);
	sqlite3_close(s->ic_db);
	s->ic_db = NULL;
	s->ic_started = false;
}

/*
 * The integrity check at open, bounded in time so start-up does not grow
 * with the file (quick_check reads all of it: 2.4 s for 762 MB). A check
 * that finishes within STORE_OPEN_CHECK_MS decides here (a corrupt file is
 * refused, as before); a longer one goes on in the background when the last
 * stop was unclean, and is stopped when it was clean.
 */
int store_open_check(struct store *s, bool unclean, char *err, size_t errlen)
{
	struct timespec ts;
	bool done;

	if (sqlite3_open_v2(s->path, &s->ic_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", s->path,
			 s->ic_db ? sqlite3_errmsg(s->ic_db) : "out of memory");
		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		return -EIO;
	}
	if (pthread_create(&s->ic_thread, NULL, store_ic_main, s) != 0) {
		int rc = store_check_integrity(s->ic_db, s->path, err, errlen);

		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		return rc;
	}
	pthread_setname_np(s->ic_thread, "sysobs-check");
	s->ic_started = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += STORE_OPEN_CHECK_MS * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(s->ic_thread, NULL, &ts) != 0) {
		pthread_mutex_lock(&s->ic_mu);
		done = s->ic_done;
		if (!done && unclean)
			s->ic_bg = true;
		pthread_mutex_unlock(&s->ic_mu);
		if (!done && unclean) {
			store_log(s, NULL, 0, STORE_LOG_INFO,
				  "the last stop was unclean: quick_check of the whole file goes "
				  "on in the background");
			return 0;
		}
		if (!done)
			store_log(s, NULL, 0, STORE_LOG_INFO,
				  "quick_check stopped after %u ms (the last stop was clean)",
				  STORE_OPEN_CHECK_MS);
		store_ic_stop(s);
	} else {
		sqlite3_close(s->ic_db);
		s->ic_db = NULL;
		s->ic_started = false;
	}
	if (s->ic_rc == -EUCLEAN) {
		snprintf(err, errlen, "%s", s->ic_err);
		return -EUCLEAN;
	}
	return 0;
}

/* The byte of the -shm file every connection in WAL mode holds a read lock
 * on while it is open (SQLite's os_unix.c: the "DMS" lock after the eight
 * WAL locks at 120). */
#define STORE_SHM_DMS_BYTE 128

/*
 * Whether another process has the database open: then its WAL file is that
 * process's, not left by a crash. Asks the kernel (F_GETLK) who would stop
 * a write lock on the DMS byte. Before this process opens the database
 * itself: closing a descriptor of the -shm file would drop its own locks.
 */
static bool store_open_elsewhere(const char *path)
{
	struct flock fl = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = STORE_SHM_DMS_BYTE, .l_len = 1};
	char shm[4096];
	bool held;
	int fd;

	snprintf(shm, sizeof(shm), "%s-shm", path);
	fd = open(shm, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	held = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return held;
}

/* A WAL file left beside the database: the last stop was not clean (SQLite
 * removes it when the last connection closes), unless another process has
 * the database open (a second agent on it, the CLI, a backup): its WAL is
 * in use, and a database that process just created is no unclean one
 * (issue 32). */
bool store_unclean_stop(const char *path)
{
	char wal[4096];
	struct stat st;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &st) == 0 && !store_open_elsewhere(path);
}
