// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of perfrecd's configuration parser: systemd size and duration
 * notation, booleans, clock names, and file errors that name line and key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"

Test(config, sizes_use_systemd_suffixes)
{
	static const struct { const char *in; int ret; uint64_t out; } cases[] = {
		{ "4096", 0, 4096 }, { "512K", 0, 512 * 1024 }, { "256M", 0, 256ULL << 20 },
		{ "1G", 0, 1ULL << 30 }, { "2T", 0, 2ULL << 40 }, { " 8 K", 0, 8192 },
		{ "", -EINVAL, 0 }, { "M", -EINVAL, 0 }, { "12Q", -EINVAL, 0 }, { "-1", -EINVAL, 0 },
		{ "99999999999999999999", -ERANGE, 0 }, { "17179869184T", -ERANGE, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		int r = parse_size(cases[i].in, &v);

		cr_expect_eq(r, cases[i].ret, "parse_size(\"%s\") = %d", cases[i].in, r);
		if (r == 0)
			cr_expect_eq(v, cases[i].out, "parse_size(\"%s\") -> %llu", cases[i].in,
				     (unsigned long long)v);
	}
}

Test(config, durations_use_systemd_units)
{
	static const struct { const char *in; int ret; uint64_t usec; } cases[] = {
		{ "30", 0, 30000000ULL }, { "5s", 0, 5000000ULL }, { "10min", 0, 600000000ULL },
		{ "1h 30min", 0, 5400000000ULL }, { "500ms", 0, 500000ULL }, { "2d", 0, 172800000000ULL },
		{ "1w", 0, 604800000000ULL }, { "250us", 0, 250 }, { "0", 0, 0 },
		/* fractions, as systemd and perf take them (issue 17) */
		{ "1.5", 0, 1500000ULL }, { "0.25s", 0, 250000ULL }, { "1.5h", 0, 5400000000ULL },
		{ "2.5ms", 0, 2500ULL }, { "1.0000005s", 0, 1000000ULL }, { "1.5min 0.5s", 0, 90500000ULL },
		{ "0.1234567891234w", 0, 74666665987ULL },
		{ "", -EINVAL, 0 }, { "fast", -EINVAL, 0 }, { "5 parsecs", -EINVAL, 0 }, { "min", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 }, { ".5", -EINVAL, 0 }, { "1.5.5", -EINVAL, 0 }, { "1,5", -EINVAL, 0 },
		{ "30500569w", -ERANGE, 0 }, { "30500568.95w", -ERANGE, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0;
		int r = parse_duration(cases[i].in, &v);

		cr_expect_eq(r, cases[i].ret, "parse_duration(\"%s\") = %d", cases[i].in, r);
		if (r == 0)
			cr_expect_eq(v, cases[i].usec, "parse_duration(\"%s\") -> %llu", cases[i].in,
				     (unsigned long long)v);
	}
}

Test(config, booleans_and_clocks)
{
	bool b;
	int id;

	cr_expect(parse_bool("yes", &b) == 0 && b);
	cr_expect(parse_bool("Off", &b) == 0 && !b);
	cr_expect_eq(parse_bool("maybe", &b), -EINVAL);
	cr_expect(parse_clockid("monotonic", &id) == 0 && id == CLOCK_MONOTONIC);
	cr_expect(parse_clockid("CLOCK_BOOTTIME", &id) == 0 && id == CLOCK_BOOTTIME);
	cr_expect_eq(parse_clockid("sundial", &id), -EINVAL);
	cr_expect_str_eq(clockid_name(CLOCK_TAI), "tai");
}

Test(config, defaults_then_file_values)
{
	struct config c;
	char err[256] = "";
	int r;

	config_init(&c);
	cr_expect_eq(c.freq, 99);
	cr_expect_str_eq(c.events[0], "cpu-clock");
	r = config_load_string(&c,
		"# comment\n[record]\nevents=cpu-clock, page-faults:u\nperiod=10000\n"
		"callchain=no\nmmap-size=1M\nflush-interval=250ms\ndrain-priority=5\noffcpu-min=2ms\n"
		"[output]\ndirectory=/tmp/x\nhistory-max=64M\non-rotate=/bin/true\n[service]\nuser=nobody\n",
		"t.conf", err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	cr_expect_eq(c.nr_events, 2);
	cr_expect_str_eq(c.events[1], "page-faults:u");
	cr_expect_eq(c.period, 10000);
	cr_expect_eq(c.freq, 0, "period= replaces the default frequency");
	cr_expect(!c.callchain);
	cr_expect_eq(c.mmap_bytes, 1 << 20);
	cr_expect_eq(c.flush_usec, 250000);
	cr_expect_eq(c.drain_priority, 5);
	cr_expect_eq(c.offcpu_min_usec, 2000);
	cr_expect_str_eq(c.directory, "/tmp/x");
	cr_expect_eq(c.history_max, 64ULL << 20);
	cr_expect_str_eq(c.on_rotate, "/bin/true");
	cr_expect_str_eq(c.user, "nobody");
	config_exit(&c);
}

Test(config, errors_name_file_line_and_key)
{
	static const struct { const char *text; const char *want; } cases[] = {
		{ "[record]\nfrequency=fast\n", "t.conf:2: frequency" },
		{ "[record]\n\nmmap-size=3000\n", "t.conf:3: mmap-size" },
		{ "[record]\nbogus=1\n", "t.conf:2: unknown key 'bogus' in section [record]" },
		{ "[outptu]\ndirectory=/x\n", "t.conf:2: unknown key 'directory' in section [outptu]" },
		{ "[record]\nthis is not a key\n", "t.conf:2: syntax error" },
		{ "[record]\nclockid=sundial\n", "t.conf:2: clockid" },
		{ "[output]\nprefix=a/b\n", "t.conf:2: prefix" },
		{ "[record]\nevents=\n", "t.conf:2: events" },
		{ "[record]\ndrain-priority=100\n", "t.conf:2: drain-priority: '100' is not a real-time priority" },
		{ "[record]\ndrain-priority=-1\n", "t.conf:2: drain-priority" },
		{ "[record]\ncallchain=maybe\n", "t.conf:2: callchain: 'maybe' is not a boolean" },
		{ "[record]\ncheckpoint-interval=50ms\n", "is not a duration of at least 100ms" },
		{ "[output]\nhistory-max=1K\n", "t.conf:2: history-max: '1K' is not a size of at least 1M" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		char err[256] = "";

		config_init(&c);
		cr_expect_lt(config_load_string(&c, cases[i].text, "t.conf", err, sizeof(err)), 0,
			     "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err,
			  cases[i].want);
		config_exit(&c);
	}
}

Test(config, missing_file_is_named)
{
	struct config c;
	char err[256] = "";

	config_init(&c);
	cr_expect_eq(config_load(&c, "/nonexistent/perfrecd.conf", err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "/nonexistent/perfrecd.conf") != NULL, "%s", err);
	config_exit(&c);
}

Test(config, clearing_string_keys_frees_only_their_own_value)
{
	/* Found by fuzz-config: clearing on-rotate also freed user and group. */
	struct config c;
	char err[256] = "";

	config_init(&c);
	cr_assert_eq(config_load_string(&c,
		"[service]\nuser=alice\ngroup=staff\n[output]\non-rotate=/bin/true\non-rotate=\n",
		"t.conf", err, sizeof(err)), 0, "%s", err);
	cr_expect_null(c.on_rotate);
	cr_expect_str_eq(c.user, "alice");
	cr_expect_str_eq(c.group, "staff");
	config_exit(&c);
}
