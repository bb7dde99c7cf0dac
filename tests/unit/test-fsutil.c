// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of lib/fsutil.c's write_all(), the one loop perfrecd's
 * manifests and metrics textfile and perfrecctl's stream output share:
 * everything arrives through a pipe smaller than the data (so writes are
 * short or block part-way), and a full device is an error, not a silent
 * truncation.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
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
