// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the flame graph writer (views/flamegraph.c): the call tree
 * built from leaf-first stacks, merging by name+module+kind, per-event
 * trees, differential shares, folded stacks in and out, XML escaping of
 * hostile names, the SVG's widths and layout, deep stacks cut at
 * FG_MAX_DEPTH.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"

#define U(n) { .name = (n), .module = "/bin/app", .kind = PFRAME_USER }
#define K(n) { .name = (n), .module = "[kernel.kallsyms]", .kind = PFRAME_KERNEL }

static char *buf;
static size_t buflen;

static FILE *mem(void)
{
	free(buf);
	buf = NULL;
	return open_memstream(&buf, &buflen);
}

static const struct fg_node *kid(const struct fg_node *n, const char *name)
{
	for (size_t i = 0; i < n->nr_children; i++)
		if (!strcmp(n->children[i]->name, name))
			return n->children[i];
	return NULL;
}

static struct flamegraph *folded(const char *text, const char *event)
{
	struct flamegraph *fg = flamegraph__new();
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	cr_assert(fg && f);
	cr_assert_eq(flamegraph__read_folded(fg, event, f, "test"), 0);
	fclose(f);
	return fg;
}

Test(flamegraph, root_is_the_outermost_frame_and_weights_add_up)
{
	struct flamegraph *fg = flamegraph__new();
	const struct pframe s1[] = { U("hot"), U("caller"), U("main") };   /* leaf first */
	const struct pframe s2[] = { U("caller"), U("main") };
	const struct pframe s3[] = { K("sys_read"), U("main") };
	struct fg_tree *t;
	const struct fg_node *m, *c;

	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s1, 3, 1000), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s1, 3, 1000), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s2, 2, 500), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s3, 2, 250), 0);
	t = flamegraph__find_tree(fg, "cpu-clock");
	cr_assert(t);
	cr_assert_eq(t->root.weight, 2750);
	cr_assert_eq(t->root.samples, 4);
	cr_assert_eq(t->root.nr_children, 1);
	m = kid(&t->root, "main");
	cr_assert(m);
	cr_assert_eq(m->weight, 2750);
	c = kid(m, "caller");
	cr_assert_eq(c->weight, 2500);
	cr_assert_eq(c->samples, 3);
	cr_assert_eq(c->self_weight, 500);
	cr_assert_eq(kid(c, "hot")->weight, 2000);
	cr_assert_eq(kid(c, "hot")->self_samples, 2);
	cr_assert_eq(kid(m, "sys_read")->kind, PFRAME_KERNEL);
	cr_assert_eq(t->max_depth, 3);
	cr_assert_float_eq(fg_share(kid(c, "hot"), t), 2000.0 / 2750.0, 1e-12);
	flamegraph__free(fg);
}

Test(flamegraph, frames_merge_by_name_module_and_kind_only)
{
	struct flamegraph *fg = flamegraph__new();
	const struct pframe a[] = { { .name = "f", .module = "/lib/a.so", .kind = PFRAME_USER } };
	const struct pframe b[] = { { .name = "f", .module = "/lib/b.so", .kind = PFRAME_USER } };
	const struct pframe k[] = { { .name = "f", .module = "/lib/a.so", .kind = PFRAME_KERNEL } };
	/* Same function, another address and line: still the same frame. */
	const struct pframe a2[] = { { .name = "f", .module = "/lib/a.so", .kind = PFRAME_USER, .addr = 0x42, .line = 7 } };
	struct fg_tree *t;

	flamegraph__add(fg, "e", a, 1, 1);
	flamegraph__add(fg, "e", b, 1, 1);
	flamegraph__add(fg, "e", k, 1, 1);
	flamegraph__add(fg, "e", a2, 1, 1);
	t = flamegraph__tree(fg, 0);
	cr_assert_eq(t->root.nr_children, 3);
	/* Sorted by name, then module, then kind: deterministic output. */
	cr_assert_str_eq(t->root.children[0]->module, "/lib/a.so");
	cr_assert_eq(t->root.children[0]->kind, PFRAME_USER);
	cr_assert_eq(t->root.children[0]->weight, 2);
	cr_assert_eq(t->root.children[1]->kind, PFRAME_KERNEL);
	cr_assert_str_eq(t->root.children[2]->module, "/lib/b.so");
	flamegraph__free(fg);
}

Test(flamegraph, one_tree_per_event_sorted_by_name)
{
	struct flamegraph *fg = flamegraph__new();
	const struct pframe s[] = { U("x") };

	flamegraph__add(fg, "offcpu-time", s, 1, 5000000);
	flamegraph__add(fg, "cpu-clock", s, 1, 1000);
	flamegraph__add(fg, "cpu-clock", s, 1, 1000);
	cr_assert_eq(flamegraph__nr_trees(fg), 2);
	cr_assert_str_eq(flamegraph__tree(fg, 0)->event, "cpu-clock");
	cr_assert_eq(flamegraph__tree(fg, 0)->root.weight, 2000);
	cr_assert_str_eq(flamegraph__tree(fg, 1)->event, "offcpu-time");
	cr_assert_eq(flamegraph__tree(fg, 1)->root.weight, 5000000);
	cr_assert_null(flamegraph__find_tree(fg, "cycles"));
	flamegraph__free(fg);
}

Test(flamegraph, differential_share_change_is_normalized_by_totals)
{
	/* Base: a 50%, b 50%.  Now (ten times the samples): a 75%, c 25%. */
	struct flamegraph *base = folded("main;a 50\nmain;b 50\n", "e");
	struct flamegraph *now = folded("main;a 750\nmain;c 250\n", "e");
	struct fg_tree *nt = flamegraph__find_tree(now, "e"), *bt = flamegraph__find_tree(base, "e");
	const struct fg_node *m, *a, *c;

	flamegraph__diff(nt, bt);
	m = kid(&nt->root, "main");
	a = kid(m, "a");
	c = kid(m, "c");
	cr_assert(m->base && a->base);
	cr_assert_float_eq(fg_change(m, nt, bt), 0.0, 1e-12);
	cr_assert_float_eq(fg_change(a, nt, bt), 0.25, 1e-12);
	cr_assert_null(c->base, "c is only in the new window");
	cr_assert_float_eq(fg_change(c, nt, bt), 0.25, 1e-12);

	/* The SVG: a grew (red), c is marked new, b is listed as gone with its base share. */
	FILE *f = mem();
	const struct fg_tree *bases[] = { bt };
	cr_assert_eq(flamegraph__write_svg(&nt, bases, 1, NULL, f), 0);
	fclose(f);
	cr_assert(strstr(buf, "n=\"a\"><title>a&#10;750 samples, 75.00% (base 50.00%, +25.00 points)</title>"), "%s", buf);
	cr_assert(strstr(buf, "new=\"1\" n=\"c\""));
	cr_assert(strstr(buf, "Only in the base: b (50.00%)"));
	/* a has the largest change: full red. */
	cr_assert(strstr(strstr(buf, "n=\"a\""), "fill=\"rgb(255,40,40)\""));
	flamegraph__free(base);
	flamegraph__free(now);
}

Test(flamegraph, differential_colours_shrunk_frames_blue)
{
	struct flamegraph *base = folded("m;a 60\nm;b 40\n", "e");
	struct flamegraph *now = folded("m;a 20\nm;b 80\n", "e");
	struct fg_tree *nt = flamegraph__find_tree(now, "e");
	const struct fg_tree *bt = flamegraph__find_tree(base, "e");
	FILE *f = mem();

	flamegraph__diff(nt, bt);
	cr_assert_eq(flamegraph__write_svg(&nt, &bt, 1, NULL, f), 0);
	fclose(f);
	/* a: 60% -> 20% (shrunk: blue), b: 40% -> 80% (grown: red), m unchanged: white. */
	cr_assert(strstr(strstr(buf, "n=\"a\""), "fill=\"rgb(40,40,255)\""), "%s", buf);
	cr_assert(strstr(strstr(buf, "n=\"b\""), "fill=\"rgb(255,40,40)\""));
	cr_assert(strstr(strstr(buf, "n=\"m\""), "fill=\"rgb(255,255,255)\""));
	cr_assert(strstr(buf, "Only in the base: nothing"));
	flamegraph__free(base);
	flamegraph__free(now);
}

Test(flamegraph, folded_stacks_parse_kinds_and_round_trip)
{
	static const char in[] =
		"main;work;do_syscall_64_[k];ksys_read_[k] 7\n"
		"main;work 3\r\n"
		"\n"
		"main;work 2\n"
		"main;[unknown] 1\n"
		"main;bpf_prog_6deef7357e7b4530_hot_[k] 4\n"
		"main;jitted_[j] 5\n"
		"main;nothing 0\n";
	struct flamegraph *fg = folded(in, "cpu-clock");
	struct fg_tree *t = flamegraph__find_tree(fg, "cpu-clock");
	const struct fg_node *m = kid(&t->root, "main"), *w = kid(m, "work");
	FILE *f;

	cr_assert_eq(t->root.weight, 22);
	cr_assert_eq(t->root.samples, 22, "a folded count is a number of samples");
	cr_assert_eq(w->self_weight, 5);
	cr_assert_eq(kid(w, "do_syscall_64")->kind, PFRAME_KERNEL);
	cr_assert_eq(kid(kid(w, "do_syscall_64"), "ksys_read")->weight, 7);
	cr_assert_eq(kid(m, "[unknown]")->kind, PFRAME_UNKNOWN);
	cr_assert_eq(kid(m, "bpf_prog_6deef7357e7b4530_hot")->kind, PFRAME_BPF);
	cr_assert_eq(kid(m, "jitted")->kind, PFRAME_USER);
	cr_assert_null(kid(m, "nothing"), "a zero count adds no frame");

	f = mem();
	cr_assert_eq(flamegraph__write_folded(t, f), 0);
	fclose(f);
	cr_assert_str_eq(buf,
			 "main;[unknown] 1\n"
			 "main;bpf_prog_6deef7357e7b4530_hot_[k] 4\n"
			 "main;jitted 5\n"
			 "main;work 5\n"
			 "main;work;do_syscall_64_[k];ksys_read_[k] 7\n");
	flamegraph__free(fg);
}

Test(flamegraph, folded_bad_lines_are_refused_with_their_line_number)
{
	static const char *const bad[] = {
		"main;a\n", "main;a x\n", "main;a 12x\n", " 5\n", "main;a -3\n",
		"main;a 99999999999999999999999\n", ";;; 4\n",
		"a 18446744073709551615\nb 1\n",       /* the total would wrap */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct flamegraph *fg = flamegraph__new();
		FILE *in = fmemopen((void *)bad[i], strlen(bad[i]), "r");
		FILE *err = mem(), *saved = stderr;
		int r;

		stderr = err;
		r = flamegraph__read_folded(fg, "e", in, "in.folded");
		stderr = saved;
		fclose(err);
		fclose(in);
		cr_assert_lt(r, 0, "accepted %s", bad[i]);
		cr_assert(strstr(buf, "in.folded:"), "no file:line in '%s' for %s", buf, bad[i]);
		flamegraph__free(fg);
	}
}

Test(flamegraph, xml_escape_table)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;" },
		{ "operator<<(std::ostream&)", "operator&lt;&lt;(std::ostream&amp;)" },
		{ "]]></script><script>alert(1)</script>", "]]&gt;&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5" },
		{ "a\x01" "b\x1f", "a\xef\xbf\xbd" "b\xef\xbf\xbd" },
		{ "x\xff" "y", "x\xef\xbf\xbdy" },                         /* not UTF-8 */
		{ "\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd" },                 /* overlong NUL */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* a surrogate */
		{ "\xef\xbf\xbf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* U+FFFF */
		{ "cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd" },           /* truncated sequence */
		{ "a\nb\tc", "a&#10;b&#9;c" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = mem();

		fg_xml_escape(f, cases[i].in);
		fclose(f);
		cr_assert_str_eq(buf, cases[i].out, "case %zu", i);
	}
}

/* The width of the first frame named @name, from the SVG in buf. */
static double frame_width(const char *name, double *x, unsigned *y)
{
	char key[256];
	const char *p;
	double w = -1;

	snprintf(key, sizeof(key), "n=\"%s\">", name);
	p = strstr(buf, key);
	cr_assert(p, "no frame %s", name);
	p = strstr(p, "<rect ");
	cr_assert_eq(sscanf(p, "<rect x=\"%lf\" y=\"%u\" width=\"%lf\"", x, y, &w), 3);
	return w;
}

Test(flamegraph, svg_widths_are_shares_and_names_are_escaped)
{
	struct flamegraph *fg = folded("main;caller;hot 700\nmain;caller 100\nmain;a<b>&c\"d 200\n", "cpu-clock");
	struct fg_tree *t = flamegraph__find_tree(fg, "cpu-clock");
	double x, w;
	unsigned y_root, y_main, y_hot;
	FILE *f = mem();

	cr_assert_eq(flamegraph__write_svg(&t, NULL, 1, NULL, f), 0);
	fclose(f);
	w = frame_width("hot", &x, &y_hot);
	cr_assert_float_eq(w, 0.7 * 1180, 0.01);
	cr_assert_float_eq(frame_width("all", &x, &y_root), 1180, 0.01);
	frame_width("main", &x, &y_main);
	/* Flame: the root at the bottom, callees above. */
	cr_assert_gt(y_root, y_main);
	cr_assert_gt(y_main, y_hot);
	cr_assert(strstr(buf, "n=\"a&lt;b&gt;&amp;c&quot;d\""), "%s", buf);
	cr_assert_null(strstr(buf, "a<b"));
	cr_assert(strstr(buf, "<title>hot&#10;700 samples, 70.00%</title>"));
	/* Every frame but the root is a user frame here. */
	cr_assert(strstr(buf, "t=\"u\" n=\"hot\""));

	const struct fg_svg_opts o = { .icicle = true, .subtitle = "a <window> & more", .title = "T\"" };
	f = mem();
	cr_assert_eq(flamegraph__write_svg(&t, NULL, 1, &o, f), 0);
	fclose(f);
	frame_width("all", &x, &y_root);
	frame_width("hot", &x, &y_hot);
	cr_assert_lt(y_root, y_hot, "an icicle hangs from the root");
	cr_assert(strstr(buf, "icicle=\"1\""));
	cr_assert(strstr(buf, ">a &lt;window&gt; &amp; more</text>"));
	cr_assert(strstr(buf, ">T&quot;</text>"));
	flamegraph__free(fg);
}

Test(flamegraph, svg_text_is_cut_to_fit_its_frame)
{
	struct flamegraph *fg = folded("a_function_with_a_rather_long_name 1\nother 99\n", "e");
	struct fg_tree *t = flamegraph__find_tree(fg, "e");
	FILE *f = mem();
	const char *p;

	cr_assert_eq(flamegraph__write_svg(&t, NULL, 1, NULL, f), 0);
	fclose(f);
	/* 1% of 1180 px is 11.8 px: one character wide at most, so no text. */
	p = strstr(buf, "n=\"a_function_with_a_rather_long_name\">");
	cr_assert(p);
	cr_assert(strstr(p, "\"></text>") && strstr(p, "\"></text>") < strstr(p, "</g>"));
	cr_assert(strstr(strstr(buf, "n=\"other\">"), ">other</text>"));
	flamegraph__free(fg);
}

Test(flamegraph, deep_stacks_are_cut_at_max_depth)
{
	enum { DEPTH = 10000 };
	struct pframe *fr = calloc(DEPTH, sizeof(*fr));
	char (*names)[16] = calloc(DEPTH, 16);
	struct flamegraph *fg = flamegraph__new();
	struct fg_tree *t;
	const struct fg_node *n;
	size_t frames = 0, levels = 0;
	FILE *f;

	for (size_t i = 0; i < DEPTH; i++) {
		snprintf(names[i], 16, "f%zu", i);
		fr[i] = (struct pframe){ .name = names[i], .kind = PFRAME_USER };
	}
	cr_assert_eq(flamegraph__add(fg, "e", fr, DEPTH, 10), 0);
	cr_assert_eq(flamegraph__add(fg, "e", fr, 3, 10), 0);
	t = flamegraph__find_tree(fg, "e");
	cr_assert_eq(t->truncated, 1);
	cr_assert_eq(t->max_depth, FG_MAX_DEPTH);
	/* The outermost frames are kept, the rest summed in [truncated]. */
	for (n = &t->root; n->nr_children; n = n->children[n->nr_children - 1])
		levels++;
	cr_assert_eq(levels, FG_MAX_DEPTH);
	cr_assert_str_eq(n->name, "[truncated]");
	cr_assert_eq(n->weight, 10);
	cr_assert_str_eq(t->root.children[0]->name, "f2");
	cr_assert_str_eq(t->root.children[1]->name, "f9999");

	f = mem();
	cr_assert_eq(flamegraph__write_svg(&t, NULL, 1, NULL, f), 0);
	fclose(f);
	for (const char *p = buf; (p = strstr(p, "<g class=\"f\"")); p++)
		frames++;
	cr_assert_eq(frames, 1 + FG_MAX_DEPTH + 3, "%zu frames drawn", frames);
	cr_assert(strstr(buf, "1 stacks deeper than 1024 frames were cut"));
	cr_assert_lt(buflen, 2u << 20, "a 10000-frame stack gave %zu bytes", buflen);

	f = mem();
	cr_assert_eq(flamegraph__write_folded(t, f), 0);
	fclose(f);
	cr_assert(strstr(buf, ";f8977;[truncated] 1\n"), "one sample");
	free(fr);
	free(names);
	flamegraph__free(fg);
}


/* What the writer prints, the reader reads back as the same stacks (found by fuzz-folded). */
Test(flamegraph, folded_output_reads_back_the_same)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "x_[j]_[k];y 3\n", "x_[k];y 3\n" },            /* every annotation comes off */
		{ "a;b  2\n", "a;b  2\n" },                      /* a name may end in a space */
		{ "\ri 3\n\x1bu 1\n", "\ri 3\n\x1bu 1\n" },      /* '\r' inside a line stays */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flamegraph *fg = folded(cases[i].in, "e"), *again;
		FILE *f = mem();
		char *first;

		cr_assert_eq(flamegraph__write_folded(flamegraph__find_tree(fg, "e"), f), 0);
		fclose(f);
		cr_assert_str_eq(buf, cases[i].out, "case %zu", i);
		first = strdup(buf);
		again = folded(first, "e");
		f = mem();
		cr_assert_eq(flamegraph__write_folded(flamegraph__find_tree(again, "e"), f), 0);
		fclose(f);
		cr_assert_str_eq(buf, first, "case %zu read back", i);
		free(first);
		flamegraph__free(fg);
		flamegraph__free(again);
	}
}

Test(flamegraph, one_graph_per_event_one_under_the_other)
{
	struct flamegraph *fg = flamegraph__new();
	const struct pframe on[] = { U("spin"), U("main") }, off[] = { K("schedule"), U("wait_for_data"), U("main") };
	struct fg_tree *trees[2];
	unsigned y0, y1;
	const char *g0, *g1;
	FILE *f;

	flamegraph__add(fg, "offcpu-time", off, 3, 50000000);
	flamegraph__add(fg, "cpu-clock", on, 2, 1000000);
	trees[0] = flamegraph__tree(fg, 0);
	trees[1] = flamegraph__tree(fg, 1);
	f = mem();
	cr_assert_eq(flamegraph__write_svg(trees, NULL, 2, NULL, f), 0);
	fclose(f);
	g0 = strstr(buf, "<g class=\"graph\" event=\"cpu-clock\" total=\"1000000\" samples=\"1\"");
	g1 = strstr(buf, "<g class=\"graph\" event=\"offcpu-time\" total=\"50000000\" samples=\"1\"");
	cr_assert(g0 && g1 && g0 < g1, "%s", buf);
	/* Each graph has its own root, the second drawn below the first. */
	cr_assert_eq(sscanf(strstr(strstr(g0, "n=\"all\">"), "<rect "), "<rect x=\"%*f\" y=\"%u\"", &y0), 1);
	cr_assert_eq(sscanf(strstr(strstr(g1, "n=\"all\">"), "<rect "), "<rect x=\"%*f\" y=\"%u\"", &y1), 1);
	cr_assert_gt(y1, y0 + 2 * FG_FRAME_H);
	/* Off-CPU weights are nanoseconds blocked; kernel frames are marked as such. */
	cr_assert(strstr(g1, "offcpu-time: 1 samples, 50000000 ns"));
	cr_assert(strstr(g1, "t=\"k\" n=\"schedule\""));
	cr_assert(strstr(g1, "<title>schedule ([kernel.kallsyms])&#10;1 samples, 50000000 ns, 100.00%</title>"));
	flamegraph__free(fg);
}

/* Past 8 callees, lookups go through the flamegraph's node table: same merging. */
Test(flamegraph, wide_frames_merge_their_callees)
{
	struct flamegraph *fg = flamegraph__new();
	char names[300][16];
	struct fg_tree *t;

	for (int i = 0; i < 300; i++)
		snprintf(names[i], sizeof(names[i]), "c%03d", i);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 300; i++) {
			int k = (i * 7 + round * 11) % 300;
			const struct pframe s[] = { U(names[k]), U("main") };
			const struct pframe u[] = { { .name = names[k], .module = "/bin/app", .kind = PFRAME_KERNEL }, U("main") };

			cr_assert_eq(flamegraph__add(fg, "e", s, 2, k + 1), 0);
			if (k % 2)
				cr_assert_eq(flamegraph__add(fg, "e", u, 2, 1), 0);
		}
	t = flamegraph__find_tree(fg, "e");
	cr_assert_eq(t->root.nr_children, 1);
	cr_assert_eq(t->root.children[0]->nr_children, 450);
	for (size_t i = 0; i < 450; i++) {
		const struct fg_node *c = t->root.children[0]->children[i];
		int k = atoi(c->name + 1);

		cr_assert_eq(c->samples, 3);
		cr_assert_eq(c->weight, c->kind == PFRAME_KERNEL ? 3u : 3u * (k + 1), "%s", c->name);
	}
	flamegraph__free(fg);
}

/* Folded stacks count samples, as stackcollapse does; --period sums the periods (issue 26). */
Test(flamegraph, folded_counts_samples_and_periods_on_request)
{
	struct flamegraph *fg = flamegraph__new();
	const struct pframe s1[] = { U("hot"), U("main") };
	const struct pframe s2[] = { K("sys_read"), U("main") };
	struct fg_tree *t;
	FILE *f;

	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s1, 2, 1001001), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s1, 2, 999000), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s1, 2, 1000000), 0);
	cr_assert_eq(flamegraph__add(fg, "cpu-clock", s2, 2, 250000), 0);
	t = flamegraph__find_tree(fg, "cpu-clock");
	f = mem();
	cr_assert_eq(flamegraph__write_folded(t, f), 0);
	fclose(f);
	cr_assert_str_eq(buf, "main;hot 3\nmain;sys_read_[k] 1\n");
	f = mem();
	cr_assert_eq(flamegraph__write_folded_periods(t, f), 0);
	fclose(f);
	cr_assert_str_eq(buf, "main;hot 3000001\nmain;sys_read_[k] 250000\n");
	flamegraph__free(fg);
}
