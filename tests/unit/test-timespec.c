// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the time parser (timespec.h), table-driven.  Each test sets
 * TZ itself, so results never depend on the machine's zone or on the time
 * of year the test runs: zoned ISO times must come out the same in every
 * zone, local times must follow the zone's DST rules on the given date, and
 * a local time a DST change skips or repeats must be refused, in every zone.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/timespec.h>

#define S 1000000000ULL
#define MS 1000000ULL

static void set_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

/* 2026-11-23T12:00:00Z, a Monday in winter (CET, EST). */
#define NOW (1795435200ULL * S)
/* 2026-11-23T14:03:00Z */
#define T1403Z (1795442580ULL * S)

struct ok_case {
	const char *in;
	uint64_t want;
};

static void check_ok(const struct ok_case *c, size_t n, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		char err[256];
		uint64_t got = 0;
		int r = perfrec_timespec__parse(c[i].in, now, &got, err, sizeof(err));

		cr_expect_eq(r, 0, "'%s': %d %s", c[i].in, r, err);
		cr_expect_eq(got, c[i].want, "'%s': got %llu want %llu (diff %lld s)", c[i].in,
			     (unsigned long long)got, (unsigned long long)c[i].want,
			     (long long)((int64_t)(got - c[i].want) / (int64_t)S));
	}
}

Test(timespec, zoned_iso_8601_is_the_same_instant_in_every_time_zone)
{
	static const struct ok_case cases[] = {
		{ "2026-11-23T14:03:00Z", T1403Z },
		{ "2026-11-23t14:03:00z", T1403Z },
		{ "2026-11-23T14:03Z", T1403Z },
		{ "2026-11-23 14:03:00Z", T1403Z },
		{ "2026-11-23T14:03:00.250Z", T1403Z + 250 * MS },
		{ "2026-11-23T14:03:00,5Z", T1403Z + 500 * MS },
		{ "2026-11-23T14:03:00.123456789Z", T1403Z + 123456789 },
		{ "2026-11-23T15:03:00+01:00", T1403Z },
		{ "2026-11-23T09:03:00-0500", T1403Z },
		{ "2026-11-24T00:03:00+10", T1403Z },
		{ "  2026-11-23T14:03:00Z  ", T1403Z },
		{ "2024-02-29T00:00:00Z", 1709164800ULL * S },
		{ "1970-01-01T00:00:00Z", 0 },
	};
	const char *zones[] = { "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata" };

	for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		set_tz(zones[z]);
		check_ok(cases, sizeof(cases) / sizeof(cases[0]), NOW);
	}
}

Test(timespec, local_times_follow_the_zone_and_its_dst_rules)
{
	static const struct ok_case berlin_winter[] = {
		{ "14:03", T1403Z - 3600 * S }, /* CET = UTC+1 */
		{ "14:03:30", T1403Z - 3600 * S + 30 * S },
		{ "14:03:30.250", T1403Z - 3600 * S + 30 * S + 250 * MS },
		{ "9:05", T1403Z - 6 * 3600 * S + 2 * 60 * S },
		{ "today 14:03", T1403Z - 3600 * S },
		{ "yesterday 14:03", T1403Z - 3600 * S - 86400 * S },
		{ "Yesterday  14:03:00.5", T1403Z - 3600 * S - 86400 * S + 500 * MS },
		{ "2026-11-23 14:03", T1403Z - 3600 * S },
		{ "2026-11-23T14:03:00", T1403Z - 3600 * S },
		{ "2026-07-01 14:03", 1782907380ULL * S }, /* CEST = UTC+2 */
		{ "2026-11-23", T1403Z - 3600 * S - 14 * 3600 * S - 3 * 60 * S },
	};
	static const struct ok_case new_york[] = {
		{ "14:03", T1403Z + 5 * 3600 * S }, /* EST = UTC-5 */
		{ "2026-07-01 14:03", 1782907380ULL * S + 6 * 3600 * S }, /* EDT = UTC-4 */
	};
	/*
	 * 2026-03-30 10:00Z, the day after Berlin moved to CEST: yesterday
	 * 14:03 was already CEST (12:03Z), yesterday 01:30 still CET (00:30Z).
	 * Subtracting 24 h from "today 14:03" gets the first one wrong.
	 */
	static const struct ok_case after_spring_forward[] = {
		{ "yesterday 14:03", 1774785780ULL * S },
		{ "yesterday 01:30", 1774744200ULL * S },
	};

	set_tz("Europe/Berlin");
	check_ok(berlin_winter, sizeof(berlin_winter) / sizeof(berlin_winter[0]), NOW);
	check_ok(after_spring_forward, 2, 1774864800ULL * S);
	set_tz("America/New_York");
	check_ok(new_york, sizeof(new_york) / sizeof(new_york[0]), NOW);
}

Test(timespec, relative_times_count_from_now)
{
	static const struct ok_case cases[] = {
		{ "now", NOW },
		{ "NOW", NOW },
		{ "-10min", NOW - 600 * S },
		{ "-2h", NOW - 7200 * S },
		{ "+30s", NOW + 30 * S },
		{ "-1.5s", NOW - 1500 * MS },
		{ "now-1h30min", NOW - 5400 * S },
		{ "now - 90s", NOW - 90 * S },
		{ "-250ms", NOW - 250 * MS },
		{ "-1d", NOW - 86400 * S },
	};

	set_tz("Europe/Berlin");
	check_ok(cases, sizeof(cases) / sizeof(cases[0]), NOW);
}

Test(timespec, seconds_since_the_epoch_as_date_takes_them)
{
	static const struct ok_case cases[] = {
		{ "@1795442580", T1403Z },
		{ "@1795442580.25", T1403Z + 250 * MS },
		{ "@1795442580.000000001", T1403Z + 1 },
		{ "@0", 0 },
	};

	set_tz("Asia/Kolkata"); /* the zone does not matter */
	check_ok(cases, sizeof(cases) / sizeof(cases[0]), NOW);
}

struct bad_case {
	const char *in;
	int err;
	const char *says; /* part of the message */
};

Test(timespec, refusals_name_what_was_wrong)
{
	static const struct bad_case cases[] = {
		{ "", -EINVAL, "empty" },
		{ "tomorrow 14:03", -EINVAL, "expected ISO 8601" },
		{ "14:60", -EINVAL, "minute 60" },
		{ "25:00", -EINVAL, "hour 25" },
		{ "14:03:61", -EINVAL, "second 61" },
		{ "14:3", -EINVAL, "minutes" },
		{ "2026-13-01T00:00Z", -EINVAL, "month 13" },
		{ "2026-02-29 10:00", -EINVAL, "day 29" },
		{ "2026-11-23T14:03:00.1234567890Z", -EINVAL, "9 digits" },
		{ "2026-11-23T14:03:00.Z", -EINVAL, "after the decimal point" },
		{ "2026-11-23Z", -EINVAL, "needs a time" },
		{ "2026-11-23T14:03:00+25:00", -EINVAL, "out of range" },
		{ "2026-11-23T14:03:00Z junk", -EINVAL, "unexpected 'junk'" },
		{ "14:03 junk", -EINVAL, "unexpected 'junk'" },
		{ "-10", -EINVAL, "needs a unit" },
		{ "@", -EINVAL, "seconds since the epoch" },
		{ "@12x", -EINVAL, "unexpected 'x'" },
		{ "@1.", -EINVAL, "after the decimal point" },
		{ "@1.0123456789", -EINVAL, "9 digits" },
		{ "@99999999999999999999", -ERANGE, "future" },
		{ "-10 parsecs", -EINVAL, "unknown unit 'parsecs'" },
		{ "-", -EINVAL, "duration" },
		{ "now 5", -EINVAL, "after 'now'" },
		{ "1969-12-31T23:59:59Z", -ERANGE, "before 1970" },
		{ "2600-01-01T00:00:00Z", -ERANGE, "future" },
		{ "-100000d", -ERANGE, "before 1970" },
		/* 02:30 does not exist in Berlin on 2026-03-29 */
		{ "2026-03-29 02:30", -EINVAL, "daylight saving" },
	};

	set_tz("Europe/Berlin");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256];
		uint64_t got = 12345;
		int r = perfrec_timespec__parse(cases[i].in, NOW, &got, err, sizeof(err));

		cr_expect_eq(r, cases[i].err, "'%s': got %d (%s)", cases[i].in, r, err);
		cr_expect(strstr(err, cases[i].says), "'%s': message '%s' lacks '%s'", cases[i].in, err,
			  cases[i].says);
		cr_expect_eq(got, 12345, "'%s': result written on failure", cases[i].in);
	}
}

/*
 * A local time a clock change skips or repeats names no one instant: in
 * every zone it is refused, with both instants of a repeated time named
 * and the way to pick one (an offset, or Z), never taken silently.
 */
struct dst_case {
	const char *tz, *in;
	const char *says[3]; /* all in the message */
};

Test(timespec, local_times_a_clock_change_skips_or_repeats_are_refused_in_every_zone)
{
	static const struct dst_case cases[] = {
		{ "Europe/Berlin", "2026-10-25 02:30",
		  { "ambiguous", "2026-10-25T00:30:00Z (+02:00 CEST)", "2026-10-25T01:30:00Z (+01:00 CET)" } },
		{ "Europe/Berlin", "2026-10-25T02:00:00",
		  { "ambiguous", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00+01:00" } },
		{ "Europe/Berlin", "2026-10-25 02:59:59.5",
		  { "ambiguous", "2026-10-25T00:59:59Z", "2026-10-25T01:59:59Z" } },
		{ "America/New_York", "2026-11-01 01:30",
		  { "ambiguous", "2026-11-01T05:30:00Z (-04:00 EDT)", "2026-11-01T06:30:00Z (-05:00 EST)" } },
		{ "Australia/Sydney", "2026-04-05 02:30",
		  { "ambiguous", "2026-04-04T15:30:00Z (+11:00 AEDT)", "2026-04-04T16:30:00Z (+10:00 AEST)" } },
		/* Half an hour back, not one. */
		{ "Australia/Lord_Howe", "2026-04-05 01:45",
		  { "ambiguous", "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z" } },
		{ "Europe/Berlin", "2026-03-29 02:30", { "does not exist", "+01:00 CET to +02:00 CEST", "UTC with Z" } },
		{ "America/New_York", "2026-03-08 02:30", { "does not exist", "-05:00 EST to -04:00 EDT", "offset" } },
		{ "Australia/Lord_Howe", "2026-10-04 02:15", { "does not exist", "+10:30", "+11:00" } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		uint64_t got = 12345;
		int r;

		set_tz(cases[i].tz);
		r = perfrec_timespec__parse(cases[i].in, NOW, &got, err, sizeof(err));
		cr_expect_eq(r, -EINVAL, "%s '%s': got %d, %s", cases[i].tz, cases[i].in, r,
			     r ? err : "taken silently");
		for (size_t k = 0; k < 3 && cases[i].says[k]; k++)
			cr_expect(r && strstr(err, cases[i].says[k]), "%s '%s': message '%s' lacks '%s'", cases[i].tz,
				  cases[i].in, r ? err : "", cases[i].says[k]);
		cr_expect_eq(got, 12345, "%s '%s': result written on failure", cases[i].tz, cases[i].in);
	}
}

/* Just outside the repeated or skipped hour, and with an offset or Z, the same times are taken. */
Test(timespec, times_beside_a_clock_change_or_with_an_offset_are_taken)
{
	static const struct {
		const char *tz, *in;
		uint64_t want;
	} cases[] = {
		{ "Europe/Berlin", "2026-10-25 01:59:59", 1792886399ULL * S },  /* 23:59:59Z, CEST */
		{ "Europe/Berlin", "2026-10-25 03:00", 1792893600ULL * S },     /* 02:00Z, CET */
		{ "Europe/Berlin", "2026-10-25T02:30+02:00", 1792888200ULL * S },
		{ "Europe/Berlin", "2026-10-25T02:30+01:00", 1792891800ULL * S },
		{ "Europe/Berlin", "2026-10-25T02:30Z", 1792895400ULL * S },
		{ "Europe/Berlin", "2026-03-29 03:00", 1774746000ULL * S },     /* 01:00Z, CEST */
		{ "America/New_York", "2026-11-01 02:00", 1793516400ULL * S }, /* 07:00Z, EST */
		{ "UTC", "2026-10-25 02:30", 1792895400ULL * S },
		{ "Asia/Kolkata", "2026-10-25 02:30", 1792875600ULL * S },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		uint64_t got = 0;
		int r;

		set_tz(cases[i].tz);
		r = perfrec_timespec__parse(cases[i].in, NOW, &got, err, sizeof(err));
		cr_expect_eq(r, 0, "%s '%s': %d %s", cases[i].tz, cases[i].in, r, err);
		cr_expect_eq(got, cases[i].want, "%s '%s': got %llu want %llu", cases[i].tz, cases[i].in,
			     (unsigned long long)got, (unsigned long long)cases[i].want);
	}
}

Test(timespec, durations)
{
	static const struct ok_case cases[] = {
		{ "30s", 30 * S }, { "1.5s", 1500 * MS }, { "500ms", 500 * MS }, { "2min", 120 * S },
		{ "1h30min", 5400 * S }, { "10", 10 * S }, { "0.25", 250 * MS }, { "1 h", 3600 * S },
		{ "7us", 7000 }, { "3ns", 3 }, { "2m", 120 * S }, { "0.000000001s", 1 },
	};
	static const char *bad[] = { "", "s", "-5s", "5 parsecs", "1h 30", "1..5s", "99999999999999999999s" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256];
		uint64_t got = 0;

		cr_expect_eq(perfrec_timespec__parse_duration(cases[i].in, &got, err, sizeof(err)), 0, "'%s': %s",
			     cases[i].in, err);
		cr_expect_eq(got, cases[i].want, "'%s': %llu", cases[i].in, (unsigned long long)got);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256];
		uint64_t got = 0;

		cr_expect_lt(perfrec_timespec__parse_duration(bad[i], &got, err, sizeof(err)), 0, "'%s' accepted", bad[i]);
		cr_expect(err[0], "'%s': no message", bad[i]);
	}
}

Test(timespec, format_round_trips_through_parse)
{
	char buf[64];
	uint64_t back = 0;

	set_tz("Europe/Berlin");
	cr_assert_gt(perfrec_timespec__format(T1403Z + 250 * MS, true, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "2026-11-23T14:03:00.250Z");
	cr_assert_eq(perfrec_timespec__parse(buf, NOW, &back, NULL, 0), 0);
	cr_expect_eq(back, T1403Z + 250 * MS);
	cr_assert_gt(perfrec_timespec__format(T1403Z + 250 * MS, false, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "2026-11-23 15:03:00.250 CET");
	cr_expect_eq(perfrec_timespec__format(T1403Z, true, buf, 10), -ENOSPC);
}
