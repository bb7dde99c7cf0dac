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

/*
 * This process's file mappings as MMAP2 records (device and inode form),
 * with @path_for naming a file in place of @exe when given, and
 * @build_id (20 bytes) in place of dev/ino for that one when given.
 */
static void feed_maps_as(struct unwind_sink *u, const char *swap_path, const uint8_t *build_id, bool state)
{
	char exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert(n > 0);
	exe[n] = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		_Alignas(8) unsigned char rec[PATH_MAX + 256] = {0};
		struct perf_event_header *h = (void *)rec;
		uint64_t start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], name[PATH_MAX] = "";
		unsigned char *p = rec + sizeof(*h);
		uint32_t pid = (uint32_t)getpid(), prot;
		size_t len;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %4095s",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, name) < 7 || name[0] != '/')
			continue;
		prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
		memcpy(p, &pid, 4);
		memcpy(p + 4, &pid, 4);
		memcpy(p + 8, &start, 8);
		end -= start;
		memcpy(p + 16, &end, 8);
		memcpy(p + 24, &pgoff, 8);
		h->misc = PERF_RECORD_MISC_USER;
		if (strcmp(name, exe) == 0 && build_id) {
			h->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
			p[32] = 20;
			memcpy(p + 36, build_id, 20);
		} else {
			memcpy(p + 32, &maj, 4);
			memcpy(p + 36, &min, 4);
			memcpy(p + 40, &ino, 8);
		}
		memcpy(p + 56, &prot, 4);
		if (strcmp(name, exe) == 0 && swap_path)
			snprintf(name, sizeof(name), "%s", swap_path);
		len = strlen(name) + 1;
		memcpy(p + 64, name, len);
		h->type = PERF_RECORD_MMAP2;
		h->size = (uint16_t)((sizeof(*h) + 64 + len + 7) & ~(size_t)7);
		if (state)
			cr_assert_eq(unwind_sink_state(u, h, NULL), 0);
		else
			cr_assert_eq(unwind_sink_record(u, h, NULL), 0);
	}
	fclose(f);
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
