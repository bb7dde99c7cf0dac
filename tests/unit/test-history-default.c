// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Flight mode's default history is written once (CONFIG_FLIGHT_HISTORY_MIN):
 * what --check-config shows for it, read back as a setting, is the window the
 * history keeps.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "snapshot.h"

/* The value config_print() shows for history=, in @buf. */
static void printed_history(const struct config *c, char *buf, size_t len)
{
	char *text = NULL, *line;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	cr_assert_not_null(f);
	config_print(c, false, f);
	fclose(f);
	line = strstr(text, "\nhistory=");
	cr_assert_not_null(line, "no history= in %s", text);
	line += strlen("\nhistory=");
	snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
	free(text);
}

Test(history_default, printed_default_is_the_window_kept)
{
	static const int modes[] = { CONFIG_MODE_FLIGHT, CONFIG_MODE_CONTINUOUS };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct config c, back;
		char shown[64], err[256] = "";

		config_init(&c);
		c.mode = modes[i];
		printed_history(&c, shown, sizeof(shown));
		config_init(&back);
		back.mode = modes[i];
		cr_assert_eq(config_set(&back, "output", "history", shown, err, sizeof(err)), 0, "%s: %s", shown, err);
		cr_expect_eq(snapshot_window_ns(&back), snapshot_window_ns(&c),
			     "mode %d: --check-config shows history=%s but the default keeps %llu ns", modes[i], shown,
			     (unsigned long long)snapshot_window_ns(&c));
		config_exit(&back);
		config_exit(&c);
	}
}
