// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrec_pdwriter__create() and a reader checking whether a .tmp is in
 * use: perfrecctl ls and cut open every .tmp they list and take a shared
 * flock for an instant (perfrec_pdwriter__in_use()).  One that opened the
 * new file between its creation and the writer's own lock must cost the
 * writer a short wait, not the file.  flock() is interposed here (this test
 * alone) so that the reader's instant lands exactly there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>

/* How many exclusive tries a reader's shared lock still holds off. */
static int reader_holds;

int flock(int fd, int op)
{
	if ((op & LOCK_EX) && (op & LOCK_NB) && reader_holds > 0) {
		reader_holds--;
		errno = EWOULDBLOCK;
		return -1;
	}
	return (int)syscall(SYS_flock, fd, op);
}

Test(pdwriter_lock, a_reader_checking_the_new_tmp_costs_a_wait_not_the_file)
{
	char dir[] = "/tmp/test-pdwriter-lock-XXXXXX", path[256], tmp[300];
	struct perfrec_pdwriter *w = NULL;
	struct stat st;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	reader_holds = 3;
	cr_assert_eq(perfrec_pdwriter__create(path, &w), 0, "the file was given up for a reader's instant");
	cr_expect_eq(reader_holds, 0);
	cr_expect_eq(perfrec_pdwriter__in_use(tmp), 1, "the writer does not hold its lock");
	perfrec_pdwriter__free(w, true);
	cr_expect_neq(stat(tmp, &st), 0);

	/* One that never lets go: the writer gives up after a bounded wait, leaving nothing. */
	reader_holds = 1 << 30;
	cr_expect_eq(perfrec_pdwriter__create(path, &w), -EWOULDBLOCK);
	cr_expect_neq(stat(tmp, &st), 0, "a refused file is left behind");
	reader_holds = 0;
	rmdir(dir);
}
