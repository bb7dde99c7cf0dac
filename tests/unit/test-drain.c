// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the drain (internal/drain.c) on an in-memory fake ring laid
 * out like the kernel's mapping: every sink sees every record and every
 * byte, whole, in ring order, including records that straddle the end of
 * the data area; a sink that refuses bytes costs only itself; LOST records
 * are decoded; the ring's tail moves past everything drained.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <criterion/criterion.h>

#include <perfrec/ring.h>

#include "drain.h"

#define PAGE 4096u
#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)
#define ID 77

struct fake {
	unsigned char *mem;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
	struct perfrec_ring r;
	unsigned char stream[65536]; /* every byte produced, in order */
	size_t stream_len;
};

static void fake_init(struct fake *f, uint64_t size, uint64_t start)
{
	memset(f, 0, sizeof(*f));
	/* Page-aligned like a real mapping; C11 wants the size a multiple of it. */
	f->mem = aligned_alloc(PAGE, (PAGE + size + PAGE - 1) / PAGE * PAGE);
	cr_assert_not_null(f->mem);
	memset(f->mem, 0xee, PAGE + size);
	f->meta = (struct perf_event_mmap_page *)f->mem;
	memset(f->meta, 0, PAGE);
	f->data = f->mem + PAGE;
	f->size = size;
	f->meta->data_head = f->meta->data_tail = start;
	cr_assert_eq(perfrec_ring__init(&f->r, f->mem, PAGE, size, 5), 0);
}

static void fake_exit(struct fake *f)
{
	perfrec_ring__exit(&f->r);
	free(f->mem);
}

/* Write @rec at head, wrapping, then publish head as the kernel does. */
static void produce(struct fake *f, const void *rec)
{
	const struct perf_event_header *h = rec;
	uint64_t head = f->meta->data_head;

	cr_assert(head - f->meta->data_tail + h->size <= f->size, "fake ring full");
	for (size_t i = 0; i < h->size; i++)
		f->data[(head + i) & (f->size - 1)] = ((const unsigned char *)rec)[i];
	cr_assert(f->stream_len + h->size <= sizeof(f->stream));
	memcpy(f->stream + f->stream_len, rec, h->size);
	f->stream_len += h->size;
	__atomic_store_n(&f->meta->data_head, head + h->size, __ATOMIC_RELEASE);
}

/* A sample of event ID: identifier, ip, pid/tid, time, then @pad bytes. */
static void produce_sample(struct fake *f, uint32_t pid, uint64_t time, size_t pad)
{
	uint64_t buf[64] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = (uint16_t)(8 + 32 + pad) };

	cr_assert(h.size <= sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	buf[1] = ID;
	buf[2] = 0xffffffff81000000ull + time;
	buf[3] = (uint64_t)pid | (uint64_t)pid << 32;
	buf[4] = time;
	for (size_t i = 0; i < pad; i++)
		((unsigned char *)buf)[40 + i] = (unsigned char)(time + i);
	produce(f, buf);
}

/* What a test sink saw: the records one by one, the bytes as written. */
struct seen {
	struct sink sink;
	unsigned char records[65536], bytes[65536];
	size_t records_len, bytes_len;
	size_t nr, samples, writes, rounds;
	uint64_t lost, last_time;
	uint32_t last_pid;
	int fail;          /* write() returns this when negative */
	bool remove_self;  /* leaves the drain in its first write() */
	struct drain *d;
};

static void seen_record(struct sink *s, struct drain_rec *r)
{
	struct seen *v = s->ctx;

	cr_assert(v->records_len + r->h->size <= sizeof(v->records));
	memcpy(v->records + v->records_len, r->h, r->h->size);
	v->records_len += r->h->size;
	v->nr++;
	v->lost += r->lost;
	if (r->h->type == PERF_RECORD_SAMPLE && r->sample_ok) {
		v->samples++;
		v->last_time = r->time;
		v->last_pid = r->pid;
	}
}

static int seen_write(struct sink *s, size_t ring, const struct iovec *iov, int n, uint64_t bytes)
{
	struct seen *v = s->ctx;
	uint64_t sum = 0;

	cr_assert_eq(ring, 2);
	cr_assert(n >= 1 && n <= 2);
	v->writes++;
	if (v->remove_self)
		drain_remove_sink(v->d, s);
	if (v->fail < 0)
		return v->fail;
	for (int i = 0; i < n; i++) {
		cr_assert(v->bytes_len + iov[i].iov_len <= sizeof(v->bytes));
		memcpy(v->bytes + v->bytes_len, iov[i].iov_base, iov[i].iov_len);
		v->bytes_len += iov[i].iov_len;
		sum += iov[i].iov_len;
	}
	cr_assert_eq(sum, bytes);
	return 0;
}

static void seen_round(struct sink *s, uint64_t bytes)
{
	struct seen *v = s->ctx;

	if (bytes)
		v->rounds++;
}

static const struct sink_ops seen_ops = {
	.record = seen_record, .write = seen_write, .round = seen_round,
};

static struct drain *new_drain(void)
{
	struct drain_opts o = { .sz = sizeof(o), .sideband_sample_type = SAMPLE_TYPE };
	struct drain *d = NULL;
	uint64_t id = ID;

	cr_assert_eq(drain_new(&o, &d), 0);
	cr_assert_eq(drain_add_ids(d, &id, 1, SAMPLE_TYPE, 0), 0);
	return d;
}

static void add_seen(struct drain *d, struct seen *v)
{
	memset(v, 0, sizeof(*v));
	v->sink = (struct sink){ .ops = &seen_ops, .ctx = v };
	v->d = d;
	cr_assert_eq(drain_add_sink(d, &v->sink), 0);
}

/* One pass over the fake ring (index 2) and the round after it. */
static uint64_t pass(struct drain *d, struct fake *f)
{
	uint64_t bytes = drain_ring(d, &f->r, 2);

	drain_round(d, bytes);
	return bytes;
}

Test(drain, two_sinks_see_the_same_records_and_bytes)
{
	static struct seen a, b;
	struct drain *d = new_drain();
	struct fake f;

	fake_init(&f, 4096, 0);
	add_seen(d, &a);
	add_seen(d, &b);
	for (uint32_t i = 0; i < 20; i++)
		produce_sample(&f, 100 + i, 1000 + i, (i % 4) * 8);
	cr_assert_eq(pass(d, &f), f.stream_len);
	for (struct seen *v = &a; v; v = v == &a ? &b : NULL) {
		cr_expect_eq(v->nr, 20);
		cr_expect_eq(v->samples, 20, "each sample's pid and time decoded");
		cr_expect_eq(v->last_pid, 119);
		cr_expect_eq(v->last_time, 1019);
		cr_expect_eq(v->rounds, 1);
		cr_assert_eq(v->records_len, f.stream_len);
		cr_expect_eq(memcmp(v->records, f.stream, f.stream_len), 0);
		cr_assert_eq(v->bytes_len, f.stream_len);
		cr_expect_eq(memcmp(v->bytes, f.stream, f.stream_len), 0);
	}
	cr_expect_eq(f.meta->data_tail, f.stream_len, "tail moved past every record");
	/* An empty pass: nothing written, no round. */
	cr_expect_eq(pass(d, &f), 0);
	cr_expect_eq(a.rounds, 1);
	drain_free(d);
	fake_exit(&f);
}

Test(drain, a_failing_sink_does_not_stop_the_others)
{
	static struct seen bad, good, leaver;
	struct drain *d = new_drain();
	struct fake f;

	fake_init(&f, 4096, 0);
	add_seen(d, &bad);
	bad.fail = -ENOSPC;
	add_seen(d, &leaver);
	leaver.remove_self = true;
	add_seen(d, &good);
	for (uint32_t i = 0; i < 10; i++)
		produce_sample(&f, 1, i, 16);
	pass(d, &f);
	cr_expect_eq(bad.bytes_len, 0);
	cr_expect_eq(bad.sink.refused_bytes, f.stream_len, "the refusal is counted against the sink");
	cr_expect_eq(leaver.writes, 1);
	cr_assert_eq(good.bytes_len, f.stream_len, "the sinks after them got every byte");
	cr_expect_eq(memcmp(good.bytes, f.stream, f.stream_len), 0);
	cr_expect_eq(good.rounds, 1);
	cr_expect_eq(f.meta->data_tail, f.stream_len);

	/* The sink that left gets nothing more; the others go on. */
	produce_sample(&f, 1, 99, 0);
	pass(d, &f);
	cr_expect_eq(leaver.writes, 1);
	cr_expect_eq(leaver.rounds, 0, "it left before the first round");
	cr_expect_eq(good.nr, 11);
	cr_expect_eq(bad.sink.refused_bytes, f.stream_len);
	drain_free(d);
	fake_exit(&f);
}

Test(drain, records_straddling_the_wrap_reach_every_sink_whole)
{
	static struct seen a, b;
	struct drain *d = new_drain();
	struct fake f;
	size_t straddling = 0;

	/* 1 KiB ring, start 12 bytes before its end: early records straddle it. */
	fake_init(&f, 1024, (1ull << 40) - 12);
	add_seen(d, &a);
	add_seen(d, &b);
	for (int round = 0; round < 40; round++) {
		uint64_t head0 = f.meta->data_head;

		for (uint32_t i = 0; i < 5; i++) {
			uint64_t at = f.meta->data_head & (f.size - 1);

			produce_sample(&f, 7, round * 5 + i, (round + i) % 5 * 8);
			straddling += at + (40 + (round + i) % 5 * 8) > f.size;
		}
		cr_assert_eq(pass(d, &f), f.meta->data_head - head0);
	}
	cr_assert_gt(straddling, 3, "the test must make records straddle the end");
	for (struct seen *v = &a; v; v = v == &a ? &b : NULL) {
		cr_expect_eq(v->nr, 200);
		cr_expect_eq(v->samples, 200);
		cr_expect_eq(v->last_time, 199);
		cr_assert_eq(v->records_len, f.stream_len);
		cr_expect_eq(memcmp(v->records, f.stream, f.stream_len), 0, "records whole, in order");
		cr_assert_eq(v->bytes_len, f.stream_len);
		cr_expect_eq(memcmp(v->bytes, f.stream, f.stream_len), 0, "bytes whole, in order");
	}
	drain_free(d);
	fake_exit(&f);
}

Test(drain, lost_records_are_decoded)
{
	static struct seen a;
	struct drain *d = new_drain();
	struct drain_lost_event lost = {
		.header = { .type = PERF_RECORD_LOST, .size = sizeof(lost) }, .id = ID, .lost = 1234,
	};
	struct drain_lost_samples_event ls = {
		.header = { .type = PERF_RECORD_LOST_SAMPLES, .size = sizeof(ls) }, .lost = 56,
	};
	struct fake f;

	fake_init(&f, 4096, 0);
	add_seen(d, &a);
	produce(&f, &lost);
	produce(&f, &ls);
	pass(d, &f);
	cr_expect_eq(a.nr, 2);
	cr_expect_eq(a.lost, 1290);
	cr_expect_eq(a.samples, 0);
	drain_free(d);
	fake_exit(&f);
}

Test(drain, samples_of_an_unknown_event_pass_undecoded)
{
	static struct seen a;
	struct drain *d = new_drain();
	uint64_t buf[5] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(buf) };
	struct fake f;

	fake_init(&f, 4096, 0);
	add_seen(d, &a);
	memcpy(buf, &h, sizeof(h));
	buf[1] = ID + 1;
	produce(&f, buf);
	pass(d, &f);
	cr_expect_eq(a.nr, 1);
	cr_expect_eq(a.samples, 0, "no layout: pid and time not guessed");
	cr_expect_eq(a.bytes_len, sizeof(buf), "but written all the same");
	drain_free(d);
	fake_exit(&f);
}

/* What the drain said through its owner's log callback. */
struct said {
	int nr, level;
	char last[320];
};

static void said_log(void *ctx, int level, const char *msg)
{
	struct said *s = ctx;

	s->nr++;
	s->level = level;
	snprintf(s->last, sizeof(s->last), "%s", msg);
}

Test(drain, a_repaired_record_reaches_every_sink_in_its_place)
{
	static struct seen a, b;
	struct said said = { 0 };
	struct drain_opts o = {
		.sz = sizeof(o), .sideband_sample_type = SAMPLE_TYPE, .log = said_log, .log_ctx = &said,
	};
	struct drain *d = NULL;
	uint64_t id = ID;
	/* BPF_EVENT: header, type, flags, id, tag[8]; then its trailer (tid,
	 * time, identifier), then room for another event's trailer the kernel
	 * sized it for but did not write. */
	uint64_t ev[9] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_BPF_EVENT, .size = sizeof(ev) };
	unsigned char want[65536];
	size_t want_len = 0, before;
	struct fake f;

	cr_assert_eq(drain_new(&o, &d), 0);
	cr_assert_eq(drain_add_ids(d, &id, 1, SAMPLE_TYPE, 0), 0);
	fake_init(&f, 4096, 0);
	add_seen(d, &a);
	add_seen(d, &b);
	memcpy(ev, &h, sizeof(h));
	ev[1] = 0x4200000001ull;
	ev[2] = 0x1122334455667788ull;
	ev[3] = 5 | 5ull << 32;
	ev[4] = 777;
	ev[5] = ID;
	memset(&ev[6], 0xab, 24);
	produce_sample(&f, 1, 10, 8);
	before = f.stream_len;
	produce(&f, ev);
	produce_sample(&f, 2, 20, 0);

	/* What a correct kernel would have written: the trailer ends the record. */
	memcpy(want, f.stream, before);
	h.size = 48;
	memcpy(want + before, ev, 48);
	memcpy(want + before, &h, sizeof(h));
	want_len = before + 48;
	memcpy(want + want_len, f.stream + before + sizeof(ev), f.stream_len - before - sizeof(ev));
	want_len += f.stream_len - before - sizeof(ev);

	cr_assert_eq(pass(d, &f), f.stream_len, "the ring's bytes are all consumed");
	cr_expect_eq(drain_repaired(d), 1);
	cr_expect_eq(said.nr, 1, "the repair is told to the owner once");
	cr_expect_eq(said.level, LOG_NOTICE);
	cr_expect(strstr(said.last, "BPF_EVENT"), "names the record: %s", said.last);
	for (struct seen *v = &a; v; v = v == &a ? &b : NULL) {
		cr_expect_eq(v->nr, 3);
		cr_expect_eq(v->writes, 3, "the span is cut before and after the repaired copy");
		cr_assert_eq(v->records_len, want_len);
		cr_expect_eq(memcmp(v->records, want, want_len), 0);
		cr_assert_eq(v->bytes_len, want_len);
		cr_expect_eq(memcmp(v->bytes, want, want_len), 0);
	}
	cr_expect_eq(f.meta->data_tail, f.stream_len);
	drain_free(d);
	fake_exit(&f);
}

/*
 * Samples of two events laid out differently, interleaved in one ring, and
 * a third event added between passes (the drain's table moves): each
 * sample is decoded, and its user chain ended, by its own event's layout,
 * though the drain remembers the last sample's event.
 */
Test(drain, each_sample_is_read_by_its_own_events_layout)
{
	const uint64_t st_a = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	const uint64_t st_b = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN |
			      PERF_SAMPLE_CPU; /* TID and TIME at other offsets, a chain */
	struct drain_opts o = { .sz = sizeof(o), .sideband_sample_type = SAMPLE_TYPE, .callchain = true };
	static struct seen v;
	struct drain *d = NULL;
	uint64_t ida = 100, idb = 200, idc = 50;
	struct fake f;

	cr_assert_eq(drain_new(&o, &d), 0);
	cr_assert_eq(drain_add_ids(d, &ida, 1, st_a, 0), 0);
	cr_assert_eq(drain_add_ids(d, &idb, 1, st_b, 0), 0);
	fake_init(&f, 4096, 0);
	add_seen(d, &v);
	for (int round = 0; round < 2; round++) {
		for (uint64_t i = 1; i <= 4; i++) {
			/* a: id, ip, pid/tid, time */
			uint64_t a[5] = { 0, ida, 0x401000, 10 * i | (10 * i) << 32, 1000 * i };
			/* b: id, pid/tid, time, cpu, nr, USER, frame, -1 (ended), frame */
			uint64_t b[10] = { 0, idb, 20 * i | (20 * i) << 32, 2000 * i, 1, 4,
					   (uint64_t)PERF_CONTEXT_USER, 0x402000, ~0ull, 0x403000 };
			struct perf_event_header ha = { .type = PERF_RECORD_SAMPLE, .size = sizeof(a) };
			struct perf_event_header hb = { .type = PERF_RECORD_SAMPLE, .size = sizeof(b) };

			memcpy(a, &ha, sizeof(ha));
			memcpy(b, &hb, sizeof(hb));
			produce(&f, a);
			produce(&f, b);
		}
		v.records_len = v.samples = 0;
		pass(d, &f);
		cr_assert_eq(v.samples, 8, "round %d", round);
		for (size_t off = 0, n = 0; off < v.records_len; n++) {
			struct perf_event_header h;
			uint64_t w[10];
			uint64_t i = n / 2 + 1;

			memcpy(&h, v.records + off, sizeof(h));
			memcpy(w, v.records + off, h.size);
			if (n % 2 == 0) {
				cr_expect_eq(h.size, 40);
				cr_expect_eq(w[3], 10 * i | (10 * i) << 32);
			} else {
				cr_expect_eq(h.size, 64, "b's chain ended before the -1 (%u bytes)", h.size);
				cr_expect_eq(w[5], 2, "b's chain holds USER and one frame");
			}
			off += h.size;
		}
		cr_expect_eq(v.last_pid, 80, "the last sample read by b's layout");
		cr_expect_eq(v.last_time, 8000);
		/* A third event: the table is sorted again, the remembered one moves. */
		cr_assert_eq(drain_add_ids(d, &idc, 1, st_a, 0), 0);
	}
	cr_expect_eq(drain_repaired(d), 8);
	drain_free(d);
	fake_exit(&f);
}
