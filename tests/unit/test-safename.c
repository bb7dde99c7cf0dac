// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Names other users choose, made safe before they become file names
 * (issue 28 item 12): the host name is sanitized to [A-Za-z0-9._-], not
 * beginning with '.' or '-'; a configured prefix outside that is refused
 * with an error naming the key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "safename.h"

Test(safename, host_names_keep_only_safe_characters)
{
	static const struct { const char *in, *out; bool same; } cases[] = {
		{ "box1", "box1", true },
		{ "web-01.example.com", "web-01.example.com", true },
		{ "a/../../x", "a_.._.._x", false },
		{ "$(touch x)", "__touch_x_", false },
		{ "..", "_.", false },
		{ ".hidden", "_hidden", false },
		{ "-rf", "_rf", false },
		{ "line\nbreak", "line_break", false },
		{ "", "localhost", false },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(safename_sanitize(cases[i].in, out, sizeof(out)), cases[i].same, "case %zu", i);
		cr_expect_str_eq(out, cases[i].out, "case %zu", i);
		cr_expect(safename_ok(out), "case %zu: '%s' is not safe", i, out);
	}
	/* Cut to the buffer, never past it. */
	cr_expect(!safename_sanitize("abcdef", out, 4));
	cr_expect_str_eq(out, "abc");
}

Test(safename, unsafe_prefix_is_refused_by_the_config)
{
	static const char *const bad[] = { "a/b", "$(id)", ".x", "-x", "a b", "a\\b", "..", "p`id`" };
	static const char *const good[] = { "perfrecd", "web_01.prof-a" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config c;
		char text[128], err[256] = "";

		config_init(&c);
		snprintf(text, sizeof(text), "[output]\nprefix=%s\n", bad[i]);
		cr_expect_lt(config_load_string(&c, text, "t.conf", err, sizeof(err)), 0, "prefix=%s accepted", bad[i]);
		cr_expect(strstr(err, "t.conf:2: prefix:"), "prefix=%s: '%s'", bad[i], err);
		config_exit(&c);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct config c;
		char text[128], err[256] = "";

		config_init(&c);
		snprintf(text, sizeof(text), "[output]\nprefix=%s\n", good[i]);
		cr_expect_eq(config_load_string(&c, text, "t.conf", err, sizeof(err)), 0, "prefix=%s: %s", good[i], err);
		config_exit(&c);
	}
}
