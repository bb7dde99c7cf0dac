// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/stage.c: what a stage emits reaches each sink behind it as the drain
 * would hand it over (record() decoded in the stage's layout, then write()
 * of the whole record), rounds end once per stage_round() with the bytes
 * emitted in them, a refused write is that sink's alone, and a sink may
 * leave from inside its own callback.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>

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
