/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flame graphs: call trees aggregated from symbolized stacks (struct pstack,
 * profile.h), one tree per event, written as an interactive SVG (our own
 * markup and script: zoom, search, hover) or as folded stacks.  Folded
 * stacks (Brendan Gregg's "a;b;c 123" lines) can be read too, so the writer
 * works on its own and on the output of other tools.  A differential graph
 * compares each frame's share of its tree's total against a base tree.
 *
 * Nothing here reads perf.data: tools/flamegraph-cmd.c feeds profile_walk()'s
 * stacks to flamegraph__add().  Not thread-safe: one flamegraph per thread.
 */
#ifndef PERFRECCTL_FLAMEGRAPH_H
#define PERFRECCTL_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/*
 * Stacks deeper than this keep their outermost FG_MAX_DEPTH - 1 frames and
 * a "[truncated]" frame that carries the rest's weight: a runaway recursion
 * then costs at most this many rows in the SVG, not one per frame.
 */
#define FG_MAX_DEPTH 1024

/* The height of a frame's row in the SVG, in px. */
#define FG_FRAME_H 16

struct fg_node {
	const char *name;       /* interned in the flamegraph; "" for the root */
	const char *module;     /* interned, NULL: none */
	enum pframe_kind kind;
	uint64_t weight;        /* sum of periods of the stacks through here */
	uint64_t samples;       /* how many stacks pass through here */
	uint64_t self_weight, self_samples; /* of those, the ones ending here */
	struct fg_node **children;
	size_t nr_children, alloc_children;
	struct fg_node *parent;
	/* differential only: the frame at the same path in the base tree */
	const struct fg_node *base;
};

struct fg_tree {
	const char *event;      /* interned */
	struct fg_node root;    /* root.weight is the total */
	unsigned max_depth;     /* frames below the root on the deepest path */
	uint64_t truncated;     /* stacks cut at FG_MAX_DEPTH */
};

struct flamegraph;

/* A new, empty set of trees; NULL when out of memory. */
struct flamegraph *flamegraph__new(void);
void flamegraph__free(struct flamegraph *fg);

/*
 * Add one stack (leaf first, as profile.h has it) of @event weighing
 * @period to that event's tree; the strings are copied.  Frames merge by
 * name, module and kind.  0 or -ENOMEM.
 */
int flamegraph__add(struct flamegraph *fg, const char *event, const struct pframe *frames,
		    size_t nr_frames, uint64_t period);

/*
 * The profile_walk() callback: @ctx is a struct flamegraph.  The frames'
 * strings are remembered by address: they must stay, unchanged, as long
 * as @ctx (profile_walk()'s do).
 */
int flamegraph__add_pstack(void *ctx, const struct pstack *s);

/*
 * Read folded stacks from @f (root first, ';' between frames, the count
 * after the last space; "_[k]" marks a kernel frame) into the tree of
 * @event.  Blank lines are skipped; any other line that is not "STACK
 * COUNT" is an error naming @name:line, returning -EINVAL.
 */
int flamegraph__read_folded(struct flamegraph *fg, const char *event, FILE *f, const char *name);

/* The trees, sorted by event name; children sorted by name, module, kind. */
size_t flamegraph__nr_trees(struct flamegraph *fg);
struct fg_tree *flamegraph__tree(struct flamegraph *fg, size_t i);
struct fg_tree *flamegraph__find_tree(struct flamegraph *fg, const char *event);

/*
 * Differential: point each frame of @now at the frame on the same path in
 * @base (fg_node.base; NULL: a frame only in @now).  The SVG lists the
 * widest of @base's frames with no counterpart in @now under the graph.
 * @base must outlive @now's use of it.
 */
void flamegraph__diff(struct fg_tree *now, const struct fg_tree *base);

/* qsort() order of a node's children (pointers to nodes): by name, module, then kind. */
int fg_node_cmp(const void *pa, const void *pb);

/* A node's share of its tree's total, 0..1 (0 for an empty tree). */
double fg_share(const struct fg_node *n, const struct fg_tree *t);
/* Share now minus share in base, for a frame of a diffed tree. */
double fg_change(const struct fg_node *n, const struct fg_tree *now, const struct fg_tree *base);

struct fg_svg_opts {
	bool icicle;            /* root at the top, growing down */
	const char *title;      /* NULL: "Flame Graph" */
	unsigned width;         /* pixels, 0: 1200 */
	const char *subtitle;   /* a line under the title (files, window), NULL: none */
};

/*
 * Write an SVG of @trees (one graph per tree, one under the other) to @f.
 * @bases, if not NULL, holds for each tree its base (or NULL): those
 * graphs are differential (flamegraph__diff() must have run on them).
 * Frames narrower than 0.1 px are left out (their weight stays in their
 * caller's width).  Returns 0, -ENOMEM, or -EIO when writing failed.
 */
int flamegraph__write_svg(struct fg_tree *const *trees, const struct fg_tree *const *bases,
			  size_t nr, const struct fg_svg_opts *o, FILE *f);

/*
 * Write @t as folded stacks (root first, "_[k]" after kernel frames), each
 * with its number of samples, as Brendan Gregg's stackcollapse scripts
 * count them.  0 or -EIO.
 */
int flamegraph__write_folded(const struct fg_tree *t, FILE *f);
/* The same with each stack's summed period (ns for the clocks and offcpu-time). */
int flamegraph__write_folded_periods(const struct fg_tree *t, FILE *f);

/* @s escaped for XML text and attributes, control characters and invalid UTF-8 replaced. */
void fg_xml_escape(FILE *f, const char *s);
/*
 * Length of the valid UTF-8 sequence at @s that is also a character XML 1.0
 * allows, 0 if there is none (fg_xml_escape() writes U+FFFD for one byte).
 */
size_t fg_xml_char_len(const unsigned char *s);


#endif
