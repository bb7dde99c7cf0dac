// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * How a reload applies each key (config_keys[].applies, config_changed()):
 * the reload in daemon/manager.c reopens the events for CONFIG_APPLY_REOPEN
 * keys and sets the off-CPU filter in place for CONFIG_APPLY_OFFCPU ones.
 * Before issue 28 a reload changing only offcpu=, offcpu-min= or
 * offcpu-cgroup= was taken as changing nothing that lives in the events,
 * and was accepted and ignored.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config.h"

/* Which kinds of change setting @section.@key=@value to a default config makes. */
static void changes(const char *section, const char *key, const char *value, bool *reopen, bool *offcpu,
		    bool *now)
{
	struct config a, b;
	char err[256] = "";

	config_init(&a);
	config_init(&b);
	cr_assert_eq(config_set(&b, section, key, value, err, sizeof(err)), 0, "%s=%s: %s", key, value, err);
	*reopen = config_changed(&a, &b, CONFIG_APPLY_REOPEN);
	*offcpu = config_changed(&a, &b, CONFIG_APPLY_OFFCPU);
	*now = config_changed(&a, &b, CONFIG_APPLY_NOW);
	config_exit(&a);
	config_exit(&b);
}

Test(config_apply, offcpu_keys)
{
	bool reopen, offcpu, now;

	/* offcpu= changes the files' attrs: the events are reopened */
	changes("record", "offcpu", "yes", &reopen, &offcpu, &now);
	cr_assert(reopen && !offcpu && !now);
	/* its filter is set in the loaded program, no reopen */
	changes("record", "offcpu-min", "10ms", &reopen, &offcpu, &now);
	cr_assert(!reopen && offcpu && !now);
	changes("record", "offcpu-cgroup", "system.slice", &reopen, &offcpu, &now);
	cr_assert(!reopen && offcpu && !now);
}

Test(config_apply, event_keys_reopen)
{
	static const char *const keys[][3] = {
		{ "record", "events", "cpu-clock,task-clock" }, { "record", "frequency", "199" },
		{ "record", "period", "100000" }, { "record", "callchain", "dwarf" },
		{ "record", "clockid", "boottime" }, { "record", "cpus", "0" },
		{ "record", "mmap-size", "1M" }, { "record", "context-switch", "yes" },
		{ "output", "mode", "flight" }, { "output", "history-max", "64M" },
	};
	bool reopen, offcpu, now;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		changes(keys[i][0], keys[i][1], keys[i][2], &reopen, &offcpu, &now);
		cr_assert(reopen && !offcpu, "%s= does not reopen the events", keys[i][1]);
	}
}

Test(config_apply, other_keys_apply_now)
{
	bool reopen, offcpu, now;

	changes("output", "rotate-interval", "10min", &reopen, &offcpu, &now);
	cr_assert(!reopen && !offcpu && now);
	changes("output", "max-files", "3", &reopen, &offcpu, &now);
	cr_assert(!reopen && !offcpu && now);
}

Test(config_apply, same_config_changes_nothing)
{
	struct config a, b;

	config_init(&a);
	config_init(&b);
	cr_assert(!config_changed(&a, &b, CONFIG_APPLY_REOPEN));
	cr_assert(!config_changed(&a, &b, CONFIG_APPLY_OFFCPU));
	cr_assert(!config_changed(&a, &b, CONFIG_APPLY_NOW));
	config_exit(&a);
	config_exit(&b);
}
