// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of retention: in a scratch directory of published files with known
 * sizes and mtimes, next to in-progress *.data.tmp files and other files,
 * each limit alone and combined must remove exactly the oldest files it
 * has to, never a kept one and never anything that is not ours.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "retention.h"

#define DAY_USEC (86400ULL * 1000000)
#define HOUR_USEC (3600ULL * 1000000)

struct file {
	const char *name;
	off_t size;
	uint64_t age_usec;
	bool ours; /* a published file of prefix "pr" */
};

/* Published files in name (= time) order, then things retention must skip,
 * all old and big enough to be removed were they considered. */
static const struct file files[] = {
	{ "pr-h-20260101T000000.000Z-000001.data", 100, 10 * DAY_USEC, true },
	{ "pr-h-20260101T000100.000Z-000002.data", 200, 9 * DAY_USEC, true },
	{ "pr-h-20260101T000200.000Z-000003-recovered.data", 300, 8 * DAY_USEC, true },
	{ "pr-h-20260101T000300.000Z-000004.data", 400, 2 * DAY_USEC, true },
	{ "pr-h-20260101T000400.000Z-000005.data", 500, HOUR_USEC, true },
	{ "pr-h-20250101T000000.000Z-000001.data.tmp", 10000, 20 * DAY_USEC, false },
	{ "other-h-20250101T000000.000Z-000001.data", 10000, 20 * DAY_USEC, false },
	{ "prx-h-20250101T000000.000Z-000001.data", 10000, 20 * DAY_USEC, false },
	{ "pr-notes.txt", 10000, 20 * DAY_USEC, false },
	{ "pr-.data", 10000, 20 * DAY_USEC, false },
};
#define N_FILES (sizeof(files) / sizeof(files[0]))

static char dir[64];

static void make_files(void)
{
	struct timespec now;

	strcpy(dir, "/tmp/test-retention-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t i = 0; i < N_FILES; i++) {
		uint64_t t = (uint64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 - files[i].age_usec;
		struct timespec ts[2] = { { t / 1000000, t % 1000000 * 1000 }, { t / 1000000, t % 1000000 * 1000 } };
		char path[256];
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
		cr_assert_eq(ftruncate(fd, files[i].size), 0);
		cr_assert_eq(futimens(fd, ts), 0);
		close(fd);
	}
}

static bool exists(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void remove_all(void)
{
	char path[256];

	for (size_t i = 0; i < N_FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		unlink(path);
	}
	rmdir(dir);
}

Test(retention, removes_exactly_the_oldest_files_each_limit_requires)
{
	/* removed: bit i set when files[i] must be gone afterwards. */
	static const struct {
		const char *what;
		uint64_t max_files, max_bytes, max_age_usec;
		int keep; /* index into files[] or -1 */
		unsigned removed;
	} cases[] = {
		{ "no limits", 0, 0, 0, -1, 0 },
		{ "files under limit", 5, 0, 0, -1, 0 },
		{ "max files 3", 3, 0, 0, -1, 0x3 },
		{ "max files 1", 1, 0, 0, -1, 0xf },
		{ "bytes at limit", 0, 1500, 0, -1, 0 },
		{ "bytes 1200", 0, 1200, 0, -1, 0x3 },
		{ "bytes 1000", 0, 1000, 0, -1, 0x7 },
		{ "bytes 1", 0, 1, 0, -1, 0x1f },
		{ "age 3 days", 0, 0, 3 * DAY_USEC, -1, 0x7 },
		{ "age 30 days", 0, 0, 30 * DAY_USEC, -1, 0 },
		{ "age wins", 4, 1400, 9 * DAY_USEC + 12 * HOUR_USEC, -1, 0x1 },
		{ "bytes win", 4, 1000, 9 * DAY_USEC + 12 * HOUR_USEC, -1, 0x7 },
		{ "files win", 2, 1400, 9 * DAY_USEC + 12 * HOUR_USEC, -1, 0x7 },
		{ "keep oldest", 3, 0, 0, 0, 0x6 },
		{ "keep newest", 0, 1, 0, 4, 0xf },
		{ "keep middle with age", 0, 0, 3 * DAY_USEC, 1, 0x5 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct retention_opts o = {
			.dir = dir, .prefix = "pr", .max_files = cases[c].max_files,
			.max_bytes = cases[c].max_bytes, .max_age_usec = cases[c].max_age_usec,
		};
		char keep_path[256];
		const char *keep[2] = { NULL, NULL };
		int expect = __builtin_popcount(cases[c].removed), r;

		make_files();
		if (cases[c].keep >= 0) {
			/* A full path, as the daemon has it, names the file. */
			snprintf(keep_path, sizeof(keep_path), "%s/%s", dir, files[cases[c].keep].name);
			keep[0] = keep_path;
		}
		r = retention_apply(&o, keep);
		cr_expect_eq(r, expect, "%s: removed %d, expected %d", cases[c].what, r, expect);
		for (size_t i = 0; i < N_FILES; i++) {
			bool gone = cases[c].removed & (1u << i);

			cr_expect_eq(exists(files[i].name), !gone, "%s: %s should %s", cases[c].what,
				     files[i].name, gone ? "be removed" : "survive");
		}
		remove_all();
	}
}

Test(retention, a_second_run_removes_nothing_more)
{
	struct retention_opts o = { .dir = dir, .prefix = "pr", .max_files = 2 };

	make_files();
	cr_expect_eq(retention_apply(&o, NULL), 3);
	cr_expect_eq(retention_apply(&o, NULL), 0);
	cr_expect(exists(files[3].name) && exists(files[4].name));
	remove_all();
}

Test(retention, foreign_files_of_a_longer_prefix_are_not_ours)
{
	/* Prefix "pr-h" must match only "pr-h-..." names, not "pr-hx-...". */
	struct retention_opts o = { .dir = dir, .prefix = "pr-h", .max_files = 1 };

	make_files();
	cr_expect_eq(retention_apply(&o, NULL), 4);
	cr_expect(exists(files[4].name));
	for (size_t i = 5; i < N_FILES; i++)
		cr_expect(exists(files[i].name), "%s must survive", files[i].name);
	remove_all();
}

Test(retention, missing_directory_is_an_error)
{
	struct retention_opts o = { .dir = "/nonexistent/perfrec-retention", .prefix = "pr", .max_files = 1 };

	cr_expect_eq(retention_apply(&o, NULL), -ENOENT);
}

Test(retention, directories_named_like_files_are_left_alone)
{
	struct retention_opts o = { .dir = dir, .prefix = "pr", .max_files = 1 };
	char sub[256];

	make_files();
	snprintf(sub, sizeof(sub), "%s/pr-h-20200101T000000.000Z-000001.data", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	cr_expect_eq(retention_apply(&o, NULL), 4);
	cr_expect_eq(access(sub, F_OK), 0);
	rmdir(sub);
	remove_all();
}

/*
 * The free-space floor on a modelled file system: FS_SIZE bytes, of which
 * a ballast (everything else, the files not ours in dir included) and our
 * published files take their sizes.
 * retention asks again after each removal, so the model counts what is
 * left in the directory each time.
 */
#define FS_SIZE 10000ULL

struct model {
	uint64_t ballast;
	unsigned calls;
};

static int model_space(int dfd, void *ctx, struct retention_space *ret)
{
	struct model *m = ctx;
	uint64_t used = m->ballast;
	struct stat st;

	m->calls++;
	for (size_t i = 0; i < N_FILES; i++)
		if (files[i].ours && fstatat(dfd, files[i].name, &st, 0) == 0)
			used += (uint64_t)st.st_size;
	ret->size = FS_SIZE;
	ret->avail = used < FS_SIZE ? FS_SIZE - used : 0;
	return 0;
}

Test(retention, the_floor_removes_the_oldest_files_until_enough_is_free)
{
	/* Ours take 1500 bytes (100 to 500, oldest first); the rest is others'. */
	static const struct {
		const char *what;
		uint64_t used_by_others, min_free;
		unsigned min_free_percent;
		int keep;
		unsigned removed;
		int below_after;
	} cases[] = {
		/* free = 10000 - 1500 - others */
		{ "enough free", 6000, 2000, 0, -1, 0, 0 },
		{ "at the floor", 6000, 2500, 0, -1, 0, 0 },
		{ "100 short: the oldest goes", 6000, 2600, 0, -1, 0x1, 0 },
		{ "250 short: two go", 6000, 2750, 0, -1, 0x3, 0 },
		{ "as a percentage", 6000, 0, 30, -1, 0x7, 0 },
		{ "the smaller of both", 6000, 3000, 90, -1, 0x7, 0 },
		{ "all cannot make it", 9000, 5000, 0, -1, 0x1f, 1 },
		{ "the kept file stays", 9000, 5000, 0, 4, 0xf, 1 },
		{ "no floor", 9900, 0, 0, -1, 0, 0 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct model m = { 0 };
		struct retention_opts o = {
			.dir = dir, .prefix = "pr", .min_free = cases[c].min_free,
			.min_free_percent = cases[c].min_free_percent, .space = model_space, .space_ctx = &m,
		};
		char keep_path[256];
		const char *keep[2] = { NULL, NULL };
		uint64_t avail = 0, floor = 0;
		int expect = __builtin_popcount(cases[c].removed), r;

		make_files();
		m.ballast = cases[c].used_by_others;
		if (cases[c].keep >= 0) {
			snprintf(keep_path, sizeof(keep_path), "%s/%s", dir, files[cases[c].keep].name);
			keep[0] = keep_path;
		}
		r = retention_apply(&o, keep);
		cr_expect_eq(r, expect, "%s: removed %d, expected %d", cases[c].what, r, expect);
		for (size_t i = 0; i < N_FILES; i++) {
			bool gone = cases[c].removed & (1u << i);

			cr_expect_eq(exists(files[i].name), !gone, "%s: %s should %s", cases[c].what,
				     files[i].name, gone ? "be removed" : "survive");
		}
		r = retention_below_floor(&o, &avail, &floor);
		cr_expect_eq(r, cases[c].below_after, "%s: below the floor afterwards: %d (%llu free, floor %llu)",
			     cases[c].what, r, (unsigned long long)avail, (unsigned long long)floor);
		remove_all();
	}
}

/* Files the floor does not need stay, whatever else is set. */
Test(retention, the_floor_and_the_byte_limit_take_only_what_each_needs)
{
	struct model m = { .ballast = 0 };
	/* max-bytes as a share: 12% of 10000 = 1200: files 0 and 1 (300 bytes) go. */
	struct retention_opts o = {
		.dir = dir, .prefix = "pr", .max_bytes_percent = 12, .min_free = 100,
		.space = model_space, .space_ctx = &m,
	};

	make_files();
	cr_expect_eq(retention_apply(&o, NULL), 2);
	cr_expect(!exists(files[0].name) && !exists(files[1].name) && exists(files[2].name));
	remove_all();
}
