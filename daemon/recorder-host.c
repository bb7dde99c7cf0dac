// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * unwind=host, the recorder's side of it: the unwind sink's worker writes
 * the current file through struct host_out (its lock shared with the
 * draining thread) and counts each record where it went: written, in the
 * file and the totals; refused, as lost.  A record handed to the worker
 * is counted nowhere before that, so no count has to be taken back, and
 * what the worker never emitted is found once it is idle.  See the top of
 * recorder.c for the threads and when they meet.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "recorder.h"
#include "recorder-internal.h"

void recorder_out_lock(const struct recorder *rec)
{
	if (rec->host_out)
		pthread_mutex_lock(&rec->host_out->lock);
}

void recorder_out_unlock(const struct recorder *rec)
{
	if (rec->host_out)
		pthread_mutex_unlock(&rec->host_out->lock);
}

/* The ring of a record the worker emits, by its IDENTIFIER (every attr has one): 0 if unknown. */
static size_t ring_of(const struct host_out *ho, const struct perf_event_header *h)
{
	size_t lo = 0, hi = ho->nr_ids;
	uint64_t id;

	if (h->size < sizeof(*h) + 8)
		return 0;
	/* A sample starts with it, other records end with it (sample_id_all). */
	if (h->type == PERF_RECORD_SAMPLE)
		memcpy(&id, h + 1, 8);
	else
		memcpy(&id, (const char *)h + h->size - 8, 8);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ho->ids[mid].id == id)
			return ho->ids[mid].ring;
		if (ho->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* What @h counts for: a sample, or the kernel's count of lost records or samples (as the drain reads them). */
static struct host_counts counts_of(const struct perf_event_header *h)
{
	struct host_counts c = { .bytes = h->size };

	if (h->type == PERF_RECORD_SAMPLE)
		c.samples = 1;
	else if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16)
		memcpy(&c.lost, (const char *)(h + 1) + 8, 8);
	else if (h->type == PERF_RECORD_LOST_SAMPLES && h->size >= sizeof(*h) + 8)
		memcpy(&c.lost_samples, h + 1, 8);
	return c;
}

static void add(struct host_counts *to, const struct host_counts *c)
{
	to->samples += c->samples;
	to->lost += c->lost;
	to->lost_samples += c->lost_samples;
	to->bytes += c->bytes;
}

/* @c taken off @from; what was handed over is at least what came back of it. */
static void sub(struct host_counts *from, const struct host_counts *c)
{
	from->samples -= c->samples < from->samples ? c->samples : from->samples;
	from->lost -= c->lost < from->lost ? c->lost : from->lost;
	from->lost_samples -= c->lost_samples < from->lost_samples ? c->lost_samples : from->lost_samples;
	from->bytes -= c->bytes < from->bytes ? c->bytes : from->bytes;
}

/*
 * The totals of ring @idx grow by what the worker wrote of it.  Its span
 * mark moves with them: a span of the ring's records not yet written
 * (refuse_span()) is the totals minus the mark, and these records are
 * none of it.
 */
static void settle_written(struct recorder *rec, size_t idx, const struct host_counts *c)
{
	struct cpu_stats *t = &rec->total[idx];
	struct span_mark *m = &rec->marks[idx];

	t->samples += c->samples;
	t->lost += c->lost;
	t->lost_samples += c->lost_samples;
	t->bytes += c->bytes;
	m->samples += c->samples;
	m->lost += c->lost;
	m->lost_samples += c->lost_samples;
}

/*
 * Records of ring @idx that reached no file, as refuse_span() accounts a
 * refused span: the samples are lost (and dropped), the kernel's counts of
 * lost records are lost all the same, and all of them wait in
 * pending_dropped for a PERF_RECORD_LOST in the next write that succeeds.
 */
static void settle_refused(struct recorder *rec, size_t idx, const struct host_counts *c)
{
	struct cpu_stats *t = &rec->total[idx];
	struct span_mark *m = &rec->marks[idx];

	t->lost += c->samples + c->lost;
	t->lost_samples += c->lost_samples;
	t->dropped += c->samples;
	m->lost += c->samples + c->lost;
	m->lost_samples += c->lost_samples;
	rec->pending_dropped[idx] += c->samples + c->lost + c->lost_samples;
}

/*
 * The unwind sink's emit, on its worker: one record into the current
 * file, counted where it went: in the file and (collected later) the
 * totals when written, as lost when refused.  The round goes on after a
 * refusal: one full write must not take the rest with it.
 */
static int host_emit(void *ctx, const struct perf_event_header *h)
{
	struct host_out *ho = ctx;
	struct host_counts c;
	struct recorder *rec;
	size_t ring;
	int r = -ENOSPC;

	/*
	 * Maps of data segments are there for unwinders that read
	 * .eh_frame_hdr through them (mmap_data, data_maps); the unwinder
	 * has had them, the file's readers unwind nothing: as in a -g file,
	 * they would only cost bytes (most of a file on a busy host).
	 */
	if (h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_DATA))
		return 0;
	c = counts_of(h);
	ring = ring_of(ho, h);
	pthread_mutex_lock(&ho->lock);
	rec = ho->rec;
	/* (the file does not change while the worker holds a round: see the top of recorder.c) */
	if (rec->have_file && rec->cur.w)
		r = perfrec_pdwriter__write(rec->cur.w, h, h->size);
	if (r == 0) {
		struct cpu_stats *cs = &rec->cur.cpu[ring];

		add(&ho->written[ring], &c);
		rec->cur.samples += c.samples;
		rec->cur.lost += c.lost + c.lost_samples;
		rec->cur.bytes += c.bytes;
		cs->samples += c.samples;
		cs->bytes += c.bytes;
		cs->lost += c.lost;
		cs->lost_samples += c.lost_samples;
	} else {
		add(&ho->refused[ring], &c);
		ho->refused_bytes += h->size;
		if (!ho->err)
			ho->err = r;
	}
	pthread_mutex_unlock(&ho->lock);
	return 0;
}

void recorder_host_queue(struct recorder *rec, size_t ring, const struct perf_event_header *h,
			 const struct perf_event_attr *attr)
{
	struct host_out *ho = rec->host_out;
	struct host_counts c = counts_of(h);

	if (unwind_sink_record(rec->unwind, h, attr) == 0) {
		add(&ho->queued[ring], &c);
		return;
	}
	/* No memory for the queue: lost as if the file had refused it. */
	settle_refused(rec, ring, &c);
	rec->dropped_bytes += h->size;
	recorder_note_write(rec, -ENOMEM);
}

/* The round is the worker's now: what was queued in it is in flight. */
static void handed_over(struct host_out *ho, size_t nr_rings)
{
	for (size_t i = 0; i < nr_rings; i++) {
		add(&ho->inflight[i], &ho->queued[i]);
		ho->queued[i] = (struct host_counts){ 0 };
	}
}

int recorder_host_round(struct recorder *rec)
{
	int r;

	if (!rec->host_out)
		return 0;
	r = unwind_sink_round(rec->unwind);
	if (r == 0)
		handed_over(rec->host_out, rec->nr_rings);
	return r;
}

bool recorder_host_collect(struct recorder *rec)
{
	struct host_out *ho = rec->host_out;
	uint64_t bytes;
	bool idle;
	int err;

	if (!ho)
		return false;
	/*
	 * Idle first: every round handed over has then been emitted, and
	 * what the worker did not emit of it never will be (the unwinder's
	 * queue is flushed with each round).  The draining thread alone
	 * hands rounds over, so it stays idle meanwhile.
	 */
	idle = unwind_sink_idle(rec->unwind);
	pthread_mutex_lock(&ho->lock);
	for (size_t i = 0; i < rec->nr_rings; i++) {
		struct host_counts *q = &ho->inflight[i];

		settle_written(rec, i, &ho->written[i]);
		settle_refused(rec, i, &ho->refused[i]);
		sub(q, &ho->written[i]);
		sub(q, &ho->refused[i]);
		ho->written[i] = ho->refused[i] = (struct host_counts){ 0 };
		/* Handed over and never emitted: the unwinder could not rewrite them (or had no memory). */
		if (idle) {
			settle_refused(rec, i, q);
			*q = (struct host_counts){ 0 };
		}
	}
	bytes = ho->refused_bytes;
	err = ho->err;
	ho->refused_bytes = 0;
	ho->err = 0;
	pthread_mutex_unlock(&ho->lock);
	rec->dropped_bytes += bytes;
	if (err)
		recorder_note_write(rec, err);
	return bytes != 0;
}

bool recorder_host_sync(struct recorder *rec)
{
	if (!rec->host_out)
		return false;
	/* A round that could not be handed over (no memory) stays queued: not in flight. */
	if (unwind_sink_sync(rec->unwind) == 0)
		handed_over(rec->host_out, rec->nr_rings);
	return recorder_host_collect(rec);
}

static int cmp_ring_id(const void *a, const void *b)
{
	const struct host_ring_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Event ids to rings, for the worker to tell where each record it writes came from. */
static int map_ring_ids(struct recorder *rec, struct host_out *ho)
{
	size_t n = 0;

	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++)
		n += perfrec_evlist__evsel(rec->evlist, i)->nr_ids;
	ho->ids = calloc(n ? n : 1, sizeof(*ho->ids));
	if (!ho->ids)
		return -ENOMEM;
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		for (size_t j = 0; j < ev->nr_ids; j++) {
			struct host_ring_id *e = &ho->ids[ho->nr_ids++];

			*e = (struct host_ring_id){ .id = ev->ids[j] };
			for (size_t k = 0; ev->cpus && k < rec->nr_rings; k++)
				if (perfrec_evlist__ring_cpu(rec->evlist, k) == ev->cpus[j])
					e->ring = k;
		}
	}
	qsort(ho->ids, ho->nr_ids, sizeof(*ho->ids), cmp_ring_id);
	return 0;
}

/* The attr of an event by one of its ids (NULL: not ours). */
const struct perf_event_attr *recorder_attr_of(const struct recorder *rec, const struct drain_id *id)
{
	if (!id)
		return NULL;
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		for (size_t j = 0; j < ev->nr_ids; j++)
			if (ev->ids[j] == id->id)
				return &ev->attr;
	}
	return NULL;
}

/*
 * unwind=host needs the user stacks of callchain=dwarf; it is refused
 * without them rather than implied, as perf refuses options that do not
 * go together: the stack size is a cost the user chooses.  Flight mode
 * writes no file; its history and snapshots keep the raw stacks.
 */
int recorder_open_unwind(struct recorder *rec)
{
	const struct config *c = rec->cfg;
	struct unwind_sink_opts uo = { 0 };
	struct host_out *ho;
	int r;

	if (!c->unwind_host)
		return 0;
	if (!c->callchain || !c->dwarf)
		return log_error_errno(-EINVAL, "unwind=host unwinds DWARF stacks: it needs callchain=dwarf "
				       "(--call-graph dwarf)");
	if (rec->flight) {
		log_notice("unwind=host: flight mode writes no file; snapshots keep the raw DWARF stacks");
		return 0;
	}
	ho = calloc(1, sizeof(*ho));
	if (!ho)
		return -ENOMEM;
	pthread_mutex_init(&ho->lock, NULL);
	ho->rec = rec;
	rec->host_out = ho;
	ho->written = calloc(rec->nr_rings, sizeof(*ho->written));
	ho->refused = calloc(rec->nr_rings, sizeof(*ho->refused));
	ho->queued = calloc(rec->nr_rings, sizeof(*ho->queued));
	ho->inflight = calloc(rec->nr_rings, sizeof(*ho->inflight));
	if (!ho->written || !ho->refused || !ho->queued || !ho->inflight || map_ring_ids(rec, ho) < 0)
		return log_error_errno(-ENOMEM, "Cannot start the host unwinder: %s", strerror(ENOMEM));
	r = unwind_sink_new(&uo, host_emit, ho, &rec->unwind);
	if (r < 0)
		return log_error_errno(r, "Cannot start the host unwinder: %s", strerror(-r));
	return 0;
}

void recorder_host_close(struct recorder *rec)
{
	struct host_out *ho = rec->host_out;

	if (!ho)
		return;
	pthread_mutex_destroy(&ho->lock);
	free(ho->ids);
	free(ho->written);
	free(ho->refused);
	free(ho->queued);
	free(ho->inflight);
	free(ho);
	rec->host_out = NULL;
}

/* The side-band event's attr: the synthesized records' trailers are laid out by it. */
const struct perf_event_attr *recorder_sideband_attr(const struct recorder *rec)
{
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		if (ev->is_sideband)
			return &ev->attr;
	}
	return NULL;
}

bool recorder_unwind_stats(const struct recorder *rec, struct unwind_sink_stats *ret)
{
	if (!rec || !rec->unwind)
		return false;
	unwind_sink_stats(rec->unwind, ret);
	return true;
}
