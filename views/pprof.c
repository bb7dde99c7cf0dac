// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl pprof [-e EVENT] [--pid N] [--comm C] [--cgroup CG]
 * [--container ID] [--pod UID] [--unit NAME] [--from T --to T] [-o OUT.pb.gz] FILE|DIR...`: the files' samples as a
 * gzip'ed pprof profile (profile.proto, views/pprof.proto) for go tool
 * pprof, Pyroscope, Parca and the rest.
 *
 * profile_walk() hands over symbolized stacks; this file interns them into
 * pprof's tables (strings, functions, mappings, locations) and sums equal
 * samples (same event, stack, pid, tid, comm, cpu and cgroup) into one.
 * Samples are labelled with what their cgroup path says (runtime,
 * container, pod, qos, unit, slice: internal/cgroup-label.h) beside the path.
 * Each event gets two value columns, its sample count and its summed
 * period; cpu-clock's period is CPU time in ns ("cpu"), offcpu-time's
 * blocked time in ns.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "cgroup-label.h"
#include "fsutil.h"
#include "pprof.h"
#include "pprof.pb-c.h"

/*
 * Keys of the tables, copied into blocks freed together at the end: a
 * large profile makes millions of them, and a malloc() and free() each
 * was a tenth of its time.  Keys are 8-byte aligned (location ids are read
 * back from sample keys in place).
 */
struct arena_block {
	struct arena_block *next;
	uint64_t data[];
};

struct arena {
	struct arena_block *head;
	char *cur;
	size_t left;
};

#define ARENA_BLOCK (1u << 20)

static void *arena_alloc(struct arena *a, size_t len)
{
	void *p;

	len = (len + 7) & ~(size_t)7;
	if (len > a->left) {
		size_t sz = len > ARENA_BLOCK ? len : ARENA_BLOCK;
		struct arena_block *b = malloc(sizeof(*b) + sz);

		if (!b)
			return NULL;
		b->next = a->head;
		a->head = b;
		a->cur = (char *)b->data;
		a->left = sz;
	}
	p = a->cur;
	a->cur += len;
	a->left -= len;
	return p;
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_block *b = a->head;

		a->head = b->next;
		free(b);
	}
}

/* An open-addressing table from byte keys to indexes (1-based ids). */
struct table {
	struct slot {
		uint64_t hash;
		void *key;          /* NULL: empty */
		uint32_t len;
		uint32_t idx;
	} *slots;
	size_t cap, used;
};

/*
 * Eight bytes a step, then a final mix so that the low bits (the slot)
 * depend on every input bit: a byte-at-a-time FNV over every key was a
 * quarter of pprof's time.
 */
static uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (len) {
		w = 0;
		memcpy(&w, b, len);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h ? h : 1;
}

static struct slot *table_find(const struct table *t, uint64_t h, const void *key, size_t len)
{
	size_t mask = t->cap - 1;

	if (!t->cap)
		return NULL;
	for (size_t i = h & mask; t->slots[i].key; i = (i + 1) & mask) {
		struct slot *s = &t->slots[i];

		if (s->hash == h && s->len == len && !memcmp(s->key, key, len))
			return s;
	}
	return NULL;
}

/* The index stored for @key, or (size_t)-1. */
static size_t table_lookup(const struct table *t, const void *key, size_t len)
{
	const struct slot *s = table_find(t, hash_bytes(key, len), key, len);

	return s ? s->idx : (size_t)-1;
}

/*
 * The index stored for @key, or @next for a new key (*@ret_created), which
 * is copied into @a (NUL-terminated, so string keys can be used as strings:
 * *@ret_key).  Keys and indexes are under 4 GiB.
 */
static int table_get(struct table *t, struct arena *a, const void *key, size_t len, size_t next,
		     size_t *ret_idx, bool *ret_created, const void **ret_key)
{
	uint64_t h = hash_bytes(key, len);
	struct slot *s = table_find(t, h, key, len);
	size_t i, mask;

	if (s) {
		*ret_idx = s->idx;
		*ret_created = false;
		if (ret_key)
			*ret_key = s->key;
		return 0;
	}
	if (len >= UINT32_MAX || next >= UINT32_MAX)
		return -E2BIG;
	if ((t->used + 1) * 4 > t->cap * 3) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct slot *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->slots[j].key)
				continue;
			for (i = t->slots[j].hash & (ncap - 1); n[i].key; i = (i + 1) & (ncap - 1))
				;
			n[i] = t->slots[j];
		}
		free(t->slots);
		t->slots = n;
		t->cap = ncap;
	}
	mask = t->cap - 1;
	for (i = h & mask; t->slots[i].key; i = (i + 1) & mask)
		;
	s = &t->slots[i];
	s->key = arena_alloc(a, len + 1);
	if (!s->key)
		return -ENOMEM;
	memcpy(s->key, key, len);
	((char *)s->key)[len] = 0;
	s->hash = h;
	s->len = (uint32_t)len;
	s->idx = (uint32_t)next;
	t->used++;
	*ret_idx = next;
	*ret_created = true;
	if (ret_key)
		*ret_key = s->key;
	return 0;
}

static void table_free(struct table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->used = 0;
}

struct vec {
	void *v;
	size_t nr, cap, elem;
};

/* A zeroed new element at the end of @v, or NULL. */
static void *vec_push(struct vec *v)
{
	char *e;

	if (v->nr == v->cap) {
		size_t n = v->cap ? v->cap * 2 : 64;
		void *p = reallocarray(v->v, n, v->elem);

		if (!p)
			return NULL;
		v->v = p;
		v->cap = n;
	}
	e = (char *)v->v + v->nr++ * v->elem;
	memset(e, 0, v->elem);
	return e;
}

#define VEC_AT(vec, type, i) (((type *)(vec).v)[i])

struct fn_row { int64_t name, file, system_name; };
struct map_row { uint64_t start, limit, off; int64_t file, bid; };
struct loc_row { uint64_t map, addr; size_t first_line, nr_lines; };
struct line_row { uint64_t fn; int64_t line; };
struct sample_row {
	const uint64_t *locs;    /* in the sample's key (the tables' arena) */
	size_t nr_locs;
	uint32_t event;
	uint32_t labels;         /* in pprof.label_sets */
	uint64_t count, period;
};
/* Labels of samples that differ only in their stacks: packed once, shared. */
struct label_row {
	uint32_t pid, tid, cpu, pad;
	int64_t comm, cgroup;
};

#define KEY_HEAD 1      /* event << 32 | label set: then the location ids */
#define LABEL_MEMO 64
#define NR_LABELS 11 /* pid tid comm cpu cgroup, and cgroup_label's six */
#define MAX_LOC_FRAMES 16

struct pprof {
	struct arena keys;       /* every table's keys */
	struct table strtab, fntab, maptab, loctab, smptab;
	/*
	 * Shortcuts keyed by what the walk hands over, not by content: a
	 * string's address to its id, a location's frames (addresses of their
	 * strings, mapping, address, lines) to its id.  profile.h promises the
	 * strings live as long as the walk, so an address names one string
	 * for the whole run; equal contents at two addresses take the slow
	 * path once each and meet in the content-keyed tables above.
	 */
	struct table ptrstrtab, ptrloctab;
	struct table labeltab;
	struct vec label_sets;   /* struct label_row */
	/* The label set a thread had last, by tid: consecutive samples mostly share one. */
	struct label_memo {
		struct label_row lr;
		uint32_t set;
		bool used;
	} label_memo[LABEL_MEMO];
	struct vec strs;         /* const char *, keys of strtab; [0] = "" */
	struct vec fns, maps, locs, lines, samples;
	struct vec events;       /* int64_t: string ids of the events' names */
	struct vec stack;        /* uint64_t scratch: one sample's key */
	uint64_t first_wall, last_wall;
};

static void pprof_init(struct pprof *p)
{
	memset(p, 0, sizeof(*p));
	p->strs.elem = sizeof(const char *);
	p->fns.elem = sizeof(struct fn_row);
	p->maps.elem = sizeof(struct map_row);
	p->locs.elem = sizeof(struct loc_row);
	p->lines.elem = sizeof(struct line_row);
	p->samples.elem = sizeof(struct sample_row);
	p->label_sets.elem = sizeof(struct label_row);
	p->events.elem = sizeof(int64_t);
	p->stack.elem = sizeof(uint64_t);
}

static void pprof_exit(struct pprof *p)
{
	table_free(&p->strtab);
	table_free(&p->fntab);
	table_free(&p->maptab);
	table_free(&p->loctab);
	table_free(&p->smptab);
	table_free(&p->ptrstrtab);
	table_free(&p->ptrloctab);
	table_free(&p->labeltab);
	free(p->label_sets.v);
	arena_free(&p->keys);
	free(p->strs.v);
	free(p->fns.v);
	free(p->maps.v);
	free(p->locs.v);
	free(p->lines.v);
	free(p->samples.v);
	free(p->events.v);
	free(p->stack.v);
}

/* Index of @s in the string table (0 for NULL and ""), or -ENOMEM. */
static int64_t str_id(struct pprof *p, const char *s)
{
	const void *key;
	const char **slot;
	size_t idx;
	bool created;

	if (!s)
		s = "";
	if (table_get(&p->strtab, &p->keys, s, strlen(s), p->strs.nr, &idx, &created, &key) < 0)
		return -ENOMEM;
	if (created) {
		if (!(slot = vec_push(&p->strs)))
			return -ENOMEM;
		*slot = key;
	}
	return (int64_t)idx;
}

/* str_id() of a string that lives as long as the walk: by its address after the first time. */
static int64_t walk_str_id(struct pprof *p, const char *s)
{
	uintptr_t key = (uintptr_t)s;
	size_t idx = table_lookup(&p->ptrstrtab, &key, sizeof(key));
	int64_t id;
	bool created;

	if (idx != (size_t)-1)
		return (int64_t)idx;
	id = str_id(p, s);
	if (id < 0 || table_get(&p->ptrstrtab, &p->keys, &key, sizeof(key), (size_t)id, &idx, &created, NULL) < 0)
		return -ENOMEM;
	return id;
}

static int64_t fn_id(struct pprof *p, const struct pframe *f)
{
	struct fn_row row, *r;
	size_t idx;
	bool created;

	/* pprof's convention: name demangled, system_name as the binary has it. */
	row.name = str_id(p, f->name);
	row.file = str_id(p, f->file);
	row.system_name = str_id(p, f->system_name ? f->system_name : f->name);
	if (row.name < 0 || row.file < 0 || row.system_name < 0 ||
	    table_get(&p->fntab, &p->keys, &row, sizeof(row), p->fns.nr + 1, &idx, &created, NULL) < 0)
		return -ENOMEM;
	if (created) {
		if (!(r = vec_push(&p->fns)))
			return -ENOMEM;
		*r = row;
	}
	return (int64_t)idx;
}

static int64_t map_id(struct pprof *p, const struct pframe *f)
{
	/* Keyed by the raw build id: its hex string is made once, for a new mapping. */
	struct {
		uint64_t start, limit, off;
		int64_t file;
		uint8_t bid[20], bid_len, pad[3];
	} key = { .start = f->map_start, .limit = f->map_end, .off = f->map_pgoff };
	struct map_row *r;
	size_t idx;
	bool created;

	key.file = str_id(p, f->module ? f->module : "[unknown]");
	key.bid_len = f->build_id_len < 20 ? f->build_id_len : 20;
	if (key.bid_len)
		memcpy(key.bid, f->build_id, key.bid_len);
	if (key.file < 0 ||
	    table_get(&p->maptab, &p->keys, &key, sizeof(key), p->maps.nr + 1, &idx, &created, NULL) < 0)
		return -ENOMEM;
	if (created) {
		char hex[2 * 20 + 1] = "";

		for (unsigned i = 0; i < key.bid_len; i++)
			sprintf(hex + 2 * i, "%02x", key.bid[i]);
		if (!(r = vec_push(&p->maps)))
			return -ENOMEM;
		*r = (struct map_row){ key.start, key.limit, key.off, key.file, str_id(p, hex) };
		if (r->bid < 0)
			return -ENOMEM;
	}
	return (int64_t)idx;
}

/*
 * The location of frames [0, n): inlined frames and the one holding them,
 * all at one address.  Keyed by mapping, address and its functions/lines.
 */
static int64_t loc_id_slow(struct pprof *p, const struct pframe *f, size_t n)
{
	uint64_t key[2 + 2 * MAX_LOC_FRAMES];
	struct loc_row *r;
	struct line_row *l;
	size_t idx, k = 0;
	bool created;
	int64_t m = map_id(p, f);

	if (m < 0)
		return m;
	key[k++] = (uint64_t)m;
	key[k++] = f->addr;
	for (size_t i = 0; i < n && i < MAX_LOC_FRAMES; i++) {
		int64_t fn = fn_id(p, &f[i]);

		if (fn < 0)
			return fn;
		key[k++] = (uint64_t)fn;
		key[k++] = f[i].line;
	}
	if (table_get(&p->loctab, &p->keys, key, k * sizeof(key[0]), p->locs.nr + 1, &idx, &created, NULL) < 0)
		return -ENOMEM;
	if (!created)
		return (int64_t)idx;
	if (!(r = vec_push(&p->locs)))
		return -ENOMEM;
	r->map = (uint64_t)m;
	r->addr = f->addr;
	r->first_line = p->lines.nr;
	for (size_t i = 2; i < k; i += 2) {
		if (!(l = vec_push(&p->lines)))
			return -ENOMEM;
		l->fn = key[i];
		l->line = (int64_t)key[i + 1];
	}
	r->nr_lines = (k - 2) / 2;
	return (int64_t)idx;
}

/*
 * loc_id_slow() hashes every string of the frames and looks up four tables
 * per frame; the same few thousand locations come back millions of times,
 * so they are first looked up by everything loc_id_slow() reads, strings
 * by address (see struct pprof).
 */
static int64_t loc_id(struct pprof *p, const struct pframe *f, size_t n)
{
	uint64_t key[7 + 4 * MAX_LOC_FRAMES];
	size_t k = 0, idx;
	int64_t id;
	bool created;

	if (n > MAX_LOC_FRAMES)
		n = MAX_LOC_FRAMES;
	key[k++] = f->addr;
	key[k++] = f->map_start;
	key[k++] = f->map_end;
	key[k++] = f->map_pgoff;
	key[k++] = (uintptr_t)f->module;
	key[k++] = (uintptr_t)f->build_id;
	key[k++] = f->build_id_len;
	for (size_t i = 0; i < n; i++) {
		key[k++] = (uintptr_t)f[i].name;
		key[k++] = (uintptr_t)f[i].system_name;
		key[k++] = (uintptr_t)f[i].file;
		key[k++] = f[i].line;
	}
	idx = table_lookup(&p->ptrloctab, key, k * sizeof(key[0]));
	if (idx != (size_t)-1)
		return (int64_t)idx;
	id = loc_id_slow(p, f, n);
	if (id < 0 ||
	    table_get(&p->ptrloctab, &p->keys, key, k * sizeof(key[0]), (size_t)id, &idx, &created, NULL) < 0)
		return -ENOMEM;
	return id;
}

/* Events by their string id: the walk's strings are gone when the profile is packed. */
static int event_idx(struct pprof *p, const char *event)
{
	int64_t id = walk_str_id(p, event), *e;

	if (id < 0)
		return -ENOMEM;
	for (size_t i = 0; i < p->events.nr; i++)
		if (VEC_AT(p->events, int64_t, i) == id)
			return (int)i;
	if (!(e = vec_push(&p->events)))
		return -ENOMEM;
	*e = id;
	return (int)p->events.nr - 1;
}

/* The index of @lr's set in pprof.label_sets, made if new; -ENOMEM. */
static int64_t label_set(struct pprof *p, const struct label_row *lr)
{
	struct label_memo *m = &p->label_memo[lr->tid % LABEL_MEMO];
	size_t set;
	bool created;

	if (m->used && !memcmp(&m->lr, lr, sizeof(*lr)))
		return m->set;
	if (table_get(&p->labeltab, &p->keys, lr, sizeof(*lr), p->label_sets.nr, &set, &created, NULL) < 0)
		return -ENOMEM;
	if (created) {
		struct label_row *l = vec_push(&p->label_sets);

		if (!l)
			return -ENOMEM;
		*l = *lr;
	}
	*m = (struct label_memo){ .lr = *lr, .set = (uint32_t)set, .used = true };
	return (int64_t)set;
}

int pprof_add_stack(void *ctx, const struct pstack *s)
{
	struct pprof *p = ctx;
	struct sample_row *row;
	const void *stored;
	uint64_t *id;
	size_t idx, i = 0, keylen;
	bool created;
	int ev = event_idx(p, s->event);
	int64_t comm = walk_str_id(p, s->comm), cgroup = walk_str_id(p, s->cgroup), set;
	struct label_row lr = { .pid = s->pid, .tid = s->tid, .cpu = s->cpu };
	uint64_t *key;

	if (ev < 0 || comm < 0 || cgroup < 0)
		return -ENOMEM;
	lr.comm = comm;
	lr.cgroup = cgroup;
	set = label_set(p, &lr);
	if (set < 0)
		return -ENOMEM;
	p->stack.nr = 0;
	if (!(key = vec_push(&p->stack)))
		return -ENOMEM;
	*key = (uint64_t)ev << 32 | (uint64_t)set;
	while (i < s->nr_frames) {
		size_t n = 1;
		int64_t l;

		/* inlined frames belong with the next non-inlined one at the same address */
		while (s->frames[i + n - 1].inlined && i + n < s->nr_frames && n < MAX_LOC_FRAMES &&
		       s->frames[i + n].addr == s->frames[i].addr)
			n++;
		l = loc_id(p, &s->frames[i], n);
		if (l < 0 || !(id = vec_push(&p->stack)))
			return -ENOMEM;
		*id = (uint64_t)l;
		i += n;
	}
	key = p->stack.v;
	keylen = p->stack.nr * sizeof(uint64_t);
	if (table_get(&p->smptab, &p->keys, key, keylen, p->samples.nr, &idx, &created, &stored) < 0)
		return -ENOMEM;
	if (created) {
		if (!(row = vec_push(&p->samples)))
			return -ENOMEM;
		row->event = (uint32_t)ev;
		row->labels = (uint32_t)set;
		row->locs = (const uint64_t *)stored + KEY_HEAD;
		row->nr_locs = p->stack.nr - KEY_HEAD;
	}
	row = &VEC_AT(p->samples, struct sample_row, idx);
	row->count++;
	row->period += s->period;
	if (s->wall_ns && (!p->first_wall || s->wall_ns < p->first_wall))
		p->first_wall = s->wall_ns;
	if (s->wall_ns > p->last_wall)
		p->last_wall = s->wall_ns;
	return 0;
}

/* The two value columns of @event: its sample count and its period sum. */
static void event_types(const char *event, const char **count_type, const char **period_type, const char **unit)
{
	if (!strcmp(event, "cpu-clock") || !strcmp(event, "task-clock")) {
		*count_type = "samples";
		*period_type = "cpu";
		*unit = "nanoseconds";
	} else if (!strcmp(event, "offcpu-time")) {
		*count_type = "offcpu-samples";
		*period_type = "offcpu-time";
		*unit = "nanoseconds";
	} else {
		*count_type = NULL;
		*period_type = event;
		*unit = "count";
	}
}

/*
 * What the cgroup path says, as string labels beside "cgroup" (runtime,
 * container, pod, qos, unit, slice: internal/cgroup-label.h), so Parca and go
 * tool pprof -tagfocus can select a container or pod without knowing how
 * its runtime names cgroups.  Empty ones are left out.
 */
static int cgroup_labels(struct pprof *p, const char *path, Perfrec__Pprof__Label *l, size_t *nl)
{
	struct cgroup_label cl;
	const struct {
		const char *key, *val;
	} kv[] = {
		{ "runtime", cl.runtime }, { "container", cl.container }, { "pod", cl.pod },
		{ "qos", cl.qos }, { "unit", cl.unit }, { "slice", cl.slice },
	};

	cgroup_label_parse(path, &cl);
	for (size_t k = 0; k < sizeof(kv) / sizeof(kv[0]); k++) {
		int64_t key, val;

		if (!kv[k].val[0])
			continue;
		key = str_id(p, kv[k].key);
		val = str_id(p, kv[k].val);
		if (key < 0 || val < 0)
			return -ENOMEM;
		l[*nl].key = key;
		l[(*nl)++].str = val;
	}
	return 0;
}

/*
 * The profile message being packed: its arrays point into the tables of
 * a struct pprof, which must outlive it.  Freed by pack_free().
 */
struct pack {
	Perfrec__Pprof__Profile prof;
	size_t ncols;           /* two values (count, then period) per event */
	Perfrec__Pprof__ValueType *vt, **vtp, period_type;
	Perfrec__Pprof__Sample *sm, **smp;
	Perfrec__Pprof__Label *lb, **lbp;
	size_t *nlabels;        /* labels in each label set */
	int64_t *vals;
	Perfrec__Pprof__Mapping *mp, **mpp;
	Perfrec__Pprof__Location *lc, **lcp;
	Perfrec__Pprof__Line *ln, **lnp;
	Perfrec__Pprof__Function *fn, **fnp;
};

/* The string ids of the labels every sample may carry. */
struct label_keys {
	int64_t pid, tid, comm, cpu, cgroup;
};

static void pack_free(struct pack *k)
{
	free(k->vt); free(k->vtp); free(k->sm); free(k->smp); free(k->lb); free(k->lbp); free(k->nlabels); free(k->vals);
	free(k->mp); free(k->mpp); free(k->lc); free(k->lcp); free(k->ln); free(k->lnp); free(k->fn); free(k->fnp);
}

static bool pack_alloc(struct pprof *p, struct pack *k)
{
	size_t nev = p->events.nr, nsets = p->label_sets.nr;

	k->ncols = 2 * (nev ? nev : 1);
	k->vt = calloc(k->ncols, sizeof(*k->vt));
	k->vtp = calloc(k->ncols, sizeof(*k->vtp));
	k->sm = calloc(p->samples.nr + 1, sizeof(*k->sm));
	k->smp = calloc(p->samples.nr + 1, sizeof(*k->smp));
	k->lb = calloc(NR_LABELS * nsets + 1, sizeof(*k->lb));
	k->lbp = calloc(NR_LABELS * nsets + 1, sizeof(*k->lbp));
	k->nlabels = calloc(nsets + 1, sizeof(*k->nlabels));
	k->vals = calloc(k->ncols * p->samples.nr + 1, sizeof(*k->vals));
	k->mp = calloc(p->maps.nr + 1, sizeof(*k->mp));
	k->mpp = calloc(p->maps.nr + 1, sizeof(*k->mpp));
	k->lc = calloc(p->locs.nr + 1, sizeof(*k->lc));
	k->lcp = calloc(p->locs.nr + 1, sizeof(*k->lcp));
	k->ln = calloc(p->lines.nr + 1, sizeof(*k->ln));
	k->lnp = calloc(p->lines.nr + 1, sizeof(*k->lnp));
	k->fn = calloc(p->fns.nr + 1, sizeof(*k->fn));
	k->fnp = calloc(p->fns.nr + 1, sizeof(*k->fnp));
	return k->vt && k->vtp && k->sm && k->smp && k->lb && k->lbp && k->nlabels && k->vals && k->mp && k->mpp &&
	       k->lc && k->lcp && k->ln && k->lnp && k->fn && k->fnp;
}

/*
 * Two sample types per event, its count and its period; the first whose
 * unit is nanoseconds is the default and the period type.
 */
static int pack_value_types(struct pprof *p, struct pack *k)
{
	size_t nev = p->events.nr;
	int64_t default_type = -1;

	for (size_t e = 0; e < k->ncols / 2; e++) {
		const char *ct, *pt, *unit, *ev = nev ? VEC_AT(p->strs, const char *, VEC_AT(p->events, int64_t, e)) : "cpu-clock";
		char name[256];
		int64_t a, b, c;

		event_types(ev, &ct, &pt, &unit);
		if (!ct) {
			snprintf(name, sizeof(name), "%s-samples", ev);
			ct = name;
		}
		a = str_id(p, ct);
		b = str_id(p, pt);
		c = str_id(p, unit);
		if (a < 0 || b < 0 || c < 0 || str_id(p, "count") < 0)
			return -ENOMEM;
		perfrec__pprof__value_type__init(&k->vt[2 * e]);
		k->vt[2 * e].type = a;
		k->vt[2 * e].unit = str_id(p, "count");
		perfrec__pprof__value_type__init(&k->vt[2 * e + 1]);
		k->vt[2 * e + 1].type = b;
		k->vt[2 * e + 1].unit = c;
		k->vtp[2 * e] = &k->vt[2 * e];
		k->vtp[2 * e + 1] = &k->vt[2 * e + 1];
		if (default_type < 0 && !strcmp(unit, "nanoseconds"))
			default_type = b;
	}
	k->prof.n_sample_type = k->ncols;
	k->prof.sample_type = k->vtp;
	if (default_type >= 0) {
		k->prof.default_sample_type = default_type;
		k->period_type = *k->vt;
		k->period_type.type = default_type;
		k->period_type.unit = str_id(p, "nanoseconds");
		k->prof.period_type = &k->period_type;
	}
	return 0;
}

/* The labels of label set @i: pid, tid, comm, cpu, cgroup and what the cgroup names. */
static int pack_label_set(struct pprof *p, struct pack *k, const struct label_keys *key, size_t i)
{
	const struct label_row *r = &VEC_AT(p->label_sets, struct label_row, i);
	Perfrec__Pprof__Label *l = &k->lb[NR_LABELS * i];
	size_t nl = 0;

	for (int j = 0; j < NR_LABELS; j++) {
		perfrec__pprof__label__init(&l[j]);
		k->lbp[NR_LABELS * i + j] = &l[j];
	}
	l[nl].key = key->pid;
	l[nl++].num = r->pid;
	l[nl].key = key->tid;
	l[nl++].num = r->tid;
	if (r->comm) {
		l[nl].key = key->comm;
		l[nl++].str = r->comm;
	}
	/*
	 * A string: pprof's readers drop a numeric label whose value
	 * is 0 and has no unit, and CPU 0 is no less a CPU.
	 */
	if (r->cpu != UINT32_MAX) {
		char c[16];
		int64_t id;

		snprintf(c, sizeof(c), "%u", r->cpu);
		id = str_id(p, c);
		if (id < 0)
			return -ENOMEM;
		l[nl].key = key->cpu;
		l[nl++].str = id;
	}
	if (r->cgroup) {
		l[nl].key = key->cgroup;
		l[nl++].str = r->cgroup;
		if (cgroup_labels(p, VEC_AT(p->strs, const char *, r->cgroup), l, &nl) < 0)
			return -ENOMEM;
	}
	k->nlabels[i] = nl;
	return 0;
}

/* Each sample: its locations, its count and period in its event's columns, its label set. */
static void pack_samples(struct pprof *p, struct pack *k)
{
	size_t ncols = k->ncols;

	for (size_t i = 0; i < p->samples.nr; i++) {
		struct sample_row *r = &VEC_AT(p->samples, struct sample_row, i);
		Perfrec__Pprof__Sample *sm = &k->sm[i];

		perfrec__pprof__sample__init(sm);
		sm->n_location_id = r->nr_locs;
		sm->location_id = (uint64_t *)r->locs;
		sm->n_value = ncols;
		sm->value = &k->vals[ncols * i];
		k->vals[ncols * i + 2 * r->event] = (int64_t)r->count;
		k->vals[ncols * i + 2 * r->event + 1] = (int64_t)r->period;
		sm->n_label = k->nlabels[r->labels];
		sm->label = &k->lbp[NR_LABELS * r->labels];
		k->smp[i] = sm;
	}
	k->prof.n_sample = p->samples.nr;
	k->prof.sample = k->smp;
}

/*
 * Whether mapping @m is the executable of a process named @comm: the
 * kernel names a task after its binary's file name, cut to 15 bytes
 * ("python3" runs /usr/bin/python3.11: a prefix is enough).
 */
static bool map_is_exec_of(const struct pprof *p, const struct map_row *m, int64_t comm)
{
	const char *path = VEC_AT(p->strs, const char *, m->file);
	const char *c = VEC_AT(p->strs, const char *, comm);
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return *c && path[0] != '[' && !strncmp(base, c, strlen(c));
}

/*
 * The profile's main binary, which pprof readers take to be the first
 * mapping (go tool pprof's "File:"): the executable of the processes with
 * the most samples, found as the user-space mapping on the samples' stacks
 * whose file name their comm names; failing that, the user-space mapping
 * the most samples' leaves hit.  Never the kernel, the vdso or
 * "[unknown]", which is what the order of first appearance gave.
 * Returns an index into p->maps (0 when there are none).
 */
static size_t main_mapping(const struct pprof *p)
{
	uint64_t *exec = calloc(p->maps.nr, sizeof(*exec)), *leaf = calloc(p->maps.nr, sizeof(*leaf));
	size_t *seen = calloc(p->maps.nr, sizeof(*seen)), best = 0;
	uint64_t top = 0;

	if (!exec || !leaf || !seen)
		goto out;
	for (size_t i = 0; i < p->samples.nr; i++) {
		const struct sample_row *r = &VEC_AT(p->samples, struct sample_row, i);
		int64_t comm = VEC_AT(p->label_sets, struct label_row, r->labels).comm;
		bool leaf_done = false;

		for (size_t j = 0; j < r->nr_locs; j++) {
			/* Location and mapping ids are 1-based, as pprof's */
			uint64_t m = VEC_AT(p->locs, struct loc_row, r->locs[j] - 1).map - 1;
			const struct map_row *mr = &VEC_AT(p->maps, struct map_row, m);
			const char *path = VEC_AT(p->strs, const char *, mr->file);

			if (path[0] == '[' || !path[0])
				continue;
			if (!leaf_done) {
				leaf[m] += r->count;
				leaf_done = true;
			}
			if (seen[m] != i + 1 && map_is_exec_of(p, mr, comm))
				exec[m] += r->count;
			seen[m] = i + 1;
		}
	}
	for (int pass = 0; pass < 2 && !top; pass++)
		for (size_t m = 0; m < p->maps.nr; m++)
			if ((pass ? leaf : exec)[m] > top) {
				top = (pass ? leaf : exec)[m];
				best = m;
			}
out:
	free(exec);
	free(leaf);
	free(seen);
	return best;
}

/* Mappings (the main binary first), then lines and the locations made of them, then functions. */
static void pack_code(struct pprof *p, struct pack *k)
{
	size_t main_map = main_mapping(p);
	/* Where row @i goes: the main binary to the front, the others in order behind it. */
#define MAP_POS(i) ((i) == main_map ? 0 : (i) < main_map ? (i) + 1 : (i))

	for (size_t i = 0; i < p->maps.nr; i++) {
		struct map_row *r = &VEC_AT(p->maps, struct map_row, i);
		Perfrec__Pprof__Mapping *mp = &k->mp[MAP_POS(i)];

		perfrec__pprof__mapping__init(mp);
		mp->id = MAP_POS(i) + 1;
		mp->memory_start = r->start;
		mp->memory_limit = r->limit;
		mp->file_offset = r->off;
		mp->filename = r->file;
		mp->build_id = r->bid;
		mp->has_functions = true;
		k->mpp[MAP_POS(i)] = mp;
	}
	k->prof.n_mapping = p->maps.nr;
	k->prof.mapping = k->mpp;
	for (size_t i = 0; i < p->lines.nr; i++) {
		perfrec__pprof__line__init(&k->ln[i]);
		k->ln[i].function_id = VEC_AT(p->lines, struct line_row, i).fn;
		k->ln[i].line = VEC_AT(p->lines, struct line_row, i).line;
		k->lnp[i] = &k->ln[i];
	}
	for (size_t i = 0; i < p->locs.nr; i++) {
		struct loc_row *r = &VEC_AT(p->locs, struct loc_row, i);
		Perfrec__Pprof__Location *lc = &k->lc[i];

		perfrec__pprof__location__init(lc);
		lc->id = i + 1;
		lc->mapping_id = MAP_POS(r->map - 1) + 1;
		lc->address = r->addr;
		lc->n_line = r->nr_lines;
		lc->line = &k->lnp[r->first_line];
		k->lcp[i] = lc;
	}
	k->prof.n_location = p->locs.nr;
	k->prof.location = k->lcp;
	for (size_t i = 0; i < p->fns.nr; i++) {
		struct fn_row *r = &VEC_AT(p->fns, struct fn_row, i);
		Perfrec__Pprof__Function *fn = &k->fn[i];

		perfrec__pprof__function__init(fn);
		fn->id = i + 1;
		fn->name = r->name;
		fn->system_name = r->system_name;
		fn->filename = r->file;
		k->fnp[i] = fn;
	}
	k->prof.n_function = p->fns.nr;
	k->prof.function = k->fnp;
#undef MAP_POS
}

/* Pack the tables into a profile; *@ret_buf is malloc()ed. */
int pprof_pack(struct pprof *p, uint8_t **ret_buf, size_t *ret_len)
{
	struct pack k = { .prof = PERFREC__PPROF__PROFILE__INIT, .period_type = PERFREC__PPROF__VALUE_TYPE__INIT };
	bool allocated = pack_alloc(p, &k);
	struct label_keys key;
	size_t len;
	uint8_t *buf;
	int ret = -ENOMEM;

	/*
	 * The string table grows in the order of the str_id() calls, so one
	 * statement each (an initializer list's order is unspecified).
	 */
	key.pid = str_id(p, "pid");
	key.tid = str_id(p, "tid");
	key.comm = str_id(p, "comm");
	key.cpu = str_id(p, "cpu");
	key.cgroup = str_id(p, "cgroup");
	if (!allocated || key.pid < 0 || key.tid < 0 || key.comm < 0 || key.cpu < 0 || key.cgroup < 0)
		goto out;
	if (pack_value_types(p, &k) < 0)
		goto out;
	for (size_t i = 0; i < p->label_sets.nr; i++)
		if (pack_label_set(p, &k, &key, i) < 0)
			goto out;
	pack_samples(p, &k);
	pack_code(p, &k);
	k.prof.n_string_table = p->strs.nr;
	k.prof.string_table = (char **)p->strs.v;
	k.prof.time_nanos = (int64_t)p->first_wall;
	k.prof.duration_nanos = (int64_t)(p->last_wall - p->first_wall);

	len = perfrec__pprof__profile__get_packed_size(&k.prof);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	perfrec__pprof__profile__pack(&k.prof, buf);
	*ret_buf = buf;
	*ret_len = len;
	ret = 0;
out:
	pack_free(&k);
	return ret;
}

/*
 * gzip @buf into @fd, at deflate's fastest level: on a million samples
 * (26 MB packed) level 6 took 0.55 s against level 1's 0.2 s, for a file
 * a tenth smaller; Go's runtime/pprof writes its profiles at the fastest
 * level too.
 */
static int write_gzip(int fd, const uint8_t *buf, size_t len)
{
	z_stream z = { 0 };
	uint8_t out[65536];
	int zr;

	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;   /* profiles over 4 GiB are not a thing we write */
	do {
		size_t have, done = 0;

		z.next_out = out;
		z.avail_out = sizeof(out);
		zr = deflate(&z, Z_FINISH);
		have = sizeof(out) - z.avail_out;
		while (done < have) {
			ssize_t w = write(fd, out + done, have - done);

			if (w < 0) {
				int e = -errno;

				deflateEnd(&z);
				return e;
			}
			done += (size_t)w;
		}
	} while (zr == Z_OK);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

struct pprof *pprof_new(void)
{
	struct pprof *p = malloc(sizeof(*p));

	if (!p)
		return NULL;
	pprof_init(p);
	if (str_id(p, "") != 0) {
		pprof_free(p);
		return NULL;
	}
	return p;
}

void pprof_free(struct pprof *p)
{
	if (!p)
		return;
	pprof_exit(p);
	free(p);
}

int pprof_write(const char *const *paths, size_t nr_paths, const struct profile_opts *o, int fd,
		struct view_summary *ret)
{
	struct pprof p;
	uint8_t *buf = NULL;
	size_t len = 0, n = 0;
	int r;

	pprof_init(&p);
	if (str_id(&p, "") != 0) {
		pprof_exit(&p);
		return -ENOMEM;
	}
	r = profile_walk(paths, nr_paths, o, pprof_add_stack, &p);
	/* Only strings are added from here on: the rest of the lookups go before the packing peaks. */
	table_free(&p.fntab);
	table_free(&p.maptab);
	table_free(&p.loctab);
	table_free(&p.smptab);
	table_free(&p.ptrstrtab);
	table_free(&p.ptrloctab);
	table_free(&p.labeltab);
	if (r == 0)
		r = pprof_pack(&p, &buf, &len);
	if (r == 0)
		r = write_gzip(fd, buf, len);
	for (size_t i = 0; i < p.samples.nr; i++)
		n += VEC_AT(p.samples, struct sample_row, i).count;
	if (ret)
		*ret = (struct view_summary){ .samples = n, .first_wall = p.first_wall, .last_wall = p.last_wall };
	free(buf);
	pprof_exit(&p);
	return r;
}
