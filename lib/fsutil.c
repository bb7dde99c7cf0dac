// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * File-system helpers shared by the writer, recovery, perfrecd and
 * perfrecctl: a rename is what publishes a file, and it is only durable
 * once the directory entry is; a write is only done when all of it is.
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
