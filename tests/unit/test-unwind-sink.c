// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the unwinding sink: this process's maps and a sample of its own
 * stack go in on the calling thread, come out of the worker in drain
 * order, unwound; a worker too far behind gets samples stripped to their
 * ip by the drain, counted, none lost.  (The capture and map helpers are
 * those of test-unwind.c.)
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <pthread.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/unwind.h>

#include "unwind-capture.h"
#include "unwind-sink.h"

struct sink_feed {
	struct unwind_sink *u;
	bool state;
};

static void take_map(void *ctx, const struct perf_event_header *h)
{
	struct sink_feed *f = ctx;

	if (f->state)
		cr_assert_eq(unwind_sink_state(f->u, h, NULL), 0);
	else
		cr_assert_eq(unwind_sink_record(f->u, h, NULL), 0);
}

/* This process's maps (for_each_map()) into the sink, as file state or as records. */
static void feed_maps_as(struct unwind_sink *u, const char *swap_path, const uint8_t *build_id, bool state)
{
	struct sink_feed f = { u, state };

	for_each_map(swap_path, build_id, take_map, &f);
}

static void feed_maps(struct unwind_sink *u, const char *swap_path, const uint8_t *build_id)
{
	feed_maps_as(u, swap_path, build_id, false);
}


struct got {
	pthread_mutex_t lock;
	size_t nr, samples;
	uint64_t frames[64];   /* user frames of each sample */
	uint32_t types[4096];
	bool bad;
};

static struct perf_event_attr rewritten;

static int collect(void *ctx, const struct perf_event_header *rec)
{
	struct got *g = ctx;
	struct perfrec_sample s;

	pthread_mutex_lock(&g->lock);
	if (g->nr < 4096)
		g->types[g->nr] = rec->type;
	g->nr++;
	if (rec->type == PERF_RECORD_SAMPLE) {
		if (perfrec_sample__parse_attr(rec, &rewritten, &s) < 0 || s.cgroup != 0x77 || s.nr_callchain < 2 ||
		    s.callchain[0] != PERF_CONTEXT_USER)
			g->bad = true;
		else if (g->samples < 64)
			g->frames[g->samples] = s.nr_callchain - 1;
		g->samples++;
	}
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static struct snap snap;

static void setup(void)
{
	struct perf_event_attr a = attr();

	find_stack_end();
	outer_marker(&snap);
	perfrec_unwinder__rewrite_attr(&a, &rewritten);
}

TestSuite(unwind_sink, .init = setup);

Test(unwind_sink, records_come_back_in_drain_order_unwound)
{
	static unsigned char in[65536];
	static struct got g = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct perf_event_attr a = attr();
	struct unwind_sink_stats st;
	struct unwind_sink *s;
	size_t maps;

	cr_assert_eq(unwind_sink_new(NULL, collect, &g, &s), 0);
	feed_maps(s, NULL, NULL);
	cr_assert_eq(unwind_sink_round(s), 0);
	cr_assert_eq(unwind_sink_record(s, sample(&snap, in), &a), 0);
	cr_assert_eq(unwind_sink_record(s, sample(&snap, in), &a), 0);
	cr_assert_eq(unwind_sink_sync(s), 0);
	unwind_sink_stats(s, &st);
	maps = g.nr - 2;
	cr_assert_geq(maps, 1);
	cr_expect_eq(g.types[maps], PERF_RECORD_SAMPLE, "the samples do not come after the maps");
	cr_expect_eq(g.samples, 2);
	cr_expect(!g.bad, "a sample came out not in the rewritten layout");
	cr_expect_geq(g.frames[0], 3, "not unwound: %" PRIu64 " user frames", g.frames[0]);
	cr_expect_eq(st.behind, 0);
	cr_expect_eq(st.unwinder.unwound, 2);
	cr_expect_eq(st.queued_bytes, 0);
	cr_expect_eq(st.error, 0);
	unwind_sink_free(s);
}

Test(unwind_sink, a_worker_behind_gets_stripped_samples_and_loses_none)
{
	static unsigned char in[65536];
	static struct got g = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct unwind_sink_opts o = { .max_queue_bytes = 64 << 10 };
	struct perf_event_attr a = attr();
	struct unwind_sink_stats st;
	struct unwind_sink *s;
	size_t before, nr_samples = 0;

	cr_assert_eq(unwind_sink_new(&o, collect, &g, &s), 0);
	feed_maps(s, NULL, NULL);
	cr_assert_eq(unwind_sink_sync(s), 0);
	before = g.nr;
	/* A round of 40 samples of 8 KiB: far past 64 KiB before any is unwound. */
	for (int i = 0; i < 40; i++, nr_samples++)
		cr_assert_eq(unwind_sink_record(s, sample(&snap, in), &a), 0);
	cr_assert_eq(unwind_sink_sync(s), 0);
	unwind_sink_stats(s, &st);
	cr_expect_eq(g.nr - before, nr_samples, "samples lost: %zu of %zu came out", g.nr - before, nr_samples);
	cr_expect(!g.bad);
	cr_expect_gt(st.behind, 0, "nothing stripped past the bound");
	cr_expect_lt(st.behind, nr_samples, "all stripped: the bound was not used");
	cr_expect_leq(st.max_queued_bytes, o.max_queue_bytes + sizeof(in));
	cr_expect_eq(st.unwinder.samples + st.behind, nr_samples);
	unwind_sink_free(s);
}

/* An output's synthesized state: it goes into the address spaces, not out again. */
Test(unwind_sink, state_feeds_the_unwinder_without_coming_out)
{
	static unsigned char in[65536];
	static struct got g = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct perf_event_attr a = attr();
	struct unwind_sink_stats st;
	struct unwind_sink *s;

	cr_assert_eq(unwind_sink_new(NULL, collect, &g, &s), 0);
	feed_maps_as(s, NULL, NULL, true);
	cr_expect_eq(unwind_sink_state(s, sample(&snap, in), &a), -EINVAL, "a sample taken as state");
	cr_assert_eq(unwind_sink_record(s, sample(&snap, in), &a), 0);
	cr_assert_eq(unwind_sink_sync(s), 0);
	unwind_sink_stats(s, &st);
	cr_expect_eq(g.nr, 1, "%zu records came out, not just the sample", g.nr);
	cr_expect_eq(g.samples, 1);
	cr_expect(!g.bad);
	cr_expect_geq(g.frames[0], 3, "not unwound with the maps given as state: %" PRIu64 " user frames", g.frames[0]);
	cr_expect_eq(st.unwinder.unwound, 1);
	unwind_sink_free(s);
}

/* The last sample that came out, whole. */
struct last {
	unsigned char rec[65536];
	size_t size;
};

static int keep_last(void *ctx, const struct perf_event_header *rec)
{
	struct last *l = ctx;

	if (rec->type == PERF_RECORD_SAMPLE) {
		memcpy(l->rec, rec, rec->size);
		l->size = rec->size;
	}
	return 0;
}

static void take_map_unwinder(void *ctx, const struct perf_event_header *h)
{
	unsigned char out[4096];

	cr_assert_geq(perfrec_unwinder__rewrite(ctx, h, NULL, out, sizeof(out)), 0);
}

/*
 * The drain queues a DWARF sample without the room of its stack copy past
 * dyn_size (all the unwinder reads): the queue holds less, and what comes
 * out is byte for byte what the unwinder makes of the whole sample.
 */
Test(unwind_sink, samples_queue_without_the_unused_stack_and_come_out_the_same)
{
	static unsigned char in[65536], direct[65536];
	static struct last got;
	static const uint64_t dyns[] = { 0, 1, 5, 8, 1000, 4096 };
	struct perf_event_attr a = attr();

	for (size_t i = 0; i < sizeof(dyns) / sizeof(dyns[0]); i++) {
		struct snap sn = snap;
		struct unwind_sink_stats st;
		struct perfrec_unwinder *u;
		struct unwind_sink *s;
		const struct perf_event_header *h;
		uint64_t room;
		int n;

		sn.dyn = dyns[i] < snap.dyn ? dyns[i] : snap.dyn;
		h = sample(&sn, in);
		cr_assert_eq(perfrec_unwinder__new(NULL, &u), 0);
		for_each_map(NULL, NULL, take_map_unwinder, u);
		n = perfrec_unwinder__rewrite(u, h, &a, direct, sizeof(direct));
		cr_assert_gt(n, 0);
		perfrec_unwinder__free(u);
		if (sn.dyn >= 1000) {
			struct perfrec_sample ds;

			cr_assert_eq(perfrec_sample__parse_attr((const void *)direct, &rewritten, &ds), 0);
			cr_expect_geq(ds.nr_callchain, 4, "dyn %" PRIu64 ": not unwound (%" PRIu64 " entries)", sn.dyn,
				      ds.nr_callchain);
		}

		got.size = 0;
		cr_assert_eq(unwind_sink_new(NULL, keep_last, &got, &s), 0);
		feed_maps_as(s, NULL, NULL, true);
		cr_assert_eq(unwind_sink_record(s, h, &a), 0);
		unwind_sink_stats(s, &st);
		/* the room kept: dyn_size rounded up to 8, at least 8 */
		room = sn.dyn < 8 ? 8 : (sn.dyn + 7) / 8 * 8;
		cr_expect_eq(st.queued_bytes, h->size - (STACK - room),
			     "dyn %" PRIu64 ": %" PRIu64 " bytes queued for a sample of %u", sn.dyn, st.queued_bytes,
			     h->size);
		cr_assert_eq(unwind_sink_sync(s), 0);
		unwind_sink_stats(s, &st);
		cr_expect_eq(st.queued_bytes, 0);
		cr_expect_eq(st.unwinder.samples, 1);
		cr_assert_eq(got.size, (size_t)n, "dyn %" PRIu64 ": %zu bytes out, not %d", sn.dyn, got.size, n);
		cr_expect(memcmp(got.rec, direct, (size_t)n) == 0, "dyn %" PRIu64 ": not the same sample", sn.dyn);
		unwind_sink_free(s);
	}
}

/* @rec unwound by an unwinder of its own with this process's maps: into @out, its size. */
static int unwound_alone(const struct perf_event_header *rec, unsigned char *out, size_t outsz)
{
	struct perf_event_attr a = attr();
	struct perfrec_unwinder *u;
	int n;

	cr_assert_eq(perfrec_unwinder__new(NULL, &u), 0);
	for_each_map(NULL, NULL, take_map_unwinder, u);
	n = perfrec_unwinder__rewrite(u, rec, &a, out, outsz);
	perfrec_unwinder__free(u);
	cr_assert_gt(n, 0);
	return n;
}

/* Queue @rec alone in a round and wait for it: the bytes it took in the queue. */
static uint64_t one_round(struct unwind_sink *s, const struct perf_event_header *rec)
{
	struct perf_event_attr a = attr();
	struct unwind_sink_stats st;

	cr_assert_eq(unwind_sink_record(s, rec, &a), 0);
	unwind_sink_stats(s, &st);
	cr_assert_eq(unwind_sink_sync(s), 0);
	return st.queued_bytes;
}

/* What a sample of @sn takes in the queue untrimmed: its stack's room past dyn_size dropped. */
static uint64_t untrimmed_bytes(const struct snap *sn, const struct perf_event_header *h)
{
	uint64_t room = sn->dyn < 8 ? 8 : (sn->dyn + 7) / 8 * 8;

	return h->size - (STACK - room);
}

/*
 * Once a walk of a thread's sample has reached the outermost frame, the
 * drain queues that thread's later samples only up to the highest word
 * the walk read (and a little more): fewer bytes, the same sample out.
 * It takes the worker's word a round later.
 */
Test(unwind_sink, later_samples_of_a_thread_queue_up_to_its_stack_top_and_come_out_the_same)
{
	static unsigned char in[65536], direct[65536];
	static struct last got;
	struct unwind_sink_stats st;
	struct unwind_sink *s;
	const struct perf_event_header *h = sample(&snap, in);
	uint64_t whole = untrimmed_bytes(&snap, h), q;
	int n = unwound_alone(h, direct, sizeof(direct));

	cr_assert_eq(unwind_sink_new(NULL, keep_last, &got, &s), 0);
	feed_maps_as(s, NULL, NULL, true);
	cr_expect_eq(one_round(s, h), whole, "the first sample trimmed");
	cr_expect_eq(one_round(s, h), whole, "trimmed before the worker's word came");
	q = one_round(s, h);
	unwind_sink_stats(s, &st);
	cr_expect_eq(st.trimmed, 1, "%" PRIu64 " samples trimmed, not 1", st.trimmed);
	cr_expect_lt(q, whole, "%" PRIu64 " bytes queued, as many as untrimmed", q);
	cr_expect_eq(st.trimmed_bytes, whole - q, "trimmed %" PRIu64 " bytes, queued %" PRIu64 " of %" PRIu64,
		     st.trimmed_bytes, q, whole);
	cr_expect_eq(st.trim_missed, 0);
	cr_assert_eq(got.size, (size_t)n, "%zu bytes out, not %d", got.size, n);
	cr_expect(memcmp(got.rec, direct, (size_t)n) == 0, "the trimmed sample came out otherwise");
	unwind_sink_free(s);
}

/* An EXIT (or FORK, or exec) record of the thread: what was known of its stack is forgotten. */
Test(unwind_sink, a_thread_that_exits_is_copied_whole_again)
{
	static unsigned char in[65536];
	static struct last got;
	struct unwind_sink_stats st;
	struct unwind_sink *s;
	const struct perf_event_header *h = sample(&snap, in);
	uint64_t whole = untrimmed_bytes(&snap, h);
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} ex = { { PERF_RECORD_EXIT, 0, sizeof(ex) }, (uint32_t)getpid(), 1, (uint32_t)getpid(), 1, 1000 };

	cr_assert_eq(unwind_sink_new(NULL, keep_last, &got, &s), 0);
	feed_maps_as(s, NULL, NULL, true);
	one_round(s, h);
	one_round(s, h);
	cr_assert_lt(one_round(s, h), whole, "not trimmed to start with");
	cr_assert_eq(unwind_sink_record(s, &ex.h, NULL), 0);
	cr_assert_eq(unwind_sink_sync(s), 0);
	cr_expect_eq(one_round(s, h), whole, "trimmed after the thread exited");
	unwind_sink_stats(s, &st);
	cr_expect_eq(st.trimmed, 1);
	unwind_sink_free(s);
}

/*
 * A top too low (here learnt from a sample whose return address into
 * middle_marker() reads 0, as if the stack ended there): the walk of a
 * trimmed copy wants a word past it, the worker says so, the thread is
 * forgotten and copied whole, then trimmed at the right top.
 */
Test(unwind_sink, a_top_too_low_is_found_and_forgotten)
{
	static unsigned char in[65536], bad_in[65536], direct[65536];
	static struct last got;
	static struct snap bad;
	struct unwind_sink_stats st;
	struct unwind_sink *s;
	const struct perf_event_header *h = sample(&snap, in);
	uint64_t whole = untrimmed_bytes(&snap, h), lo = (uint64_t)(uintptr_t)middle_marker;
	int n = unwound_alone(h, direct, sizeof(direct));
	size_t at = STACK;

	bad = snap;
	for (size_t off = 0; off + 8 <= bad.dyn && at == STACK; off += 8) {
		uint64_t v;

		memcpy(&v, bad.stack + off, 8);
		if (v > lo && v < lo + 256)
			at = off;
	}
	cr_assert_lt(at, STACK, "no return address into middle_marker() on the stack");
	memset(bad.stack + at, 0, 8);

	cr_assert_eq(unwind_sink_new(NULL, keep_last, &got, &s), 0);
	feed_maps_as(s, NULL, NULL, true);
	one_round(s, sample(&bad, bad_in));
	one_round(s, sample(&bad, bad_in));
	/* Trimmed at the low top: walks that want more; forgotten at the round after. */
	h = sample(&snap, in);
	cr_expect_lt(one_round(s, h), whole);
	cr_expect_lt(one_round(s, h), whole);
	unwind_sink_stats(s, &st);
	cr_expect_eq(st.trim_missed, 2, "%" PRIu64 " walks found the copy short, not 2", st.trim_missed);
	cr_expect_eq(one_round(s, h), whole, "still trimmed after the walks found the top too low");
	cr_assert_eq(got.size, (size_t)n);
	cr_expect(memcmp(got.rec, direct, (size_t)n) == 0, "the sample copied whole came out otherwise");
	/* Learnt again from that whole walk: trimmed at the right top. */
	one_round(s, h);
	cr_expect_lt(one_round(s, h), whole);
	unwind_sink_stats(s, &st);
	cr_expect_eq(st.trim_missed, 2);
	cr_expect(memcmp(got.rec, direct, (size_t)n) == 0, "trimmed at the right top, it came out otherwise");
	unwind_sink_free(s);
}
