// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the flight recorder's history on synthetic records: every
 * record stamped with a sequence number and a fill pattern so that order,
 * integrity across chunk boundaries and exactly which records survive
 * eviction by window or by memory cap can be checked record by record.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

/* header | u64 seq | u64 cpu | fill bytes (seq & 0xff) */
static struct perf_event_header *mkrec(uint32_t type, size_t size, uint64_t seq, uint64_t cpu)
{
	struct perf_event_header *h = calloc(1, size);

	cr_assert(h && size >= 24 && size % 8 == 0);
	h->type = type;
	h->size = (uint16_t)size;
	memcpy((char *)h + 8, &seq, 8);
	memcpy((char *)h + 16, &cpu, 8);
	memset((char *)h + 24, (int)(seq & 0xff), size - 24);
	return h;
}

static void add(struct history *hs, size_t cpu, uint32_t type, size_t size, uint64_t seq, uint64_t t)
{
	struct perf_event_header *h = mkrec(type, size, seq, cpu);

	cr_assert_eq(history_add(hs, cpu, h, t), 0);
	free(h);
}

struct seen {
	uint64_t seq[20000];
	uint64_t time[20000];
	size_t n;
	uint64_t cpu;
	size_t samples, others;
	bool check_cpu;
};

static int collect(void *ctx, const struct perf_event_header *h, uint64_t t)
{
	struct seen *s = ctx;
	const unsigned char *p = (const unsigned char *)h;
	uint64_t seq, cpu;

	cr_assert_geq(h->size, 24);
	memcpy(&seq, p + 8, 8);
	memcpy(&cpu, p + 16, 8);
	/* A record is whole: its fill survived chunking intact. */
	for (size_t i = 24; i < h->size; i++)
		cr_assert_eq(p[i], (unsigned char)(seq & 0xff), "record %llu corrupt at byte %zu",
			     (unsigned long long)seq, i);
	if (s->check_cpu)
		cr_assert_eq(cpu, s->cpu, "record of cpu %llu in cpu %llu's list",
			     (unsigned long long)cpu, (unsigned long long)s->cpu);
	cr_assert_lt(s->n, sizeof(s->seq) / sizeof(s->seq[0]));
	s->seq[s->n] = seq;
	s->time[s->n] = t;
	s->n++;
	if (h->type == PERF_RECORD_SAMPLE)
		s->samples++;
	else
		s->others++;
	return 0;
}

static struct history *mk(size_t cpus, uint64_t window, uint64_t max, size_t chunk)
{
	struct history_opts o = { .nr_cpus = cpus, .window_ns = window, .max_bytes = max, .chunk_bytes = chunk };
	struct history *h = NULL;

	cr_assert_eq(history_new(&o, &h), 0);
	return h;
}

Test(history, keeps_each_cpus_records_in_order_and_apart)
{
	struct history *h = mk(3, 0, 64 << 20, 4096);
	static struct seen s;
	uint64_t seq = 0;

	/* Interleaved over the CPUs, sizes varying. */
	for (int i = 0; i < 3000; i++) {
		size_t cpu = (size_t)(i * 7 % 3);

		add(h, cpu, PERF_RECORD_SAMPLE, 24 + 8 * (size_t)(i % 13), seq, 1000 + (uint64_t)i);
		seq++;
	}
	for (size_t cpu = 0; cpu < 3; cpu++) {
		struct history_span sp;

		memset(&s, 0, sizeof(s));
		s.cpu = cpu;
		s.check_cpu = true;
		cr_assert_eq(history_foreach(h, cpu, 0, collect, &s), 0);
		cr_assert_eq(s.n, 1000);
		for (size_t i = 1; i < s.n; i++)
			cr_assert_gt(s.seq[i], s.seq[i - 1], "cpu %zu out of order at %zu", cpu, i);
		history_span(h, cpu, &sp);
		cr_assert_eq(sp.records, 1000);
		cr_assert_eq(sp.first_time, s.time[0]);
		cr_assert_eq(sp.last_time, s.time[s.n - 1]);
	}
	history_free(h);
}

Test(history, evicts_whole_chunks_older_than_the_window)
{
	const uint64_t window = 100000, step = 10, end = 1000000;
	struct history *h = mk(1, window, 64 << 20, 4096);
	static struct seen s;
	struct history_span sp;
	uint64_t total, by_cap, in_window = 0;

	for (uint64_t t = step; t <= end; t += step)
		add(h, 0, PERF_RECORD_SAMPLE, 40, t / step, t);
	history_span(h, 0, &sp);
	history_evictions(h, &total, &by_cap);
	cr_assert_gt(total, 0, "nothing was evicted over 10 windows");
	cr_assert_eq(by_cap, 0, "the cap was not reached, yet chunks were evicted by it");
	cr_assert_eq(sp.last_time, end);
	/* Whole chunks: nothing much older than the window plus one chunk's span. */
	cr_assert_geq(sp.first_time, end - window - window / 16 - 4096 / 48 * step,
		      "kept %llu, older than the window allows", (unsigned long long)sp.first_time);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, 0, collect, &s), 0);
	for (size_t i = 0; i < s.n; i++)
		if (s.time[i] >= end - window)
			in_window++;
	cr_assert_eq(in_window, window / step + 1, "a record inside the window was lost");
	/* min_time cuts the straddling chunk's older samples. */
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, end - window, collect, &s), 0);
	cr_assert_eq(s.n, window / step + 1);
	cr_assert_eq(s.time[0], end - window);
	history_free(h);
}

Test(history, ages_out_an_idle_cpu_on_trim)
{
	struct history *h = mk(2, 1000, 64 << 20, 4096);
	struct history_span sp;

	for (uint64_t t = 1; t <= 100; t++)
		add(h, 1, PERF_RECORD_SAMPLE, 32, t, t);
	add(h, 0, PERF_RECORD_SAMPLE, 32, 0, 500);
	history_trim(h, 600);
	history_span(h, 1, &sp);
	cr_assert_eq(sp.records, 100, "records inside the window were evicted");
	cr_assert_eq(history_oldest(h), 1, "cpu 1's record at 1 is the oldest held");
	history_trim(h, 5000);
	history_span(h, 1, &sp);
	cr_assert_eq(sp.records, 0, "an idle CPU kept records far older than the window");
	cr_assert_eq(history_newest(h), 5000);
	cr_assert_eq(history_oldest(h), 0, "everything is older than the window now");
	history_free(h);
}

Test(history, memory_cap_holds_and_evicts_the_globally_oldest)
{
	const uint64_t cap = 1 << 20;
	struct history *h = mk(2, 0, cap, 64 * 1024);
	struct history_span a, b;
	uint64_t total, by_cap, t = 0;

	/* CPU 0 is four times as busy as CPU 1; 10 MiB in all. */
	for (int i = 0; i < 40000; i++) {
		t += 100;
		add(h, i % 5 == 4 ? 1 : 0, PERF_RECORD_SAMPLE, 256, (uint64_t)i, t);
		cr_assert_leq(history_memory(h), cap, "memory %llu over the cap after record %d",
			      (unsigned long long)history_memory(h), i);
	}
	history_evictions(h, &total, &by_cap);
	cr_assert_gt(by_cap, 0);
	cr_assert_eq(total, by_cap);
	history_span(h, 0, &a);
	history_span(h, 1, &b);
	cr_assert_gt(a.records, 0);
	cr_assert_gt(b.records, 0);
	/* The newest records are never the ones evicted (the last went to CPU 1). */
	cr_assert_eq(b.last_time, t);
	cr_assert_eq(a.last_time, t - 100);
	/*
	 * The same window on both CPUs: the quiet CPU's oldest record is no
	 * older than the busy one's by more than one of its chunks' span
	 * (64 KiB of 256-byte records every 500 ns = 128 us).
	 */
	cr_assert_leq(a.first_time > b.first_time ? a.first_time - b.first_time : b.first_time - a.first_time,
		      64 * 1024 / 264 * 500 + 1000,
		      "windows differ: cpu0 from %llu, cpu1 from %llu",
		      (unsigned long long)a.first_time, (unsigned long long)b.first_time);
	cr_assert_gt(a.records, 3 * b.records, "the busy CPU should hold more records in the same window");
	history_free(h);
}

Test(history, records_straddle_no_chunk_boundary)
{
	/* 1000-byte records in ~4 KiB chunks: never an exact fit. */
	struct history *h = mk(1, 0, 64 << 20, 4096);
	static struct seen s;

	for (uint64_t i = 0; i < 200; i++)
		add(h, 0, i % 2 ? PERF_RECORD_SAMPLE : PERF_RECORD_MMAP2, 1000, i, i);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, 0, collect, &s), 0);
	cr_assert_eq(s.n, 200);
	for (uint64_t i = 0; i < 200; i++)
		cr_assert_eq(s.seq[i], i);
	cr_assert_eq(s.samples, 100);
	history_free(h);
}

Test(history, stores_a_record_larger_than_a_chunk)
{
	struct history *h = mk(1, 0, 64 << 20, 1024);
	static struct seen s;

	add(h, 0, PERF_RECORD_SAMPLE, 64, 1, 1);
	add(h, 0, PERF_RECORD_SAMPLE, 60000, 2, 2);
	add(h, 0, PERF_RECORD_SAMPLE, 64, 3, 3);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, 0, collect, &s), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.seq[1], 2);
	cr_assert_geq(history_memory(h), 60000);
	history_free(h);
}

Test(history, keeps_side_band_of_evicted_chunks)
{
	struct history *h = mk(1, 1000, 64 << 20, 4096);
	static struct seen s;

	add(h, 0, PERF_RECORD_MMAP2, 64, 1, 10);
	add(h, 0, PERF_RECORD_SAMPLE, 64, 2, 11);
	add(h, 0, PERF_RECORD_COMM, 64, 3, 12);
	/* Far later: the first chunk (its span exceeds window/16) ages out. */
	for (uint64_t t = 100000; t < 100100; t++)
		add(h, 0, PERF_RECORD_SAMPLE, 64, t, t);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, 0, collect, &s), 0);
	for (size_t i = 0; i < s.n; i++)
		cr_assert_geq(s.time[i], 100000 - 1000, "an old record stayed in the window");
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach_sideband(h, collect, &s), 0);
	cr_assert_eq(s.n, 2, "side band should hold the MMAP2 and the COMM, not the sample");
	cr_assert_eq(s.seq[0], 1);
	cr_assert_eq(s.seq[1], 3);
	cr_assert_eq(s.samples, 0);
	history_free(h);
}

Test(history, min_time_keeps_old_side_band_in_the_list)
{
	struct history *h = mk(1, 0, 64 << 20, 4096);
	static struct seen s;

	add(h, 0, PERF_RECORD_MMAP2, 64, 1, 10);
	add(h, 0, PERF_RECORD_SAMPLE, 64, 2, 11);
	add(h, 0, PERF_RECORD_SAMPLE, 64, 3, 50);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(history_foreach(h, 0, 20, collect, &s), 0);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.seq[0], 1);
	cr_assert_eq(s.seq[1], 3);
	history_free(h);
}

Test(history, frozen_history_evicts_nothing_until_thawed)
{
	struct history *h = mk(1, 1000, 64 << 20, 1024);
	struct history_span before, during, after;

	for (uint64_t t = 1; t <= 1000; t++)
		add(h, 0, PERF_RECORD_SAMPLE, 64, t, t);
	history_span(h, 0, &before);
	history_freeze(h, true);
	for (uint64_t t = 1001; t <= 5000; t++)
		add(h, 0, PERF_RECORD_SAMPLE, 64, t, t);
	history_trim(h, 5000);
	history_span(h, 0, &during);
	cr_assert_eq(during.first_time, before.first_time, "evicted while frozen");
	cr_assert_eq(during.records, 5000);
	history_freeze(h, false);
	history_trim(h, 5000);
	history_span(h, 0, &after);
	cr_assert_gt(after.records, 0);
	cr_assert_geq(after.first_time, 5000 - 1000 - 1000 / 16 - 16);
	history_free(h);
}

Test(history, rejects_bad_arguments)
{
	struct history_opts o = { .nr_cpus = 0, .window_ns = 1, .max_bytes = 1 << 20 };
	struct perf_event_header small = { .type = PERF_RECORD_SAMPLE, .size = 4 };
	struct history *h = NULL;

	cr_assert_eq(history_new(&o, &h), -EINVAL);
	o.nr_cpus = 1;
	o.max_bytes = 0;
	cr_assert_eq(history_new(&o, &h), -EINVAL);
	h = mk(2, 0, 1 << 20, 0);
	cr_assert_eq(history_add(h, 2, &small, 1), -EINVAL);
	cr_assert_eq(history_add(h, 0, &small, 1), -EINVAL);
	cr_assert_eq(history_foreach(h, 5, 0, collect, NULL), -EINVAL);
	history_free(h);
	history_free(NULL);
}

Test(history, cursors_walk_each_cpu_and_see_later_records)
{
	struct history *h = mk(2, 0, 64 << 20, 1024);
	struct history_cursor c0, c1, ce;
	const struct perf_event_header *rec;
	uint64_t t, prev = 0, n = 0, cpu, want1 = 0;

	for (uint64_t i = 0; i < 200; i++) {
		bool sample = i % 7 != 0;

		add(h, i % 2, sample ? PERF_RECORD_SAMPLE : PERF_RECORD_COMM, 64, i, 100 + i);
		if (i % 2 == 1 && (!sample || 100 + i >= 150))
			want1++;
	}
	history_cursor_init(h, 0, 0, &c0);
	history_cursor_init(h, 1, 150, &c1);
	while (history_cursor_next(&c0, &rec, &t) == 1) {
		memcpy(&cpu, (const char *)rec + 16, 8);
		cr_assert_eq(cpu, 0, "cpu 1's record in cpu 0's cursor");
		cr_assert_gt(t, prev);
		prev = t;
		n++;
	}
	cr_assert_eq(n, 100);
	/* min_time: cpu 1's samples before 150 are skipped, its COMMs are not. */
	n = 0;
	while (history_cursor_next(&c1, &rec, &t) == 1) {
		if (rec->type == PERF_RECORD_SAMPLE)
			cr_assert_geq(t, 150);
		n++;
	}
	cr_assert_eq(n, want1, "expected cpu 1's samples from t=150 and all its COMMs: %llu, got %llu",
		     (unsigned long long)want1, (unsigned long long)n);
	/* A cursor at the end sees what is added afterwards (frozen: nothing moves). */
	history_freeze(h, true);
	history_cursor_init(h, 0, 0, &ce);
	while (history_cursor_next(&ce, &rec, &t) == 1)
		;
	for (uint64_t i = 0; i < 40; i++)
		add(h, 0, PERF_RECORD_SAMPLE, 64, i, 1000 + i);
	n = 0;
	while (history_cursor_next(&ce, &rec, &t) == 1) {
		cr_assert_eq(t, 1000 + n);
		n++;
	}
	cr_assert_eq(n, 40);
	history_free(h);
}
