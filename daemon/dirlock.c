// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The output directory's lock (dirlock.h).  flock(2) on the directory
 * itself: no lock file to leave behind or to get the permissions of wrong
 * after a change of user, released by the kernel when the daemon dies
 * however it dies.  flock does not say who holds a lock; /proc/locks does,
 * by device and inode, which is how a refusal names the other daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dirlock.h"

pid_t dirlock_holder(int fd)
{
	char line[256];
	struct stat st;
	pid_t pid = 0;
	FILE *f;

	if (fstat(fd, &st) < 0)
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:56789 0 EOF" (major:minor in hex) */
	while (fgets(line, sizeof(line), f)) {
		char kind[16], mode[16], rw[16];
		unsigned int maj, min;
		unsigned long long ino;
		int p;

		if (strstr(line, "->"))
			continue; /* a waiter, not the holder */
		if (sscanf(line, "%*d: %15s %15s %15s %d %x:%x:%llu", kind, mode, rw, &p, &maj, &min, &ino) != 7)
			continue;
		if (strcmp(kind, "FLOCK") == 0 && maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == (unsigned long long)st.st_ino) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int dirlock_take(const char *dir, int *ret_fd, pid_t *ret_holder)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (ret_holder)
		*ret_holder = 0;
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (r == -EBUSY && ret_holder)
			*ret_holder = dirlock_holder(fd);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}
