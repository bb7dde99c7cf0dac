// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * internal/stage.c: what a stage emits reaches each sink behind it as the drain
 * would hand it over (record() decoded in the stage's layout, then write()
 * of the whole record), rounds end once per stage_round() with the bytes
 * emitted in them, a refused write is that sink's alone, and a sink may
 * leave from inside its own callback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>
#include <perfrec/ring.h>

#include "stage.h"

#define ID 42

struct seen {
	struct sink sink;
	char log[512];        /* r<type> w<bytes> c<ring> R<bytes>, in call order */
	uint32_t pid;          /* of the last sample's record() */
	uint64_t time;
	int refuse;            /* write() returns this */
	bool leave;            /* remove itself at its first write() */
	struct stage *st;
};

static void note(struct seen *s, const char *fmt, unsigned long long v)
{
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, fmt, v);
}

static void on_record(struct sink *sk, struct drain_rec *r)
{
	struct seen *s = sk->ctx;

	note(s, "r%llu ", r->h->type);
	if (r->h->type == PERF_RECORD_SAMPLE) {
		cr_assert(r->sample_ok, "a sample of a known id not decoded");
		s->pid = r->pid;
		s->time = r->time;
	}
}

static int on_write(struct sink *sk, size_t ring, const struct iovec *iov, int n, uint64_t bytes)
{
	struct seen *s = sk->ctx;

	cr_assert_eq(n, 1);
	cr_assert_eq(iov[0].iov_len, bytes);
	note(s, "w%llu ", bytes);
	if (s->leave)
		stage_remove_sink(s->st, sk);
	return s->refuse;
}

static void on_corrupt(struct sink *sk, size_t ring)
{
	note(sk->ctx, "c%llu ", ring);
}

static void on_round(struct sink *sk, uint64_t bytes)
{
	note(sk->ctx, "R%llu ", bytes);
}

static const struct sink_ops seen_ops = {
	.record = on_record, .write = on_write, .corrupt = on_corrupt, .round = on_round,
};

/* A sample laid out as IDENTIFIER | TID | TIME. */
struct sample {
	struct perf_event_header h;
	uint64_t id;
	uint32_t pid, tid;
	uint64_t time;
};

static struct drain *layout(void)
{
	struct drain_opts o = { .sz = sizeof(o) };
	uint64_t id = ID;
	struct drain *d;

	cr_assert_eq(drain_new(&o, &d), 0);
	cr_assert_eq(drain_add_ids(d, &id, 1, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 0), 0);
	return d;
}

static void sink_init(struct seen *s, struct stage *st)
{
	*s = (struct seen){ .sink = { .ops = &seen_ops, .ctx = s }, .st = st };
	cr_assert_eq(stage_add_sink(st, &s->sink), 0);
}

Test(stage, every_sink_gets_each_record_decoded_then_its_bytes_and_one_round)
{
	struct sample smp = {
		.h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(smp) }, .id = ID, .pid = 7, .tid = 8, .time = 1000,
	};
	struct perf_event_header other = { .type = PERF_RECORD_EXIT, .size = sizeof(other) };
	struct drain *d = layout();
	struct stage st;
	struct seen a, b;

	stage_init(&st, NULL, NULL, d);
	sink_init(&a, &st);
	sink_init(&b, &st);
	stage_emit(&st, 1, &smp.h);
	stage_emit(&st, 1, &other);
	stage_corrupt(&st, 1);
	stage_round(&st);
	stage_round(&st);
	cr_expect_str_eq(a.log, "r9 w32 r4 w8 c1 R40 R0 ");
	cr_expect_str_eq(b.log, a.log);
	cr_expect_eq(a.pid, 7);
	cr_expect_eq(a.time, 1000);
	stage_exit(&st);
	drain_free(d);
}

Test(stage, a_refused_write_is_that_sinks_alone)
{
	struct perf_event_header rec = { .type = PERF_RECORD_EXIT, .size = sizeof(rec) };
	struct drain *d = layout();
	struct stage st;
	struct seen a, b;

	stage_init(&st, NULL, NULL, d);
	sink_init(&a, &st);
	sink_init(&b, &st);
	a.refuse = -ENOSPC;
	stage_emit(&st, 0, &rec);
	cr_expect_eq(a.sink.refused_bytes, sizeof(rec));
	cr_expect_eq(b.sink.refused_bytes, 0);
	cr_expect_str_eq(b.log, "r4 w8 ");
	stage_exit(&st);
	drain_free(d);
}

Test(stage, a_sink_leaves_inside_its_callback_and_the_rest_still_get_the_record)
{
	struct perf_event_header rec = { .type = PERF_RECORD_EXIT, .size = sizeof(rec) };
	struct drain *d = layout();
	struct stage st;
	struct seen a, b;

	stage_init(&st, NULL, NULL, d);
	sink_init(&a, &st);
	sink_init(&b, &st);
	a.leave = true;
	stage_emit(&st, 0, &rec);
	cr_expect_str_eq(b.log, "r4 w8 ");
	cr_expect_eq(st.nr_sinks, 1, "the sink that left is still there");
	stage_emit(&st, 0, &rec);
	stage_round(&st);
	cr_expect_str_eq(a.log, "r4 w8 ", "a sink that left was called again");
	cr_expect_str_eq(b.log, "r4 w8 r4 w8 R16 ");
	cr_expect_eq(stage_sink_of(&st, &seen_ops), &b.sink);
	stage_exit(&st);
	drain_free(d);
}

/*
 * Where a stage changes no record, what reaches a sink behind it is byte
 * for byte what the same sink gets straight from the drain: the same
 * records in the same order, the same rounds.  Two fake rings get the
 * same records (one of them straddling the end of the data area); one
 * drain feeds a tape directly, the other through a stage that hands every
 * record on unchanged at its round, as the unwinding stage hands on what
 * it does not rewrite.
 */
#define PAGE 4096u
#define RING 8192u

struct fake {
	unsigned char *mem;
	struct perf_event_mmap_page *meta;
	struct perfrec_ring r;
};

static void fake_init(struct fake *f)
{
	f->mem = aligned_alloc(PAGE, PAGE + RING);
	cr_assert_not_null(f->mem);
	memset(f->mem, 0, PAGE + RING);
	f->meta = (struct perf_event_mmap_page *)f->mem;
	f->meta->data_head = f->meta->data_tail = RING - 100;
	cr_assert_eq(perfrec_ring__init(&f->r, f->mem, PAGE, RING, 0), 0);
}

static void produce(struct fake *f, const void *rec)
{
	const struct perf_event_header *h = rec;
	uint64_t head = f->meta->data_head;

	for (size_t i = 0; i < h->size; i++)
		f->mem[PAGE + ((head + i) & (RING - 1))] = ((const unsigned char *)rec)[i];
	__atomic_store_n(&f->meta->data_head, head + h->size, __ATOMIC_RELEASE);
}

/* A file sink's bytes: every write, and a FINISHED_ROUND after a round that wrote. */
struct tape {
	struct sink sink;
	unsigned char buf[16384];
	size_t len;
	bool wrote;
};

static void tape_put(struct tape *t, const void *p, size_t n)
{
	cr_assert(t->len + n <= sizeof(t->buf));
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

static int tape_write(struct sink *s, size_t ring, const struct iovec *iov, int n, uint64_t bytes)
{
	struct tape *t = s->ctx;

	for (int i = 0; i < n; i++)
		tape_put(t, iov[i].iov_base, iov[i].iov_len);
	t->wrote = true;
	return 0;
}

static void tape_round(struct sink *s, uint64_t bytes)
{
	static const struct perf_event_header round = {
		.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(round),
	};
	struct tape *t = s->ctx;

	if (t->wrote)
		tape_put(t, &round, sizeof(round));
	t->wrote = false;
}

static const struct sink_ops tape_ops = { .write = tape_write, .round = tape_round };

/* The stage that changes nothing: records kept until its round, then handed on. */
struct same {
	struct stage stage;
	unsigned char buf[16384];
	size_t len, ring[64], nr;
};

static void same_record(struct sink *s, struct drain_rec *r)
{
	struct same *x = s->ctx;

	cr_assert(x->len + r->h->size <= sizeof(x->buf) && x->nr < 64);
	memcpy(x->buf + x->len, r->h, r->h->size);
	x->len += r->h->size;
	x->ring[x->nr++] = r->ring;
}

static void same_round(struct sink *s, uint64_t bytes)
{
	struct same *x = s->ctx;
	size_t off = 0;

	for (size_t i = 0; i < x->nr; i++) {
		const struct perf_event_header *h = (const void *)(x->buf + off);

		stage_emit(&x->stage, x->ring[i], h);
		off += h->size;
	}
	x->len = x->nr = 0;
	stage_round(&x->stage);
}

static const struct sink_ops same_ops = { .record = same_record, .round = same_round };

Test(stage, a_stage_that_changes_nothing_leaves_the_bytes_and_rounds_as_they_were)
{
	static struct tape direct, behind;
	static struct same same;
	struct fake fa, fb;
	struct drain *da = layout(), *db = layout();
	struct perf_event_header other = { .type = PERF_RECORD_EXIT, .size = 48 };
	unsigned char ex[48] = { 0 };
	uint64_t bytes;

	fake_init(&fa);
	fake_init(&fb);
	direct.sink = (struct sink){ .ops = &tape_ops, .ctx = &direct };
	behind.sink = (struct sink){ .ops = &tape_ops, .ctx = &behind };
	cr_assert_eq(drain_add_sink(da, &direct.sink), 0);
	stage_init(&same.stage, &same_ops, &same, db);
	cr_assert_eq(drain_add_sink(db, &same.stage.sink), 0);
	cr_assert_eq(stage_add_sink(&same.stage, &behind.sink), 0);
	memcpy(ex, &other, sizeof(other));
	for (int pass = 0; pass < 6; pass++) {
		/* passes of 0, 1, 2 ... records; the first crosses the end of the ring */
		for (int i = 0; i < (pass * 5) % 7; i++) {
			struct sample s = {
				.h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(s) },
				.id = ID, .pid = (uint32_t)(100 + i), .tid = (uint32_t)pass, .time = (uint64_t)(pass * 10 + i),
			};

			produce(&fa, &s);
			produce(&fb, &s);
			produce(&fa, ex);
			produce(&fb, ex);
		}
		bytes = drain_ring(da, &fa.r, 0);
		drain_round(da, bytes);
		bytes = drain_ring(db, &fb.r, 0);
		drain_round(db, bytes);
	}
	cr_assert_gt(direct.len, 0);
	cr_assert_eq(behind.len, direct.len, "%zu bytes behind the stage, %zu from the drain", behind.len, direct.len);
	cr_assert_eq(memcmp(behind.buf, direct.buf, direct.len), 0, "the bytes behind the stage differ");
	stage_exit(&same.stage);
	drain_free(da);
	drain_free(db);
	perfrec_ring__exit(&fa.r);
	perfrec_ring__exit(&fb.r);
	free(fa.mem);
	free(fb.mem);
}
