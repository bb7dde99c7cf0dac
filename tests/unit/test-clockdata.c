// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for clock conversion (clockdata.h) on the clock data of a real
 * recording: tests/unit/data/clock.data was written by perfrecd (-F 49, -z,
 * 0.5 s) with its manifest clock.data.json.  The sample times below are
 * perf 6.1's (`perf script -F time --ns`), the wall-clock times the
 * manifest's, which the daemon wrote from its own clocks: our conversion of
 * perf's sample times must land on the daemon's wall-clock times.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <perfrec/clockdata.h>
#include <perfrec/pdreader.h>
#include <perfrec/timespec.h>

#define FIXTURE "tests/unit/data/clock.data"
/* perf script -i clock.data -F time --ns: first and last sample. */
#define FIRST_SAMPLE 10760816030860ULL
#define LAST_SAMPLE 10761326250086ULL

static uint64_t manifest_time(const char *key)
{
	json_object *root = json_object_from_file(FIXTURE ".json"), *v;
	uint64_t t = 0;
	char err[128];

	cr_assert(root, "cannot read " FIXTURE ".json");
	cr_assert(json_object_object_get_ex(root, key, &v));
	cr_assert_eq(perfrec_timespec__parse(json_object_get_string(v), 0, &t, err, sizeof(err)), 0, "%s", err);
	json_object_put(root);
	return t;
}

static void open_fixture(struct perfrec_pdreader **r, struct perfrec_clockdata *cd)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };

	cr_assert_eq(perfrec_pdreader__open(FIXTURE, &o, r), 0, "cannot open " FIXTURE);
	cr_assert_eq(perfrec_clockdata__from_reader(*r, cd), 0);
}

Test(clockdata, a_real_file_s_samples_convert_to_the_daemon_s_wall_clock)
{
	uint64_t start = manifest_time("start"), end = manifest_time("end");
	struct perfrec_clockdata cd;
	struct perfrec_pdreader *r;

	open_fixture(&r, &cd);
	cr_expect_eq(cd.clockid, CLOCK_MONOTONIC);
	/* The manifest keeps microseconds. */
	cr_expect_eq(cd.wall_ns / 1000, start / 1000, "clock data wall %llu, manifest start %llu",
		     (unsigned long long)cd.wall_ns, (unsigned long long)start);
	/* Every sample lies between the file's start and its close (the manifest's end). */
	cr_expect_geq(perfrec_clockdata__to_wall(&cd, FIRST_SAMPLE), start);
	cr_expect_leq(perfrec_clockdata__to_wall(&cd, LAST_SAMPLE), end, "last sample at %llu, manifest end %llu",
		      (unsigned long long)perfrec_clockdata__to_wall(&cd, LAST_SAMPLE), (unsigned long long)end);
	cr_expect_eq(perfrec_clockdata__to_wall(&cd, LAST_SAMPLE) - perfrec_clockdata__to_wall(&cd, FIRST_SAMPLE),
		     LAST_SAMPLE - FIRST_SAMPLE);
	/* and back, to the nanosecond */
	cr_expect_eq(perfrec_clockdata__to_sample(&cd, perfrec_clockdata__to_wall(&cd, FIRST_SAMPLE)), FIRST_SAMPLE);
	cr_expect_eq(perfrec_clockdata__to_sample(&cd, cd.wall_ns), cd.clock_ns);
	/* The daemon's wall clock at the start, on the sample clock: before any sample. */
	cr_expect_leq(perfrec_clockdata__to_sample(&cd, start), FIRST_SAMPLE);
	perfrec_pdreader__free(r);
}

Test(clockdata, the_file_name_is_only_a_millisecond_approximation)
{
	struct perfrec_clockdata cd;
	struct perfrec_pdreader *r;
	char name[64];

	open_fixture(&r, &cd);
	/* The name was perfrecd-vm-20261123T214228.327Z-000001.data. */
	cr_assert_gt(perfrec_timespec__format(cd.wall_ns, true, name, sizeof(name)), 0);
	cr_expect_str_eq(name, "2026-11-23T21:42:28.327Z");
	perfrec_pdreader__free(r);
}

Test(clockdata, conversions_saturate_rather_than_wrap)
{
	struct perfrec_clockdata cd = { .clockid = CLOCK_MONOTONIC, .wall_ns = 5000, .clock_ns = 100 };

	cr_expect_eq(perfrec_clockdata__to_wall(&cd, 150), 5050);
	cr_expect_eq(perfrec_clockdata__to_wall(&cd, 50), 4950);
	cr_expect_eq(perfrec_clockdata__to_sample(&cd, 4950), 50);
	cr_expect_eq(perfrec_clockdata__to_sample(&cd, 1000), 0);
	cr_expect_eq(perfrec_clockdata__to_wall(&cd, UINT64_MAX), UINT64_MAX);
	cd = (struct perfrec_clockdata){ .wall_ns = 10, .clock_ns = 1000 };
	cr_expect_eq(perfrec_clockdata__to_wall(&cd, 0), 0);
	cr_expect_eq(perfrec_clockdata__to_sample(&cd, UINT64_MAX), UINT64_MAX);
}

Test(clockdata, a_file_without_clock_data_says_so)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	static const char junk[64] = "PERFILE2";
	struct perfrec_clockdata cd = { .wall_ns = 7 };
	struct perfrec_pdreader *r;

	cr_assert_eq(perfrec_pdreader__open_mem(junk, sizeof(junk), &o, &r), 0);
	cr_expect_eq(perfrec_clockdata__from_reader(r, &cd), -ENOENT);
	cr_expect_eq(cd.wall_ns, 7);
	perfrec_pdreader__free(r);
}
