// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/fsutil.c's write_all(), the one loop perfrecd's
 * manifests and metrics textfile and perfrecctl's stream output share:
 * everything arrives through a pipe smaller than the data (so writes are
 * short or block part-way), and a full device is an error, not a silent
 * truncation.  And of output_file_*(), how every perfrecctl output is made:
 * 0600 under umask 022, never through a link planted at the name or at
 * the temporary's, an existing file replaced only when asked.  And
 * open_regular(), which the readers of mapped paths use.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static char *scratch_dir(void)
{
	char *d = strdup("/tmp/test-fsutil-XXXXXX");

	cr_assert_not_null(d);
	cr_assert_not_null(mkdtemp(d));
	return d;
}

static char *path_in(const char *dir, const char *name)
{
	char *p = NULL;

	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write_all(fd, text, strlen(text)), 0);
	fchmod(fd, mode);
	close(fd);
}

static bool holds(const char *path, const char *text)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n >= 0 && strcmp(buf, text) == 0;
}

static int write_output(const char *path, unsigned flags, const char *text)
{
	struct output_file of;
	int r = output_file_open(&of, path, flags, 0600);

	if (r < 0)
		return r;
	cr_assert_eq(write_all(of.fd, text, strlen(text)), 0);
	close(of.fd);
	return output_file_publish(&of);
}

static void rm_rf(const char *dir)
{
	char *cmd = NULL;

	cr_assert_geq(asprintf(&cmd, "rm -rf '%s'", dir), 0);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

Test(fsutil, outputs_are_0600_under_umask_022)
{
	char *d = scratch_dir(), *p = path_in(d, "out.data");
	mode_t old = umask(022);
	struct stat st;

	cr_assert_eq(write_output(p, 0, "new"), 0);
	umask(old);
	cr_assert_eq(lstat(p, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
	cr_expect(holds(p, "new"));
	free(p);
	rm_rf(d);
	free(d);
}

Test(fsutil, a_link_at_the_name_is_never_followed)
{
	char *d = scratch_dir(), *p = path_in(d, "out.data"), *secret = path_in(d, "secret");
	struct stat st;

	put(secret, "root's", 0600);
	cr_assert_eq(symlink(secret, p), 0);
	/* Without replace, a link (dangling or not) is something at the name. */
	cr_expect_eq(write_output(p, 0, "bucket"), -EEXIST);
	cr_expect_eq(write_output(p, OUTPUT_STREAM, "bucket"), -EEXIST, "a link to a regular file is no stream");
	/* With replace, the link itself is replaced: its target is untouched. */
	cr_expect_eq(write_output(p, OUTPUT_REPLACE, "bucket"), 0);
	cr_expect(holds(secret, "root's"), "written through the link");
	cr_assert_eq(lstat(p, &st), 0);
	cr_expect(S_ISREG(st.st_mode), "the link is still at the name");
	cr_expect(holds(p, "bucket"));
	free(p);
	free(secret);
	rm_rf(d);
	free(d);
}

Test(fsutil, links_at_the_temporary_names_are_skipped)
{
	char *d = scratch_dir(), *p = path_in(d, "out.data"), *secret = path_in(d, "secret");
	char name[64];

	put(secret, "root's", 0600);
	/* Every name the first tries would take, planted: the next free one is used. */
	for (int i = 0; i < 5; i++) {
		char *t;

		snprintf(name, sizeof(name), "out.data.%d-%d.tmp", (int)getpid(), i);
		t = path_in(d, name);
		cr_assert_eq(symlink(secret, t), 0);
		free(t);
	}
	cr_expect_eq(write_output(p, 0, "bucket"), 0);
	cr_expect(holds(secret, "root's"), "written through a planted temporary");
	cr_expect(holds(p, "bucket"));
	free(p);
	free(secret);
	rm_rf(d);
	free(d);
}

Test(fsutil, an_existing_file_is_replaced_only_when_asked)
{
	char *d = scratch_dir(), *p = path_in(d, "out.data"), *tmp;
	struct output_file of;
	struct stat st;

	put(p, "kept", 0644);
	cr_expect_eq(write_output(p, 0, "new"), -EEXIST);
	cr_expect(holds(p, "kept"));
	cr_expect_eq(write_output(p, OUTPUT_REPLACE, "new"), 0);
	cr_expect(holds(p, "new"));
	cr_assert_eq(stat(p, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0600, "the replacement kept mode %o", st.st_mode & 07777);
	/* One that appears while the output is written is not overwritten either. */
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(output_file_open(&of, p, 0, 0600), 0);
	put(p, "raced", 0600);
	close(of.fd);
	cr_expect_eq(output_file_publish(&of), -EEXIST);
	cr_expect(holds(p, "raced"));
	/* A failed output leaves nothing behind. */
	cr_assert_eq(output_file_open(&of, p, OUTPUT_REPLACE, 0600), 0);
	tmp = strdup(of.tmp_path);
	cr_assert_not_null(tmp);
	cr_expect_eq(access(tmp, F_OK), 0);
	close(of.fd);
	output_file_discard(&of);
	cr_expect_eq(access(tmp, F_OK), -1, "%s left behind", tmp);
	free(tmp);
	free(p);
	rm_rf(d);
	free(d);
}

Test(fsutil, streams_of_ours_are_written_as_they_are)
{
	char *d = scratch_dir(), *p = path_in(d, "fifo");
	struct output_file of;
	char buf[8] = "";
	int rd;

	cr_assert_eq(mkfifo(p, 0600), 0);
	cr_expect_eq(output_file_open(&of, p, OUTPUT_REPLACE, 0600), -EEXIST, "a FIFO replaced without STREAM");
	rd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(rd, 0);
	cr_assert_eq(output_file_open(&of, p, OUTPUT_STREAM, 0600), 0);
	cr_expect_null(of.tmp);
	cr_assert_eq(write_all(of.fd, "via", 3), 0);
	close(of.fd);
	cr_expect_eq(output_file_publish(&of), 0);
	cr_expect_eq(read(rd, buf, sizeof(buf)), 3);
	cr_expect_str_eq(buf, "via");
	close(rd);
	/* A directory is no output. */
	cr_expect_eq(output_file_open(&of, d, OUTPUT_REPLACE | OUTPUT_STREAM, 0600), -EISDIR);
	free(p);
	rm_rf(d);
	free(d);
}

Test(fsutil, copy_access_gives_the_data_files_mode)
{
	char *d = scratch_dir(), *data = path_in(d, "x.data"), *json = path_in(d, "x.data.json");
	struct stat st;
	int fd;

	put(data, "data", 0640);
	fd = open(json, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_expect_eq(copy_access(fd, data), 0);
	close(fd);
	cr_assert_eq(stat(json, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	/* Never more than owner and group may read, whatever the data's mode. */
	chmod(data, 0666);
	fd = open(json, O_WRONLY | O_CLOEXEC);
	cr_expect_eq(copy_access(fd, data), 0);
	close(fd);
	cr_assert_eq(stat(json, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0660, "mode %o", st.st_mode & 07777);
	free(data);
	free(json);
	rm_rf(d);
	free(d);
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
