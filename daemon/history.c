// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flight recorder's in-memory history (see history.h).  Records are
 * stored as [u64 time][record] in chunks so eviction, spans and the
 * side-band move never re-parse a record; memory is counted as allocated
 * (chunk header + capacity) so the cap bounds what the process really holds.
 * Eviction works on whole chunks only: it is O(1) per chunk and keeps every
 * record boundary intact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

struct chunk {
	struct chunk *next;
	size_t used, cap;
	uint64_t first, last;   /* times of the records held */
	uint64_t records;
	unsigned char data[];
};

struct list {
	struct chunk *head, *tail;
	uint64_t memory;        /* allocated bytes */
};

struct history {
	struct history_opts o;
	struct list *cpu;
	struct list sb;         /* side band */
	uint64_t main_cap, sb_cap;
	uint64_t newest;
	uint64_t memory;
	uint64_t evicted, evicted_by_cap;
	bool frozen;
};

#define SLOT_HDR sizeof(uint64_t)

static size_t slot_size(size_t rec_size)
{
	return SLOT_HDR + ((rec_size + 7) & ~(size_t)7);
}

int history_new(const struct history_opts *opts, struct history **ret)
{
	struct history *h;

	if (!opts || !opts->nr_cpus || !opts->max_bytes)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->o = *opts;
	if (!h->o.chunk_bytes) {
		h->o.chunk_bytes = opts->max_bytes / 32;
		if (h->o.chunk_bytes < 64 * 1024)
			h->o.chunk_bytes = 64 * 1024;
		if (h->o.chunk_bytes > 1024 * 1024)
			h->o.chunk_bytes = 1024 * 1024;
	}
	/* An eighth for side band: enough for the maps of a busy host's window. */
	h->sb_cap = opts->max_bytes / 8;
	h->main_cap = opts->max_bytes - h->sb_cap;
	h->cpu = calloc(opts->nr_cpus, sizeof(*h->cpu));
	if (!h->cpu) {
		free(h);
		return -ENOMEM;
	}
	*ret = h;
	return 0;
}

static void list_free(struct list *l)
{
	struct chunk *c, *n;

	for (c = l->head; c; c = n) {
		n = c->next;
		free(c);
	}
	memset(l, 0, sizeof(*l));
}

void history_free(struct history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->o.nr_cpus; i++)
		list_free(&h->cpu[i]);
	list_free(&h->sb);
	free(h->cpu);
	free(h);
}

static uint64_t chunk_memory(const struct chunk *c)
{
	return sizeof(*c) + c->cap;
}

/* The tail chunk is done: give back its unused capacity. */
static void shrink(struct history *h, struct list *l)
{
	struct chunk *c = l->tail, *n, *p;

	if (c->cap - c->used < 4096)
		return;
	n = realloc(c, sizeof(*c) + c->used);
	if (!n)
		return;
	l->memory -= n->cap - n->used;
	h->memory -= n->cap - n->used;
	n->cap = n->used;
	if (n == c)
		return;
	if (l->head == c) {
		l->head = n;
	} else {
		for (p = l->head; p->next != c; p = p->next)
			;
		p->next = n;
	}
	l->tail = n;
}

static int list_append(struct history *h, struct list *l, const struct perf_event_header *rec,
		       uint64_t time)
{
	size_t need = slot_size(rec->size);
	struct chunk *c = l->tail;
	uint64_t max_span = h->o.window_ns / 16;

	if (!c || c->cap - c->used < need || (max_span && time - c->first > max_span && time > c->first)) {
		size_t cap = h->o.chunk_bytes > need ? h->o.chunk_bytes : need;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return -ENOMEM;
		memset(c, 0, sizeof(*c));
		c->cap = cap;
		c->first = time;
		if (l->tail) {
			if (!h->frozen)
				shrink(h, l);
			l->tail->next = c;
		} else
			l->head = c;
		l->tail = c;
		l->memory += chunk_memory(c);
		h->memory += chunk_memory(c);
	}
	memcpy(c->data + c->used, &time, SLOT_HDR);
	memcpy(c->data + c->used + SLOT_HDR, rec, rec->size);
	c->used += need;
	c->records++;
	if (time > c->last)
		c->last = time;
	if (time < c->first)
		c->first = time;
	return 0;
}

static struct chunk *list_pop(struct history *h, struct list *l)
{
	struct chunk *c = l->head;

	l->head = c->next;
	if (!l->head)
		l->tail = NULL;
	l->memory -= chunk_memory(c);
	h->memory -= chunk_memory(c);
	return c;
}

static void sb_trim(struct history *h)
{
	while (h->sb.head && h->sb.memory > h->sb_cap)
		free(list_pop(h, &h->sb));
}

/* Drop a CPU's oldest chunk; its side-band records move to the side-band store. */
static void evict(struct history *h, struct list *l, bool by_cap)
{
	struct chunk *c = list_pop(h, l);

	for (size_t off = 0; off < c->used;) {
		const struct perf_event_header *rec = (const void *)(c->data + off + SLOT_HDR);
		uint64_t t;

		memcpy(&t, c->data + off, SLOT_HDR);
		off += slot_size(rec->size);
		if (rec->type != PERF_RECORD_SAMPLE)
			(void)list_append(h, &h->sb, rec, t); /* best effort: side band is a bonus */
	}
	free(c);
	sb_trim(h);
	h->evicted++;
	if (by_cap)
		h->evicted_by_cap++;
}

static uint64_t main_memory(const struct history *h)
{
	return h->memory - h->sb.memory;
}

static void trim(struct history *h, uint64_t now)
{
	if (now > h->newest)
		h->newest = now;
	if (h->frozen)
		return;
	if (h->o.window_ns && h->newest > h->o.window_ns) {
		uint64_t horizon = h->newest - h->o.window_ns;

		for (size_t i = 0; i < h->o.nr_cpus; i++)
			while (h->cpu[i].head && h->cpu[i].head->last < horizon)
				evict(h, &h->cpu[i], false);
	}
	while (main_memory(h) > h->main_cap) {
		struct list *oldest = NULL;

		for (size_t i = 0; i < h->o.nr_cpus; i++)
			if (h->cpu[i].head && (!oldest || h->cpu[i].head->last < oldest->head->last))
				oldest = &h->cpu[i];
		if (!oldest)
			break;
		evict(h, oldest, true);
	}
}

int history_add(struct history *h, size_t cpu, const struct perf_event_header *rec, uint64_t time)
{
	struct chunk *tail;
	int r;

	if (!h || cpu >= h->o.nr_cpus || !rec || rec->size < sizeof(*rec))
		return -EINVAL;
	tail = h->cpu[cpu].tail;
	r = list_append(h, &h->cpu[cpu], rec, time);
	if (r < 0)
		return r;
	/* Eviction only when a chunk was opened: the common append stays O(1). */
	if (h->cpu[cpu].tail != tail)
		trim(h, time);
	else if (time > h->newest)
		h->newest = time;
	return 0;
}

void history_freeze(struct history *h, bool frozen)
{
	if (h)
		h->frozen = frozen;
}

uint64_t history_oldest(const struct history *h)
{
	uint64_t t = 0;

	for (size_t i = 0; h && i < h->o.nr_cpus; i++) {
		const struct chunk *c = h->cpu[i].head;

		if (c && c->records && (!t || c->first < t))
			t = c->first;
	}
	return t;
}

uint64_t history_newest(const struct history *h)
{
	return h ? h->newest : 0;
}

void history_trim(struct history *h, uint64_t now)
{
	if (h)
		trim(h, now);
}

static void list_span(const struct list *l, struct history_span *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (const struct chunk *c = l->head; c; c = c->next) {
		if (!c->records)
			continue;
		if (!ret->records || c->first < ret->first_time)
			ret->first_time = c->first;
		if (c->last > ret->last_time)
			ret->last_time = c->last;
		ret->records += c->records;
		for (size_t off = 0; off < c->used;) {
			const struct perf_event_header *rec = (const void *)(c->data + off + SLOT_HDR);

			ret->bytes += rec->size;
			off += slot_size(rec->size);
		}
	}
}

void history_span(const struct history *h, size_t cpu, struct history_span *ret)
{
	if (!h || cpu >= h->o.nr_cpus) {
		memset(ret, 0, sizeof(*ret));
		return;
	}
	list_span(&h->cpu[cpu], ret);
}

void history_sideband_span(const struct history *h, struct history_span *ret)
{
	if (!h) {
		memset(ret, 0, sizeof(*ret));
		return;
	}
	list_span(&h->sb, ret);
}

uint64_t history_memory(const struct history *h)
{
	return h ? h->memory : 0;
}

void history_evictions(const struct history *h, uint64_t *ret_total, uint64_t *ret_by_cap)
{
	if (ret_total)
		*ret_total = h ? h->evicted : 0;
	if (ret_by_cap)
		*ret_by_cap = h ? h->evicted_by_cap : 0;
}

static int list_foreach(const struct list *l, uint64_t min_time, history_fn fn, void *ctx)
{
	for (const struct chunk *c = l->head; c; c = c->next)
		for (size_t off = 0; off < c->used;) {
			const struct perf_event_header *rec = (const void *)(c->data + off + SLOT_HDR);
			uint64_t t;
			int r;

			memcpy(&t, c->data + off, SLOT_HDR);
			off += slot_size(rec->size);
			if (rec->type == PERF_RECORD_SAMPLE && t < min_time)
				continue;
			r = fn(ctx, rec, t);
			if (r < 0)
				return r;
		}
	return 0;
}

int history_foreach(const struct history *h, size_t cpu, uint64_t min_time, history_fn fn, void *ctx)
{
	if (!h || cpu >= h->o.nr_cpus)
		return -EINVAL;
	return list_foreach(&h->cpu[cpu], min_time, fn, ctx);
}

int history_foreach_sideband(const struct history *h, history_fn fn, void *ctx)
{
	if (!h)
		return -EINVAL;
	return list_foreach(&h->sb, 0, fn, ctx);
}

void history_cursor_init(const struct history *h, size_t cpu, uint64_t min_time,
			 struct history_cursor *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->min_time = min_time;
	if (h && cpu < h->o.nr_cpus)
		ret->chunk = h->cpu[cpu].head;
}

int history_cursor_next(struct history_cursor *c, const struct perf_event_header **ret_rec,
			uint64_t *ret_time)
{
	for (;;) {
		const struct chunk *ch = c->chunk;
		const struct perf_event_header *rec;
		uint64_t t;

		if (!ch)
			return 0;
		if (c->off >= ch->used) {
			/* Stay on the last chunk: records may still be added to it. */
			if (!ch->next)
				return 0;
			c->chunk = ch->next;
			c->off = 0;
			continue;
		}
		rec = (const void *)(ch->data + c->off + SLOT_HDR);
		memcpy(&t, ch->data + c->off, SLOT_HDR);
		c->off += slot_size(rec->size);
		if (rec->type == PERF_RECORD_SAMPLE && t < c->min_time)
			continue;
		*ret_rec = rec;
		*ret_time = t;
		return 1;
	}
}
