// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unwinding as a sink (see unwind-sink.h): the draining thread fills
 * a round, the worker takes whole rounds off a queue and runs the unwinder
 * on them.  One mutex guards the queue and the counters; the condition
 * variable wakes the worker for a round and the syncing thread when the
 * worker is idle with nothing queued.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/event.h>

#include "array.h"
#include "unwind-internal.h"
#include "unwind-sink.h"

#define DEFAULT_MAX_QUEUE (64ULL << 20)
/*
 * Rounds the worker is done with are kept for the drain to fill again, up
 * to this many and this big: a fresh round every flush costs an mmap, a
 * page fault per page of copied stacks and an munmap, which at 10 kHz of
 * 8-KiB DWARF samples was a sixth of perfrecd's CPU.
 */
#define MAX_SPARE_ROUNDS 2
#define MAX_SPARE_BYTES (8U << 20)
/*
 * How often the worker gives freed memory back.  Its unwind sessions come
 * and go with the processes (thousands a minute under a churn of
 * binaries), and glibc keeps what a thread's arena once held, fragmented
 * by them: 106 MB of arena for 22 MB in use, RSS rising for minutes.
 */
#define TRIM_INTERVAL_SEC 10

struct item {
	size_t off;
	const struct perf_event_attr *attr;
};

struct round {
	unsigned char *buf;
	size_t len, cap;
	struct item *items;
	size_t nr, items_cap;
	struct round *next;
};

struct unwind_sink {
	struct perfrec_unwinder *u;    /* the worker's */
	unwind_sink_emit_fn emit;
	void *ctx;
	uint64_t max_queue;
	struct round *cur;             /* the drain's, being filled */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct round *head, *tail;     /* handed over, oldest first */
	struct round *spare;           /* done with, to be filled again */
	unsigned nr_spare;
	bool busy;                     /* the worker holds a round */
	bool stop;
	struct unwind_sink_stats st;   /* but its queued_bytes and max_queued_bytes: */
	/*
	 * Bytes in rounds handed over or being filled: added by the draining
	 * thread per record, taken off by the worker per round, without the
	 * lock (a lock a record was some 3% of perfrecd's CPU).  Only the
	 * draining thread raises them, so it alone keeps the maximum.
	 */
	_Atomic uint64_t queued, max_queued;
	pthread_t worker;
	bool started;
	_Alignas(8) unsigned char strip[PERFREC_RECORD_MAX + 1];
};

static void round_free(struct round *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r->items);
	free(r);
}

/* Free every round of the list at @head. */
static void round_free_list(struct round *head)
{
	while (head) {
		struct round *r = head;

		head = r->next;
		round_free(r);
	}
}

/*
 * How a record goes into a round: whole, or a DWARF sample without the
 * part of its stack copy past dyn_size, which the kernel fills with
 * nothing the unwinder reads (it reads dyn_size bytes from the stack
 * pointer).  Copying whole 8-KiB copies into the queue was 38% of the
 * drain's CPU at 999 Hz; the six programs of tests/bench's unwind25 fill
 * 6,904 bytes of 8,192 on average, so some 16% of it goes.  At least 8
 * bytes of room stay,
 * so the sample unwinds as before (a stack copy of room 0 would not), and
 * the room stays a multiple of 8 (the fields after it stay aligned).
 */
struct cut {
	size_t keep;   /* bytes up to the cut: everything before the stack, its size field, the room kept */
	size_t len;    /* bytes cut there */
	uint64_t room; /* the new stack copy's size field */
};

static struct cut plan_cut(const struct perf_event_header *rec, const struct perf_event_attr *attr)
{
	struct perfrec_sample smp;
	struct cut c = { 0 };
	uint64_t room;

	if (rec->type != PERF_RECORD_SAMPLE || !attr || !(attr->sample_type & PERF_SAMPLE_STACK_USER) ||
	    perfrec_sample__parse_attr(rec, attr, &smp) < 0 || !smp.stack_size)
		return c;
	room = (smp.stack_dyn_size + 7) & ~(uint64_t)7;
	if (room < 8)
		room = 8;
	if (room >= smp.stack_size)
		return c;
	c.keep = (size_t)((const unsigned char *)smp.stack - (const unsigned char *)rec) + (size_t)room;
	c.len = (size_t)(smp.stack_size - room);
	c.room = room;
	return c;
}

static int round_add(struct round *r, const struct perf_event_header *rec, const struct perf_event_attr *attr,
		     const struct cut *c)
{
	size_t size = rec->size - c->len;
	unsigned char *dst;

	if (ARRAY_RESERVE(r->buf, r->cap, r->len + size, 1 << 16) < 0 ||
	    ARRAY_RESERVE(r->items, r->items_cap, r->nr + 1, 256) < 0)
		return -ENOMEM;
	dst = r->buf + r->len;
	if (!c->len) {
		memcpy(dst, rec, rec->size);
	} else {
		struct perf_event_header h = *rec;

		memcpy(dst, rec, c->keep);
		memcpy(dst + c->keep, (const unsigned char *)rec + c->keep + c->len, size - c->keep);
		h.size = (uint16_t)size;
		memcpy(dst, &h, sizeof(h));
		memcpy(dst + c->keep - c->room - sizeof(c->room), &c->room, sizeof(c->room));
	}
	r->items[r->nr++] = (struct item){ .off = r->len, .attr = attr };
	r->len += size;
	return 0;
}

static void trim_now_and_then(time_t *last)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec - *last >= TRIM_INTERVAL_SEC) {
		malloc_trim(0);
		*last = now.tv_sec;
	}
}

static void *work(void *arg)
{
	struct unwind_sink *s = arg;
	time_t last_trim = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct perfrec_unwinder_stats ust;
		struct perfrec_unwinder_table_stats tst;
		struct round *r;
		int err = 0, fe;

		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->head)
			break;
		r = s->head;
		s->head = r->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = true;
		pthread_mutex_unlock(&s->lock);

		for (size_t i = 0; i < r->nr && !err; i++)
			err = perfrec_unwinder__push_borrowed(s->u, (const void *)(r->buf + r->items[i].off),
							      r->items[i].attr);
		/*
		 * Flushed even when a push failed (no memory: the rest of the
		 * round is not emitted): nothing of a round may stay in the
		 * unwinder past its end, or it would come out with a later
		 * round, into whatever file that one goes to; and its records
		 * are borrowed from this round, which is reused after this.
		 */
		fe = perfrec_unwinder__flush(s->u, s->emit, s->ctx);
		if (!err)
			err = fe;
		perfrec_unwinder__stats(s->u, &ust);
		perfrec_unwinder__table_stats(s->u, &tst);
		trim_now_and_then(&last_trim);

		pthread_mutex_lock(&s->lock);
		s->st.unwinder = ust;
		s->st.tables = tst;
		atomic_fetch_sub_explicit(&s->queued, r->len, memory_order_relaxed);
		s->st.rounds++;
		if (err && !s->st.error)
			s->st.error = err;
		s->busy = false;
		if (s->nr_spare < MAX_SPARE_ROUNDS && r->cap <= MAX_SPARE_BYTES) {
			r->len = r->nr = 0;
			r->next = s->spare;
			s->spare = r;
			s->nr_spare++;
		} else {
			round_free(r);
		}
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int unwind_sink_new(const struct unwind_sink_opts *opts, unwind_sink_emit_fn emit, void *ctx,
		    struct unwind_sink **ret)
{
	struct perfrec_unwinder_opts uo = { .sz = sizeof(uo) };
	struct unwind_sink *s;
	int r;

	if (!emit || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->emit = emit;
	s->ctx = ctx;
	s->max_queue = opts && opts->max_queue_bytes ? opts->max_queue_bytes : DEFAULT_MAX_QUEUE;
	r = perfrec_unwinder__new(opts && opts->unwinder.sz ? &opts->unwinder : &uo, &s->u);
	if (r == 0 && opts)
		r = perfrec_unwinder__set_tables(s->u, &opts->tables);
	if (r == 0) {
		s->cur = calloc(1, sizeof(*s->cur));
		if (!s->cur)
			r = -ENOMEM;
	}
	if (r == 0) {
		r = -pthread_create(&s->worker, NULL, work, s);
		s->started = r == 0;
	}
	if (r < 0) {
		unwind_sink_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* @n more bytes queued, by the draining thread. */
static void count_queued(struct unwind_sink *s, uint64_t n)
{
	uint64_t q = atomic_fetch_add_explicit(&s->queued, n, memory_order_relaxed) + n;

	if (q > atomic_load_explicit(&s->max_queued, memory_order_relaxed))
		atomic_store_explicit(&s->max_queued, q, memory_order_relaxed);
}

int unwind_sink_record(struct unwind_sink *s, const struct perf_event_header *rec,
		       const struct perf_event_attr *attr)
{
	static const struct cut whole;
	struct cut c = plan_cut(rec, attr);
	uint64_t size = rec->size - c.len;
	int r;

	if (rec->type == PERF_RECORD_SAMPLE &&
	    atomic_load_explicit(&s->queued, memory_order_relaxed) + size > s->max_queue) {
		int n = perfrec_unwinder__strip(rec, attr, s->strip, sizeof(s->strip));

		if (n > 0) {
			/* Already in the unwound layout: the worker passes it on as it is. */
			r = round_add(s->cur, (const void *)s->strip, NULL, &whole);
			if (r == 0) {
				count_queued(s, (uint64_t)n);
				pthread_mutex_lock(&s->lock);
				s->st.behind++;
				pthread_mutex_unlock(&s->lock);
			}
			return r;
		}
	}
	r = round_add(s->cur, rec, attr, &c);
	if (r == 0)
		count_queued(s, size);
	return r;
}

int unwind_sink_state(struct unwind_sink *s, const struct perf_event_header *rec,
		      const struct perf_event_attr *attr)
{
	int r;

	if (rec->type == PERF_RECORD_SAMPLE)
		return -EINVAL;
	/*
	 * The worker is idle (the caller synced and has handed nothing over
	 * since), so the unwinder is this thread's until the next round,
	 * whose hand-over under s->lock publishes what is done here.
	 */
	pthread_mutex_lock(&s->lock);
	if (s->head || s->busy) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&s->lock);
	r = perfrec_unwinder__rewrite(s->u, rec, attr, s->strip, sizeof(s->strip));
	return r < 0 ? r : 0;
}

bool unwind_sink_idle(struct unwind_sink *s)
{
	bool idle;

	pthread_mutex_lock(&s->lock);
	idle = !s->head && !s->busy;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

int unwind_sink_round(struct unwind_sink *s)
{
	struct round *next;

	if (!s->cur->nr)
		return 0;
	pthread_mutex_lock(&s->lock);
	next = s->spare;
	if (next) {
		s->spare = next->next;
		s->nr_spare--;
		next->next = NULL;
	} else if (!(next = calloc(1, sizeof(*next)))) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	if (s->tail)
		s->tail->next = s->cur;
	else
		s->head = s->cur;
	s->tail = s->cur;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	s->cur = next;
	return 0;
}

int unwind_sink_sync(struct unwind_sink *s)
{
	int r = unwind_sink_round(s);

	pthread_mutex_lock(&s->lock);
	while ((s->head || s->busy) && s->started)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void unwind_sink_stats(struct unwind_sink *s, struct unwind_sink_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = s->st;
	pthread_mutex_unlock(&s->lock);
	ret->queued_bytes = atomic_load_explicit(&s->queued, memory_order_relaxed);
	ret->max_queued_bytes = atomic_load_explicit(&s->max_queued, memory_order_relaxed);
}

void unwind_sink_free(struct unwind_sink *s)
{
	if (!s)
		return;
	if (s->started) {
		unwind_sink_sync(s);
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->worker, NULL);
	}
	round_free_list(s->head);
	round_free_list(s->spare);
	round_free(s->cur);
	perfrec_unwinder__free(s->u);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
