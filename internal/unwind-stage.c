// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unwinding as a stage (see unwind-stage.h).  Three hands touch it:
 *
 *   the draining thread   queues records (record()), closes rounds with a
 *                         FINISHED_ROUND of its own and hands them over
 *                         (round()), and emits what the worker made
 *   the worker            unwinds whole rounds (unwind-sink.c) and
 *                         appends what comes out to @out, under @lock;
 *                         the FINISHED_ROUND it passes through marks
 *                         where a round's output ends (out.done)
 *   the sinks behind      called by the draining thread only (stage.c)
 *
 * The draining thread takes @out's finished rounds by swapping buffers,
 * so the worker never waits for the sinks, and the sinks never see half a
 * round.  Samples are counted per ring as they are queued, handed over
 * and come out: once the worker is idle, handed over minus come out is
 * what it left out, reported as lost.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "unwind-stage.h"

/* An event id, the ring its records go through and its event's attr. */
struct ring_id {
	uint64_t id;
	size_t ring;
	const struct perf_event_attr *attr;
};

/* Records the worker emitted: whole rounds up to @done. */
struct out {
	unsigned char *buf;
	size_t len, cap, done;
};

struct unwind_stage {
	struct stage stage;            /* first: its sink is what the drain feeds */
	struct unwind_sink *worker;
	struct drain *layout;          /* the emitted records' layout, for the sinks' record() */
	struct ring_id *ids;           /* sorted by id; read-only once open */
	size_t nr_ids, nr_rings;
	const struct perf_event_attr *sideband;
	void (*lost)(void *ctx, size_t ring, uint64_t samples);
	void *ctx;
	/* the draining thread's, samples per ring */
	uint64_t *queued;              /* in the round being filled */
	uint64_t *handed;              /* handed to the worker, not come out yet */
	bool round_open;               /* records queued since the last hand-over */
	struct out taken;              /* being emitted */

	pthread_mutex_t lock;          /* @out: the worker appends, the draining thread takes */
	struct out out;
};

static const struct perf_event_header finished_round = {
	.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(finished_round),
};

static int cmp_ring_id(const void *a, const void *b)
{
	const struct ring_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The entry of @h's event by its IDENTIFIER (every attr has one): NULL if not ours. */
static const struct ring_id *ring_id_of(const struct unwind_stage *us, const struct perf_event_header *h)
{
	size_t lo = 0, hi = us->nr_ids;
	uint64_t id;

	if (h->size < sizeof(*h) + 8)
		return NULL;
	/* A sample starts with it, other records end with it (sample_id_all). */
	if (h->type == PERF_RECORD_SAMPLE)
		memcpy(&id, h + 1, 8);
	else
		memcpy(&id, (const char *)h + h->size - 8, 8);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (us->ids[mid].id == id)
			return &us->ids[mid];
		if (us->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Every event id with its ring and attr; the layout of what comes out. */
static int map_ids(struct unwind_stage *us, const struct perfrec_evlist *el)
{
	size_t n = 0;
	int r;

	for (size_t i = 0; i < perfrec_evlist__nr_evsels(el); i++)
		n += perfrec_evlist__evsel(el, i)->nr_ids;
	us->ids = calloc(n ? n : 1, sizeof(*us->ids));
	if (!us->ids)
		return -ENOMEM;
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(el); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, i);
		struct perf_event_attr out;

		if (ev->is_sideband)
			us->sideband = &ev->attr;
		perfrec_unwinder__rewrite_attr(&ev->attr, &out);
		r = drain_add_ids(us->layout, ev->ids, ev->nr_ids, out.sample_type, out.read_format);
		if (r < 0)
			return r;
		for (size_t j = 0; j < ev->nr_ids; j++) {
			struct ring_id *e = &us->ids[us->nr_ids++];

			*e = (struct ring_id){ .id = ev->ids[j], .attr = &ev->attr };
			for (size_t k = 0; ev->cpus && k < us->nr_rings; k++)
				if (perfrec_evlist__ring_cpu(el, k) == ev->cpus[j])
					e->ring = k;
		}
	}
	qsort(us->ids, us->nr_ids, sizeof(*us->ids), cmp_ring_id);
	return 0;
}

/* The worker's emit: one record of a round into @out. */
static int worker_emit(void *ctx, const struct perf_event_header *h)
{
	struct unwind_stage *us = ctx;
	struct out *o = &us->out;

	/* The unwinder's own (it reads .eh_frame_hdr through them): no reader unwinds. */
	if (h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_DATA))
		return 0;
	pthread_mutex_lock(&us->lock);
	/* No memory: the record is left out; a sample is found missing once the worker is idle. */
	if (ARRAY_RESERVE(o->buf, o->cap, o->len + h->size, 1 << 16) == 0) {
		memcpy(o->buf + o->len, h, h->size);
		o->len += h->size;
	}
	if (h->type == PERFREC_RECORD_FINISHED_ROUND)
		o->done = o->len;
	pthread_mutex_unlock(&us->lock);
	return 0;
}

/*
 * Take the worker's finished rounds (all it emitted, when @idle) and emit
 * them to the sinks, a round each; the rest of a round still being
 * unwound stays for the next time.
 */
static void collect(struct unwind_stage *us, bool idle)
{
	struct out *t = &us->taken, tmp;
	size_t tail;

	pthread_mutex_lock(&us->lock);
	if (idle)
		us->out.done = us->out.len;
	tmp = us->out;
	us->out = *t;
	*t = tmp;
	tail = t->len - t->done;
	/* (no memory for the tail: it is emitted now, ahead of its round's end) */
	if (tail && ARRAY_RESERVE(us->out.buf, us->out.cap, tail, 1 << 16) == 0) {
		memcpy(us->out.buf, t->buf + t->done, tail);
		us->out.len = tail;
		t->len = t->done;
	}
	us->out.done = 0;
	t->done = 0;
	pthread_mutex_unlock(&us->lock);

	for (size_t off = 0; off < t->len;) {
		const struct perf_event_header *h = (const void *)(t->buf + off);
		const struct ring_id *e;

		off += h->size;
		if (h->type == PERFREC_RECORD_FINISHED_ROUND) {
			stage_round(&us->stage);
			continue;
		}
		e = ring_id_of(us, h);
		if (h->type == PERF_RECORD_SAMPLE && e && us->handed[e->ring])
			us->handed[e->ring]--;
		stage_emit(&us->stage, e ? e->ring : 0, h);
	}
	t->len = 0;
	if (!idle)
		return;
	/* Handed over and never come out: the unwinder could not rewrite them (or had no memory). */
	for (size_t i = 0; i < us->nr_rings; i++) {
		if (us->handed[i] && us->lost)
			us->lost(us->ctx, i, us->handed[i]);
		us->handed[i] = 0;
	}
}

/* The round filled so far, closed by a FINISHED_ROUND, is the worker's. */
static int hand_over(struct unwind_stage *us)
{
	int r;

	if (!us->round_open)
		return 0;
	r = unwind_sink_record(us->worker, &finished_round, NULL);
	if (r == 0)
		r = unwind_sink_round(us->worker);
	if (r < 0)
		return r;
	for (size_t i = 0; i < us->nr_rings; i++) {
		us->handed[i] += us->queued[i];
		us->queued[i] = 0;
	}
	us->round_open = false;
	return 0;
}

static void in_record(struct sink *s, struct drain_rec *r)
{
	struct unwind_stage *us = s->ctx;
	const struct ring_id *e = ring_id_of(us, r->h);
	bool sample = r->h->type == PERF_RECORD_SAMPLE;

	if (unwind_sink_record(us->worker, r->h, e ? e->attr : NULL) < 0) {
		if (sample && us->lost)
			us->lost(us->ctx, r->ring, 1);
		return;
	}
	/* Counted by the ring it comes out on (a sample of no known event comes out uncounted). */
	if (sample && e)
		us->queued[e->ring]++;
	us->round_open = true;
}

static void in_corrupt(struct sink *s, size_t ring)
{
	struct unwind_stage *us = s->ctx;

	stage_corrupt(&us->stage, ring);
}

static void in_round(struct sink *s, uint64_t bytes)
{
	struct unwind_stage *us = s->ctx;

	(void)bytes;
	collect(us, unwind_sink_idle(us->worker));
	/* No memory: the round stays queued and grows into the next. */
	hand_over(us);
}

static const struct sink_ops unwind_stage_ops = {
	.record = in_record, .corrupt = in_corrupt, .round = in_round,
};

int unwind_stage_new(const struct unwind_stage_opts *opts, struct unwind_stage **ret)
{
	struct drain_opts dopts = { .sz = sizeof(dopts) };
	struct unwind_sink_opts wo = { 0 };
	struct unwind_stage *us;
	int r;

	if (!opts || !opts->evlist || !ret)
		return -EINVAL;
	us = calloc(1, sizeof(*us));
	if (!us)
		return -ENOMEM;
	pthread_mutex_init(&us->lock, NULL);
	us->lost = opts->lost;
	us->ctx = opts->ctx;
	us->nr_rings = perfrec_evlist__nr_rings(opts->evlist);
	us->queued = calloc(us->nr_rings ? us->nr_rings : 1, sizeof(*us->queued));
	us->handed = calloc(us->nr_rings ? us->nr_rings : 1, sizeof(*us->handed));
	r = us->queued && us->handed ? drain_new(&dopts, &us->layout) : -ENOMEM;
	if (r == 0)
		r = map_ids(us, opts->evlist);
	stage_init(&us->stage, &unwind_stage_ops, us, us->layout);
	wo.max_queue_bytes = opts->max_queue_bytes;
	wo.tables.dir = PERFREC_OPTS_GET(opts, table_dir, (const char *)NULL);
	/*
	 * The worker must keep up: a twentieth of a CPU at most for making
	 * tables, libdwfl meanwhile (the first samples of every binary on
	 * the host held the first rounds for seconds).
	 */
	wo.tables.build_ns_per_sec = UNWIND_STAGE_BUILD_NS_PER_SEC;
	if (r == 0)
		r = unwind_sink_new(&wo, worker_emit, us, &us->worker);
	if (r < 0) {
		unwind_stage_free(us);
		return r;
	}
	*ret = us;
	return 0;
}

struct stage *unwind_stage_stage(struct unwind_stage *us)
{
	return &us->stage;
}

int unwind_stage_state(struct unwind_stage *us, const struct perf_event_header *h)
{
	return unwind_sink_state(us->worker, h, us->sideband);
}

int unwind_stage_sync(struct unwind_stage *us)
{
	int r = hand_over(us);

	/* A round that could not be handed over stays queued: only the ones that were are waited for. */
	if (r == 0)
		unwind_sink_sync(us->worker);
	collect(us, unwind_sink_idle(us->worker));
	return r;
}

void unwind_stage_stats(struct unwind_stage *us, struct unwind_sink_stats *ret)
{
	unwind_sink_stats(us->worker, ret);
}

void unwind_stage_free(struct unwind_stage *us)
{
	if (!us)
		return;
	/* The worker's rounds borrow the attrs and emit into @out: stopped first. */
	unwind_sink_free(us->worker);
	stage_exit(&us->stage);
	drain_free(us->layout);
	pthread_mutex_destroy(&us->lock);
	free(us->out.buf);
	free(us->taken.buf);
	free(us->ids);
	free(us->queued);
	free(us->handed);
	free(us);
}
