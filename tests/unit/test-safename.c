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

static char tmp[64];

static void make_tmp(void)
{
	strcpy(tmp, "/tmp/test-safename-XXXXXX");
	cr_assert(mkdtemp(tmp));
}

static void remove_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_expect_eq(system(cmd), 0);
}

/* Issue 28 item 10: buildid-cache= that others may write, or a link, is a configuration error. */
Test(safename, unsafe_buildid_cache_is_refused_by_the_config)
{
	char open_dir[128], link[128], priv[128], text[256], err[512];
	const char *bad[] = { open_dir, "/tmp", link, "relative" };
	const char *good[] = { priv, "/nonexistent/perfrec-cache" };

	make_tmp();
	snprintf(open_dir, sizeof(open_dir), "%s/open", tmp);
	snprintf(link, sizeof(link), "%s/link", tmp);
	snprintf(priv, sizeof(priv), "%s/priv", tmp);
	cr_assert_eq(mkdir(open_dir, 0700), 0);
	cr_assert_eq(chmod(open_dir, 0777), 0);
	cr_assert_eq(mkdir(priv, 0750), 0);
	cr_assert_eq(symlink(priv, link), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config c;

		config_init(&c);
		snprintf(text, sizeof(text), "[output]\nbuildid-cache=%s\n", bad[i]);
		err[0] = 0;
		cr_expect_lt(config_load_string(&c, text, "t.conf", err, sizeof(err)), 0, "%s accepted", bad[i]);
		cr_expect(strstr(err, "t.conf:2: buildid-cache:"), "%s: '%s'", bad[i], err);
		config_exit(&c);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct config c;

		config_init(&c);
		snprintf(text, sizeof(text), "[output]\nbuildid-cache=%s\n", good[i]);
		err[0] = 0;
		cr_expect_eq(config_load_string(&c, text, "t.conf", err, sizeof(err)), 0, "%s: %s", good[i], err);
		config_exit(&c);
	}
	remove_tmp();
}

/* The walk: a directory of another user's on the way, or a link, is refused; a missing one made 0750. */
Test(safename, safedir_open_walks_only_directories_of_root_or_ours)
{
	char path[128], err[512];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root to make a directory of another user's");
	make_tmp();
	snprintf(path, sizeof(path), "%s/theirs", tmp);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/theirs/cache", tmp);
	cr_assert_eq(mkdir(path, 0700), 0);
	fd = safedir_open(path, 0, 0, false, err, sizeof(err));
	cr_expect_eq(fd, -EPERM, "a cache below nobody's directory: %d", fd);
	cr_expect(strstr(err, "theirs is owned by uid 65534"), "%s", err);
	/* Made for the daemon's user, 0750. */
	snprintf(path, sizeof(path), "%s/new", tmp);
	fd = safedir_open(path, 65534, 65534, true, err, sizeof(err));
	cr_assert_geq(fd, 0, "%s", err);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_expect_eq(st.st_uid, 65534);
	cr_expect_eq(st.st_mode & 07777, 0750, "made %o", st.st_mode & 07777);
	close(fd);
	remove_tmp();
}
