// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * File-system helpers shared by the writer, recovery, perfrecd and
 * perfrecctl: a rename is what publishes a file, and it is only durable
 * once the directory entry is; a write is only done when all of it is; an
 * output is made new, for its owner, and never through a planted link.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

int rename_durably(const char *from, const char *to)
{
	char *dir_copy;
	int dfd, r = 0;

	if (rename(from, to) < 0)
		return -errno;
	dir_copy = strdup(to);
	if (!dir_copy)
		return -ENOMEM;
	dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
	} else {
		if (fsync(dfd) < 0)
			r = -errno;
		close(dfd);
	}
	free(dir_copy);
	return r;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int copy_access(int fd, const char *like)
{
	struct stat st, own;

	if (stat(like, &st) < 0 || fstat(fd, &own) < 0)
		return -errno;
	if ((own.st_uid != st.st_uid || own.st_gid != st.st_gid) && fchown(fd, st.st_uid, st.st_gid) < 0 &&
	    own.st_gid != st.st_gid)
		(void)!fchown(fd, (uid_t)-1, st.st_gid);
	return fchmod(fd, st.st_mode & 0660) < 0 ? -errno : 0;
}

static void output_file_release(struct output_file *o)
{
	if (o->dirfd >= 0)
		close(o->dirfd);
	free(o->name);
	free(o->tmp);
	free(o->tmp_path);
	*o = (struct output_file){ .fd = -1, .dirfd = -1 };
}

/*
 * An existing non-regular file at the name, for OUTPUT_STREAM: written as it
 * is when it (and a link to it) is ours or root's, as a FIFO or /dev/null is.
 */
static int open_stream(struct output_file *o, const struct stat *lst)
{
	struct stat st;
	uid_t me = geteuid();
	int fd;

	if (lst->st_uid != me && lst->st_uid != 0)
		return -EEXIST;
	fd = openat(o->dirfd, o->name, O_WRONLY | O_NOCTTY | O_CLOEXEC | (S_ISLNK(lst->st_mode) ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ||
	    (st.st_uid != me && st.st_uid != 0)) {
		close(fd);
		return -EEXIST;
	}
	o->fd = fd;
	return 0;
}

/* What is at the name already: 1 open it as a stream, 0 create beside it, or -errno. */
static int judge_existing(const struct output_file *o, unsigned flags, struct stat *lst)
{
	struct stat st;

	if (fstatat(o->dirfd, o->name, lst, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(lst->st_mode))
		return -EISDIR;
	if (S_ISLNK(lst->st_mode) && (flags & OUTPUT_STREAM) && fstatat(o->dirfd, o->name, &st, 0) == 0 &&
	    !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 1; /* /dev/stdout and the like; open_stream() checks owners */
	if (S_ISREG(lst->st_mode) || S_ISLNK(lst->st_mode))
		return (flags & OUTPUT_REPLACE) ? 0 : -EEXIST;
	return (flags & OUTPUT_STREAM) ? 1 : -EEXIST;
}

static int split_path(struct output_file *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;

	o->name = strdup(slash ? slash + 1 : path);
	dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!o->name || !dir) {
		free(dir);
		return -ENOMEM;
	}
	if (!*o->name || !strcmp(o->name, ".") || !strcmp(o->name, "..")) {
		free(dir);
		return -EISDIR;
	}
	o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0 && errno == EACCES)
		o->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	return o->dirfd < 0 ? -errno : 0;
}

int output_file_open(struct output_file *o, const char *path, unsigned flags, mode_t mode)
{
	struct stat lst;
	int r;

	*o = (struct output_file){ .fd = -1, .dirfd = -1, .replace = flags & OUTPUT_REPLACE };
	r = split_path(o, path);
	if (r == 0)
		r = judge_existing(o, flags, &lst);
	if (r == 1) {
		r = open_stream(o, &lst);
		if (r == 0 && !(o->tmp_path = strdup(path)))
			r = -ENOMEM;
		if (r == 0)
			return 0;
	}
	/* A name nobody else can have made: a pid and a counter, made with O_EXCL. */
	for (unsigned i = 0; r == 0 && o->fd < 0; i++) {
		free(o->tmp);
		if (asprintf(&o->tmp, "%s.%d-%u.tmp", o->name, (int)getpid(), i) < 0) {
			o->tmp = NULL;
			r = -ENOMEM;
			break;
		}
		o->fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (o->fd < 0 && (errno != EEXIST || i >= 100))
			r = -errno;
	}
	if (r == 0 && asprintf(&o->tmp_path, "%.*s%s", (int)(strlen(path) - strlen(o->name)), path, o->tmp) < 0) {
		o->tmp_path = NULL;
		r = -ENOMEM;
	}
	if (r < 0) {
		if (o->fd >= 0) {
			close(o->fd);
			unlinkat(o->dirfd, o->tmp, 0);
		}
		output_file_release(o);
	}
	return r;
}

int output_file_publish(struct output_file *o)
{
	int r = 0;

	if (!o->tmp) {
		output_file_release(o);
		return 0;
	}
	if (o->replace) {
		if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) < 0)
			r = -errno;
	} else if (renameat2(o->dirfd, o->tmp, o->dirfd, o->name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		/* A file system without RENAME_NOREPLACE: link() refuses an existing name too. */
		if (r == -EINVAL) {
			r = linkat(o->dirfd, o->tmp, o->dirfd, o->name, 0) < 0 ? -errno : 0;
			if (r == 0)
				unlinkat(o->dirfd, o->tmp, 0);
		}
	}
	if (r < 0)
		unlinkat(o->dirfd, o->tmp, 0);
	else if (fsync(o->dirfd) < 0 && errno != EBADF)
		r = -errno; /* in place, maybe not durably */
	output_file_release(o);
	return r;
}

void output_file_discard(struct output_file *o)
{
	if (o->tmp)
		unlinkat(o->dirfd, o->tmp, 0);
	output_file_release(o);
}

int open_regular(int dirfd, const char *path)
{
	struct stat st;
	int fd, fl, r;

	fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto fail;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}
