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
#include "stacktop.h"
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
/* Stack tops the worker tells the drain a round (stacktop.h), at most: the rest wait for the next. */
#define MAX_TOLD 4096

struct item {
	size_t off;
	const struct perf_event_attr *attr;
};

/* What the worker tells the drain of a thread's stack: its top (0: forget it), of a round stamped seq. */
struct told {
	uint32_t tid;
	uint64_t top, seq;
};

/*
 * What the worker told of a thread last, so that it tells a top when it
 * rises, not every sample's.  Told again after SENT_ROUNDS rounds, as the
 * drain may not have taken it (the thread's slot was forgotten after the
 * round began); and not kept from a round in which the thread was
 * renewed (FORK, EXIT, exec), which the drain does not take.
 */
struct sent {
	uint32_t tid;
	uint64_t top;
	uint64_t round;    /* the worker's round it was told in */
	uint64_t renewed;  /* the round the thread was renewed in, + 1 (0: not seen) */
};
#define SENT_ROUNDS 16

struct round {
	uint64_t seq;          /* the drain's stacktops_seq() when it began the round */
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
	/*
	 * Stack tops (stacktop.h).  The drain's own, and what it trimmed; the
	 * worker's: the round it is in, what it told of each thread last (so
	 * that a thread's top is told when it rises, not per sample), what it
	 * has to tell; s->told, under s->lock, what the drain has yet to take.
	 */
	struct stacktops tops;
	_Atomic uint64_t trimmed, trimmed_bytes;
	uint64_t wseq, wmissed, wround;
	struct sent sent[STACKTOP_SLOTS];
	struct told *wtold, *told, *dtold;
	size_t nr_wtold, cap_wtold, nr_told, cap_told, nr_dtold, cap_dtold;
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
	uint64_t dyn;  /* its new dyn_size (trimmed at the thread's top), 0: the kernel's */
};

/* perf's register number of the stack pointer on x86_64 (PERF_REG_X86_SP). */
#define REG_SP 7

static uint64_t sample_sp(const struct perfrec_sample *smp)
{
	return smp->regs_abi ? perfrec_user_reg(smp->regs, smp->regs_mask, REG_SP) : 0;
}

/*
 * A DWARF sample of a thread whose top is known (stacktop.h) keeps its
 * stack up to there: its dyn_size becomes what is kept, and the room 8
 * more, which tells the worker that the copy was trimmed (untrimmed, the
 * room is the dyn_size rounded up to 8): a walk wanting a word past such
 * a copy means the top was wrong.
 */
static struct cut plan_cut(struct unwind_sink *s, const struct perf_event_header *rec,
			   const struct perf_event_attr *attr)
{
	struct perfrec_sample smp;
	struct cut c = { 0 };
	uint64_t room, keep = 0;

	if (rec->type != PERF_RECORD_SAMPLE || !attr || !(attr->sample_type & PERF_SAMPLE_STACK_USER) ||
	    perfrec_sample__parse_attr(rec, attr, &smp) < 0 || !smp.stack_size)
		return c;
	room = (smp.stack_dyn_size + 7) & ~(uint64_t)7;
	if (room < 8)
		room = 8;
	if (s && (attr->sample_type & PERF_SAMPLE_TID))
		keep = stacktops_keep(stacktops_top(&s->tops, smp.tid), sample_sp(&smp), smp.stack_dyn_size);
	if (keep && keep + 8 < room) {
		/* The drain alone writes them: no locked add. */
		atomic_store_explicit(&s->trimmed, atomic_load_explicit(&s->trimmed, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		atomic_store_explicit(&s->trimmed_bytes,
				      atomic_load_explicit(&s->trimmed_bytes, memory_order_relaxed) + room - (keep + 8),
				      memory_order_relaxed);
		room = keep + 8;
		c.dyn = keep;
	}
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
		if (c->dyn)
			memcpy(dst + c->keep, &c->dyn, sizeof(c->dyn));
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

static struct sent *sent_slot(struct unwind_sink *s, uint32_t tid)
{
	return &s->sent[stacktop_index(tid)];
}

/* The worker: tell the drain @top for @tid (0: forget it), when there is room. */
static void tell(struct unwind_sink *s, uint32_t tid, uint64_t top)
{
	if (s->nr_wtold >= MAX_TOLD || ARRAY_RESERVE(s->wtold, s->cap_wtold, s->nr_wtold + 1, 64) < 0)
		return;
	s->wtold[s->nr_wtold++] = (struct told){ .tid = tid, .top = top, .seq = s->wseq };
}

/*
 * perfrec_unwinder_reach_fn, on the worker: a whole walk's top when it is
 * higher than the last told for the thread; a walk that wanted a word past
 * a trimmed copy (room = dyn_size + 8, plan_cut()) forgets the thread.
 */
static void on_reach(void *ctx, const struct perfrec_unwinder_reach *rr)
{
	struct unwind_sink *s = ctx;
	struct sent *t = sent_slot(s, rr->tid);
	bool trimmed = rr->len && !(rr->len & 7) && rr->room == rr->len + 8;

	if (rr->missed && trimmed && rr->missed >= rr->sp + rr->len - 8) {
		*t = (struct sent){ .tid = rr->tid };
		tell(s, rr->tid, 0);
		s->wmissed++;
		return;
	}
	if (!rr->top || rr->top <= rr->sp ||
	    (t->tid == rr->tid && t->top >= rr->top && s->wround - t->round < SENT_ROUNDS))
		return;
	tell(s, rr->tid, rr->top);
	if (t->tid != rr->tid || t->renewed != s->wround + 1)
		*t = (struct sent){ .tid = rr->tid, .top = rr->top, .round = s->wround };
}

/* The thread of a FORK, EXIT or exec's COMM record (0: none): its stack is not what it was. */
static uint32_t thread_renewed(const struct perf_event_header *rec)
{
	uint32_t tid;

	switch (rec->type) {
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		/* pid, ppid, tid, ptid, time */
		if (rec->size < sizeof(*rec) + 16)
			return 0;
		memcpy(&tid, (const unsigned char *)rec + sizeof(*rec) + 8, sizeof(tid));
		return tid;
	case PERF_RECORD_COMM:
		/* pid, tid, comm */
		if (!(rec->misc & PERF_RECORD_MISC_COMM_EXEC) || rec->size < sizeof(*rec) + 8)
			return 0;
		memcpy(&tid, (const unsigned char *)rec + sizeof(*rec) + 4, sizeof(tid));
		return tid;
	default:
		return 0;
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

		s->wseq = r->seq;
		s->wround++;
		for (size_t i = 0; i < r->nr && !err; i++) {
			const struct perf_event_header *h = (const void *)(r->buf + r->items[i].off);
			uint32_t tid = h->type != PERF_RECORD_SAMPLE ? thread_renewed(h) : 0;

			if (tid)
				*sent_slot(s, tid) = (struct sent){ .tid = tid, .renewed = s->wround + 1 };
			err = perfrec_unwinder__push_borrowed(s->u, h, r->items[i].attr);
		}
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
		s->st.trim_missed = s->wmissed;
		/* What the drain has not taken yet stays; past MAX_TOLD, told again when learnt again. */
		for (size_t i = 0; i < s->nr_wtold && s->nr_told < MAX_TOLD; i++)
			if (ARRAY_RESERVE(s->told, s->cap_told, s->nr_told + 1, 64) == 0)
				s->told[s->nr_told++] = s->wtold[i];
		s->nr_wtold = 0;
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
	if (r == 0)
		perfrec_unwinder__on_reach(s->u, on_reach, s);
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
	struct cut c = plan_cut(s, rec, attr);
	uint64_t size = rec->size - c.len;
	uint32_t tid;
	int r;

	if (rec->type != PERF_RECORD_SAMPLE && (tid = thread_renewed(rec)))
		stacktops_forget(&s->tops, tid);
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
	/* What the worker told of the threads' stacks: taken here, learnt below, out of the lock. */
	{
		struct told *t = s->told;
		size_t cap = s->cap_told;

		s->told = s->dtold;
		s->cap_told = s->cap_dtold;
		s->dtold = t;
		s->cap_dtold = cap;
		s->nr_dtold = s->nr_told;
		s->nr_told = 0;
	}
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->nr_dtold; i++) {
		const struct told *t = &s->dtold[i];

		if (t->top)
			stacktops_learn(&s->tops, t->tid, t->top, t->seq);
		else if (stacktops_top(&s->tops, t->tid))
			stacktops_forget(&s->tops, t->tid);
	}
	next->seq = stacktops_seq(&s->tops);
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
	ret->trimmed = atomic_load_explicit(&s->trimmed, memory_order_relaxed);
	ret->trimmed_bytes = atomic_load_explicit(&s->trimmed_bytes, memory_order_relaxed);
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
	free(s->wtold);
	free(s->told);
	free(s->dtold);
	perfrec_unwinder__free(s->u);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
