// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Drain-path micro-benchmark with no kernel in the loop: an in-memory ring
 * laid out like a perf mmap (meta page + power-of-two data area) is filled
 * once with realistic sample records (IDENTIFIER|IP|TID|TIME|CPU|PERIOD|
 * CALLCHAIN, 4..40 frames, plus a few side-band records) that tile the ring
 * exactly, so publishing data_head one ring-size further presents a fresh lap
 * of whole records at no producer cost.  For the drain cases the ring is
 * refilled before each lap, untimed, from NR_LAPS different pre-generated
 * laps: with one lap repeated, zstd would find the whole previous lap inside
 * its window and compress at a speed no real recording sees.  It then
 * measures what perfrecd's
 * drain does with a lap (perfrec_ring begin/next/iov/commit, then
 * perfrec_pdwriter__writev, optionally through zstd) against the physical
 * limits on the same machine: memcpy of the same bytes and write(2) of them.
 * The drain walks every record (as the recorder does to count samples) and
 * writes the ring's contiguous spans straight from the mapping.  Prints CSV:
 * case,bytes_per_s,records_per_s,memcpy_over_case,write_file_over_case (how
 * many times slower than memcpy, and than a plain write(2) of the same bytes
 * into a file on the same file system, the physical limit of file output).
 * write_devnull copies nothing (the kernel discards the buffer): it is the
 * syscall floor, not a bandwidth.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>
#include <perfrec/ring.h>

#include "drain.h"

#define PAGE 4096
#define RING (512 * 1024)      /* perfrecd's default mmap-size */
#define FILE_CAP (256u << 20)  /* restart the file so /tmp use stays bounded */
#define SECONDS 1.0

static unsigned char *mem;
static struct perf_event_mmap_page *meta;
static struct perfrec_ring ring;
static uint64_t nr_recs; /* records in the lap that fill() put in the ring */
#define NR_LAPS 32
static unsigned char *laps;    /* NR_LAPS different laps, RING bytes each */
static uint64_t lap_recs[NR_LAPS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This thread's CPU time: what the drain costs, however busy the machine is. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

/* Copy @len bytes to ring position @pos, wrapping at the end. */
static void put(unsigned char *data, uint64_t pos, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		data[(pos + i) & (RING - 1)] = ((const unsigned char *)src)[i];
}

/* Fill the data area with records whose sizes sum to exactly RING. */
static void fill(unsigned char *data, uint64_t base, uint64_t seed)
{
	uint64_t off = 0, t = 1000000 + seed * 100000000;

	nr_recs = 0;

	while (off < RING) {
		struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER };
		uint64_t frames = 4 + rnd(&seed) % 37;
		uint64_t body[128] = { 0 };
		size_t n = 0;

		if (rnd(&seed) % 50 == 0)
			h.type = PERF_RECORD_MMAP2; /* side band: sizes vary too */
		body[n++] = 7;                           /* identifier */
		body[n++] = 0x401000 + rnd(&seed) % 4096; /* ip */
		body[n++] = (rnd(&seed) % 64) << 32 | 1234; /* pid, tid */
		body[n++] = t += 10000;                  /* time */
		body[n++] = 1;                           /* cpu, res */
		body[n++] = 1000000;                     /* period */
		body[n++] = frames;
		/* A user-mode -g chain: the context marker, then the frames. */
		body[n++] = (uint64_t)PERF_CONTEXT_USER;
		for (uint64_t i = 1; i < frames; i++)
			body[n++] = 0x400000 + rnd(&seed) % 65536;
		h.size = sizeof(h) + n * 8;
		if (RING - off < (uint64_t)h.size + 8 + 8 * 8 + 8 * 41) {
			/* Last record takes exactly what is left. */
			h.size = RING - off;
			n = (h.size - sizeof(h)) / 8;
		}
		put(data, base + off, &h, sizeof(h));
		put(data, base + off + sizeof(h), body, n * 8);
		off += h.size;
		nr_recs++;
	}
}

/* Put pre-generated lap @k where the next lap goes, as the kernel would write it. */
static void load_lap(unsigned k)
{
	uint64_t off = meta->data_head & (RING - 1);
	const unsigned char *src = laps + (size_t)k * RING;

	memcpy(mem + PAGE + off, src, RING - off);
	memcpy(mem + PAGE, src + (RING - off), off);
	nr_recs = lap_recs[k];
}

/* Publish one more lap, as the kernel would after writing it. */
static void publish(void)
{
	__atomic_store_n(&meta->data_head, meta->data_head + RING, __ATOMIC_RELEASE);
}

struct result {
	double bytes, recs, secs;
};

static double write_file_bps;

static void report(const char *name, const struct result *r, double memcpy_bps)
{
	double bps = r->bytes / r->secs;

	printf("%s,%.0f,%.0f,%.2f,%.2f\n", name, bps, r->recs / r->secs,
	       memcpy_bps > 0 ? memcpy_bps / bps : 1.0,
	       write_file_bps > 0 ? write_file_bps / bps : 0.0);
	fflush(stdout);
}

static struct result bench_memcpy(void)
{
	size_t cap = 64u << 20;
	unsigned char *dst = malloc(cap);
	struct result r = { 0 };
	size_t off = 0;
	double t0;

	if (!dst)
		exit(1);
	memset(dst, 1, cap); /* fault it in: page-cache pages exist too */
	t0 = now();
	while ((r.secs = now() - t0) < SECONDS) {
		for (int i = 0; i < 16; i++) {
			memcpy(dst + off, mem + PAGE, RING);
			off = (off + RING) % cap;
			r.bytes += RING;
			r.recs += nr_recs;
		}
	}
	free(dst);
	return r;
}

static int open_out(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		fprintf(stderr, "bench-drain: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static struct result bench_write(const char *path)
{
	struct result r = { 0 };
	int fd = open_out(path);
	double t0 = now();
	size_t in_file = 0;

	while ((r.secs = now() - t0) < SECONDS) {
		if (write(fd, mem + PAGE, RING) != RING)
			exit(1);
		r.bytes += RING;
		r.recs += nr_recs;
		if ((in_file += RING) >= FILE_CAP && strcmp(path, "/dev/null")) {
			if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
				exit(1);
			in_file = 0;
		}
	}
	close(fd);
	return r;
}

/* What recorder.c's drain_ring does per ring, minus its per-record counters. */
static struct result bench_drain(const char *path, int level)
{
	struct perfrec_pdwriter_opts o = { .sz = sizeof(o), .owns_fd = true, .compress_level = level };
	struct perfrec_pdwriter *w = NULL;
	struct result r = { 0 };
	double t0, wall0 = now();
	unsigned lap = 0;
	int rr;

	while (r.secs < SECONDS * (level ? 2 : 1) && now() - wall0 < 10 * SECONDS) {
		const struct perf_event_header *h;
		struct perfrec_ring_batch b;
		struct iovec iov[2];
		int n;

		if (!w || perfrec_pdwriter__data_size(w) >= FILE_CAP) {
			perfrec_pdwriter__free(w, true);
			rr = perfrec_pdwriter__new(open_out(path), &o, &w);
			if (rr < 0) {
				fprintf(stderr, "bench-drain: pdwriter: %s\n", strerror(-rr));
				exit(1);
			}
		}
		load_lap(lap++ % NR_LAPS);
		t0 = now();
		publish();
		if (perfrec_ring__begin(&ring, &b) <= 0)
			exit(1);
		while ((rr = perfrec_ring__next(&ring, &b, &h)) > 0)
			r.recs++;
		if (rr < 0)
			exit(1);
		n = perfrec_ring__iov(&ring, &b, iov);
		rr = perfrec_pdwriter__writev(w, iov, n);
		if (rr < 0) {
			fprintf(stderr, "bench-drain: writev: %s\n", strerror(-rr));
			exit(1);
		}
		perfrec_ring__commit(&ring, &b);
		r.secs += now() - t0;
		r.bytes += RING;
	}
	perfrec_pdwriter__free(w, true);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* What the recorder's file sink reads of each record: counts, pid, time. */
struct count_sink {
	struct sink sink;
	struct perfrec_pdwriter *w;
	uint64_t samples, busy, first, last, pid_sum;
};

static void count_record(struct sink *s, struct drain_rec *r)
{
	struct count_sink *c = (struct count_sink *)s;

	if (r->h->type != PERF_RECORD_SAMPLE || !r->sample_ok)
		return;
	c->samples++;
	c->busy += r->pid != 0;
	c->pid_sum += r->pid;
	if (!c->first || r->time < c->first)
		c->first = r->time;
	if (r->time > c->last)
		c->last = r->time;
}

static int count_write(struct sink *s, size_t idx, const struct iovec *iov, int n, uint64_t bytes)
{
	return perfrec_pdwriter__writev(((struct count_sink *)s)->w, iov, n);
}

static const struct sink_ops count_ops = { .record = count_record, .write = count_write };

/*
 * The recorder's pass (internal/drain.c's drain_ring(): event lookup, the user
 * callchain check, decoding, a sink's record() and write()) into
 * /dev/null: the user-space cost per record, without the page cache.
 * Timed lap by lap in this thread's CPU time, and the lap at the 10th
 * percentile is reported: on a shared VM other work (and the host's
 * preemption of the vCPU, which guest CPU time does not see) only makes
 * laps slower, often most of them.
 */
static struct result bench_drain_sink(void)
{
	const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
	struct perfrec_pdwriter_opts o = { .sz = sizeof(o), .owns_fd = true };
	struct drain_opts dopts = { .sz = sizeof(dopts), .callchain = true };
	struct count_sink c = { .sink = { .ops = &count_ops } };
	const uint64_t ids[] = { 3, 7, 11 };
	struct result r = { 0 };
	double t0, lap_secs[4096];
	struct drain *d;
	unsigned lap = 0;

	if (perfrec_pdwriter__new(open_out("/dev/null"), &o, &c.w) < 0 || drain_new(&dopts, &d) < 0 ||
	    drain_add_ids(d, ids, 3, st, 0) < 0 || drain_add_sink(d, &c.sink) < 0)
		exit(1);
	c.sink.ctx = &c;
	for (; lap < 4096 && (r.secs < SECONDS || lap < 64); lap++) {
		uint64_t before = c.samples;

		load_lap(lap % NR_LAPS);
		t0 = cpu_now();
		publish();
		drain_ring(d, &ring, 0);
		lap_secs[lap] = cpu_now() - t0;
		r.secs += lap_secs[lap];
		r.recs += nr_recs;
		if (c.samples == before)
			exit(1); /* nothing decoded: the bench would measure nothing */
	}
	/* That lap, as if every lap had taken it. */
	qsort(lap_secs, lap, sizeof(lap_secs[0]), cmp_double);
	r.bytes = (double)lap * RING;
	r.secs = lap_secs[lap / 10] * lap;
	drain_free(d);
	perfrec_pdwriter__free(c.w, true);
	return r;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/perfrec-bench-drain.data";
	struct result mc, r;
	int rr;

	mem = aligned_alloc(PAGE, PAGE + RING);
	if (!mem)
		return 1;
	memset(mem, 0, PAGE);
	meta = (struct perf_event_mmap_page *)mem;
	/* Start mid-ring so every lap has one record straddling the end. */
	meta->data_head = meta->data_tail = RING / 2 + 8 * 13;
	laps = malloc((size_t)NR_LAPS * RING);
	if (!laps)
		return 1;
	for (unsigned k = 0; k < NR_LAPS; k++) {
		fill(laps + (size_t)k * RING, 0, 42 + k);
		lap_recs[k] = nr_recs;
	}
	/* The memcpy and write cases use the first lap, in the ring. */
	load_lap(0);
	rr = perfrec_ring__init(&ring, mem, PAGE, RING, 0);
	if (rr < 0) {
		fprintf(stderr, "bench-drain: ring init: %s\n", strerror(-rr));
		return 1;
	}
	printf("case,bytes_per_s,records_per_s,memcpy_over_case,write_file_over_case\n");
	mc = bench_memcpy();
	report("memcpy", &mc, 0);
	r = bench_write("/dev/null");
	report("write_devnull", &r, mc.bytes / mc.secs);
	r = bench_write(path);
	write_file_bps = r.bytes / r.secs;
	report("write_file", &r, mc.bytes / mc.secs);
	r = bench_drain("/dev/null", 0);
	report("ring_pdwriter_devnull", &r, mc.bytes / mc.secs);
	r = bench_drain(path, 0);
	report("ring_pdwriter_file", &r, mc.bytes / mc.secs);
	r = bench_drain_sink();
	report("drain_sink_devnull", &r, mc.bytes / mc.secs);
	r = bench_drain(path, 1);
	report("ring_zstd1_pdwriter_file", &r, mc.bytes / mc.secs);
	r = bench_drain(path, 3);
	report("ring_zstd3_pdwriter_file", &r, mc.bytes / mc.secs);
	unlink(path);
	perfrec_ring__exit(&ring);
	free(laps);
	free(mem);
	return 0;
}
