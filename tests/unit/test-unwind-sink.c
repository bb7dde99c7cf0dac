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
