// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of lib/fsutil.c's write_all(), the one loop perfrecd's
 * manifests and metrics textfile and perfrecctl's stream output share:
 * everything arrives through a pipe smaller than the data (so writes are
 * short or block part-way), and a full device is an error, not a silent
 * truncation.  And open_regular(), which the readers of mapped paths use.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#define SIZE (1U << 20)

struct reader {
	int fd;
	size_t got;
	bool same;
};

static void *drain_pipe(void *arg)
{
	struct reader *rd = arg;
	unsigned char buf[4096];
	ssize_t n;

	rd->same = true;
	while ((n = read(rd->fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			rd->same &= buf[i] == (unsigned char)((rd->got + (size_t)i) * 7);
		rd->got += (size_t)n;
	}
	return NULL;
}

Test(fsutil, write_all_delivers_everything_through_a_small_pipe)
{
	unsigned char *data = malloc(SIZE);
	struct reader rd = { 0 };
	pthread_t t;
	int p[2];

	cr_assert_not_null(data);
	for (size_t i = 0; i < SIZE; i++)
		data[i] = (unsigned char)(i * 7);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	rd.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, drain_pipe, &rd), 0);
	cr_expect_eq(write_all(p[1], data, SIZE), 0);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	cr_expect_eq(rd.got, SIZE, "the reader got %zu of %u bytes", rd.got, SIZE);
	cr_expect(rd.same, "the bytes arrived changed or out of order");
	free(data);
}

Test(fsutil, write_all_reports_a_full_device)
{
	char buf[8192] = { 0 };
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		cr_skip_test("no /dev/full here");
	cr_expect_eq(write_all(fd, buf, sizeof(buf)), -ENOSPC);
	cr_expect_eq(write_all(fd, buf, 0), 0, "nothing to write is not an error");
	close(fd);
}

/*
 * open_regular(): a FIFO nobody writes to, a device and a directory are
 * refused at once (a plain open() of the FIFO blocks for ever); a regular
 * file opens, blocking again, and reads.
 */
Test(fsutil, open_regular_takes_regular_files_only)
{
	char dir[] = "/tmp/test-fsutil.XXXXXX", fifo[64], file[64], buf[4];
	int fd, fl;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "ELF", 3), 3);
	close(fd);

	cr_assert_eq(open_regular(AT_FDCWD, fifo), -EINVAL);
	cr_assert_eq(open_regular(AT_FDCWD, "/dev/zero"), -EINVAL);
	cr_assert_eq(open_regular(AT_FDCWD, dir), -EINVAL);
	cr_assert_eq(open_regular(AT_FDCWD, "/nonexistent/x"), -ENOENT);
	fd = open_regular(AT_FDCWD, file);
	cr_assert_geq(fd, 0);
	fl = fcntl(fd, F_GETFL);
	cr_assert(!(fl & O_NONBLOCK), "the fd is left non-blocking");
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(read(fd, buf, sizeof(buf)), 3);
	close(fd);
	unlink(fifo);
	unlink(file);
	rmdir(dir);
}
