// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of perfrecd's configuration parser: systemd size and duration
 * notation, booleans, clock names, and file errors that name line and key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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
		{ "[outptu]\ndirectory=/x\n", "t.conf:2: key 'directory' belongs in section [output], not [outptu]" },
		{ "[record]\nthis is not a key\n", "t.conf:2: syntax error" },
		{ "[record]\nclockid=sundial\n", "t.conf:2: clockid" },
		{ "[output]\nprefix=a/b\n", "t.conf:2: prefix" },
		{ "[record]\nevents=\n", "t.conf:2: events" },
		{ "[record]\ndrain-priority=100\n", "t.conf:2: drain-priority: '100' is not a real-time priority" },
		{ "[record]\ndrain-priority=-1\n", "t.conf:2: drain-priority" },
		{ "[record]\ncallchain=maybe\n", "t.conf:2: callchain: 'maybe' is not yes (frame pointers), dwarf or no" },
		{ "[record]\nunwind=remote\n", "t.conf:2: unwind: 'remote' is not file or host" },
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

Test(config, unwind_is_host_unless_file)
{
	struct config c;
	char err[256] = "";

	config_init(&c);
	cr_expect(c.callchain && c.dwarf && c.unwind_host, "DWARF stacks unwound on the host are not the default");
	cr_assert_eq(config_load_string(&c, "[record]\ncallchain=dwarf\nunwind=file\n", "t.conf", err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_not(c.unwind_host);
	cr_assert_eq(config_set(&c, "record", "unwind", "host", err, sizeof(err)), 0, "%s", err);
	cr_expect(c.unwind_host);
	config_exit(&c);
}

/* What pipeline.c names as ignored: a key set away from its default, not one left at it. */
Test(config, key_is_default)
{
	struct config c;
	char err[256] = "";
	bool host;

	config_init(&c);
	host = c.unwind_host;
	cr_expect(config_key_is_default(&c, "record", "unwind"));
	cr_expect(config_key_is_default(&c, "record", "callchain"));
	cr_assert_eq(config_set(&c, "record", "unwind", host ? "file" : "host", err, sizeof(err)), 0, "%s", err);
	cr_expect_not(config_key_is_default(&c, "record", "unwind"), "unwind=%s is the default", host ? "file" : "host");
	cr_expect(config_key_is_default(&c, "record", "callchain"));
	cr_assert_eq(config_set(&c, "record", "unwind", host ? "host" : "file", err, sizeof(err)), 0, "%s", err);
	cr_expect(config_key_is_default(&c, "record", "unwind"), "set back to its default, it is the default");
	cr_expect_not(config_key_is_default(&c, "record", "no-such-key"));
	cr_expect_not(config_key_is_default(&c, "output", "label."), "a family has no default");
	config_exit(&c);
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
		"[service]\nuser=root\ngroup=root\n[output]\non-rotate=/bin/true\n",
		"t.conf", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_set(&c, "output", "on-rotate", "", err, sizeof(err)), 0, "%s", err);
	cr_expect_null(c.on_rotate);
	cr_expect_str_eq(c.user, "root");
	cr_expect_str_eq(c.group, "root");
	config_exit(&c);
}

/*
 * Issue 17: what the file loader let through or reported at the wrong line.
 * Each text has its length, so NUL bytes can be in it; @want is a substring
 * of the message, which starts with the file and the line at fault.
 */
static char *long_line(const char *head, size_t n, const char *tail)
{
	size_t h = strlen(head), t = strlen(tail);
	char *s = malloc(h + n + t + 1);

	cr_assert_not_null(s);
	memcpy(s, head, h);
	memset(s + h, 'x', n);
	memcpy(s + h + n, tail, t + 1);
	return s;
}

#define TEXT(s) s, sizeof(s) - 1

Test(config, refuses_repeats_contradictions_and_bad_bytes_at_their_line)
{
	static const struct { const char *text; size_t len; const char *want; } cases[] = {
		{ TEXT("[record]\nfrequency=99\nfrequency=50\n"),
		  "t.conf:3: duplicate key 'frequency' (already set on line 2)" },
		/* the same key in a second [record] section is still a repeat */
		{ TEXT("[record]\nfrequency=99\n[output]\nprefix=a\n[record]\nfrequency=50\n"),
		  "t.conf:6: duplicate key 'frequency' (already set on line 2)" },
		{ TEXT("[output]\nlabel.team=a\nlabel.team=b\n"),
		  "t.conf:3: duplicate key 'label.team' (already set on line 2)" },
		{ TEXT("[service]\nuser=\nuser=root\n"), "t.conf:3: duplicate key 'user'" },
		{ TEXT("[record]\nfrequency=99\ncallchain=no\nperiod=1000\n"),
		  "t.conf:4: period= contradicts frequency= on line 2" },
		{ TEXT("[record]\nperiod=1000\nfrequency=99\n"),
		  "t.conf:3: frequency= contradicts period= on line 2" },
		{ TEXT("[record]\nfrequency=9\0 9\n"), "t.conf:2: NUL byte" },
		{ TEXT("[record]\n# a comment\0\nfrequency=99\n"), "t.conf:2: NUL byte" },
		{ TEXT("[record]\ncpus=0-9999999\n"), "t.conf:2: cpus: CPU 9999999 is out of range" },
		{ TEXT("[record]\ncpus=60000\n"), "t.conf:2: cpus: CPU 60000 is out of range" },
		{ TEXT("[record]\ncpus=0-99999999999999999999999\n"), "t.conf:2: cpus: '0-99999999999999999999999' names a CPU out of range" },
		{ TEXT("[record]\ncpus=0,x\n"), "t.conf:2: cpus: '0,x' is not a CPU list" },
		{ TEXT("[record]\ncpus=1-0\n"), "t.conf:2: cpus: '1-0' is not a CPU list" },
		{ TEXT("[service]\nuser=perfrecd-no-such-user\n"),
		  "t.conf:2: user: no user named 'perfrecd-no-such-user'" },
		{ TEXT("[service]\ngroup=perfrecd-no-such-group\n"),
		  "t.conf:2: group: no group named 'perfrecd-no-such-group'" },
		{ TEXT("[service]\ncontrol-group=perfrecd-no-such-group\n"),
		  "t.conf:2: control-group: no group named 'perfrecd-no-such-group'" },
		{ TEXT("[record]\nevents=cpu-clock,cycels\n"), "t.conf:2: events: unknown event 'cycels'" },
		{ TEXT("[record]\n\nevents=cpu-clock:x\n"), "t.conf:3: events: unknown modifier" },
		/* "[record" used to report the next key as unknown in section [] */
		{ TEXT("[record\nfrequency=99\n"), "t.conf:1: unterminated section header '[record' (no ']')" },
		{ TEXT("[record] frequency=99\n"), "t.conf:1: text after the section header" },
		/* the first error is the one reported, with its own message */
		{ TEXT("[record]\nnot a key\nfrequency=fast\n"), "t.conf:2: syntax error: 'not a key'" },
		/* an indented line was a continuation that replaced events= */
		{ TEXT("[record]\nevents=cpu-clock\n  task-clock\n"), "t.conf:3: syntax error: 'task-clock'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		char err[512] = "";
		int r;

		config_init(&c);
		r = config_load_data(&c, cases[i].text, cases[i].len, "t.conf", err, sizeof(err));
		cr_expect_lt(r, 0, "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err,
			  cases[i].want);
		config_exit(&c);
	}
}

Test(config, long_lines_are_refused_at_their_own_line)
{
	/* inih cut lines at 199 characters and counted each piece as a line. */
	static const struct { const char *head; size_t n; const char *tail; int ok; const char *want; } cases[] = {
		{ "[output]\non-rotate=", 1 << 20, "\nprefix=a/b\n", 0, "t.conf:2: line longer than 199 characters" },
		{ "[output]\non-rotate=/", 300, "\nprefix=a/b\n", 0, "t.conf:2: line longer than 199" },
		/* a long comment is fine, and the error after it has its own line */
		{ "[output]\n# ", 1 << 20, "\n\n\nprefix=a/b\n", 0, "t.conf:5: prefix" },
		{ "[output]\n  ;", 500, "\n\nprefix=a/b\n", 0, "t.conf:4: prefix" },
		/* 199 characters, the most inih takes, still work */
		{ "[output]\non-rotate=/", 199 - 11, "\n", 1, NULL },
		{ "[output]\non-rotate=/", 199 - 10, "\n", 0, "t.conf:2: line longer than 199" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = long_line(cases[i].head, cases[i].n, cases[i].tail);
		struct config c;
		char err[512] = "";
		int r;

		config_init(&c);
		r = config_load_string(&c, text, "t.conf", err, sizeof(err));
		if (cases[i].ok) {
			cr_expect_eq(r, 0, "case %zu: %s", i, err);
			cr_expect_eq(c.on_rotate ? strlen(c.on_rotate) : 0, 199 - 10, "case %zu", i);
		} else {
			cr_expect_lt(r, 0, "case %zu accepted", i);
			cr_expect(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err,
				  cases[i].want);
		}
		config_exit(&c);
		free(text);
	}
}

Test(config, what_the_new_checks_still_accept)
{
	struct config c;
	char err[512] = "";

	config_init(&c);
	cr_assert_eq(config_load_string(&c,
		"\xEF\xBB\xBF[record]  ; a comment\n"
		"  frequency = 50\n"     /* indentation is not a continuation */
		"cpus=0\n"
		"[output]\nlabel.a=1\nlabel.b=2\n"
		"[record]\ncallchain=no\n"  /* a section may come back, with other keys */
		"[service]\nuser=root\ngroup=root\ncontrol-group=\n",
		"t.conf", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.freq, 50);
	cr_expect_str_eq(c.cpus, "0");
	cr_expect_eq(c.nr_labels, 2);
	cr_expect(!c.callchain);
	cr_expect_str_eq(c.user, "root");
	/* The command line replaces what the file set: no duplicate, no contradiction. */
	cr_expect_eq(config_set(&c, "record", "period", "1000", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.period, 1000);
	cr_expect_eq(c.freq, 0);
	cr_expect_eq(config_set(&c, "record", "frequency", "77", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.freq, 77);
	cr_expect_eq(c.period, 0);
	config_exit(&c);
}

Test(config, an_unreadable_file_is_named)
{
	struct config c;
	char err[512] = "";

	/* A directory opens, then fails to read: said so, with no line. */
	config_init(&c);
	cr_expect_eq(config_load(&c, "/", err, sizeof(err)), -EISDIR);
	cr_expect(strstr(err, "/: cannot read the config file: Is a directory") != NULL, "%s", err);
	config_exit(&c);
}

/*
 * An always-on recorder bounds itself out of the box (issue 18): a file
 * every 5 minutes, a week of them at most, at most 10% of the file system
 * (and 4G), and never the last 15% of it (nor more than 4G kept free).
 */
Test(config, defaults_rotate_and_bound_the_disk)
{
	struct config c;

	config_init(&c);
	cr_expect_eq(c.rotate_usec, 5 * 60 * 1000000ULL);
	cr_expect_eq(c.max_age_usec, 7 * 86400 * 1000000ULL);
	cr_expect_eq(c.max_bytes_percent, 10);
	cr_expect_eq(c.max_bytes, 4ULL << 30);
	cr_expect_eq(c.min_free_percent, 15);
	cr_expect_eq(c.min_free, 4ULL << 30);
	config_exit(&c);
}

/* The shipped file (what make run and the unit use) shows every key at its default. */
Test(config, the_shipped_file_loads_and_equals_the_defaults)
{
	struct config def, c;
	char err[256] = "";

	config_init(&def);
	config_init(&c);
	cr_assert_eq(config_load(&c, "conf/perfrecd.conf", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.rotate_usec, def.rotate_usec);
	cr_expect_eq(c.rotate_bytes, def.rotate_bytes);
	cr_expect_eq(c.max_files, def.max_files);
	cr_expect_eq(c.max_bytes, def.max_bytes);
	cr_expect_eq(c.max_bytes_percent, def.max_bytes_percent);
	cr_expect_eq(c.max_age_usec, def.max_age_usec);
	cr_expect_eq(c.min_free, def.min_free);
	cr_expect_eq(c.min_free_percent, def.min_free_percent);
	cr_expect_eq(c.freq, def.freq);
	cr_expect_eq(c.checkpoint_usec, def.checkpoint_usec);
	cr_expect_str_eq(c.directory, def.directory);
	config_exit(&c);
	config_exit(&def);
}

Test(config, space_limits_take_a_size_a_percentage_or_both)
{
	static const struct { const char *in; int ret; uint64_t bytes; unsigned pct; } cases[] = {
		{ "4G", 0, 4ULL << 30, 0 }, { "15%", 0, 0, 15 }, { "10% 4G", 0, 4ULL << 30, 10 },
		{ "4G 10%", 0, 4ULL << 30, 10 }, { " 100% ", 0, 0, 100 }, { "0", 0, 0, 0 },
		{ "0%", 0, 0, 0 }, { "10% 0", 0, 0, 0 },
		{ "", -EINVAL, 0, 0 }, { "101%", -EINVAL, 0, 0 }, { "%", -EINVAL, 0, 0 },
		{ "-5%", -EINVAL, 0, 0 }, { "1.5%", -EINVAL, 0, 0 }, { "5%%", -EINVAL, 0, 0 },
		{ "5% 6%", -EINVAL, 0, 0 }, { "1G 2G", -EINVAL, 0, 0 }, { "10%4G", -EINVAL, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t b = 7;
		unsigned p = 7;
		int r = parse_size_or_percent(cases[i].in, &b, &p);

		cr_expect_eq(r, cases[i].ret, "parse_size_or_percent(\"%s\") = %d", cases[i].in, r);
		if (r == 0)
			cr_expect(b == cases[i].bytes && p == cases[i].pct, "\"%s\" -> %llu bytes, %u%%",
				  cases[i].in, (unsigned long long)b, p);
	}
}

Test(config, min_free_and_max_bytes_keys)
{
	static const struct { const char *text; const char *want; } bad[] = {
		{ "[output]\nmin-free=100%\n", "t.conf:2: min-free: '100%' is not a size" },
		{ "[output]\nmin-free=lots\n", "t.conf:2: min-free: 'lots' is not a size" },
		{ "[output]\nmax-bytes=120%\n", "t.conf:2: max-bytes: '120%' is not a size" },
		{ "[record]\nmin-free=5%\n", "t.conf:2: key 'min-free' belongs in section [output], not [record]" },
	};
	struct config c;
	char err[256] = "", buf[64];

	config_init(&c);
	cr_assert_eq(config_load_string(&c, "[output]\nmin-free=512M\nmax-bytes=25%\n", "t.conf", err,
					sizeof(err)), 0, "%s", err);
	cr_expect(c.min_free == 512ULL << 20 && c.min_free_percent == 0, "min-free=512M replaces both defaults");
	cr_expect(c.max_bytes == 0 && c.max_bytes_percent == 25, "max-bytes=25%% replaces both defaults");
	cr_expect_str_eq(format_size_or_percent(c.max_bytes, c.max_bytes_percent, buf, sizeof(buf)), "25%");
	cr_assert_eq(config_set(&c, "output", "min-free", "0", err, sizeof(err)), 0, "%s", err);
	cr_expect(c.min_free == 0 && c.min_free_percent == 0, "min-free=0: no floor");
	cr_assert_eq(config_set(&c, "output", "max-bytes", "10% 4G", err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(format_size_or_percent(c.max_bytes, c.max_bytes_percent, buf, sizeof(buf)),
			 "10% 4294967296");
	config_exit(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_init(&c);
		err[0] = 0;
		cr_expect_lt(config_load_string(&c, bad[i].text, "t.conf", err, sizeof(err)), 0, "case %zu accepted", i);
		cr_expect(strstr(err, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
		config_exit(&c);
	}
}

/*
 * A key of another section says which (the fleet keys were taken in any
 * section, so that a misplaced one silently worked); a near miss of a key
 * gets its name; anything else is only unknown.
 */
Test(config, misplaced_and_misspelt_keys_are_explained)
{
	static const struct { const char *text; const char *want; const char *not; } cases[] = {
		{ "[output]\nfrequency=99\n", "t.conf:2: key 'frequency' belongs in section [record], not [output]", NULL },
		{ "[record]\ndirectory=/x\n", "t.conf:2: key 'directory' belongs in section [output], not [record]", NULL },
		{ "[record]\nhistory=1s\n", "t.conf:2: key 'history' belongs in section [output], not [record]", NULL },
		{ "[record]\nupload-url=http://h/b\n", "t.conf:2: key 'upload-url' belongs in section [upload], not [record]", NULL },
		{ "[output]\nmax-overhead=1%\n", "t.conf:2: key 'max-overhead' belongs in section [record], not [output]", NULL },
		{ "[upload]\nmetrics-listen=127.0.0.1:9\n", "key 'metrics-listen' belongs in section [service], not [upload]", NULL },
		{ "[record]\nlabel.team=sre\n", "t.conf:2: key 'label.team' belongs in section [output], not [record]", NULL },
		{ "[record]\n\nfrequncy=99\n", "t.conf:3: unknown key 'frequncy' in section [record]; did you mean 'frequency'?", NULL },
		{ "[output]\nrotate-intervall=1s\n", "unknown key 'rotate-intervall' in section [output]; did you mean 'rotate-interval'?", NULL },
		{ "[output]\nmax_bytes=1G\n", "did you mean 'max-bytes'?", NULL },
		{ "[output]\nminfree=1G\n", "did you mean 'min-free'?", NULL },
		{ "[output]\nfrequncy=99\n", "unknown key 'frequncy' in section [output]; did you mean 'frequency' in section [record]?", NULL },
		{ "[record]\nbogus=1\n", "t.conf:2: unknown key 'bogus' in section [record]", "did you mean" },
		{ "[record]\nfoo=1\n", "unknown key 'foo' in section [record]", "did you mean" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		char err[256] = "";

		config_init(&c);
		cr_expect_lt(config_load_string(&c, cases[i].text, "t.conf", err, sizeof(err)), 0,
			     "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err, cases[i].want);
		if (cases[i].not)
			cr_expect(strstr(err, cases[i].not) == NULL, "case %zu: '%s' has '%s'", i, err, cases[i].not);
		config_exit(&c);
	}
}

/*
 * mmap-size=auto, the default, as perfrecd.conf(5) gives it: 512K, and
 * with callchain=dwarf (stack-size + 512) * frequency / 4 rounded up to a
 * power of two from 512K to 4M (1000 Hz under period=); a set size is
 * kept as it is.
 */
Test(config, ring_size_auto_fits_dwarf_stacks)
{
	static const struct { const char *conf; uint64_t bytes; } cases[] = {
		{ "", 512ULL << 10 },
		{ "mmap-size=auto\n", 512ULL << 10 },
		{ "frequency=999\n", 4ULL << 20 },                    /* the default: DWARF stacks */
		{ "callchain=yes\nfrequency=999\n", 512ULL << 10 },  /* frame pointers */
		{ "callchain=dwarf\n", 512ULL << 10 },                /* 99 Hz: 215,424 B */
		{ "callchain=dwarf\nfrequency=999\n", 4ULL << 20 },   /* 2,173,824 B: 0.48 s */
		{ "callchain=dwarf\nfrequency=999\nstack-size=4096\n", 2ULL << 20 },
		{ "callchain=dwarf\nfrequency=999\nstack-size=1024\n", 512ULL << 10 },
		{ "callchain=dwarf\nfrequency=999\nstack-size=65528\n", 4ULL << 20 },   /* the cap */
		{ "callchain=dwarf\nfrequency=50000\n", 4ULL << 20 },
		{ "callchain=dwarf\nfrequency=50000\nmax-frequency=200\n", 512ULL << 10 },
		{ "callchain=dwarf\nfrequency=400\n", 1ULL << 20 },   /* 870,400 B */
		{ "callchain=dwarf\nperiod=100000\n", 4ULL << 20 },   /* as 1000 Hz */
		{ "callchain=dwarf\nfrequency=999\nmmap-size=1M\n", 1ULL << 20 },
		{ "callchain=dwarf\nfrequency=999\nmmap-size=8M\n", 8ULL << 20 },
		{ "callchain=no\nmmap-size=64K\n", 64ULL << 10 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		char err[256] = "", text[256];

		config_init(&c);
		snprintf(text, sizeof(text), "[record]\n%s", cases[i].conf);
		cr_assert_eq(config_load_string(&c, text, "t.conf", err, sizeof(err)), 0, "%s: %s", cases[i].conf, err);
		cr_expect_eq(config_ring_bytes(&c), cases[i].bytes, "%s: %" PRIu64 " bytes, not %" PRIu64,
			     cases[i].conf, config_ring_bytes(&c), cases[i].bytes);
		config_exit(&c);
	}
}

/* auto reads back as auto (perfrecctl config, a reload's comparison), a size as a size. */
Test(config, ring_size_auto_prints_as_auto)
{
	struct config c;
	char err[256] = "", *buf = NULL;
	size_t len = 0;
	FILE *f;

	config_init(&c);
	cr_expect_eq(c.mmap_bytes, 0, "the default is auto");
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	config_print(&c, false, f);
	fclose(f);
	cr_expect_not_null(strstr(buf, "mmap-size=auto\n"), "%s", buf);
	free(buf);
	cr_assert_eq(config_load_string(&c, "[record]\nmmap-size=2M\n", "t.conf", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(config_ring_bytes(&c), 2ULL << 20);
	cr_expect_eq(config_load_string(&c, "[record]\nmmap-size=automatic\n", "t.conf", err, sizeof(err)), -EINVAL);
	config_exit(&c);
}
