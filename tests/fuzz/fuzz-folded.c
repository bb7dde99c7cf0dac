// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the flame graph's input path (views/flamegraph.c):
 * every input is a folded-stacks file for `perfrecctl flamegraph --folded`.
 * Besides no memory error under ASan/UBSan, checked on each accepted input:
 * every frame weighs its own samples plus its callees'; the folded output
 * read back gives the same folded output (the format round-trips); a diff
 * of the tree against itself finds every frame with no change; the SVG
 * (plain and differential) is written; and the input escaped for XML holds
 * no markup character and only XML characters in valid UTF-8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_node(const struct fg_node *n, const struct fg_tree *t, const struct fg_tree *b)
{
	uint64_t w = n->self_weight, s = n->self_samples;

	for (size_t i = 0; i < n->nr_children; i++) {
		const struct fg_node *c = n->children[i];

		if (i && fg_node_cmp(&n->children[i - 1], &n->children[i]) >= 0)
			abort();        /* children sorted, no duplicates */
		w += c->weight;
		s += c->samples;
		check_node(c, t, b);
	}
	if (w != n->weight || s != n->samples)
		abort();
	if (!n->base || fg_change(n, t, b) != 0.0)
		abort();
}

static char *folded_text(struct fg_tree *t, size_t *len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	if (!f || flamegraph__write_folded(t, f) < 0)
		abort();
	fclose(f);
	return out;
}

static void check_escape(const uint8_t *data, size_t size)
{
	char *in = strndup((const char *)data, size), *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);

	if (!in || !f)
		abort();
	fg_xml_escape(f, in);
	fclose(f);
	for (size_t i = 0; i < len;) {
		size_t l = fg_xml_char_len((const unsigned char *)out + i);

		if (!l || strchr("<>\"'\n\r\t", out[i]))
			abort();
		if (out[i] == '&' && strncmp(out + i, "&amp;", 5) && strncmp(out + i, "&lt;", 4) &&
		    strncmp(out + i, "&gt;", 4) && strncmp(out + i, "&quot;", 6) && strncmp(out + i, "&#", 2))
			abort();
		i += l;
	}
	free(in);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flamegraph *fg = flamegraph__new(), *again = flamegraph__new();
	FILE *in = fmemopen((void *)data, size, "r"), *saved = stderr, *null = fopen("/dev/null", "w");
	struct fg_tree *t;
	char *out1 = NULL, *out2 = NULL, *svg = NULL;
	size_t len1, len2, svglen;
	int r;

	check_escape(data, size);
	if (!fg || !again || !null || (size && !in))
		abort();
	if (!size) {
		in = fmemopen((void *)"", 1, "r");
		if (!in)
			abort();
	}
	stderr = null;          /* bad lines are expected; their messages are noise here */
	r = flamegraph__read_folded(fg, "e", in, "fuzz");
	stderr = saved;
	fclose(in);
	fclose(null);
	t = flamegraph__find_tree(fg, "e");
	if (r == 0 && t) {
		const struct fg_tree *base = t;
		FILE *f;

		flamegraph__diff(t, t);
		check_node(&t->root, t, t);

		out1 = folded_text(t, &len1);
		in = fmemopen(out1, len1 ? len1 : 1, "r");
		if (!in || flamegraph__read_folded(again, "e", in, "round trip") < 0)
			abort();
		fclose(in);
		out2 = folded_text(flamegraph__find_tree(again, "e"), &len2);
		/* Already aggregated and sorted: reading it back changes nothing. */
		if (len1 != len2 || memcmp(out1, out2, len1) ||
		    flamegraph__find_tree(again, "e")->root.weight != t->root.weight)
			abort();

		f = open_memstream(&svg, &svglen);
		if (!f || flamegraph__write_svg(&t, &base, 1, NULL, f) < 0)
			abort();
		fclose(f);
		free(svg);
		svg = NULL;
		f = open_memstream(&svg, &svglen);
		const struct fg_svg_opts o = { .icicle = true };
		if (!f || flamegraph__write_svg(&t, NULL, 1, &o, f) < 0)
			abort();
		fclose(f);
		if (!strstr(svg, "</svg>\n"))
			abort();
	}
	free(out1);
	free(out2);
	free(svg);
	flamegraph__free(fg);
	flamegraph__free(again);
	return 0;
}
