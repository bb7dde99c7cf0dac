// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The copy of a spooled snapshot into a regular file by a thread
 * (daemon/filecopy.c): the file ends as the spool, a longer one is cut to
 * it, the end is signalled on the fd, errors come back, and the caller may
 * let go before the thread is done.  The hung file system itself is
 * tests/e2e/test-snapshot-hung-fs.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filecopy.h"

#define SIZE (3 * 1024 * 1024 + 123)

static int spool_of(size_t size)
{
	int fd = memfd_create("spool", MFD_CLOEXEC);
	char *buf = malloc(size);

	cr_assert_geq(fd, 0);
	cr_assert_not_null(buf);
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)(i * 7 + i / 4096);
	cr_assert_eq(write(fd, buf, size), (ssize_t)size);
	free(buf);
	return fd;
}

static int wait_done(struct file_copy *fc)
{
	struct pollfd p = { .fd = file_copy_fd(fc), .events = POLLIN };
	int err = 1;

	cr_assert_eq(poll(&p, 1, 60000), 1, "the copy did not end");
	cr_assert(file_copy_done(fc, &err));
	return err;
}

Test(filecopy, copies_the_spool_and_cuts_a_longer_file)
{
	char path[] = "/tmp/test-filecopy.XXXXXX";
	int spool = spool_of(SIZE), target = mkstemp(path), check;
	struct file_copy *fc = NULL;
	char *a = malloc(SIZE), *b = malloc(SIZE);
	struct stat st;

	cr_assert_geq(target, 0);
	cr_assert_eq(ftruncate(target, SIZE * 2), 0);
	cr_assert_eq(file_copy_start(spool, dup(target), SIZE, &fc), 0);
	cr_assert_eq(wait_done(fc), 0);
	cr_assert_eq(file_copy_progress(fc), SIZE);
	file_copy_release(fc);
	cr_assert_eq(fstat(target, &st), 0);
	cr_assert_eq(st.st_size, SIZE, "the file is %lld bytes, not the spool's %d", (long long)st.st_size, SIZE);
	check = spool_of(SIZE);
	cr_assert_eq(pread(check, a, SIZE, 0), SIZE);
	cr_assert_eq(pread(target, b, SIZE, 0), SIZE);
	cr_assert(memcmp(a, b, SIZE) == 0, "the file differs from the spool");
	close(check);
	close(target);
	unlink(path);
	free(a);
	free(b);
}

/* A target that takes no pwrite (a pipe): the error comes back. */
Test(filecopy, an_error_is_reported)
{
	struct file_copy *fc = NULL;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(file_copy_start(spool_of(4096), p[1], 4096, &fc), 0);
	cr_assert_eq(wait_done(fc), -ESPIPE);
	file_copy_release(fc);
	close(p[0]);
}

/* file_copy_start(), again while FILE_COPY_MAX copies are under way. */
static struct file_copy *start(int target, off_t size)
{
	struct file_copy *fc = NULL;
	int r;

	for (int tries = 0; tries < 6000; tries++) {
		r = file_copy_start(spool_of((size_t)size), dup(target), size, &fc);
		if (r == 0)
			break;
		cr_assert_eq(r, -EBUSY, "file_copy_start: %s", strerror(-r));
		usleep(1000);
	}
	cr_assert_not_null(fc, "no copy could start: the slots of ended copies are not given back");
	return fc;
}

/* Let go at once: the thread finishes alone and frees what it holds (ASan). */
Test(filecopy, released_before_the_end)
{
	char path[] = "/tmp/test-filecopy.XXXXXX";
	int target = mkstemp(path);
	struct file_copy *fc[FILE_COPY_MAX];

	cr_assert_geq(target, 0);
	for (int i = 0; i < 16; i++)
		file_copy_release(start(target, SIZE));
	/* Each copy that ended gave its slot back: all of them can be had. */
	for (int i = 0; i < FILE_COPY_MAX; i++)
		fc[i] = start(target, 16);
	for (int i = 0; i < FILE_COPY_MAX; i++) {
		cr_assert_eq(wait_done(fc[i]), 0);
		file_copy_release(fc[i]);
	}
	close(target);
	unlink(path);
}
