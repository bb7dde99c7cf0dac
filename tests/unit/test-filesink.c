// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the file sink (internal/filesink.c) behind a drain over an
 * in-memory fake ring, writing a real perf.data file: every pass that
 * wrote ends with FINISHED_ROUND; a span the output refuses (the owner's
 * refusal, no file) costs its samples, which the next round that succeeds
 * reports in the file as a PERF_RECORD_LOST of the side-band event; the
 * totals and the file's counts say the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/ring.h>

#include "drain.h"
#include "filesink.h"

#define PAGE 4096u
#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)
#define ID 77
#define MAX_RECS 64

struct fake {
	unsigned char *mem;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
	struct perfrec_ring r;
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->size = 4096;
	f->mem = aligned_alloc(PAGE, PAGE + f->size);
	cr_assert_not_null(f->mem);
	memset(f->mem, 0, PAGE + f->size);
	f->meta = (struct perf_event_mmap_page *)f->mem;
	f->data = f->mem + PAGE;
	cr_assert_eq(perfrec_ring__init(&f->r, f->mem, PAGE, f->size, 5), 0);
}

static void fake_exit(struct fake *f)
{
	perfrec_ring__exit(&f->r);
	free(f->mem);
}

/* Write @rec at head, then publish head as the kernel does; its size. */
static uint64_t produce(struct fake *f, const void *rec)
{
	const struct perf_event_header *h = rec;
	uint64_t head = f->meta->data_head;

	cr_assert(head - f->meta->data_tail + h->size <= f->size, "fake ring full");
	for (size_t i = 0; i < h->size; i++)
		f->data[(head + i) & (f->size - 1)] = ((const unsigned char *)rec)[i];
	__atomic_store_n(&f->meta->data_head, head + h->size, __ATOMIC_RELEASE);
	return h->size;
}

/* @n samples of event ID from @pid: identifier, ip, pid/tid, time.  Their bytes. */
static uint64_t produce_samples(struct fake *f, int n, uint32_t pid, uint64_t time)
{
	uint64_t bytes = 0;

	for (int i = 0; i < n; i++) {
		uint64_t buf[5] = { 0 };
		struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(buf) };

		memcpy(buf, &h, sizeof(h));
		buf[1] = ID;
		buf[2] = 0x400000 + (uint64_t)i;
		buf[3] = (uint64_t)pid | (uint64_t)pid << 32;
		buf[4] = time + (uint64_t)i;
		bytes += produce(f, buf);
	}
	return bytes;
}

/* The owner's side: refuses spans while @refuse, hears what was reported. */
struct owner {
	int refuse;
	uint64_t reported;
};

static int owner_admit(void *ctx)
{
	return ((struct owner *)ctx)->refuse;
}

static void owner_reported(void *ctx, uint64_t samples)
{
	((struct owner *)ctx)->reported += samples;
}

static const struct filesink_hooks hooks = { .admit = owner_admit, .reported = owner_reported };

struct rig {
	struct fake f;
	struct drain *d;
	struct filesink fs;
	struct filesink_file file;
	struct filesink_counts cpu[1];
	struct owner own;
	char path[64];
};

static void rig_init(struct rig *g)
{
	struct drain_opts o = { .sz = sizeof(o), .sideband_sample_type = SAMPLE_TYPE };
	struct filesink_opts fo = {
		.sz = sizeof(fo), .nr_rings = 1, .sideband_sample_type = SAMPLE_TYPE, .sideband_id = ID,
		.clockid = CLOCK_MONOTONIC, .hooks = &hooks, .hooks_ctx = &g->own,
	};
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a), .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
	};
	uint64_t id = ID;
	int fd;

	memset(g, 0, sizeof(*g));
	fake_init(&g->f);
	cr_assert_eq(drain_new(&o, &g->d), 0);
	cr_assert_eq(drain_add_ids(g->d, &id, 1, SAMPLE_TYPE, 0), 0);
	cr_assert_eq(filesink_init(&g->fs, &fo), 0);
	cr_assert_eq(drain_add_sink(g->d, &g->fs.sink), 0);
	strcpy(g->path, "/tmp/test-filesink-XXXXXX");
	fd = mkstemp(g->path);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(g->path);
	cr_assert_eq(perfrec_pdwriter__create(g->path, &g->file.w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(g->file.w, &a, &id, 1, "cpu-clock"), 0);
	g->file.cpu = g->cpu;
	g->fs.file = &g->file;
}

/* One pass over the ring (index 0) and the round; the sink's error. */
static int pass(struct rig *g)
{
	drain_round(g->d, drain_ring(g->d, &g->f.r, 0));
	return filesink_take_err(&g->fs);
}

/* The file finished: its records' types in order, and the LOST records' count. */
static size_t read_back(struct rig *g, uint32_t *types, uint64_t *ret_lost)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	uint64_t off;
	size_t n = 0;
	int e;

	cr_assert_eq(perfrec_pdwriter__finish(g->file.w), 0);
	cr_assert_eq(perfrec_pdwriter__publish(g->file.w), 0);
	cr_assert_eq(perfrec_pdreader__open(g->path, &ro, &r), 0);
	*ret_lost = 0;
	while ((e = perfrec_pdreader__next(r, &h, &off)) > 0) {
		cr_assert_lt(n, MAX_RECS);
		types[n++] = h->type;
		if (h->type == PERF_RECORD_LOST) {
			uint64_t v[2];

			memcpy(v, h + 1, sizeof(v));
			cr_expect_eq(v[0], ID, "the LOST record is the side-band event's");
			*ret_lost += v[1];
		}
	}
	cr_assert_eq(e, 0, "%s", perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	return n;
}

static void rig_exit(struct rig *g)
{
	perfrec_pdwriter__free(g->file.w, true);
	unlink(g->path);
	drain_free(g->d);
	filesink_exit(&g->fs);
	fake_exit(&g->f);
}

Test(filesink, each_pass_that_wrote_ends_with_finished_round)
{
	static struct rig g;
	uint32_t types[MAX_RECS];
	uint64_t bytes, lost;
	size_t n;

	rig_init(&g);
	bytes = produce_samples(&g.f, 3, 42, 1000);
	cr_assert_eq(pass(&g), 0);
	cr_assert_eq(pass(&g), 0, "an empty pass");
	bytes += produce_samples(&g.f, 2, 0, 2000);
	cr_assert_eq(pass(&g), 0);

	cr_expect_eq(g.fs.total[0].samples, 5);
	cr_expect_eq(g.fs.total[0].bytes, bytes);
	cr_expect_eq(g.fs.busy_samples, 3, "the idle task's samples are not busy");
	cr_expect_eq(g.file.samples, 5);
	cr_expect_eq(g.file.bytes, bytes);
	cr_expect_eq(g.cpu[0].samples, 5);
	cr_expect_eq(g.file.track.first_time, 1000);
	cr_expect_eq(g.file.track.last_time, 2001);
	n = read_back(&g, types, &lost);
	cr_assert_eq(n, 7, "5 samples and 2 rounds, none for the empty pass");
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(types[i], i == 3 || i == 6 ? PERFREC_RECORD_FINISHED_ROUND : PERF_RECORD_SAMPLE,
			     "record %zu", i);
	rig_exit(&g);
}

Test(filesink, a_refused_span_is_lost_in_the_next_round_that_succeeds)
{
	static struct rig g;
	struct drain_lost_event kl = {
		.header = { .type = PERF_RECORD_LOST, .size = sizeof(kl) }, .id = ID, .lost = 4,
	};
	uint32_t types[MAX_RECS];
	uint64_t refused, lost;
	size_t n;

	rig_init(&g);
	/* 3 samples and the kernel's loss of 4 records, refused (a full disk) */
	refused = produce_samples(&g.f, 3, 42, 1000);
	refused += produce(&g.f, &kl);
	g.own.refuse = -ENOSPC;
	cr_assert_eq(pass(&g), -ENOSPC);
	cr_expect_eq(g.fs.total[0].samples, 0);
	cr_expect_eq(g.fs.total[0].lost, 4 + 3, "the refused samples are lost");
	cr_expect_eq(g.fs.total[0].dropped, 3);
	cr_expect_eq(g.fs.dropped_bytes, refused);
	cr_expect_eq(g.file.samples, 0);
	cr_expect_eq(g.file.lost, 0, "the kernel's LOST record is not in the file");
	cr_expect_eq(perfrec_pdwriter__data_size(g.file.w), 0, "nothing written, no round");
	cr_expect_eq(g.own.reported, 0);

	g.own.refuse = 0;
	produce_samples(&g.f, 2, 42, 2000);
	cr_assert_eq(pass(&g), 0);
	cr_expect_eq(g.own.reported, 7, "3 samples and 4 records the kernel lost, reported");
	cr_expect_eq(g.fs.pending_dropped[0], 0);
	cr_expect_eq(g.file.samples, 2);
	cr_expect_eq(g.file.lost, 7);
	cr_expect_eq(g.file.dropped, 7);
	cr_expect_eq(g.cpu[0].lost, 7);
	n = read_back(&g, types, &lost);
	cr_assert_eq(n, 4);
	cr_expect_eq(types[0], PERF_RECORD_SAMPLE);
	cr_expect_eq(types[1], PERF_RECORD_SAMPLE);
	cr_expect_eq(types[2], PERFREC_RECORD_FINISHED_ROUND);
	cr_expect_eq(types[3], PERF_RECORD_LOST);
	cr_expect_eq(lost, 7, "the file's LOST record counts what was refused");
	rig_exit(&g);
}

Test(filesink, without_a_file_spans_are_refused_and_reported_in_the_next)
{
	static struct rig g;
	uint32_t types[MAX_RECS];
	uint64_t lost;
	size_t n;

	rig_init(&g);
	g.fs.file = NULL;
	produce_samples(&g.f, 2, 42, 1000);
	cr_assert_eq(pass(&g), 0, "no file is no write error");
	cr_expect_eq(g.fs.total[0].lost, 2);
	g.fs.file = &g.file;
	produce_samples(&g.f, 1, 42, 2000);
	cr_assert_eq(pass(&g), 0);
	n = read_back(&g, types, &lost);
	cr_assert_eq(n, 3);
	cr_expect_eq(types[0], PERF_RECORD_SAMPLE);
	cr_expect_eq(types[1], PERFREC_RECORD_FINISHED_ROUND);
	cr_expect_eq(types[2], PERF_RECORD_LOST);
	cr_expect_eq(lost, 2);
	cr_expect_eq(g.file.samples, 1);
	cr_expect_eq(g.file.lost, 2);
	rig_exit(&g);
}

Test(filesink, a_stage_s_loss_is_reported_as_refused_samples)
{
	static struct rig g;
	uint32_t types[MAX_RECS];
	uint64_t lost;

	rig_init(&g);
	filesink_lose(&g.fs, 0, 5);
	cr_expect_eq(g.fs.total[0].lost, 5);
	produce_samples(&g.f, 1, 42, 1000);
	cr_assert_eq(pass(&g), 0);
	cr_expect_eq(g.fs.total[0].samples, 1, "a later span keeps its own samples");
	cr_assert_eq(read_back(&g, types, &lost), 3);
	cr_expect_eq(lost, 5);
	rig_exit(&g);
}
