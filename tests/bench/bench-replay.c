// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One unwinding worker's throughput (issue 25's scale question): the
 * records of a recording with DWARF stacks (perf record --call-graph dwarf
 * or perfrecd --call-graph dwarf) replayed through one unwinder, pass
 * after pass, as fast as it goes, for SECS of wall time.  The first pass
 * builds the unwind tables (into a private directory) and is not counted:
 * the steady state is what a host running for days sees.  Every record
 * goes through perfrec_unwinder__rewrite(), the worker's call, side-band
 * records (MMAP2, COMM, FORK, EXIT) included, so process churn in the
 * recording is paid again on every pass.
 *
 * Prints, over the counted passes: samples, CPU per sample in the rewrite
 * calls alone and with the reading and copying of the records (thread CPU
 * time: the machine may be busy), wall samples/s, and how many CPUs
 * sampling at 99 Hz and at 999 Hz one worker keeps up with at that rate.
 * The sink behind the worker (the file writer) is not in these figures.
 * With BENCH_REPLAY_DIGEST set in the environment, hashes of what the
 * rewriting gave in the warm-up pass and in the counted passes: two
 * builds of the unwinder compared (with SECS small: one counted pass).
 * With BENCH_REPLAY_ROUND=N, records go as the sink's worker hands them
 * over: N at a time pushed (perfrec_unwinder__push_borrowed()) and
 * flushed (sorted by time, rewritten, emitted); "rewrite" is then that.
 *
 *   bench-replay FILE.data [SECS]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/unwind.h>

#include "unwind-internal.h"

struct tally {
	uint64_t samples, records, rewritten;
	double rewrite_cpu;      /* in perfrec_unwinder__rewrite() */
	bool digest;             /* BENCH_REPLAY_DIGEST set: hash what the rewriting gave */
	size_t round;            /* BENCH_REPLAY_ROUND: records per push/flush round (0: rewrite each) */
	uint64_t hash;
};

/* FNV-1a over the records rewritten (and the results of the others): two builds compared. */
static void digest(struct tally *t, const unsigned char *out, int r)
{
	uint64_t h = t->hash ? t->hash : 0xcbf29ce484222325ull;

	for (int i = 0; i < (int)sizeof(r); i++)
		h = (h ^ ((unsigned)r >> (8 * i) & 0xff)) * 0x100000001b3ull;
	for (int i = 0; i < r; i++)
		h = (h ^ out[i]) * 0x100000001b3ull;
	t->hash = h;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct perf_event_attr *record_attr(struct perfrec_pdreader *in, const struct perf_event_header *rec)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (perfrec_event__identifier(rec, &id) == 0)
		a = perfrec_pdreader__attr_by_id(in, id);
	if (!a && perfrec_pdreader__nr_attrs(in) == 1)
		a = perfrec_pdreader__attr(in, 0);
	return a ? &a->attr : NULL;
}

/*
 * Records are copied in batches (as the worker's rounds hold them: copies,
 * not the file's mapping) and each batch is rewritten between two reads of
 * the thread's CPU clock: a clock read per record (a system call) would
 * cost about as much as the rewriting it measures.
 */
#define BATCH_BYTES (4u << 20)
#define BATCH_RECORDS 4096

struct batch {
	_Alignas(8) unsigned char buf[BATCH_BYTES];
	size_t off[BATCH_RECORDS];
	const struct perf_event_attr *attr[BATCH_RECORDS];
	size_t n, len;
};

static int emitted(void *ctx, const struct perf_event_header *rec)
{
	struct tally *t = ctx;

	if (rec->type == PERF_RECORD_SAMPLE)
		t->rewritten++;
	if (t->digest)
		digest(t, (const void *)rec, rec->size);
	return 0;
}

/*
 * A batch done: its records and samples counted, and with @r (rewrite()'s
 * results) the samples rewritten (flushes count theirs as emitted).
 */
static void tally_batch(struct batch *b, struct tally *t, const int *r)
{
	for (size_t i = 0; i < b->n; i++) {
		t->records++;
		if (((const struct perf_event_header *)(b->buf + b->off[i]))->type == PERF_RECORD_SAMPLE) {
			t->samples++;
			if (r)
				t->rewritten += r[i] > 0;
		}
	}
	b->n = b->len = 0;
}

/* As the sink's worker does: rounds pushed (borrowed), then flushed in time order. */
static void flush_batch(struct perfrec_unwinder *u, struct batch *b, struct tally *t)
{
	double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);

	for (size_t i = 0; i < b->n; i += t->round) {
		for (size_t k = i; k < b->n && k < i + t->round; k++)
			perfrec_unwinder__push_borrowed(u, (const void *)(b->buf + b->off[k]), b->attr[k]);
		perfrec_unwinder__flush(u, emitted, t);
	}
	t->rewrite_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
	tally_batch(b, t, NULL);
}

static void rewrite_batch(struct perfrec_unwinder *u, struct batch *b, struct tally *t)
{
	static _Alignas(8) unsigned char out[65536];
	double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	int r[BATCH_RECORDS];

	if (t->round) {
		flush_batch(u, b, t);
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		r[i] = perfrec_unwinder__rewrite(u, (const void *)(b->buf + b->off[i]), b->attr[i], out, sizeof(out));
		if (t->digest)
			digest(t, out, r[i]);
	}
	t->rewrite_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
	tally_batch(b, t, r);
}

/* One pass over @path through @u, adding to @t. */
static int pass(struct perfrec_unwinder *u, const char *path, struct tally *t)
{
	static struct batch b;
	const struct perf_event_header *rec;
	struct perfrec_pdreader *in;

	if (perfrec_pdreader__open(path, NULL, &in) < 0) {
		fprintf(stderr, "bench-replay: cannot read %s\n", path);
		return -1;
	}
	while (perfrec_pdreader__next(in, &rec, NULL) > 0) {
		size_t sz = (rec->size + 7u) & ~(size_t)7;

		if (b.n == BATCH_RECORDS || b.len + sz > sizeof(b.buf))
			rewrite_batch(u, &b, t);
		b.attr[b.n] = record_attr(in, rec);
		b.off[b.n++] = b.len;
		memcpy(b.buf + b.len, rec, rec->size);
		b.len += sz;
	}
	rewrite_batch(u, &b, t);
	perfrec_pdreader__free(in);
	return 0;
}

static int run(const char *path, double secs, const char *dir)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o) };
	struct perfrec_unwinder_tables_opts to = { .dir = dir };
	struct perfrec_unwinder_table_stats ts;
	struct perfrec_unwinder *u;
	const char *round = getenv("BENCH_REPLAY_ROUND");
	struct tally warm = { .digest = !!getenv("BENCH_REPLAY_DIGEST"), .round = round ? strtoul(round, NULL, 10) : 0 };
	struct tally t = { 0 };
	double w0, c0, wall, cpu, us, rw_us;
	unsigned passes = 0;
	int r = -1;

	if (perfrec_unwinder__new(&o, &u) < 0 || perfrec_unwinder__set_tables(u, &to) < 0) {
		fprintf(stderr, "bench-replay: cannot make an unwinder\n");
		return -1;
	}
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	if (pass(u, path, &warm) < 0)
		goto out;
	printf("warm-up pass: %llu samples (%llu with DWARF stacks rewritten), %.2f s CPU (tables built)\n",
	       (unsigned long long)warm.samples, (unsigned long long)warm.rewritten,
	       clock_s(CLOCK_THREAD_CPUTIME_ID) - c0);
	if (warm.digest)
		printf("digest %016llx\n", (unsigned long long)warm.hash);
	if (!warm.rewritten) {
		fprintf(stderr, "bench-replay: %s has no DWARF samples to unwind\n", path);
		goto out;
	}
	t.digest = warm.digest;
	t.round = warm.round;
	w0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		if (pass(u, path, &t) < 0)
			goto out;
		passes++;
	} while (clock_s(CLOCK_MONOTONIC) - w0 < secs);
	wall = clock_s(CLOCK_MONOTONIC) - w0;
	cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	rw_us = t.rewrite_cpu * 1e6 / (double)t.samples;
	us = cpu * 1e6 / (double)t.samples;
	if (t.digest)
		printf("digest_passes %016llx\n", (unsigned long long)t.hash);
	perfrec_unwinder__table_stats(u, &ts);
	printf("passes %u\nsamples %llu\nrecords %llu\nwall_s %.2f\ncpu_s %.2f\n", passes,
	       (unsigned long long)t.samples, (unsigned long long)t.records, wall, cpu);
	printf("rewrite_us_per_sample %.3f\nworker_us_per_sample %.3f\n", rw_us, us);
	printf("samples_per_cpu_s %.0f\nwall_samples_per_s %.0f\n", 1e6 / us, (double)t.samples / wall);
	printf("cpus_at_99hz %.0f\ncpus_at_999hz %.0f\n", 1e6 / us / 99, 1e6 / us / 999);
	printf("by_tables %llu\nby_libdwfl %llu\nfp_frames %llu\ntables %llu\ntable_bytes %llu\n",
	       (unsigned long long)ts.by_tables, (unsigned long long)ts.by_dwfl, (unsigned long long)ts.fp_frames,
	       (unsigned long long)ts.cache.tables, (unsigned long long)ts.cache.bytes);
	r = 0;
out:
	perfrec_unwinder__free(u);
	return r;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/bench-replay.XXXXXX", cmd[64];
	double secs = argc > 2 ? strtod(argv[2], NULL) : 20;
	int st;

	if (argc < 2 || argc > 3 || !(secs > 0)) {
		fprintf(stderr, "usage: %s FILE.data [SECS > 0]\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("bench-replay: mkdtemp");
		return 1;
	}
	st = run(argv[1], secs, dir) < 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		st = 1;
	return st;
}
