// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A stage's way out (see stage.h): its sinks and the calls that feed them.
 * What goes in is the stage's own business (its sink callbacks); what
 * comes out goes through here, one record at a time, in the order the
 * stage emits it.  Nothing is allocated per record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stage.h"

void stage_init(struct stage *st, const struct sink_ops *ops, void *ctx, const struct drain *d)
{
	*st = (struct stage){ .sink = { .ops = ops, .ctx = ctx }, .drain = d };
}

void stage_exit(struct stage *st)
{
	if (!st)
		return;
	free(st->sinks);
	st->sinks = NULL;
	st->nr_sinks = st->cap_sinks = 0;
}

int stage_add_sink(struct stage *st, struct sink *s)
{
	if (st->nr_sinks == st->cap_sinks) {
		size_t cap = st->cap_sinks ? st->cap_sinks * 2 : 4;
		struct sink **n = realloc(st->sinks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->sinks = n;
		st->cap_sinks = cap;
	}
	st->sinks[st->nr_sinks++] = s;
	return 0;
}

static void compact_sinks(struct stage *st)
{
	size_t n = 0;

	if (st->emitting)
		return;
	for (size_t i = 0; i < st->nr_sinks; i++)
		if (st->sinks[i])
			st->sinks[n++] = st->sinks[i];
	st->nr_sinks = n;
}

void stage_remove_sink(struct stage *st, struct sink *s)
{
	for (size_t i = 0; st && i < st->nr_sinks; i++)
		if (st->sinks[i] == s)
			st->sinks[i] = NULL;
	if (st)
		compact_sinks(st);
}

void stage_replace_sink(struct stage *st, struct sink *old, struct sink *s)
{
	for (size_t i = 0; st && i < st->nr_sinks; i++)
		if (st->sinks[i] == old)
			st->sinks[i] = s;
}

struct sink *stage_sink_of(const struct stage *st, const struct sink_ops *ops)
{
	for (size_t i = 0; st && i < st->nr_sinks; i++)
		if (st->sinks[i] && st->sinks[i]->ops == ops)
			return st->sinks[i];
	return NULL;
}

void stage_emit(struct stage *st, size_t ring, const struct perf_event_header *h)
{
	struct iovec iov = { .iov_base = (void *)h, .iov_len = h->size };
	struct drain_rec r;

	drain_decode(st->drain, h, &r);
	r.ring = ring;
	st->emitting++;
	for (size_t i = 0; i < st->nr_sinks; i++) {
		struct sink *s = st->sinks[i];

		if (s && s->ops->record)
			s->ops->record(s, &r);
	}
	for (size_t i = 0; i < st->nr_sinks; i++) {
		struct sink *s = st->sinks[i];

		/* A sink's failure is its own: the others still get the record. */
		if (s && s->ops->write && s->ops->write(s, ring, &iov, 1, h->size) < 0)
			s->refused_bytes += h->size;
	}
	st->emitting--;
	st->round_bytes += h->size;
	compact_sinks(st);
}

void stage_corrupt(struct stage *st, size_t ring)
{
	st->emitting++;
	for (size_t i = 0; i < st->nr_sinks; i++) {
		struct sink *s = st->sinks[i];

		if (s && s->ops->corrupt)
			s->ops->corrupt(s, ring);
	}
	st->emitting--;
	compact_sinks(st);
}

void stage_round(struct stage *st)
{
	uint64_t bytes = st->round_bytes;

	st->round_bytes = 0;
	st->emitting++;
	for (size_t i = 0; i < st->nr_sinks; i++) {
		struct sink *s = st->sinks[i];

		if (s && s->ops->round)
			s->ops->round(s, bytes);
	}
	st->emitting--;
	compact_sinks(st);
}
