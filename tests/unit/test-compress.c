// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of zstd COMPRESSED records: the compressor's frame sizes (every
 * record fits header.size, none decompresses to more than the stated
 * mmap_len), round trips of incompressible, compressible and record-shaped
 * input at levels 1, 3 and 19 with the input cut in different ways, the
 * decompressor's bounds and corrupt-data handling, and the writer/reader
 * pair: a compressed file carries HEADER_COMPRESSED and reads back record
 * for record as written, and the reader refuses what perf could not read.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/compress.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/recover.h>

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct sinkbuf {
	unsigned char *buf;
	size_t len, cap;
	size_t nr_records;
	size_t max_record;
	bool bad_type;
};

static void put(struct sinkbuf *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->buf = realloc(s->buf, s->cap);
		cr_assert(s->buf);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

/* Collects records from the compressor, checking each one's header. */
static int collect(void *ctx, const void *rec, size_t len)
{
	struct sinkbuf *s = ctx;
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	if (h.type != PERFREC_RECORD_COMPRESSED || h.size != len)
		s->bad_type = true;
	if (len > s->max_record)
		s->max_record = len;
	s->nr_records++;
	put(s, rec, len);
	return 0;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

enum kind { RANDOM, ZEROS, RECORDS };

/* @len bytes of the given kind; RECORDS are SAMPLE records of varying ip. */
static unsigned char *make_input(enum kind k, size_t len)
{
	unsigned char *b = calloc(1, len);

	cr_assert(b);
	if (k == RANDOM) {
		for (size_t i = 0; i < len; i++)
			b[i] = (unsigned char)rnd();
	} else if (k == RECORDS) {
		size_t pos = 0;
		uint64_t t = 1000;

		while (pos + 56 <= len) {
			uint64_t body[6] = { 42, 0x401000 + (rnd() % 64) * 16, 7 | (7ull << 32), t++, rnd() % 4, 100000 };
			struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 56 };

			memcpy(b + pos, &h, 8);
			memcpy(b + pos + 8, body, 48);
			pos += 56;
		}
	}
	return b;
}

/* Decompress every record of @s in order; check bounds; return the output. */
static unsigned char *inflate_all(const struct sinkbuf *s, size_t *ret_len, size_t cap)
{
	struct perfrec_decompress *d;
	unsigned char *out = NULL;
	size_t pos = 0, len = 0;

	cr_assert_eq(perfrec_decompress__new(&d), 0);
	while (pos < s->len) {
		struct perf_event_header h;
		ssize_t n;

		memcpy(&h, s->buf + pos, sizeof(h));
		out = realloc(out, len + cap);
		cr_assert(out);
		n = perfrec_decompress__frame(d, s->buf + pos + 8, h.size - 8u, out + len, cap);
		cr_assert_gt(n, 0, "record at %zu: %zd", pos, n);
		cr_assert_leq((size_t)n, cap, "a record decompressed to more than mmap_len");
		len += (size_t)n;
		pos += h.size;
	}
	perfrec_decompress__free(d);
	*ret_len = len;
	return out;
}

struct rt_case {
	enum kind kind;
	size_t len;
	int level;
	size_t piece; /* input handed over in pieces of this size (0: one iov) */
};

Test(compress, round_trips_with_every_record_under_64k_and_mmap_len)
{
	static const struct rt_case cases[] = {
		{ RANDOM, 400 * 1024, 1, 0 },
		{ RANDOM, 400 * 1024, 19, 4096 },
		{ RANDOM, PERFREC_COMPRESS_CHUNK, 3, 0 },
		{ RANDOM, PERFREC_COMPRESS_CHUNK + 1, 3, 0 },
		{ ZEROS, 3 * 1024 * 1024, 1, 0 },
		{ ZEROS, 1000, 19, 7 },
		{ RECORDS, 1024 * 1024, 1, 56 },
		{ RECORDS, 1024 * 1024, 3, 65536 + 3 },
		{ RECORDS, 1024 * 1024, 19, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rt_case *c = &cases[i];
		unsigned char *in = make_input(c->kind, c->len), *out;
		struct sinkbuf s = { 0 };
		struct perfrec_compress *z;
		uint64_t cin, cout, frames, ns;
		size_t out_len, pos = 0;

		cr_assert_eq(perfrec_compress__new(c->level, &z), 0);
		do {
			size_t n = c->piece && c->piece < c->len - pos ? c->piece : c->len - pos;
			struct iovec iov[2] = { { in + pos, n / 2 }, { in + pos + n / 2, n - n / 2 } };

			cr_assert_eq(perfrec_compress__feed(z, iov, 2, collect, &s), 0, "case %zu", i);
			pos += n;
		} while (pos < c->len);
		cr_assert_eq(perfrec_compress__flush(z, collect, &s), 0);
		cr_assert_not(s.bad_type, "case %zu: a record is not a well-formed COMPRESSED record", i);
		cr_assert_leq(s.max_record, PERFREC_RECORD_MAX, "case %zu", i);
		cr_assert_geq(s.nr_records, (c->len + PERFREC_COMPRESS_CHUNK - 1) / PERFREC_COMPRESS_CHUNK,
			      "case %zu: too few records for the mmap_len bound", i);

		perfrec_compress__counters(z, &cin, &cout, &frames, &ns);
		cr_assert_eq(cin, c->len, "case %zu", i);
		cr_assert_eq(cout, s.len, "case %zu", i);
		cr_assert_eq(frames, s.nr_records, "case %zu", i);
		if (c->kind != RANDOM)
			cr_assert_lt(cout * 2, cin, "case %zu: compressible input did not shrink", i);

		out = inflate_all(&s, &out_len, PERFREC_COMPRESS_CHUNK);
		cr_assert_eq(out_len, c->len, "case %zu", i);
		cr_assert_eq(memcmp(out, in, c->len), 0, "case %zu: round trip differs", i);
		perfrec_compress__free(z);
		free(out);
		free(in);
		free(s.buf);
	}
}

Test(compress, flush_without_input_emits_nothing_and_levels_are_checked)
{
	struct sinkbuf s = { 0 };
	struct perfrec_compress *z = NULL;

	cr_assert_eq(perfrec_compress__new(0, &z), -EINVAL);
	cr_assert_eq(perfrec_compress__new(20, &z), -EINVAL);
	cr_assert_eq(perfrec_compress__new(3, &z), 0);
	cr_assert_eq(perfrec_compress__flush(z, collect, &s), 0);
	cr_assert_eq(s.nr_records, 0, "an empty record would make perf fail (Couldn't decompress data)");
	perfrec_compress__free(z);
	perfrec_compress__free(NULL);
	perfrec_decompress__free(NULL);
}

/* An emit that fails (a full disk) a given number of times, then collects. */
struct failing_sink {
	struct sinkbuf s;
	int fail;
};

static int collect_or_fail(void *ctx, const void *rec, size_t len)
{
	struct failing_sink *f = ctx;

	if (f->fail > 0) {
		f->fail--;
		return -ENOSPC;
	}
	return collect(&f->s, rec, len);
}

/*
 * A chunk whose emit failed (a full disk) stays pending, and the next
 * feed sends it before taking more: compressed once, not twice (a
 * record of two chunks would decompress past mmap_len), and nothing fed
 * before the failure lost.
 */
Test(compress, a_chunk_whose_emit_failed_goes_out_with_the_next_feed, .timeout = 20)
{
	size_t len = PERFREC_COMPRESS_CHUNK * 2 + 1000, out_len;
	unsigned char *in = malloc(len), *out;
	struct failing_sink f = { .fail = 1 };
	struct perfrec_compress *z;
	struct iovec one;

	cr_assert(in);
	for (size_t k = 0; k < len; k++)
		in[k] = (unsigned char)(k * 7 / 13);
	cr_assert_eq(perfrec_compress__new(1, &z), 0);
	one = (struct iovec){ in, PERFREC_COMPRESS_CHUNK };
	cr_assert_eq(perfrec_compress__feed(z, &one, 1, collect_or_fail, &f), -ENOSPC);
	cr_assert_eq(f.s.nr_records, 0);
	one = (struct iovec){ in + PERFREC_COMPRESS_CHUNK, len - PERFREC_COMPRESS_CHUNK };
	cr_assert_eq(perfrec_compress__feed(z, &one, 1, collect_or_fail, &f), 0);
	cr_assert_eq(perfrec_compress__flush(z, collect_or_fail, &f), 0);
	cr_assert_eq(f.s.nr_records, 3);
	out = inflate_all(&f.s, &out_len, PERFREC_COMPRESS_CHUNK);
	cr_assert_eq(out_len, len);
	cr_assert_eq(memcmp(out, in, len), 0, "nothing fed before the failure may be lost");
	perfrec_compress__free(z);
	free(out);
	free(in);
	free(f.s.buf);
}

Test(compress, decompressor_refuses_more_than_cap_and_corrupt_data)
{
	unsigned char *in = make_input(ZEROS, 5000), out[5000];
	struct iovec iov = { in, 5000 };
	struct sinkbuf s = { 0 };
	struct perfrec_compress *z;
	struct perfrec_decompress *d;
	unsigned char bad[64];

	cr_assert_eq(perfrec_compress__new(3, &z), 0);
	cr_assert_eq(perfrec_compress__feed(z, &iov, 1, collect, &s), 0);
	cr_assert_eq(perfrec_compress__flush(z, collect, &s), 0);
	cr_assert_eq(s.nr_records, 1);
	cr_assert_eq(perfrec_decompress__new(&d), 0);
	cr_assert_eq(perfrec_decompress__frame(d, s.buf + 8, s.len - 8, out, 4999), -ENOSPC);
	perfrec_decompress__reset(d);
	cr_assert_eq(perfrec_decompress__frame(d, s.buf + 8, s.len - 8, out, 5000), 5000);

	memset(bad, 0xa5, sizeof(bad));
	perfrec_decompress__reset(d);
	cr_assert_eq(perfrec_decompress__frame(d, bad, sizeof(bad), out, sizeof(out)), -EBADMSG);
	perfrec_decompress__free(d);
	perfrec_compress__free(z);
	free(in);
	free(s.buf);
}

/* ---- through the writer and reader -------------------------------------- */

static struct perf_event_attr make_attr(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 100000;
	a.sample_type = SAMPLE_TYPE;
	a.sample_id_all = 1;
	return a;
}

static size_t make_sample(void *buf, uint64_t id, uint64_t ip, uint64_t time, uint32_t cpu)
{
	uint64_t body[6] = { id, ip, 7 | (7ull << 32), time, cpu, 100000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(h) + sizeof(body) };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), body, sizeof(body));
	return h.size;
}

static char *tmp_path(void)
{
	char *p = strdup("/tmp/test-compress-XXXXXX");
	int fd = mkstemp(p);

	cr_assert_geq(fd, 0);
	close(fd);
	return p;
}

#define NR_SAMPLES 20000

/* Write NR_SAMPLES samples (plus a FINISHED_ROUND every 100) at @level. */
static char *write_file(int level)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true, .compress_level = level };
	struct perf_event_attr a = make_attr();
	struct perfrec_pdwriter *w;
	uint64_t id = 11;
	unsigned char rec[64];
	char *path = tmp_path();
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	for (int i = 0; i < NR_SAMPLES; i++) {
		size_t n = make_sample(rec, id, 0x400000 + (uint64_t)(i % 97) * 8, 1000 + (uint64_t)i, (uint32_t)(i % 2));

		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
		if (i % 100 == 99) {
			struct perf_event_header round = { .type = PERFREC_RECORD_FINISHED_ROUND, .size = 8 };

			cr_assert_eq(perfrec_pdwriter__write(w, &round, sizeof(round)), 0);
		}
		if (i == NR_SAMPLES / 2)
			cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	}
	if (level) {
		struct perfrec_pdwriter_compress_stats st;

		perfrec_pdwriter__compress_stats(w, &st);
		cr_assert_gt(st.bytes_in, (uint64_t)NR_SAMPLES * 56, "bytes_in counts what was written");
		cr_assert_gt(st.nr_frames, 0);
		cr_assert_eq(perfrec_pdwriter__set_compress(w, 1), -EBUSY);
	}
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	return path;
}

Test(compress, writer_levels_read_back_like_the_uncompressed_file)
{
	static const int levels[] = { 1, 3, 19 };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *plain, *z;
	char *plain_path = write_file(0);

	cr_assert_eq(perfrec_pdreader__open(plain_path, &ro, &plain), 0);
	cr_assert_eq(perfrec_pdreader__verify(plain), 0, "%s", perfrec_pdreader__error(plain, NULL));
	cr_assert_eq(perfrec_pdreader__stats(plain)->nr_samples, NR_SAMPLES);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		const struct perf_event_header *a, *b;
		const struct perfrec_pdreader_stats *st;
		struct perfrec_compressed_feature cf;
		struct perfrec_pdreader_opts raw = { .sz = sizeof(raw), .raw_compressed = true };
		const void *fb;
		size_t flen, n = 0;
		uint64_t off;
		char *path = write_file(levels[i]);
		int ra, rb;

		cr_assert_eq(perfrec_pdreader__open(path, &ro, &z), 0);
		cr_assert_eq(perfrec_pdreader__verify(z), 0, "level %d: %s", levels[i], perfrec_pdreader__error(z, NULL));
		st = perfrec_pdreader__stats(z);
		cr_assert_eq(st->nr_samples, NR_SAMPLES, "level %d", levels[i]);
		cr_assert_gt(st->by_type[PERFREC_RECORD_COMPRESSED], 0);
		cr_assert_lt(perfrec_pdreader__header(z)->data.size, perfrec_pdreader__header(plain)->data.size / 3,
			     "level %d: samples of few distinct ips should compress", levels[i]);

		cr_assert_eq(perfrec_pdreader__feature(z, PERFREC_FEAT_COMPRESSED, &fb, &flen), 0);
		cr_assert_eq(flen, sizeof(cf));
		memcpy(&cf, fb, sizeof(cf));
		cr_assert_eq(cf.version, 0);
		cr_assert_eq(cf.type, PERFREC_COMP_ZSTD);
		cr_assert_eq(cf.level, (uint32_t)levels[i]);
		/* Room for a chunk and a whole 64 KiB record cut at its end (perf 6.1). */
		cr_assert_geq(cf.mmap_len, PERFREC_COMPRESS_CHUNK + PERFREC_RECORD_MAX);
		cr_assert_geq(cf.ratio, 3);
		cr_assert_leq(st->max_decompressed, cf.mmap_len);

		/* Same records in the same order as the plain file. */
		perfrec_pdreader__rewind(plain);
		for (;;) {
			ra = perfrec_pdreader__next(plain, &a, &off);
			rb = perfrec_pdreader__next(z, &b, &off);
			cr_assert_eq(ra, rb, "level %d: record %zu", levels[i], n);
			if (ra <= 0)
				break;
			cr_assert_eq(a->size, b->size);
			cr_assert_eq(memcmp(a, b, a->size), 0, "level %d: record %zu differs", levels[i], n);
			n++;
		}
		cr_assert_eq(ra, 0);
		perfrec_pdreader__free(z);

		/*
		 * Raw view: only COMPRESSED records, and each one holds whole
		 * records (no record cut between two), as perf writes them.
		 */
		cr_assert_eq(perfrec_pdreader__open(path, &raw, &z), 0);
		{
			struct perfrec_decompress *d;
			unsigned char *out = malloc(PERFREC_COMPRESS_CHUNK);

			cr_assert_eq(perfrec_decompress__new(&d), 0);
			while ((ra = perfrec_pdreader__next(z, &a, &off)) > 0) {
				ssize_t got;
				size_t p = 0;

				cr_assert_eq(a->type, PERFREC_RECORD_COMPRESSED);
				got = perfrec_decompress__frame(d, a + 1, a->size - 8u, out, PERFREC_COMPRESS_CHUNK);
				cr_assert_gt(got, 0);
				while (p + 8 <= (size_t)got) {
					struct perf_event_header ih;

					memcpy(&ih, out + p, 8);
					cr_assert_geq(ih.size, 8);
					p += ih.size;
				}
				cr_assert_eq(p, (size_t)got, "level %d: a record is cut at a COMPRESSED record's end", levels[i]);
			}
			perfrec_decompress__free(d);
			free(out);
		}
		cr_assert_eq(ra, 0);
		perfrec_pdreader__free(z);
		unlink(path);
		free(path);
	}
	perfrec_pdreader__free(plain);
	unlink(plain_path);
	free(plain_path);
}

/* Patch the mmap_len of a compressed file's HEADER_COMPRESSED in memory. */
static unsigned char *load(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long n;

	cr_assert(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*ret_len = (size_t)n;
	return b;
}

Test(compress, reader_refuses_frames_bigger_than_mmap_len_or_without_the_feature)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r;
	char *path = write_file(3);
	size_t len;
	unsigned char *b = load(path, &len);
	uint32_t small = 4096;
	struct perfrec_file_header h;

	/* Find the feature body by walking the table ourselves. */
	memcpy(&h, b, sizeof(h));
	{
		uint64_t table = h.data.offset + h.data.size, k = 0;
		struct perfrec_file_section s;

		for (int f = 0; f < PERFREC_FEAT_COMPRESSED; f++)
			if (h.flags[f / 64] & (1ull << (f % 64)))
				k++;
		memcpy(&s, b + table + k * sizeof(s), sizeof(s));
		cr_assert_eq(s.size, sizeof(struct perfrec_compressed_feature));
		memcpy(b + s.offset + 16, &small, 4);
	}
	cr_assert_eq(perfrec_pdreader__open_mem(b, len, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), -EBADMSG);
	cr_assert(strstr(perfrec_pdreader__error(r, NULL), "more than mmap_len"), "%s", perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);

	/* No HEADER_COMPRESSED at all: perf would have no buffer size. */
	h.flags[0] &= ~(1ull << PERFREC_FEAT_COMPRESSED);
	memcpy(b, &h, sizeof(h));
	cr_assert_eq(perfrec_pdreader__open_mem(b, len, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), -EBADMSG);
	cr_assert(strstr(perfrec_pdreader__error(r, NULL), "HEADER_COMPRESSED"), "%s", perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	free(b);
	unlink(path);
	free(path);
}

Test(compress, a_corrupt_frame_is_reported_with_its_offset)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r;
	char *path = write_file(1);
	size_t len;
	unsigned char *b = load(path, &len);
	struct perfrec_file_header h;
	uint64_t off;

	memcpy(&h, b, sizeof(h));
	/* Garble the middle of the first COMPRESSED record's payload. */
	for (size_t i = 32; i < 200; i++)
		b[h.data.offset + i] ^= 0x5a;
	cr_assert_eq(perfrec_pdreader__open_mem(b, len, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), -EBADMSG);
	perfrec_pdreader__error(r, &off);
	cr_assert_eq(off, h.data.offset, "%s at %llu", perfrec_pdreader__error(r, NULL), (unsigned long long)off);
	perfrec_pdreader__free(r);
	free(b);
	unlink(path);
	free(path);
}

Test(compress, a_crashed_compressed_file_recovers_to_its_last_checkpoint)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true, .compress_level = 3 };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_recover_stats st = { 0 };
	struct perf_event_attr a = make_attr();
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	const void *fb;
	size_t flen;
	uint64_t id = 11;
	unsigned char rec[64];
	char *src = tmp_path(), dst[64];
	int fd = open(src, O_WRONLY | O_CLOEXEC), at_checkpoint = NR_SAMPLES / 2;

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	for (int i = 0; i < NR_SAMPLES; i++) {
		size_t n = make_sample(rec, id, 0x400000 + (uint64_t)(i % 97) * 8, 1000 + (uint64_t)i, 0);

		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
		if (i + 1 == at_checkpoint)
			cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	}
	/* "Crash": no finish, so the file has no features and the later data is lost. */
	perfrec_pdwriter__free(w, false);

	snprintf(dst, sizeof(dst), "%s-recovered", src);
	cr_assert_eq(perfrec_recover__file(src, dst, NULL, &st), 0);
	cr_assert_eq(st.samples, (uint64_t)at_checkpoint, "samples inside COMPRESSED records must be found");
	cr_assert_eq(perfrec_pdreader__open(dst, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_assert_eq(perfrec_pdreader__stats(r)->nr_samples, (uint64_t)at_checkpoint);
	cr_assert_gt(perfrec_pdreader__stats(r)->by_type[PERFREC_RECORD_COMPRESSED], 0);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_COMPRESSED, &fb, &flen), 0,
		     "recovery must add the HEADER_COMPRESSED a .tmp lacks");
	perfrec_pdreader__free(r);
	unlink(dst);
	unlink(src);
	free(src);
}
