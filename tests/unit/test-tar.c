// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of views/tar.c, the ustar writer of `perfrecctl cut
 * --archive`: what it writes, plain and gzip'ed, reads back with Python's
 * tarfile (which checks each header's checksum) and GNU tar, names, sizes,
 * modes and bytes alike, names past ustar's 100 bytes included (split into
 * the prefix field); and no name that would land outside the directory
 * the archive is unpacked in is ever written.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tar.h"

static char dir[] = "/tmp/test-tar-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(tar, .init = setup, .fini = teardown);

/* A file of @size bytes of a pattern, open for reading; *@sum: the bytes' sum. */
static int pattern_file(size_t size, unsigned seed, uint32_t *sum)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "%s/in-%u", dir, seed);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	*sum = 0;
	for (size_t i = 0; i < size; i++) {
		unsigned char c = (unsigned char)(i * 7 + seed);

		cr_assert_eq(write(fd, &c, 1), 1);
		*sum += c;
	}
	return fd;
}

/* Python's view of @archive: "name size mode bytesum" a line, or NULL. */
static char *read_back(const char *archive)
{
	static char out[8192];
	char cmd[1024];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys, tarfile\n"
		 "with tarfile.open(sys.argv[1]) as t:\n"
		 "    for m in t.getmembers():\n"
		 "        d = t.extractfile(m).read()\n"
		 "        print(m.name, m.size, oct(m.mode), sum(d) %% 2**32, m.type == tarfile.REGTYPE)' %s",
		 archive);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	return pclose(p) == 0 ? out : NULL;
}

static void round_trip(bool gzip)
{
	const size_t sizes[] = { 0, 1, 511, 512, 513, 100000 };
	char archive[64], expect[8192] = "", longname[240], cmd[160];
	struct tar *t;
	int fd;

	snprintf(archive, sizeof(archive), "%s/a.tar%s", dir, gzip ? ".gz" : "");
	fd = open(archive, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(tar_open(fd, gzip, &t), 0);
	/* 150 bytes of directories, then a 60-byte name: only prefix + name hold it. */
	snprintf(longname, sizeof(longname), "%0150d/%060d", 0, 1);
	memset(longname, 'd', 150);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char name[300];
		uint32_t sum;
		int in = pattern_file(sizes[i], (unsigned)i, &sum);

		if (i == 3)
			snprintf(name, sizeof(name), "%s", longname);
		else
			snprintf(name, sizeof(name), ".build-id/%02zx/file-%zu", i, sizes[i]);
		cr_assert_eq(tar_add(t, name, in, i ? 0640 : 0600, 1700000000), 0);
		/* A refused name writes nothing: the archive goes on. */
		cr_assert_eq(tar_add(t, "../escape", in, 0600, 0), -EINVAL);
		close(in);
		snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s %zu %s %u True\n", name, sizes[i],
			 i ? "0o640" : "0o600", sum);
	}
	cr_assert_eq(tar_close(t), 0);
	cr_assert_str_eq(read_back(archive) ? read_back(archive) : "(python could not read it)", expect);
	snprintf(cmd, sizeof(cmd), "tar tf %s | grep -qx 'd*/0*1'", archive);
	cr_assert_eq(system(cmd), 0, "GNU tar does not see the long name");
}

Test(tar, plain_archive_reads_back)
{
	round_trip(false);
}

Test(tar, gzipped_archive_reads_back)
{
	round_trip(true);
}

Test(tar, names_stay_below_the_directory)
{
	const char *bad[] = { "", "/etc/passwd", "..", "../x", "a/../b", "a/..", ".", "./a", "a/./b", "a//b", "a/",
			      "a\nb", "tab\there", "esc\x1b" };
	const char *good[] = { "perf.data", ".build-id/ab/cdef0123", "..a", "a..", ".hidden/x", "a/b/c" };
	char big[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(tar_name_ok(bad[i]), "'%s' accepted", bad[i]);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect(tar_name_ok(good[i]), "'%s' refused", good[i]);
	/* Too long for ustar: one 101-byte component, or 256 bytes in all. */
	memset(big, 'x', 101);
	big[101] = 0;
	cr_expect_not(tar_name_ok(big));
	memset(big, 'x', 256);
	big[100] = big[200] = '/';
	big[256] = 0;
	cr_expect_not(tar_name_ok(big));
}

Test(tar, not_a_regular_file)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), out;
	char archive[64];
	struct tar *t;

	snprintf(archive, sizeof(archive), "%s/b.tar", dir);
	out = open(archive, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(out, 0);
	cr_assert_eq(tar_open(out, false, &t), 0);
	cr_expect_eq(tar_add(t, "d", fd, 0600, 0), -EINVAL);
	cr_expect_eq(tar_close(t), 0);
	close(fd);
	cr_expect_str_eq(read_back(archive), "");
}

Test(tar, links_stay_below_the_directory)
{
	const struct { const char *name, *target; } bad[] = {
		{ "a/b", "/etc/passwd" }, { "a/b", "../../x" }, { "l", "../x" }, { "a/b", "x/../../y" },
		{ "a/b", "x/.." }, { "a/b", ".." }, { "a/b", "./x" }, { "a/b", "x//y" }, { "a/b", "" },
		{ "a/b", "x\ny" }, { "../a", "x" }, { "a/b/c", "../x/../y" },
	};
	const struct { const char *name, *target; } good[] = {
		{ "perfrec-jit/jit-1-7f00-1000.so/00112233445566778899aabbccddeeff00112233",
		  "../../.build-id/00/112233445566778899aabbccddeeff00112233" },
		{ "l", "x" }, { "a/b", "../c/d" }, { "a/b", "c" },
	};
	char big[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(tar_link_ok(bad[i].name, bad[i].target), "'%s' -> '%s' accepted", bad[i].name,
			      bad[i].target);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect(tar_link_ok(good[i].name, good[i].target), "'%s' -> '%s' refused", good[i].name,
			  good[i].target);
	/* ustar's link field holds 100 bytes */
	memset(big, 'x', 100);
	big[100] = 0;
	cr_expect_not(tar_link_ok("l", big));
}

/* A link member unpacks as that link (GNU tar), beside its target; a refused one writes nothing. */
Test(tar, link_member_unpacks_as_a_link)
{
	char archive[64], cmd[512], got[256] = "";
	uint32_t sum;
	struct tar *t;
	ssize_t n;
	int out, in = pattern_file(100, 9, &sum);

	snprintf(archive, sizeof(archive), "%s/l.tar.gz", dir);
	out = open(archive, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(out, 0);
	cr_assert_eq(tar_open(out, true, &t), 0);
	cr_assert_eq(tar_add(t, ".build-id/ab/cdef", in, 0600, 1700000000), 0);
	cr_assert_eq(tar_add_symlink(t, "perfrec-jit/x.so/abcdef", "../../.build-id/ab/cdef", 1700000000), 0);
	cr_assert_eq(tar_add_symlink(t, "perfrec-jit/y", "../../../etc/passwd", 0), -EINVAL);
	cr_assert_eq(tar_close(t), 0);
	close(in);
	snprintf(cmd, sizeof(cmd), "mkdir %s/x && tar xf %s -C %s/x && test \"$(tar tf %s | wc -l)\" = 2 && "
		 "cmp -s %s/in-9 %s/x/perfrec-jit/x.so/abcdef", dir, archive, dir, archive, dir, dir);
	cr_assert_eq(system(cmd), 0, "GNU tar does not unpack the link to its target");
	snprintf(cmd, sizeof(cmd), "%s/x/perfrec-jit/x.so/abcdef", dir);
	n = readlink(cmd, got, sizeof(got) - 1);
	cr_assert_gt(n, 0);
	cr_expect_str_eq(got, "../../.build-id/ab/cdef");
}
