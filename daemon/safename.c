// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Safe names and directories (see safename.h).
 *
 * A directory is walked from / one component at a time with openat() and
 * O_NOFOLLOW, each step checked by fstat() of what was opened, not of a
 * path that may change in between: the way systemd's chase() with
 * CHASE_SAFE refuses to go from a directory another user controls into
 * one of root's.  A link another user planted (a .build-id symlink into
 * /etc) is then refused instead of followed with root's rights.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safename.h"

static bool safe_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

bool safename_ok(const char *s)
{
	if (!s || !*s || *s == '.' || *s == '-')
		return false;
	for (; *s; s++)
		if (!safe_char(*s))
			return false;
	return true;
}

bool safename_sanitize(const char *in, char *out, size_t size)
{
	bool same = true;
	size_t n = 0;

	if (!in || !*in)
		in = "localhost", same = false;
	for (; *in && n + 1 < size; in++, n++) {
		bool ok = safe_char(*in) && !(n == 0 && (*in == '.' || *in == '-'));

		out[n] = ok ? *in : '_';
		same &= ok;
	}
	same &= !*in;
	out[n] = 0;
	return same;
}

/* Whether the directory @st may be gone through (@last: written into) by a daemon running as @uid. */
static int check_dir(const struct stat *st, const char *shown, bool last, uid_t uid, char *err, size_t errlen)
{
	mode_t m = st->st_mode;

	if (!S_ISDIR(m)) {
		snprintf(err, errlen, "%s is not a directory", shown);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != uid && uid != (uid_t)-1) {
		snprintf(err, errlen, "%s is owned by uid %u, neither root nor the daemon's user (uid %u): "
			 "its owner could swap what perfrecd writes there", shown, (unsigned)st->st_uid, (unsigned)uid);
		return -EPERM;
	}
	if (last && (m & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "%s is writable by %s (mode %04o): they could plant links that perfrecd "
			 "would write through; chmod go-w it, or use a directory of its own",
			 shown, (m & S_IWOTH) ? "every user" : "its group", (unsigned)(m & 07777));
		return -EPERM;
	}
	if (!last && (m & (S_IWGRP | S_IWOTH)) && !(m & S_ISVTX)) {
		snprintf(err, errlen, "%s is writable by %s without the sticky bit (mode %04o): they could "
			 "replace what lies below it", shown, (m & S_IWOTH) ? "every user" : "its group",
			 (unsigned)(m & 07777));
		return -EPERM;
	}
	return 0;
}

/* A symbolic link in the middle of the path is followed only if root made it where only root writes. */
static bool trusted_link(int parent, const char *name)
{
	struct stat l, p;

	return fstatat(parent, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) && l.st_uid == 0 &&
	       fstat(parent, &p) == 0 && p.st_uid == 0 && !(p.st_mode & (S_IWGRP | S_IWOTH));
}

/* One step of the walk: @name under @parent.  The new fd or -errno (reason in @err). */
static int step(int parent, const char *name, const char *shown, bool last, bool create, uid_t uid, gid_t gid,
		char *err, size_t errlen)
{
	const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd, r;

	fd = openat(parent, name, flags);
	if (fd < 0 && errno == ENOENT && last && create) {
		if (mkdirat(parent, name, 0750) < 0 && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "cannot create %s: %s", shown, strerror(-r));
			return r;
		}
		/* As root: the daemon's user writes the entries.  Ours: no one swapped it in. */
		if (geteuid() == 0 && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == 0)
			(void)fchownat(parent, name, uid, gid, AT_SYMLINK_NOFOLLOW);
		fd = openat(parent, name, flags);
	}
	if (fd < 0 && !last && (errno == ENOTDIR || errno == ELOOP) && trusted_link(parent, name))
		fd = openat(parent, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
			snprintf(err, errlen, "%s is a symbolic link: perfrecd does not follow it "
				 "(give the directory it points to)", shown);
			return -ELOOP;
		}
		snprintf(err, errlen, "%s: %s", shown, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		snprintf(err, errlen, "%s: %s", shown, strerror(-r));
		return r;
	}
	r = check_dir(&st, shown, last, uid, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int safedir_open(const char *path, uid_t uid, gid_t gid, bool create, char *err, size_t errlen)
{
	char *copy, *save = NULL, *name, *next;
	int fd, r = 0;

	if (!path || path[0] != '/') {
		snprintf(err, errlen, "%s is not an absolute path", path ? path : "(none)");
		return -EINVAL;
	}
	copy = strdup(path);
	if (!copy) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "/: %s", strerror(-r));
		goto out;
	}
	for (name = strtok_r(copy, "/", &save); name; name = next) {
		char shown[PATH_MAX];
		int nfd;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			snprintf(err, errlen, "%s has a '..' component", path);
			r = -EINVAL;
			break;
		}
		/* name points into copy: what is shown is the path up to it. */
		snprintf(shown, sizeof(shown), "%.*s", (int)(name - copy + (ptrdiff_t)strlen(name)), path);
		nfd = step(fd, name, shown, !next, create, uid, gid, err, errlen);
		close(fd);
		fd = nfd;
		if (fd < 0) {
			r = fd;
			break;
		}
	}
out:
	free(copy);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int safedir_check(const char *path, char *err, size_t errlen)
{
	int fd = safedir_open(path, (uid_t)-1, (gid_t)-1, false, err, errlen);

	if (fd == -ENOENT)
		return 0;
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}
