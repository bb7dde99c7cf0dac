// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/jitimage.c: the ELF image of a JIT mapping's
 * symbols is read back by libdwfl (what hotspot's perfparser and our
 * symbolizer use) at the mapping's address, carries its build id where
 * readers look, and lands in a build-id cache without replacing or
 * following anything.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/buildid.h>

#include "jitimage.h"

static const struct jitimage_sym syms[] = {
	{ 0x0, 0x10, "first" },
	{ 0x40, 0x40, "LazyCompile:*fib /w/a.js:1:13" },
	{ 0x1000, 0x200, "py::hot_loop:/w/b.py" },
};

static const uint8_t bid[JITIMAGE_BID_LEN] = { 0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };

static char dir[] = "/tmp/test-jitimage-XXXXXX";

static void cleanup(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static const Dwfl_Callbacks cbs = {
	.find_elf = dwfl_build_id_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo,
};

Test(jitimage, dwfl_names_each_symbol_at_the_mapping_address, .fini = cleanup)
{
	char path[128];
	uint8_t id[PERFREC_BUILD_ID_MAX];
	uint64_t base = 0x7f1234560000ull;
	Dwfl_Module *mod;
	size_t len;
	void *buf;
	Dwfl *dwfl;
	FILE *f;

	cr_assert_eq(jitimage_build(syms, 3, 0x40000, bid, &buf, &len), 0);
	cr_assert_lt(len, 1024, "an image of 3 symbols is %zu bytes", len);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/img", dir);
	f = fopen(path, "we");
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	cr_assert_eq(perfrec_buildid__read_elf(path, id), JITIMAGE_BID_LEN);
	cr_assert_eq(memcmp(id, bid, JITIMAGE_BID_LEN), 0);

	/* as perfparser reports a file: at the mapping's start, not adding p_vaddr */
	dwfl = dwfl_begin(&cbs);
	cr_assert_not_null(dwfl);
	mod = dwfl_report_elf(dwfl, "jit", path, -1, base, false);
	cr_assert_not_null(mod, "%s", dwfl_errmsg(-1));
	dwfl_report_end(dwfl, NULL, NULL);
	cr_assert_str_eq(dwfl_module_addrname(mod, base + 0x8), "first");
	cr_assert_str_eq(dwfl_module_addrname(mod, base + 0x7f), "LazyCompile:*fib /w/a.js:1:13");
	cr_assert_str_eq(dwfl_module_addrname(mod, base + 0x1100), "py::hot_loop:/w/b.py");
	cr_assert_null(dwfl_module_addrname(mod, base + 0x30));
	dwfl_end(dwfl);
}

Test(jitimage, a_symbol_outside_the_mapping_is_refused)
{
	const struct jitimage_sym out[] = { { 0xff0, 0x20, "past_the_end" } };
	void *buf = NULL;
	size_t len;

	cr_assert_eq(jitimage_build(out, 1, 0x1000, bid, &buf, &len), -EINVAL);
	cr_assert_eq(jitimage_build(syms, 0, 0, bid, &buf, &len), -EINVAL);
	cr_assert_null(buf);
}

Test(jitimage, stored_once_in_perfs_layout_never_through_a_link, .fini = cleanup)
{
	char path[128];
	struct stat st;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(jitimage_store(fd, bid, "one", 3, 0640), 0);
	snprintf(path, sizeof(path), "%s/ab/0102030405060708090a0b0c0d0e0f10111213", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert_eq(st.st_size, 3);
	/* an entry is never replaced */
	cr_assert_eq(jitimage_store(fd, bid, "other", 5, 0640), -EEXIST);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 3);
	/* nor is the xx directory followed when it is a link */
	snprintf(path, sizeof(path), "%s/cd", dir);
	cr_assert_eq(symlink("/tmp", path), 0);
	cr_assert_eq(jitimage_store(fd, (uint8_t[JITIMAGE_BID_LEN]){ 0xcd }, "x", 1, 0640), -ENOTDIR);
	close(fd);
}

/* A later snapshot's image of a mapping, with more symbols, takes the earlier one's place; a link never. */
Test(jitimage, replaced_only_when_asked_and_only_a_file, .fini = cleanup)
{
	char path[128], link[128];
	struct stat st;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(jitimage_replace(fd, bid, "one", 3, 0640), 0);
	snprintf(path, sizeof(path), "%s/ab/0102030405060708090a0b0c0d0e0f10111213", dir);
	cr_assert_eq(jitimage_replace(fd, bid, "longer", 6, 0640), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 6);
	cr_assert_eq(st.st_mode & 07777, 0640);
	/* no temporary file left beside it */
	snprintf(link, sizeof(link), "%s/ab/.0102030405060708090a0b0c0d0e0f10111213.jit-%d", dir, (int)getpid());
	cr_assert_eq(access(link, F_OK), -1);
	/* an entry that is a link is not written through nor replaced */
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(symlink("/tmp/nonexistent-jitimage-target", path), 0);
	cr_assert_eq(jitimage_replace(fd, bid, "x", 1, 0640), -EEXIST);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	close(fd);
}
