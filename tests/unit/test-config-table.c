// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table of configuration keys (config_keys[], daemon/config.c) against
 * what is said about them elsewhere: every key has an entry in
 * perfrecd.conf(5) and a line in the shipped conf/perfrecd.conf, shows in
 * --check-config (config_print()) with its default, and the defaults
 * config_init() gives are the table's.  Run from the repository root.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int ch;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	cr_assert_not_null(m);
	while ((ch = getc(f)) != EOF)
		fputc(ch, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* What config_print() writes for @c (malloc'ed). */
static char *printed(const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	cr_assert_not_null(m);
	config_print(c, false, m);
	fclose(m);
	return buf;
}

/* The line of @text that starts with @prefix, up to its end (malloc'ed), or NULL. */
static char *line_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0)
			return strndup(p, strcspn(p, "\n"));
	return NULL;
}

/* @name as man(7) source writes it: each '-' as "\-". */
static void man_escape(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	for (; *name && n + 3 < len; name++) {
		if (*name == '-')
			buf[n++] = '\\';
		buf[n++] = *name;
	}
	buf[n] = 0;
}

/* A key has an entry in perfrecd.conf(5): a .TP or .TQ term that starts with it. */
Test(config_table, every_key_has_an_entry_in_the_man_page)
{
	char *page = slurp("conf/perfrecd.conf.5");

	if (!page)
		cr_skip_test("conf/perfrecd.conf.5 not found (run from the repository root)");
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char name[128], want[160];
		bool found = false;

		man_escape(k->name, name, sizeof(name));
		/* ".BI name= ARG", ".BR name= {...}", ".BI label. NAME = VALUE" */
		snprintf(want, sizeof(want), "%s%s", name, k->name[strlen(k->name) - 1] == '.' ? " " : "=");
		for (const char *p = page; !found && (p = strstr(p, "\n.T")); p++) {
			const char *term = p + 5, *sp = strchr(term, ' ');

			if (strncmp(p, "\n.TP\n", 5) && strncmp(p, "\n.TQ\n", 5))
				continue;
			found = strncmp(term, ".B", 2) == 0 && sp && sp - term <= 3 &&
				strncmp(sp + 1, want, strlen(want)) == 0;
		}
		cr_expect(found, "key %s= of [%s] has no entry in conf/perfrecd.conf.5", k->name, k->section);
	}
	free(page);
}

/* The shipped file lists every key in its section, set (KEY=) or commented out (#KEY=). */
Test(config_table, every_key_is_in_the_shipped_file_in_its_section)
{
	char *conf = slurp("conf/perfrecd.conf");

	if (!conf)
		cr_skip_test("conf/perfrecd.conf not found (run from the repository root)");
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char header[64];
		const char *sec, *end, *p;
		bool found = false;

		snprintf(header, sizeof(header), "\n[%s]\n", k->section);
		sec = strstr(conf, header);
		cr_assert_not_null(sec, "conf/perfrecd.conf has no [%s]", k->section);
		end = strstr(sec + 1, "\n[");
		for (p = sec; p && (!end || p < end) && !found; p = strchr(p + 1, '\n')) {
			const char *l = p + 1 + (p[1] == '#');

			found = strncmp(l, k->name, strlen(k->name)) == 0 &&
				(k->name[strlen(k->name) - 1] == '.' || l[strlen(k->name)] == '=');
		}
		cr_expect(found, "key %s= is not in [%s] of conf/perfrecd.conf", k->name, k->section);
	}
	free(conf);
}

/*
 * --check-config of an empty file shows each key that has a default, and
 * what it shows is what the default written in the table gives: setting
 * a key to its default changes nothing.  A default given anywhere but the
 * table (config_init() setting a field after the table's, a parser that
 * does not take its own default) fails here.
 */
Test(config_table, defaults_are_the_tables_and_show_in_check_config)
{
	struct config def;
	char *base;

	config_init(&def);
	base = printed(&def);
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char err[256] = "", prefix[128], *line, *out;
		struct config c;

		if (!k->def)
			continue;
		snprintf(prefix, sizeof(prefix), "%s=", k->name);
		line = line_of(base, prefix);
		cr_expect_not_null(line, "--check-config does not show %s", k->name);
		free(line);
		config_init(&c);
		cr_assert_eq(config_set(&c, k->section, k->name, k->def, err, sizeof(err)), 0,
			     "the default of %s, '%s', does not parse: %s", k->name, k->def, err);
		out = printed(&c);
		cr_expect_str_eq(out, base, "%s=%s differs from the default configuration", k->name, k->def);
		free(out);
		config_exit(&c);
	}
	free(base);
	config_exit(&def);
}

/* The shipped file is the defaults, every one (it says so at its top). */
Test(config_table, the_shipped_file_is_the_defaults)
{
	struct config def, c;
	char err[256] = "", *a, *b;

	config_init(&def);
	config_init(&c);
	cr_assert_eq(config_load(&c, "conf/perfrecd.conf", err, sizeof(err)), 0, "%s", err);
	a = printed(&def);
	b = printed(&c);
	cr_expect_str_eq(b, a, "conf/perfrecd.conf is not the defaults");
	free(a);
	free(b);
	config_exit(&c);
	config_exit(&def);
}

/* Rows are what the readers of the table take for granted. */
Test(config_table, rows_are_well_formed)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];

		cr_expect(k->section && k->name && k->type && k->doc && *k->doc, "row %zu", i);
		for (size_t j = 0; j < i; j++)
			cr_expect(strcmp(config_keys[j].name, k->name), "key %s twice", k->name);
		/* Sections come in runs, so that --check-config prints each once. */
		for (size_t j = 0; i && j + 1 < i; j++)
			cr_expect(strcmp(config_keys[j].section, k->section) ||
				  !strcmp(config_keys[i - 1].section, k->section),
				  "[%s] is split around %s", k->section, k->name);
	}
}

/* The sentence perfrecd.conf(5) says of a key that a reload applies @how ("it" or "them"). */
static const char *reload_sentence(enum config_apply how)
{
	switch (how) {
	case CONFIG_APPLY_NOW: return "A reload applies %s at once";
	case CONFIG_APPLY_NEXT_FILE: return "A reload applies %s from the next file";
	case CONFIG_APPLY_REOPEN: return "A reload that changes %s reopens the events";
	case CONFIG_APPLY_OFFCPU: return "A reload sets %s in the loaded program";
	case CONFIG_APPLY_RESTART: return "a reload that changes %s is refused";
	default: return NULL;
	}
}

/*
 * Each key's entry in perfrecd.conf(5) (from its .TP to the next .TP or
 * .SH; keys under one .TP with .TQ share it) says how a reload applies it,
 * in the words of its config_keys[] row's kind.
 */
Test(config_table, the_man_page_says_how_a_reload_applies_each_key)
{
	char *page = slurp("conf/perfrecd.conf.5");

	if (!page)
		cr_skip_test("conf/perfrecd.conf.5 not found (run from the repository root)");
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const char *fmt = reload_sentence(k->applies), *term, *start, *end, *sh;
		char name[128], want[160], it[160], them[160];
		char *entry;

		cr_assert_not_null(fmt, "key %s= has no applies kind", k->name);
		man_escape(k->name, name, sizeof(name));
		snprintf(want, sizeof(want), " %s%s", name, k->name[strlen(k->name) - 1] == '.' ? " " : "=");
		/* The term: a .TP or .TQ line .B?  NAME=... */
		for (term = page; (term = strstr(term, want)); term++) {
			const char *bol = term;

			while (bol > page && bol[-1] != '\n')
				bol--;
			if (strncmp(bol, ".B", 2) == 0 && bol > page + 5 &&
			    (strncmp(bol - 5, ".TP\n", 4) == 0 || strncmp(bol - 5, ".TQ\n", 4) == 0 ||
			     strncmp(bol - 4, ".TP\n", 4) == 0 || strncmp(bol - 4, ".TQ\n", 4) == 0))
				break;
		}
		cr_assert_not_null(term, "key %s= has no entry in conf/perfrecd.conf.5", k->name);
		for (start = term; start > page && strncmp(start, "\n.TP\n", 5); start--)
			;
		end = strstr(term, "\n.TP\n");
		sh = strstr(term, "\n.SH ");
		if (!end || (sh && sh < end))
			end = sh ? sh : term + strlen(term);
		entry = strndup(start, (size_t)(end - start));
		/* Lines join with a space, as a reader sees them. */
		for (char *p = entry; *p; p++)
			if (*p == '\n')
				*p = ' ';
		snprintf(it, sizeof(it), fmt, "it");
		snprintf(them, sizeof(them), fmt, "them");
		cr_expect(strstr(entry, it) || strstr(entry, them),
			  "the entry of %s= in conf/perfrecd.conf.5 does not say how a reload applies it "
			  "(%s: \"%s\")", k->name, config_apply_to_string(k->applies), it);
		free(entry);
	}
	free(page);
}
