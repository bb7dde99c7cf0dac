// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * How a reload applies each key (config_keys[].applies, config_changed()):
 * daemon/manager.c's reload() applies CONFIG_APPLY_NOW keys at once,
 * leaves CONFIG_APPLY_NEXT_FILE ones to the next file, sets the off-CPU
 * filter in place for CONFIG_APPLY_OFFCPU ones, reopens the events for
 * CONFIG_APPLY_REOPEN ones and refuses a change of a CONFIG_APPLY_RESTART
 * one, all from the table.  Before issue 28 a reload changing only
 * offcpu=, offcpu-min= or offcpu-cgroup= was taken as changing nothing
 * that lives in the events, and was accepted and ignored; before issue 24
 * socket=, user=, the upload keys and others were taken and ignored.
 * tests/e2e/test-reload-every-key.sh holds the kinds to what the daemon does.
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

Test(config_apply, every_row_says_how_a_reload_applies_it)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];

		cr_expect(k->applies > CONFIG_APPLY_UNSET && k->applies < _CONFIG_APPLY_MAX,
			  "key %s= of [%s] does not say how a reload applies it (.applies)", k->name, k->section);
		cr_expect_not_null(config_apply_to_string(k->applies), "key %s=", k->name);
		/* The refusal of a reload says why. */
		cr_expect((k->applies == CONFIG_APPLY_RESTART) == (k->why_restart != NULL),
			  "key %s=: a why_restart goes with CONFIG_APPLY_RESTART, and only with it", k->name);
	}
	cr_assert_null(config_apply_to_string(CONFIG_APPLY_UNSET));
	cr_assert_null(config_apply_to_string(_CONFIG_APPLY_MAX));
}

/*
 * A value other than the default for every key: a key added without one
 * fails here, and every key's change is seen as a change of its own kind
 * and of no other (config_changed_key() names it).
 */
static const char *const other_value[][2] = {
	{ "events", "cpu-clock,task-clock" }, { "frequency", "199" }, { "max-frequency", "500" },
	{ "period", "100000" }, { "callchain", "no" }, { "stack-size", "4096" }, { "unwind", "host" },
	{ "clockid", "boottime" }, { "cpus", "0" }, { "mmap-size", "1M" }, { "drain-priority", "5" },
	{ "flush-interval", "2s" }, { "checkpoint-interval", "1s" }, { "context-switch", "yes" },
	{ "offcpu", "yes" }, { "python", "no" }, { "offcpu-min", "10ms" }, { "offcpu-cgroup", "system.slice" },
	{ "max-overhead", "1%" }, { "duration", "1h" }, { "directory", "/srv/profiles" }, { "prefix", "p" },
	{ "rotate-size", "1M" }, { "rotate-interval", "10min" }, { "max-files", "3" }, { "max-bytes", "1G" },
	{ "max-age", "1d" }, { "min-free", "1G" }, { "on-rotate", "/bin/true" }, { "buildid-cache", "no" },
	{ "buildid-cache-size", "10M" }, { "compress", "no" }, { "mode", "flight" }, { "history", "1min" },
	{ "history-max", "64M" }, { "label.team", "web" }, { "user", "root" }, { "group", "root" },
	{ "socket", "/run/other.sock" }, { "control-group", "" }, { "control-public-methods", "Ping" },
	{ "metrics-listen", "127.0.0.1:9999" }, { "metrics-textfile", "/run/m.prom" },
	{ "upload-url", "http://127.0.0.1:9/b" }, { "upload-region", "eu-west-1" },
	{ "upload-credentials", "/etc/creds" }, { "upload-key", "{host}/{file}" },
};

static const char *other_value_of(const struct config_key *k)
{
	size_t n = strlen(k->name);

	for (size_t i = 0; i < sizeof(other_value) / sizeof(other_value[0]); i++)
		if (k->name[n - 1] == '.' ? strncmp(other_value[i][0], k->name, n) == 0
					  : strcmp(other_value[i][0], k->name) == 0)
			return other_value[i][1];
	return NULL;
}

Test(config_apply, every_key_changes_its_own_kind_only)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const char *v = other_value_of(k);
		char err[256] = "", name[64];
		struct config a, b;

		cr_assert_not_null(v, "key %s= has no other value in this test: add one", k->name);
		snprintf(name, sizeof(name), "%s%s", k->name, k->name[strlen(k->name) - 1] == '.' ? "team" : "");
		config_init(&a);
		config_init(&b);
		cr_assert_eq(config_set(&b, k->section, name, v, err, sizeof(err)), 0, "%s=%s: %s", name, v, err);
		/* unwind= has two values: the other one, whichever is the default. */
		if (strcmp(k->name, "unwind") == 0 && config_key_is_default(&b, k->section, name)) {
			v = "file";
			cr_assert_eq(config_set(&b, k->section, name, v, err, sizeof(err)), 0, "%s", err);
		}
		for (int how = CONFIG_APPLY_NOW; how < _CONFIG_APPLY_MAX; how++) {
			const struct config_key *c = config_changed_key(&a, &b, how);

			/* Not always @k itself: period= also clears frequency= (.aux). */
			if (how == (int)k->applies)
				cr_expect_not_null(c, "%s=%s is not seen as a change (%s)", name, v,
						   config_apply_to_string(k->applies));
			else
				cr_expect_null(c, "%s=%s is seen as a change of %s (%s), not only of its own kind",
					       name, v, c ? c->name : "", config_apply_to_string(how));
		}
		config_exit(&a);
		config_exit(&b);
	}
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

Test(config_apply, keys_set_up_at_start_refuse_a_reload)
{
	static const char *const keys[][3] = {
		{ "service", "socket", "/run/x.sock" }, { "service", "user", "root" },
		{ "service", "metrics-listen", "127.0.0.1:9100" }, { "upload", "upload-url", "http://127.0.0.1:9/b" },
		{ "record", "drain-priority", "1" },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct config a, b;
		char err[256] = "";
		const struct config_key *k;

		config_init(&a);
		config_init(&b);
		cr_assert_eq(config_set(&b, keys[i][0], keys[i][1], keys[i][2], err, sizeof(err)), 0, "%s", err);
		k = config_changed_key(&a, &b, CONFIG_APPLY_RESTART);
		cr_assert(k && strcmp(k->name, keys[i][1]) == 0, "%s= does not need a restart", keys[i][1]);
		config_exit(&a);
		config_exit(&b);
	}
}

Test(config_apply, same_config_changes_nothing)
{
	struct config a, b;

	config_init(&a);
	config_init(&b);
	for (int how = CONFIG_APPLY_NOW; how < _CONFIG_APPLY_MAX; how++)
		cr_assert(!config_changed(&a, &b, how));
	config_exit(&a);
	config_exit(&b);
}
