// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The unwind tables' cache (internal/unwtab-cache.h): bounded in memory
 * and on disk, evictions counted; a file that is not the build id asked
 * for makes no table; the directory is made 0700 and one that others may
 * write is not used.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "unwtab-cache.h"

static char tmpdir[] = "/tmp/perfrec-unwtab-cache-XXXXXX";

static void make_tmpdir(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_expect_eq(system(cmd), 0);
}

/* unwtab_open_fn: the file named by ctx, once. */
static int open_path(void *ctx, int attempt)
{
	int fd;

	if (attempt > 0)
		return -ESRCH;
	fd = open(ctx, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -ENOENT : fd;
}

/* The build id of the ELF file at @path, by building its table once. */
static size_t build_id_of(const char *path, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	struct unwtab *t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n;

	cr_assert_geq(fd, 0, "%s: %m", path);
	cr_assert_eq(unwtab_build_fd(fd, NULL, &t), 0, "no table of %s", path);
	close(fd);
	memcpy(id, t->build_id, t->build_id_len);
	n = t->build_id_len;
	unwtab_free(t);
	return n;
}

static void hex(const uint8_t *id, size_t n, char *key)
{
	for (size_t i = 0; i < n; i++)
		sprintf(key + 2 * i, "%02x", id[i]);
}

static int get(struct unwtab_cache *c, const char *path, const struct unwtab **t)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	size_t n = build_id_of(path, id);
	char key[2 * PERFREC_BUILD_ID_MAX + 1];
	bool dwfl;

	hex(id, n, key);
	return unwtab_cache_get(c, key, id, n, open_path, (void *)path, t, &dwfl);
}

static unsigned table_files(void)
{
	char cmd[PATH_MAX + 64];
	unsigned n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls %s/.unwtab | grep -c '\\.unwtab$'", tmpdir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	if (fscanf(p, "%u", &n) != 1)
		n = 0;
	pclose(p);
	return n;
}

Test(unwtab_cache, memory_and_disk_stay_under_their_bounds, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab_cache_opts o = { .dir = tmpdir, .max_tables = 1 };
	const char *files[] = { "tests/e2e/nofp", "/proc/self/exe", "/lib/x86_64-linux-gnu/libc.so.6" };
	struct unwtab_cache_stats st;
	const struct unwtab *t;
	struct unwtab_cache *c;
	uint64_t gen;
	struct stat sb;
	char path[PATH_MAX + 16];

	/* One table in memory: the others go, and come back from disk. */
	cr_assert_eq(unwtab_cache_new(&o, &c), 0);
	cr_assert_eq(get(c, files[0], &t), 1);
	gen = unwtab_cache_generation(c);
	snprintf(path, sizeof(path), "%s/.unwtab", tmpdir);
	cr_assert_eq(stat(path, &sb), 0);
	cr_expect_eq(sb.st_mode & 0777, 0700);
	cr_assert_eq(get(c, files[1], &t), 1);
	cr_assert_eq(get(c, files[0], &t), 1);
	unwtab_cache_stats(c, &st);
	cr_expect_eq(st.tables, 1, "%zu tables kept under a bound of 1", st.tables);
	cr_expect_eq(st.evicted, 2);
	cr_expect_gt(unwtab_cache_generation(c), gen, "an eviction did not change the generation");
	cr_expect_eq(st.built, 2);
	cr_expect_eq(st.saved, 2);
	cr_expect_eq(st.loaded, 1, "the evicted table was not loaded from disk");
	cr_expect_eq(table_files(), 2);
	unwtab_cache_free(c);

	/* A byte on disk: a table saved past it sends the files there away, itself last. */
	o.max_disk_bytes = 1;
	cr_assert_eq(unwtab_cache_new(&o, &c), 0);
	cr_assert_eq(get(c, files[2], &t), 1);
	unwtab_cache_stats(c, &st);
	cr_expect_eq(st.saved, 1);
	cr_expect_eq(st.disk_evicted, 3, "%" PRIu64 " table files removed", st.disk_evicted);
	cr_expect_eq(table_files(), 0, "%u table files under a 1-byte bound", table_files());
	cr_expect_eq(st.disk_bytes, 0);
	unwtab_cache_free(c);
}

Test(unwtab_cache, a_file_of_another_build_id_makes_no_table, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab_cache_opts o = { .dir = tmpdir };
	static const uint8_t other[20] = { 0xde, 0xad };
	struct unwtab_cache_stats st;
	const struct unwtab *t;
	struct unwtab_cache *c;
	bool dwfl;

	cr_assert_eq(unwtab_cache_new(&o, &c), 0);
	cr_expect_eq(unwtab_cache_get(c, "dead", other, sizeof(other), open_path, "tests/e2e/nofp", &t, &dwfl),
		     -ENOENT);
	unwtab_cache_stats(c, &st);
	cr_expect_eq(st.built, 0);
	cr_expect_eq(st.saved, 0);
	cr_expect_eq(st.tables, 0, "a file that is not the one asked for was kept");
	unwtab_cache_free(c);
}

Test(unwtab_cache, a_directory_others_may_write_is_not_used, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab_cache_opts o = { .dir = tmpdir };
	struct unwtab_cache_stats st;
	const struct unwtab *t;
	struct unwtab_cache *c;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/.unwtab", tmpdir);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(chmod(path, 0777), 0);
	cr_assert_eq(unwtab_cache_new(&o, &c), 0);
	cr_assert_eq(get(c, "tests/e2e/nofp", &t), 1, "no table without a usable directory");
	unwtab_cache_stats(c, &st);
	cr_expect_eq(st.saved, 0, "a table was written where others may write");
	cr_expect_geq(st.disk_errors, 1);
	cr_expect_eq(table_files(), 0);
	unwtab_cache_free(c);
}
