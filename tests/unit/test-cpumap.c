// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for cpumap: the kernel's CPU list syntax parsed strictly,
 * formatted back into its shortest form, and the real online list read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/cpumap.h>

struct good_case {
	const char *in;
	int nr;
	int cpus[16];
	const char *formatted;
};

static const struct good_case good_cases[] = {
	{ "0", 1, { 0 }, "0" },
	{ "0-3,8,10-11", 7, { 0, 1, 2, 3, 8, 10, 11 }, "0-3,8,10-11" },
	{ "0-1\n", 2, { 0, 1 }, "0-1" },
	{ " 2 , 0 - 1 \n", 3, { 0, 1, 2 }, "0-2" },
	{ "5,3,1", 3, { 1, 3, 5 }, "1,3,5" },
	{ "1-4,2-3,4", 4, { 1, 2, 3, 4 }, "1-4" },
	{ "7-7", 1, { 7 }, "7" },
	{ "65535", 1, { 65535 }, "65535" },
	{ "3,2,1,0", 4, { 0, 1, 2, 3 }, "0-3" },
};

Test(cpumap, parses_good_lists_sorted_and_deduplicated)
{
	for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		const struct good_case *c = &good_cases[i];
		struct perfrec_cpumap *m = NULL;
		int r = perfrec_cpumap__parse(c->in, &m);

		cr_assert_eq(r, 0, "parse(\"%s\") = %d", c->in, r);
		cr_assert_eq(m->nr, c->nr, "parse(\"%s\"): nr %d, want %d", c->in, m->nr, c->nr);
		for (int j = 0; j < c->nr; j++)
			cr_assert_eq(m->cpus[j], c->cpus[j], "parse(\"%s\"): cpus[%d] = %d, want %d",
				     c->in, j, m->cpus[j], c->cpus[j]);
		perfrec_cpumap__free(m);
	}
}

Test(cpumap, rejects_malformed_lists)
{
	static const char *const bad[] = {
		"", " ", "\n", "3-1", "a", "1,,2", "-1", "1-", ",1", "1,", "65536",
		"0-65536", "99999999999999999999", "1 2", "0x1", "1;2", "+1", "1-2-3",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct perfrec_cpumap *m = NULL;
		int r = perfrec_cpumap__parse(bad[i], &m);

		cr_assert_eq(r, -EINVAL, "parse(\"%s\") = %d, want -EINVAL", bad[i], r);
		cr_assert_null(m, "parse(\"%s\") wrote a map on failure", bad[i]);
	}
}

Test(cpumap, formats_back_to_the_shortest_list)
{
	for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		const struct good_case *c = &good_cases[i];
		struct perfrec_cpumap *m = NULL, *again = NULL;
		char buf[64];
		int r;

		cr_assert_eq(perfrec_cpumap__parse(c->in, &m), 0);
		r = perfrec_cpumap__format(m, buf, sizeof(buf));
		cr_assert_eq(r, (int)strlen(c->formatted), "format of \"%s\" returned %d", c->in, r);
		cr_assert_str_eq(buf, c->formatted);
		/* Round trip: the formatted list parses to the same map. */
		cr_assert_eq(perfrec_cpumap__parse(buf, &again), 0);
		cr_assert_eq(again->nr, m->nr);
		cr_assert_arr_eq(again->cpus, m->cpus, (size_t)m->nr * sizeof(int));
		perfrec_cpumap__free(again);
		perfrec_cpumap__free(m);
	}
}

Test(cpumap, format_reports_a_short_buffer)
{
	struct perfrec_cpumap *m = NULL;
	char buf[16];

	cr_assert_eq(perfrec_cpumap__parse("0-3,8,10-11", &m), 0);
	/* "0-3,8,10-11" is 11 characters: it needs 12 bytes with the NUL. */
	cr_assert_eq(perfrec_cpumap__format(m, buf, 4), -ENOSPC);
	cr_assert_eq(perfrec_cpumap__format(m, buf, 11), -ENOSPC);
	cr_assert_eq(perfrec_cpumap__format(m, buf, 12), 11);
	cr_assert_str_eq(buf, "0-3,8,10-11");
	perfrec_cpumap__free(m);
}

Test(cpumap, reads_the_online_cpus)
{
	struct perfrec_cpumap *m = NULL;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int r = perfrec_cpumap__read(NULL, &m);

	if (r == -ENOENT)
		cr_skip_test("/sys/devices/system/cpu/online is missing (no sysfs)");
	cr_assert_eq(r, 0, "read online: %d", r);
	cr_assert_eq(m->nr, online, "online map has %d CPUs, sysconf says %ld", m->nr, online);
	for (int i = 1; i < m->nr; i++)
		cr_assert_gt(m->cpus[i], m->cpus[i - 1]);
	perfrec_cpumap__free(m);
}

Test(cpumap, reads_a_list_file_and_reports_a_missing_one)
{
	char path[] = "/tmp/test-cpumap-XXXXXX";
	struct perfrec_cpumap *m = NULL;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "1,4-5\n", 6), 6);
	close(fd);
	cr_assert_eq(perfrec_cpumap__read(path, &m), 0);
	cr_assert_eq(m->nr, 3);
	cr_assert_eq(m->cpus[0], 1);
	cr_assert_eq(m->cpus[1], 4);
	cr_assert_eq(m->cpus[2], 5);
	perfrec_cpumap__free(m);
	unlink(path);
	m = NULL;
	cr_assert_eq(perfrec_cpumap__read(path, &m), -ENOENT);
	cr_assert_null(m);
}

Test(cpumap, free_accepts_null)
{
	perfrec_cpumap__free(NULL);
}
