// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Flame graphs (see flamegraph.h): stacks go into one call tree per event,
 * root = the outermost frame, frames merged by name, module and kind; the
 * trees come out as an interactive SVG or as folded stacks.
 *
 * The SVG carries, per frame, its start and width in the tree's weight
 * units (attributes s and w), its depth (d), kind (t) and full name (n);
 * the script at its end (written here, no downloaded code) zooms, searches
 * and shows details from those alone, so the file works offline in any
 * browser.  A URL fragment "#zoom=NAME&search=RE" applies both on load,
 * which is how the e2e test drives a real browser without a mouse (and
 * "&reset" clicks Reset zoom).
 *
 * Strings are interned per flamegraph: a tree of a million samples holds
 * each function's name once, and merging compares pointers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flamegraph.h"

struct flamegraph {
	char **strs;            /* interned strings, open addressing */
	size_t nr_strs, alloc_strs;
	struct fg_tree **trees;
	size_t nr_trees;
	bool sorted;
	/*
	 * Every node by (parent, name, module, kind), open addressing: a frame
	 * with thousands of callees (a system-wide root, [unknown]) would make
	 * a scan of its children the cost of every sample.
	 */
	struct fg_node **nodes;
	size_t nr_nodes, alloc_nodes;
	/*
	 * profile_walk()'s strings by address (they live as long as the walk,
	 * profile.h): hashing every frame's name was a tenth of the walk.
	 */
	struct walk_str {
		const char *from;       /* NULL: empty slot */
		const char *to;         /* interned */
	} *walk_strs;
	size_t nr_walk_strs, alloc_walk_strs;
};

/* ---- interned strings ------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;    /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int strs_grow(struct flamegraph *fg)
{
	size_t n = fg->alloc_strs ? fg->alloc_strs * 2 : 1024;
	char **t = calloc(n, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < fg->alloc_strs; i++) {
		char *s = fg->strs[i];
		size_t j;

		if (!s)
			continue;
		for (j = hash_str(s) & (n - 1); t[j]; j = (j + 1) & (n - 1))
			;
		t[j] = s;
	}
	free(fg->strs);
	fg->strs = t;
	fg->alloc_strs = n;
	return 0;
}

/* The flamegraph's copy of @s (NULL stays NULL); NULL and -ENOMEM in *err. */
static const char *intern(struct flamegraph *fg, const char *s, int *err)
{
	size_t j;

	if (!s)
		return NULL;
	if ((fg->nr_strs + 1) * 2 > fg->alloc_strs && strs_grow(fg) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	for (j = hash_str(s) & (fg->alloc_strs - 1); fg->strs[j]; j = (j + 1) & (fg->alloc_strs - 1))
		if (!strcmp(fg->strs[j], s))
			return fg->strs[j];
	fg->strs[j] = strdup(s);
	if (!fg->strs[j]) {
		*err = -ENOMEM;
		return NULL;
	}
	fg->nr_strs++;
	return fg->strs[j];
}

static size_t ptr_hash(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 29));
}

/* intern() of a string that stays where it is, unchanged, as long as @fg. */
static const char *intern_walk(struct flamegraph *fg, const char *s, int *err)
{
	struct walk_str *w;
	size_t j, mask;

	if (!s)
		return NULL;
	if ((fg->nr_walk_strs + 1) * 2 > fg->alloc_walk_strs) {
		size_t n = fg->alloc_walk_strs ? fg->alloc_walk_strs * 2 : 1024;
		struct walk_str *t = calloc(n, sizeof(*t));

		if (!t) {
			*err = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < fg->alloc_walk_strs; i++) {
			if (!fg->walk_strs[i].from)
				continue;
			for (j = ptr_hash(fg->walk_strs[i].from) & (n - 1); t[j].from; j = (j + 1) & (n - 1))
				;
			t[j] = fg->walk_strs[i];
		}
		free(fg->walk_strs);
		fg->walk_strs = t;
		fg->alloc_walk_strs = n;
	}
	mask = fg->alloc_walk_strs - 1;
	for (j = ptr_hash(s) & mask; (w = &fg->walk_strs[j])->from; j = (j + 1) & mask)
		if (w->from == s)
			return w->to;
	w->to = intern(fg, s, err);
	if (!w->to)
		return NULL;
	w->from = s;
	fg->nr_walk_strs++;
	return w->to;
}

/* ---- trees ------------------------------------------------------------ */

struct flamegraph *flamegraph__new(void)
{
	struct flamegraph *fg = calloc(1, sizeof(*fg));

	if (fg && strs_grow(fg) < 0) {
		free(fg);
		return NULL;
	}
	return fg;
}

static void node_free_children(struct fg_node *n)
{
	/* Recursion is bounded: a tree is at most FG_MAX_DEPTH deep. */
	for (size_t i = 0; i < n->nr_children; i++) {
		node_free_children(n->children[i]);
		free(n->children[i]);
	}
	free(n->children);
	n->children = NULL;
	n->nr_children = n->alloc_children = 0;
}

void flamegraph__free(struct flamegraph *fg)
{
	if (!fg)
		return;
	for (size_t i = 0; i < fg->nr_trees; i++) {
		node_free_children(&fg->trees[i]->root);
		free(fg->trees[i]);
	}
	free(fg->trees);
	free(fg->nodes);
	free(fg->walk_strs);
	for (size_t i = 0; i < fg->alloc_strs; i++)
		free(fg->strs[i]);
	free(fg->strs);
	free(fg);
}

static struct fg_tree *get_tree(struct flamegraph *fg, const char *event, int *err)
{
	struct fg_tree **t, *tree;
	const char *ev = intern(fg, event ? event : "samples", err);

	if (!ev)
		return NULL;
	for (size_t i = 0; i < fg->nr_trees; i++)
		if (fg->trees[i]->event == ev)
			return fg->trees[i];
	t = reallocarray(fg->trees, fg->nr_trees + 1, sizeof(*t));
	if (!t)
		goto nomem;
	fg->trees = t;
	tree = calloc(1, sizeof(*tree));
	if (!tree)
		goto nomem;
	tree->event = ev;
	tree->root.name = "all";
	tree->root.kind = PFRAME_UNKNOWN;
	fg->trees[fg->nr_trees++] = tree;
	fg->sorted = false;
	return tree;
nomem:
	*err = -ENOMEM;
	return NULL;
}

static uint64_t node_hash(const struct fg_node *parent, const char *name, const char *module,
			  enum pframe_kind kind)
{
	uint64_t h = (uintptr_t)parent * 0x9E3779B97F4A7C15ULL;

	h ^= (uintptr_t)name * 0xC2B2AE3D27D4EB4FULL;
	h ^= (uintptr_t)module * 0x165667B19E3779F9ULL;
	h ^= (uint64_t)kind;
	return h ^ (h >> 29) ^ (h >> 47);
}

static int nodes_grow(struct flamegraph *fg)
{
	size_t n = fg->alloc_nodes ? fg->alloc_nodes * 2 : 4096;
	struct fg_node **t = calloc(n, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < fg->alloc_nodes; i++) {
		struct fg_node *c = fg->nodes[i];
		size_t j;

		if (!c)
			continue;
		for (j = node_hash(c->parent, c->name, c->module, c->kind) & (n - 1); t[j]; j = (j + 1) & (n - 1))
			;
		t[j] = c;
	}
	free(fg->nodes);
	fg->nodes = t;
	fg->alloc_nodes = n;
	return 0;
}

static struct fg_node *child(struct flamegraph *fg, struct fg_node *n, const char *name, const char *module,
			     enum pframe_kind kind, int *err)
{
	struct fg_node *c;
	size_t j;

	/* Interned strings: pointer equality is string equality. */
	if (n->nr_children <= 8) {
		for (size_t i = n->nr_children; i-- > 0;) {
			c = n->children[i];
			if (c->name == name && c->module == module && c->kind == kind)
				return c;
		}
	} else {
		for (j = node_hash(n, name, module, kind) & (fg->alloc_nodes - 1); (c = fg->nodes[j]);
		     j = (j + 1) & (fg->alloc_nodes - 1))
			if (c->parent == n && c->name == name && c->module == module && c->kind == kind)
				return c;
	}
	if ((fg->nr_nodes + 1) * 2 > fg->alloc_nodes && nodes_grow(fg) < 0)
		goto nomem;
	if (n->nr_children == n->alloc_children) {
		size_t a = n->alloc_children ? n->alloc_children * 2 : 4;
		struct fg_node **ch = reallocarray(n->children, a, sizeof(*ch));

		if (!ch)
			goto nomem;
		n->children = ch;
		n->alloc_children = a;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->name = name;
	c->module = module;
	c->kind = kind;
	c->parent = n;
	n->children[n->nr_children++] = c;
	for (j = node_hash(n, name, module, kind) & (fg->alloc_nodes - 1); fg->nodes[j]; j = (j + 1) & (fg->alloc_nodes - 1))
		;
	fg->nodes[j] = c;
	fg->nr_nodes++;
	return c;
nomem:
	*err = -ENOMEM;
	return NULL;
}

/*
 * One stack standing for @samples samples (folded lines count many).
 * @walk_strings: the frames' strings are profile_walk()'s (intern_walk()).
 */
static int add_stack(struct flamegraph *fg, const char *event, const struct pframe *frames,
		     size_t nr_frames, uint64_t period, uint64_t samples, bool walk_strings)
{
	const char *(*in)(struct flamegraph *, const char *, int *) = walk_strings ? intern_walk : intern;
	int err = 0;
	struct fg_tree *t = get_tree(fg, event, &err);
	struct fg_node *n;
	size_t keep = nr_frames, depth = 0;
	uint64_t sum;

	if (!t)
		return err;
	/* Totals that wrap would make every share nonsense: refuse the stack. */
	if (__builtin_add_overflow(t->root.weight, period, &sum))
		return -EOVERFLOW;
	if (nr_frames >= FG_MAX_DEPTH) {
		keep = FG_MAX_DEPTH - 1;
		t->truncated++;
	}
	n = &t->root;
	n->weight += period;
	n->samples += samples;
	fg->sorted = false;
	/* Leaf first in @frames: the outermost frame is the last. */
	for (size_t i = nr_frames; i-- > nr_frames - keep;) {
		const struct pframe *p = &frames[i];
		enum pframe_kind kind = p->kind;
		const char *name = in(fg, p->name && *p->name ? p->name : "[unknown]", &err);
		const char *module = in(fg, p->module, &err);

		if (err)
			return err;
		if (kind > PFRAME_UNKNOWN)
			kind = PFRAME_UNKNOWN;
		n = child(fg, n, name, module, kind, &err);
		if (!n)
			return err;
		n->weight += period;
		n->samples += samples;
		depth++;
	}
	if (keep < nr_frames) {
		n = child(fg, n, intern(fg, "[truncated]", &err), NULL, PFRAME_UNKNOWN, &err);
		if (!n)
			return err;
		n->weight += period;
		n->samples += samples;
		depth++;
	}
	n->self_weight += period;
	n->self_samples += samples;
	if (depth > t->max_depth)
		t->max_depth = depth;
	return 0;
}

int flamegraph__add(struct flamegraph *fg, const char *event, const struct pframe *frames,
		    size_t nr_frames, uint64_t period)
{
	return add_stack(fg, event, frames, nr_frames, period, 1, false);
}

int flamegraph__add_pstack(void *ctx, const struct pstack *s)
{
	return add_stack(ctx, s->event, s->frames, s->nr_frames, s->period, 1, true);
}

static int cmp_str(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a)
		return -1;
	if (!b)
		return 1;
	return strcmp(a, b);
}

int fg_node_cmp(const void *pa, const void *pb)
{
	const struct fg_node *a = *(const struct fg_node *const *)pa, *b = *(const struct fg_node *const *)pb;
	int r = strcmp(a->name, b->name);

	if (!r)
		r = cmp_str(a->module, b->module);
	if (!r)
		r = (int)a->kind - (int)b->kind;
	return r;
}

static void sort_node(struct fg_node *n)
{
	if (!n->nr_children)
		return;         /* qsort's base must not be NULL, even for 0 elements */
	qsort(n->children, n->nr_children, sizeof(*n->children), fg_node_cmp);
	for (size_t i = 0; i < n->nr_children; i++)
		sort_node(n->children[i]);
}

static int cmp_tree(const void *pa, const void *pb)
{
	return strcmp((*(const struct fg_tree *const *)pa)->event, (*(const struct fg_tree *const *)pb)->event);
}

static void sort_all(struct flamegraph *fg)
{
	if (fg->sorted)
		return;
	if (fg->nr_trees)
		qsort(fg->trees, fg->nr_trees, sizeof(*fg->trees), cmp_tree);
	for (size_t i = 0; i < fg->nr_trees; i++)
		sort_node(&fg->trees[i]->root);
	fg->sorted = true;
}

size_t flamegraph__nr_trees(struct flamegraph *fg)
{
	return fg->nr_trees;
}

struct fg_tree *flamegraph__tree(struct flamegraph *fg, size_t i)
{
	sort_all(fg);
	return i < fg->nr_trees ? fg->trees[i] : NULL;
}

struct fg_tree *flamegraph__find_tree(struct flamegraph *fg, const char *event)
{
	sort_all(fg);
	for (size_t i = 0; i < fg->nr_trees; i++)
		if (!strcmp(fg->trees[i]->event, event))
			return fg->trees[i];
	return NULL;
}

/* ---- differential ----------------------------------------------------- */

/* @n's child matching @c by name, module and kind (different flamegraphs: strcmp). */
static const struct fg_node *match_child(const struct fg_node *n, const struct fg_node *c)
{
	if (!n)
		return NULL;
	for (size_t i = 0; i < n->nr_children; i++) {
		const struct fg_node *x = n->children[i];

		if (x->kind == c->kind && !strcmp(x->name, c->name) && !cmp_str(x->module, c->module))
			return x;
	}
	return NULL;
}

static void diff_node(struct fg_node *n, const struct fg_node *base)
{
	n->base = base;
	for (size_t i = 0; i < n->nr_children; i++)
		diff_node(n->children[i], match_child(base, n->children[i]));
}

void flamegraph__diff(struct fg_tree *now, const struct fg_tree *base)
{
	diff_node(&now->root, base ? &base->root : NULL);
}

double fg_share(const struct fg_node *n, const struct fg_tree *t)
{
	return t->root.weight ? (double)n->weight / (double)t->root.weight : 0.0;
}

double fg_change(const struct fg_node *n, const struct fg_tree *now, const struct fg_tree *base)
{
	double b = n->base && base ? fg_share(n->base, base) : 0.0;

	return fg_share(n, now) - b;
}

/* ---- folded stacks ---------------------------------------------------- */

/* Brendan Gregg's annotations: _[k] kernel, _[j] JIT, _[i] inlined, _[w] waker. */
static enum pframe_kind folded_kind(char *name)
{
	size_t len = strlen(name);
	enum pframe_kind kind = PFRAME_USER;

	/* All of them: what we write back must read the same ("f_[j]_[k]" is f). */
	while (len > 4 && name[len - 4] == '_' && name[len - 3] == '[' && name[len - 1] == ']' &&
	       name[len - 2] && strchr("kjiw", name[len - 2])) {
		if (name[len - 2] == 'k')
			kind = PFRAME_KERNEL;
		len -= 4;
		name[len] = 0;
	}
	if (!strcmp(name, "[unknown]") || !*name)
		return PFRAME_UNKNOWN;
	/* perf names BPF programs bpf_prog_<tag>_<name>; stackcollapse marks them _[k]. */
	if (!strncmp(name, "bpf_prog_", 9))
		return PFRAME_BPF;
	return kind;
}

static int parse_folded_line(struct flamegraph *fg, const char *event, char *line,
			     struct pframe **frames, size_t *alloc)
{
	char *sp = strrchr(line, ' '), *end, *tok, *save = NULL;
	unsigned long long count;
	size_t nr = 0;

	if (!sp || sp == line || sp[1] < '0' || sp[1] > '9')
		return -EINVAL;
	errno = 0;
	count = strtoull(sp + 1, &end, 10);
	if (errno || *end)
		return -EINVAL;
	/* One space before the count, as flamegraph.pl reads it: a name may end in spaces. */
	*sp = 0;
	if (!*line)
		return -EINVAL;
	/* Root first in the file; leaf first in struct pframe arrays. */
	for (tok = strtok_r(line, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		if (nr == *alloc) {
			size_t a = *alloc ? *alloc * 2 : 64;
			struct pframe *p = reallocarray(*frames, a, sizeof(*p));

			if (!p)
				return -ENOMEM;
			*frames = p;
			*alloc = a;
		}
		(*frames)[nr] = (struct pframe){ .name = tok };
		(*frames)[nr].kind = folded_kind(tok);
		if ((*frames)[nr].kind == PFRAME_KERNEL)
			(*frames)[nr].module = "[kernel.kallsyms]";
		nr++;
	}
	if (!nr)
		return -EINVAL;
	for (size_t i = 0; i < nr / 2; i++) {
		struct pframe t = (*frames)[i];

		(*frames)[i] = (*frames)[nr - 1 - i];
		(*frames)[nr - 1 - i] = t;
	}
	if (!count)
		return 0;
	return add_stack(fg, event, *frames, nr, count, count, false);
}

int flamegraph__read_folded(struct flamegraph *fg, const char *event, FILE *f, const char *name)
{
	struct pframe *frames = NULL;
	size_t alloc = 0, len = 0, lineno = 0;
	char *line = NULL;
	ssize_t n;
	int r = 0;

	while ((n = getline(&line, &len, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (!n)
			continue;
		if ((size_t)n != strlen(line)) {
			fprintf(stderr, "%s:%zu: a NUL byte in a folded stack\n", name, lineno);
			r = -EINVAL;
			break;
		}
		r = parse_folded_line(fg, event, line, &frames, &alloc);
		if (r == -EINVAL) {
			fprintf(stderr, "%s:%zu: not a folded stack (\"frame;frame;... COUNT\")\n", name, lineno);
			break;
		}
		if (r == -EOVERFLOW) {
			fprintf(stderr, "%s:%zu: the counts add up past 2^64\n", name, lineno);
			break;
		}
		if (r < 0) {
			fprintf(stderr, "%s:%zu: %s\n", name, lineno, strerror(-r));
			break;
		}
	}
	if (!r && ferror(f)) {
		r = -EIO;
		fprintf(stderr, "%s: read error\n", name);
	}
	free(line);
	free(frames);
	return r;
}

/* A frame's name as a folded stack can hold it: ';' separates frames, '\n' stacks. */
static void put_folded_name(FILE *f, const struct fg_node *n)
{
	for (const char *s = n->name; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, f);
	if (n->kind == PFRAME_KERNEL || n->kind == PFRAME_BPF)
		fputs("_[k]", f);
}

static void write_folded_node(const struct fg_node *n, const struct fg_node **path, size_t depth,
			      bool periods, FILE *f)
{
	uint64_t v = periods ? n->self_weight : n->self_samples;

	if (v) {
		for (size_t i = 0; i < depth; i++) {
			if (i)
				fputc(';', f);
			put_folded_name(f, path[i]);
		}
		fprintf(f, " %" PRIu64 "\n", v);
	}
	for (size_t i = 0; i < n->nr_children; i++) {
		path[depth] = n->children[i];
		write_folded_node(n->children[i], path, depth + 1, periods, f);
	}
}

static int write_folded(const struct fg_tree *t, bool periods, FILE *f)
{
	const struct fg_node *path[FG_MAX_DEPTH + 1];

	for (size_t i = 0; i < t->root.nr_children; i++) {
		path[0] = t->root.children[i];
		write_folded_node(t->root.children[i], path, 1, periods, f);
	}
	return fflush(f) || ferror(f) ? -EIO : 0;
}

int flamegraph__write_folded(const struct fg_tree *t, FILE *f)
{
	return write_folded(t, false, f);
}

int flamegraph__write_folded_periods(const struct fg_tree *t, FILE *f)
{
	return write_folded(t, true, f);
}

/* ---- XML -------------------------------------------------------------- */

/*
 * Length of the valid UTF-8 sequence at @s that is also a character XML 1.0
 * allows, 0 if there is none (the caller writes U+FFFD for one byte).
 */
size_t fg_xml_char_len(const unsigned char *s)
{
	unsigned c = s[0];

	if (c < 0x80)
		return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
	if (c >= 0xC2 && c <= 0xDF)
		return (s[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
			return 0;
		if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))
			return 0;       /* overlong, surrogate */
		if (c == 0xEF && s[1] == 0xBF && (s[2] == 0xBE || s[2] == 0xBF))
			return 0;       /* U+FFFE, U+FFFF: not XML characters */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
			return 0;
		if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

/* Characters (as the browser counts them) in @s. */
static size_t xml_chars(const char *s)
{
	size_t n = 0, l;

	while (*s) {
		l = fg_xml_char_len((const unsigned char *)s);
		s += l ? l : 1;
		n++;
	}
	return n;
}

/* Escape at most @max characters of @s. */
static void xml_escape_n(FILE *f, const char *s, size_t max)
{
	for (size_t n = 0; *s && n < max; n++) {
		size_t l = fg_xml_char_len((const unsigned char *)s);

		switch (l ? *s : 0) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		case '\n': fputs("&#10;", f); break;
		case '\r': fputs("&#13;", f); break;
		case '\t': fputs("&#9;", f); break;
		case 0: fputs("\xEF\xBF\xBD", f); break; /* U+FFFD REPLACEMENT CHARACTER */
		default: fwrite(s, 1, l, f); break;
		}
		s += l ? l : 1;
	}
}

void fg_xml_escape(FILE *f, const char *s)
{
	xml_escape_n(f, s, SIZE_MAX);
}

/* ---- SVG -------------------------------------------------------------- */

#define FRAME_H FG_FRAME_H
#define FONT_SIZE 12
#define CHAR_W 7.0              /* a 12 px Verdana character, about; the script uses the same */
#define XPAD 10
#define MIN_PX 0.1              /* frames narrower than this are left out, as flamegraph.pl does */

struct svg_ctx {
	FILE *f;
	const struct fg_tree *t, *base;
	double scale;           /* px per weight unit */
	uint64_t min_w;         /* narrower frames are not drawn */
	unsigned rows, top;     /* rows drawn, y of the frames' area */
	bool icicle;
	double max_change;      /* differential: largest |change|, for the colour scale */
	const char *unit;       /* of the weights: "ns" or "period" */
};

static uint32_t name_hash(const char *s)
{
	return (uint32_t)hash_str(s);
}

static const char *kind_tag(enum pframe_kind k)
{
	switch (k) {
	case PFRAME_USER: return "u";
	case PFRAME_KERNEL: return "k";
	case PFRAME_BPF: return "b";
	default: return "x";
	}
}

/*
 * Colour families: user code warm (red to yellow, flamegraph.pl's "hot"),
 * kernel aqua, BPF purple, unresolved grey; within a family the shade comes
 * from the name, so one function keeps its colour across graphs.
 */
static void frame_colour(const struct svg_ctx *c, const struct fg_node *n, char out[48])
{
	uint32_t h = name_hash(n->name);
	double a = (h & 0xff) / 255.0, b = ((h >> 8) & 0xff) / 255.0, d = ((h >> 16) & 0xff) / 255.0;
	int r, g, bl;

	if (c->base) {
		/* Differential: red grew, blue shrank, white unchanged; new frames deep red. */
		double ch = fg_change(n, c->t, c->base), v;

		if (!n->base && n != &c->t->root) {
			snprintf(out, 48, "rgb(200,0,40)");
			return;
		}
		v = c->max_change > 0 ? ch / c->max_change : 0;
		if (v > 1)
			v = 1;
		if (v < -1)
			v = -1;
		if (v >= 0)
			r = 255, g = bl = (int)(255 - 215 * v);
		else
			bl = 255, r = g = (int)(255 + 215 * v);
		snprintf(out, 48, "rgb(%d,%d,%d)", r, g, bl);
		return;
	}
	if (n == &c->t->root) {
		snprintf(out, 48, "rgb(200,200,200)");
		return;
	}
	switch (n->kind) {
	case PFRAME_USER:
		r = 215 + (int)(40 * a), g = 70 + (int)(150 * b), bl = 30 + (int)(40 * d);
		break;
	case PFRAME_KERNEL:
		r = 40 + (int)(50 * a), g = 165 + (int)(60 * b), bl = 185 + (int)(60 * d);
		break;
	case PFRAME_BPF:
		r = 160 + (int)(50 * a), g = 90 + (int)(40 * b), bl = 210 + (int)(45 * d);
		break;
	default:
		r = g = bl = 165 + (int)(40 * a);
		break;
	}
	snprintf(out, 48, "rgb(%d,%d,%d)", r, g, bl);
}

static void max_change(struct svg_ctx *c, const struct fg_node *n, unsigned depth)
{
	double ch = fg_change(n, c->t, c->base);

	if (ch < 0)
		ch = -ch;
	if (depth && n->base && ch > c->max_change)
		c->max_change = ch;
	for (size_t i = 0; i < n->nr_children; i++)
		if (n->children[i]->weight >= c->min_w)
			max_change(c, n->children[i], depth + 1);
}

static unsigned drawn_rows(const struct svg_ctx *c, const struct fg_node *n)
{
	unsigned m = 0;

	for (size_t i = 0; i < n->nr_children; i++) {
		unsigned r;

		if (n->children[i]->weight < c->min_w)
			continue;
		r = drawn_rows(c, n->children[i]);
		if (r > m)
			m = r;
	}
	return m + 1;
}

/* The text that fits @px: whole, cut with "..", or nothing. */
static void fitted_text(FILE *f, const char *name, double px)
{
	size_t fit = (size_t)((px - 6) / CHAR_W), len = xml_chars(name);

	if (px < 6 || fit < 3)
		return;
	if (len <= fit) {
		fg_xml_escape(f, name);
	} else {
		xml_escape_n(f, name, fit - 2);
		fputs("..", f);
	}
}

static void write_frame(struct svg_ctx *c, const struct fg_node *n, uint64_t start, unsigned depth)
{
	FILE *f = c->f;
	double x = XPAD + start * c->scale, w = n->weight * c->scale;
	unsigned y = c->icicle ? c->top + depth * FRAME_H : c->top + (c->rows - 1 - depth) * FRAME_H;
	char colour[48];
	uint64_t s = start;

	frame_colour(c, n, colour);
	fprintf(f, "<g class=\"f\" s=\"%" PRIu64 "\" w=\"%" PRIu64 "\" d=\"%u\" t=\"%s\"%s n=\"",
		start, n->weight, depth, kind_tag(n->kind), c->base && !n->base && depth ? " new=\"1\"" : "");
	fg_xml_escape(f, n->name);
	fputs("\"><title>", f);
	fg_xml_escape(f, n->name);
	if (n->module) {
		fputs(" (", f);
		fg_xml_escape(f, n->module);
		fputc(')', f);
	}
	fprintf(f, "&#10;%" PRIu64 " samples", n->samples);
	if (n->weight != n->samples)
		fprintf(f, ", %" PRIu64 " %s", n->weight, c->unit);
	fprintf(f, ", %.2f%%", 100.0 * fg_share(n, c->t));
	if (c->base && depth) {
		if (n->base)
			fprintf(f, " (base %.2f%%, %+.2f points)", 100.0 * fg_share(n->base, c->base),
				100.0 * fg_change(n, c->t, c->base));
		else
			fputs(" (new: not in base)", f);
	}
	fprintf(f, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"%s/>"
		"<text x=\"%.2f\" y=\"%u\">", x, y, w, FRAME_H - 1, colour,
		c->base && !n->base && depth ? " stroke=\"#000\" stroke-dasharray=\"3,2\"" : "",
		x + 3, y + FRAME_H - 4);
	fitted_text(f, n->name, w);
	fputs("</text></g>\n", f);
	for (size_t i = 0; i < n->nr_children; i++) {
		const struct fg_node *ch = n->children[i];

		if (ch->weight >= c->min_w)
			write_frame(c, ch, s, depth + 1);
		s += ch->weight;
	}
}

struct gone {
	const struct fg_node *n;
	double share;
};

static void collect_gone(const struct fg_node *base, const struct fg_node *now, const struct fg_tree *bt,
			 struct gone *g, size_t *nr, size_t max)
{
	for (size_t i = 0; i < base->nr_children; i++) {
		const struct fg_node *b = base->children[i], *m = match_child(now, b);

		if (!m) {
			double sh = fg_share(b, bt);
			size_t j;

			/* Keep the @max widest, widest first. */
			for (j = *nr; j > 0 && g[j - 1].share < sh; j--)
				if (j < max)
					g[j] = g[j - 1];
			if (j < max) {
				g[j] = (struct gone){ b, sh };
				if (*nr < max)
					(*nr)++;
			}
		} else {
			collect_gone(b, m, bt, g, nr, max);
		}
	}
}

static const char *weight_unit(const char *event)
{
	/* The clocks and perfrecd's off-CPU event count nanoseconds per sample. */
	return strstr(event, "clock") || strstr(event, "offcpu") ? "ns" : "period";
}

static const char svg_style[] =
	"<style>\n"
	"text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	".f text { pointer-events: none; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	".f { cursor: pointer; }\n"
	".hidden { display: none; }\n"
	".anc rect { opacity: 0.6; }\n"
	".btn { cursor: pointer; fill: #036; text-decoration: underline; }\n"
	".title { font-size: 17px; text-anchor: middle; }\n"
	".m { text-anchor: end; }\n"
	"</style>\n";

/*
 * The script: state is only in the DOM (attributes s, w, d, n of each
 * frame, total of each graph), so it needs no data of its own.
 */
static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"(function () {\n"
	"  var svg = document.documentElement;\n"
	"  var W = +svg.getAttribute('fgwidth'), XP = +svg.getAttribute('fgpad'), CW = +svg.getAttribute('fgcharw');\n"
	"  var graphs = Array.prototype.slice.call(svg.querySelectorAll('g.graph'));\n"
	"  function frames(g) { return Array.prototype.slice.call(g.querySelectorAll('g.f')); }\n"
	"  function num(e, a) { return +e.getAttribute(a); }\n"
	"  function fit(e, px) {\n"
	"    var t = e.querySelector('text'), name = Array.from(e.getAttribute('n'));\n"
	"    var n = Math.floor((px - 6) / CW);\n"
	"    if (px < 6 || n < 3) t.textContent = '';\n"
	"    else if (name.length <= n) t.textContent = name.join('');\n"
	"    else t.textContent = name.slice(0, n - 2).join('') + '..';\n"
	"  }\n"
	"  function place(g, zs, zw, zd) {\n"
	"    var scale = (W - 2 * XP) / zw;\n"
	"    frames(g).forEach(function (e) {\n"
	"      var s = num(e, 's'), w = num(e, 'w'), d = num(e, 'd');\n"
	"      var r = e.querySelector('rect'), t = e.querySelector('text'), x, px;\n"
	"      e.classList.remove('hidden'); e.classList.remove('anc');\n"
	"      if (d < zd) {\n"
	"        if (s > zs || s + w < zs + zw) { e.classList.add('hidden'); return; }\n"
	"        e.classList.add('anc'); x = XP; px = W - 2 * XP;\n"
	"      } else {\n"
	"        if (s < zs || s + w > zs + zw) { e.classList.add('hidden'); return; }\n"
	"        x = XP + (s - zs) * scale; px = w * scale;\n"
	"        if (px < 0.1) { e.classList.add('hidden'); return; }\n"
	"      }\n"
	"      r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', px.toFixed(2));\n"
	"      t.setAttribute('x', (x + 3).toFixed(2)); fit(e, px);\n"
	"    });\n"
	"    g.setAttribute('zoomed', zd > 0 ? '1' : '0');\n"
	"  }\n"
	"  function zoom(e) {\n"
	"    var g = e.closest('g.graph');\n"
	"    place(g, num(e, 's'), Math.max(num(e, 'w'), 1), num(e, 'd'));\n"
	"  }\n"
	"  function reset() { graphs.forEach(function (g) { place(g, 0, Math.max(num(g, 'total'), 1), 0); }); }\n"
	"  function search(re) {\n"
	"    var rx = null;\n"
	"    if (re) { try { rx = new RegExp(re); } catch (x) { rx = null; } }\n"
	"    graphs.forEach(function (g) {\n"
	"      var iv = [], total = num(g, 'total'), m = g.querySelector('.m');\n"
	"      frames(g).forEach(function (e) {\n"
	"        var r = e.querySelector('rect'), n = e.getAttribute('n'), hit;\n"
	"        if (!r.hasAttribute('fill0')) r.setAttribute('fill0', r.getAttribute('fill'));\n"
	"        hit = re && num(e, 'd') > 0 && (rx ? rx.test(n) : n.indexOf(re) >= 0);\n"
	"        r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('fill0'));\n"
	"        if (hit) iv.push([num(e, 's'), num(e, 's') + num(e, 'w')]);\n"
	"      });\n"
	"      /* A match inside a match counts once: merge the intervals. */\n"
	"      iv.sort(function (a, b) { return a[0] - b[0]; });\n"
	"      var sum = 0, cs = -1, ce = -1;\n"
	"      iv.forEach(function (v) {\n"
	"        if (v[0] >= ce) { sum += ce - cs; cs = v[0]; ce = v[1]; }\n"
	"        else if (v[1] > ce) ce = v[1];\n"
	"      });\n"
	"      sum += ce - cs;\n"
	"      m.textContent = re ? 'Matched: ' + (total ? 100 * sum / total : 0).toFixed(2) + '%' : '';\n"
	"      g.setAttribute('matched', re ? (total ? sum / total : 0).toFixed(6) : '');\n"
	"    });\n"
	"  }\n"
	"  var details = svg.getElementById('details');\n"
	"  svg.addEventListener('mouseover', function (ev) {\n"
	"    var e = ev.target.closest && ev.target.closest('g.f');\n"
	"    if (e) details.textContent = e.querySelector('title').textContent.replace(/\\n/g, ' \\u2014 ');\n"
	"  });\n"
	"  svg.addEventListener('click', function (ev) {\n"
	"    var e = ev.target.closest && ev.target.closest('g.f');\n"
	"    if (e) zoom(e);\n"
	"  });\n"
	"  svg.getElementById('reset').addEventListener('click', reset);\n"
	"  svg.getElementById('search').addEventListener('click', function () {\n"
	"    var re = window.prompt('Search (regular expression or text):', '');\n"
	"    if (re !== null) search(re);\n"
	"  });\n"
	"  svg.getElementById('clear').addEventListener('click', function () { search(''); });\n"
	"  /* #zoom=NAME&search=RE&reset, in order: the widest frame called NAME is\n"
	"     clicked, RE searched, Reset zoom clicked. */\n"
	"  var h = window.location.hash.replace(/^#/, '').split('&');\n"
	"  h.forEach(function (kv) {\n"
	"    var i = kv.indexOf('='), k = i < 0 ? kv : kv.slice(0, i), v = i < 0 ? '' : kv.slice(i + 1);\n"
	"    try { v = decodeURIComponent(v); } catch (x) { /* a stray %: take it as typed */ }\n"
	"    if (k === 'zoom') {\n"
	"      var best = null;\n"
	"      graphs.forEach(function (g) { frames(g).forEach(function (e) {\n"
	"        if (e.getAttribute('n') === v && (!best || num(e, 'w') > num(best, 'w'))) best = e;\n"
	"      }); });\n"
	"      if (best) best.dispatchEvent(new MouseEvent('click', { bubbles: true }));\n"
	"    } else if (k === 'search') {\n"
	"      search(v);\n"
	"    } else if (k === 'reset') {\n"
	"      svg.getElementById('reset').dispatchEvent(new MouseEvent('click', { bubbles: true }));\n"
	"    }\n"
	"  });\n"
	"  svg.setAttribute('fgready', '1');\n"
	"})();\n"
	"]]></script>\n";

/*
 * Lays out the graphs one under another, @width pixels wide: sets each
 * one's scale, rows and top; *ret_any_diff when one has a base.  Returns
 * the SVG's height.
 */
static unsigned layout_graphs(struct svg_ctx *cs, struct fg_tree *const *trees, const struct fg_tree *const *bases,
			      size_t nr, const struct fg_svg_opts *o, unsigned width, FILE *f, bool *ret_any_diff)
{
	unsigned y = o && o->subtitle ? 80 : 64;

	for (size_t i = 0; i < nr; i++) {
		struct svg_ctx *c = &cs[i];

		c->f = f;
		c->t = trees[i];
		c->base = bases ? bases[i] : NULL;
		c->icicle = o && o->icicle;
		c->unit = weight_unit(c->t->event);
		c->scale = c->t->root.weight ? (double)(width - 2 * XPAD) / (double)c->t->root.weight : 0;
		c->min_w = c->scale > 0 ? (uint64_t)(MIN_PX / c->scale) : 0;
		if (c->min_w < 1)
			c->min_w = 1;
		c->rows = drawn_rows(c, &c->t->root);
		if (c->base) {
			*ret_any_diff = true;
			max_change(c, &c->t->root, 0);
		}
		c->top = y + 24;
		y = c->top + c->rows * FRAME_H + 8;
		if (c->base)
			y += 20;        /* the frames gone since the base */
		if (c->t->truncated)
			y += 16;
	}
	return y + 40;
}

/* The SVG's opening, style, title and buttons. */
static void write_svg_head(FILE *f, const struct fg_svg_opts *o, unsigned width, unsigned height, bool any_diff)
{
	unsigned y;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" fgwidth=\"%u\" fgpad=\"%u\" fgcharw=\"%.1f\">\n",
		width, height, width, height, width, XPAD, CHAR_W);
	fputs(svg_style, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f0\"/>\n", width, height);
	fprintf(f, "<text class=\"title\" x=\"%u\" y=\"24\">", width / 2);
	fg_xml_escape(f, o && o->title ? o->title : any_diff ? "Differential Flame Graph" : o && o->icicle ? "Icicle Graph" : "Flame Graph");
	fputs("</text>\n", f);
	if (o && o->subtitle) {
		fprintf(f, "<text x=\"%u\" y=\"44\" style=\"text-anchor: middle; fill: #555\">", width / 2);
		fg_xml_escape(f, o->subtitle);
		fputs("</text>\n", f);
	}
	y = o && o->subtitle ? 64 : 48;
	fprintf(f, "<text id=\"reset\" class=\"btn\" x=\"%u\" y=\"%u\">Reset zoom</text>\n", XPAD, y);
	fprintf(f, "<text id=\"clear\" class=\"btn\" x=\"%u\" y=\"%u\" style=\"text-anchor: end\">Clear</text>\n",
		width - XPAD - 60, y);
	fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"%u\" style=\"text-anchor: end\">Search</text>\n",
		width - XPAD, y);
	if (any_diff)
		fprintf(f, "<text x=\"%u\" y=\"%u\" style=\"text-anchor: middle; fill: #555\">widths: this window; "
			"red: share grew, blue: shrank (against the base); dashed: not in the base</text>\n", width / 2, y);
}

/* One event's graph: its heading, frames, what is gone since the base, what was cut. */
static void write_graph(struct svg_ctx *c, unsigned width)
{
	const struct fg_tree *t = c->t;
	FILE *f = c->f;
	unsigned y;

	fprintf(f, "<g class=\"graph\" event=\"");
	fg_xml_escape(f, t->event);
	fprintf(f, "\" total=\"%" PRIu64 "\" samples=\"%" PRIu64 "\" icicle=\"%d\">\n",
		t->root.weight, t->root.samples, c->icicle);
	fprintf(f, "<text x=\"%u\" y=\"%u\" style=\"font-weight: bold\">", XPAD, c->top - 8);
	fg_xml_escape(f, t->event);
	fprintf(f, ": %" PRIu64 " samples", t->root.samples);
	if (t->root.weight != t->root.samples)
		fprintf(f, ", %" PRIu64 " %s", t->root.weight, c->unit);
	fprintf(f, "</text><text class=\"m\" x=\"%u\" y=\"%u\"></text>\n", width - XPAD, c->top - 8);
	write_frame(c, &t->root, 0, 0);
	y = c->top + c->rows * FRAME_H + 8;
	if (c->base) {
		struct gone g[8];
		size_t n = 0;

		collect_gone(&c->base->root, &t->root, c->base, g, &n, 8);
		fprintf(f, "<text class=\"gone\" x=\"%u\" y=\"%u\">Only in the base: ", XPAD, y + 8);
		if (!n)
			fputs("nothing", f);
		for (size_t j = 0; j < n; j++) {
			fputs(j ? ", " : "", f);
			fg_xml_escape(f, g[j].n->name);
			fprintf(f, " (%.2f%%)", 100.0 * g[j].share);
		}
		fputs("</text>\n", f);
		y += 20;
	}
	if (t->truncated)
		fprintf(f, "<text x=\"%u\" y=\"%u\">%" PRIu64 " stacks deeper than %u frames were cut "
			"([truncated])</text>\n", XPAD, y + 8, t->truncated, FG_MAX_DEPTH);
	fputs("</g>\n", f);
}

int flamegraph__write_svg(struct fg_tree *const *trees, const struct fg_tree *const *bases,
			  size_t nr, const struct fg_svg_opts *o, FILE *f)
{
	unsigned width = o && o->width ? o->width : 1200, height;
	struct svg_ctx *cs = calloc(nr ? nr : 1, sizeof(*cs));
	bool any_diff = false;

	if (!cs)
		return -ENOMEM;
	/* Layout first: the SVG's height goes in its first line. */
	height = layout_graphs(cs, trees, bases, nr, o, width, f, &any_diff);
	write_svg_head(f, o, width, height, any_diff);
	for (size_t i = 0; i < nr; i++)
		write_graph(&cs[i], width);
	fprintf(f, "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n", XPAD, height - 14);
	fputs(svg_script, f);
	fputs("</svg>\n", f);
	free(cs);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

