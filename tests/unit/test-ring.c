// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the ring reader on an in-memory fake ring: a buffer laid out
 * like the kernel's mapping (one meta page, then a power-of-2 data area) into
 * which the tests write records and advance data_head exactly as the kernel
 * does, including records that straddle the end of the data area, counters
 * that wrap past 2^64, and the corruptions the reader must survive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/ring.h>

#define PAGE 4096u

struct fake {
	unsigned char *mem;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
	struct perfrec_ring r;
	/* Every byte produced, in order, to compare what the consumer got. */
	unsigned char *stream;
	size_t stream_len, stream_cap;
};

static void fake_init(struct fake *f, uint64_t size, uint64_t start)
{
	memset(f, 0, sizeof(*f));
	/* Page-aligned like a real mapping; the size is rounded up for C11. */
	f->mem = aligned_alloc(PAGE, (PAGE + size + PAGE - 1) / PAGE * PAGE);
	cr_assert_not_null(f->mem);
	memset(f->mem, 0xee, PAGE + size);
	f->meta = (struct perf_event_mmap_page *)f->mem;
	memset(f->meta, 0, PAGE);
	f->data = f->mem + PAGE;
	f->size = size;
	f->meta->data_head = start;
	f->meta->data_tail = start;
	cr_assert_eq(perfrec_ring__init(&f->r, f->mem, PAGE, size, 3), 0);
}

static void fake_exit(struct fake *f)
{
	perfrec_ring__exit(&f->r);
	free(f->mem);
	free(f->stream);
}

/* Write @len raw bytes at head & mask, wrapping, without publishing them. */
static void put_bytes(struct fake *f, uint64_t pos, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		f->data[(pos + i) & (f->size - 1)] = ((const unsigned char *)src)[i];
}

/* Build a record of @size bytes whose body is a pattern derived from @seq. */
static void make_rec(unsigned char *buf, uint16_t size, uint32_t seq)
{
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = (uint16_t)seq, .size = size };

	memcpy(buf, &h, sizeof(h));
	for (size_t i = sizeof(h); i < size; i++)
		buf[i] = (unsigned char)(seq * 31 + i);
}

/*
 * Produce one record like the kernel: write it at head, then publish head
 * with a release store.  Returns false when the ring has no room.
 */
static bool produce(struct fake *f, uint16_t size, uint32_t seq)
{
	unsigned char buf[65536];
	uint64_t head = f->meta->data_head;
	uint64_t tail = __atomic_load_n(&f->meta->data_tail, __ATOMIC_ACQUIRE);

	if (head - tail + size > f->size)
		return false;
	make_rec(buf, size, seq);
	put_bytes(f, head, buf, size);
	if (f->stream_len + size > f->stream_cap) {
		f->stream_cap = (f->stream_len + size) * 2;
		f->stream = realloc(f->stream, f->stream_cap);
		cr_assert_not_null(f->stream);
	}
	memcpy(f->stream + f->stream_len, buf, size);
	f->stream_len += size;
	__atomic_store_n(&f->meta->data_head, head + size, __ATOMIC_RELEASE);
	return true;
}

/* Concatenate iov segments; returns the total length. */
static size_t flatten(const struct iovec *iov, int n, unsigned char *out)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	return len;
}

Test(ring, init_rejects_sizes_that_are_not_a_power_of_two)
{
	static const struct {
		size_t size;
		int ret;
	} cases[] = {
		{ 0, -EINVAL }, { 4, -EINVAL }, { 24, -EINVAL }, { 4097, -EINVAL },
		{ 8, 0 }, { 4096, 0 }, { 1u << 20, 0 },
	};
	static unsigned char mem[PAGE];
	struct perfrec_ring r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = perfrec_ring__init(&r, mem, PAGE, cases[i].size, 0);

		cr_expect_eq(ret, cases[i].ret, "size %zu: got %d", cases[i].size, ret);
		if (!ret) {
			cr_expect_eq(r.mask, cases[i].size - 1);
			cr_expect_eq(r.data, mem + PAGE);
			perfrec_ring__exit(&r);
		}
	}
	perfrec_ring__exit(NULL);
}

Test(ring, empty_ring_yields_nothing_and_commit_keeps_tail)
{
	struct fake f;
	struct perfrec_ring_batch b;
	const struct perf_event_header *rec = NULL;
	struct iovec iov[2];

	fake_init(&f, 4096, 1000 * 8);
	cr_assert_eq(perfrec_ring__begin(&f.r, &b), 0);
	cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 0);
	cr_assert_eq(perfrec_ring__walk_all(&f.r, &b), 0);
	cr_assert_eq(perfrec_ring__iov(&f.r, &b, iov), 0);
	perfrec_ring__commit(&f.r, &b);
	cr_assert_eq(f.meta->data_tail, 8000);
	cr_assert_eq(f.r.corrupt, 0);
	fake_exit(&f);
}

/*
 * Records produced from several start positions: away from the end, ending
 * exactly at the end, straddling it in the header's second half, straddling
 * it in the body, and with the counters about to wrap past 2^64.
 */
Test(ring, records_are_returned_intact_across_the_wrap)
{
	static const struct {
		uint64_t start;
		uint16_t sizes[6];
		int segments;
	} cases[] = {
		{ 0, { 16, 24, 40 }, 1 },
		{ 4096 - 80, { 16, 24, 40 }, 1 },          /* ends exactly at the end */
		{ 4096 - 16, { 8, 48, 32 }, 2 },           /* 2nd record straddles the body */
		{ 4096 - 8, { 8, 8, 200 }, 2 },            /* the wrap falls between records */
		{ 3 * 4096 - 24, { 64, 16 }, 2 },          /* first record straddles */
		{ (uint64_t)0 - 32, { 48, 24, 8, 96 }, 2 }, /* head wraps past 2^64 */
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct fake f;
		struct perfrec_ring_batch b;
		const struct perf_event_header *rec;
		struct iovec iov[2];
		unsigned char want[256], got[4096];
		size_t off = 0, n = 0;
		int ret, segs;

		fake_init(&f, 4096, cases[c].start);
		for (n = 0; n < 6 && cases[c].sizes[n]; n++)
			cr_assert(produce(&f, cases[c].sizes[n], (uint32_t)(c * 10 + n)));
		cr_assert_eq(perfrec_ring__begin(&f.r, &b), (int64_t)f.stream_len);
		for (size_t i = 0; i < n; i++) {
			ret = perfrec_ring__next(&f.r, &b, &rec);
			cr_assert_eq(ret, 1, "case %zu rec %zu: %d", c, i, ret);
			make_rec(want, cases[c].sizes[i], (uint32_t)(c * 10 + i));
			cr_assert_eq(rec->size, cases[c].sizes[i]);
			cr_assert_eq(memcmp(rec, want, rec->size), 0, "case %zu rec %zu differs", c, i);
			off += rec->size;
		}
		cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 0);
		segs = perfrec_ring__iov(&f.r, &b, iov);
		cr_assert_eq(segs, cases[c].segments, "case %zu: %d segments", c, segs);
		cr_assert_eq(flatten(iov, segs, got), f.stream_len);
		cr_assert_eq(memcmp(got, f.stream, f.stream_len), 0, "case %zu: iov bytes differ", c);
		/* The segments point into the ring itself, not into a copy. */
		cr_assert((unsigned char *)iov[0].iov_base >= f.data &&
			  (unsigned char *)iov[0].iov_base < f.data + f.size);
		perfrec_ring__commit(&f.r, &b);
		cr_assert_eq(f.meta->data_tail, f.meta->data_head);
		cr_assert_eq(off, f.stream_len);
		fake_exit(&f);
	}
}

Test(ring, exactly_full_ring_is_read_whole)
{
	struct fake f;
	struct perfrec_ring_batch b;
	struct iovec iov[2];
	unsigned char got[1024];
	uint32_t seq = 0;

	fake_init(&f, 1024, 512 + 8);
	while (produce(&f, 64, seq))
		seq++;
	/* 1024 = 16 * 64: the ring is exactly full. */
	cr_assert_eq(seq, 16);
	cr_assert_eq(f.meta->data_head - f.meta->data_tail, 1024);
	cr_assert_eq(perfrec_ring__begin(&f.r, &b), 1024);
	cr_assert_eq(perfrec_ring__walk_all(&f.r, &b), 16);
	cr_assert_eq(perfrec_ring__iov(&f.r, &b, iov), 2);
	cr_assert_eq(flatten(iov, 2, got), 1024);
	cr_assert_eq(memcmp(got, f.stream, 1024), 0);
	perfrec_ring__commit(&f.r, &b);
	cr_assert_eq(f.meta->data_tail, f.meta->data_head);
	cr_assert_eq(f.r.corrupt, 0);
	fake_exit(&f);
}

Test(ring, head_far_ahead_drops_everything_and_resyncs_tail)
{
	/* Bytes beyond a full ring: the smallest possible overshoot and more. */
	static const uint64_t over[] = { 8, 64, 3 * 1024 };

	for (size_t c = 0; c < sizeof(over) / sizeof(over[0]); c++) {
		struct fake f;
		struct perfrec_ring_batch b;
		const struct perf_event_header *rec;
		struct iovec iov[2];

		fake_init(&f, 1024, 64);
		for (uint32_t i = 0; i < 8; i++)
			cr_assert(produce(&f, 64, i));
		/* The writer lapped us: more unread bytes than the ring holds. */
		f.meta->data_head = f.meta->data_tail + 1024 + over[c];
		cr_assert_eq(perfrec_ring__begin(&f.r, &b), -EBADMSG, "overshoot %lu", (unsigned long)over[c]);
		cr_assert_eq(f.r.corrupt, 1);
		cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 0);
		cr_assert_eq(perfrec_ring__walk_all(&f.r, &b), 0);
		cr_assert_eq(perfrec_ring__iov(&f.r, &b, iov), 0);
		cr_assert_eq(f.meta->data_tail, 64, "tail moved before commit");
		perfrec_ring__commit(&f.r, &b);
		cr_assert_eq(f.meta->data_tail, f.meta->data_head);
		/* The next pass starts clean. */
		cr_assert(produce(&f, 32, 99));
		cr_assert_eq(perfrec_ring__begin(&f.r, &b), 32);
		cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
		cr_assert_eq(rec->misc, 99);
		fake_exit(&f);
	}
}

/*
 * A bad header after two good records: the good ones are still returned
 * (by next and by iov), the bad one ends the pass, and commit drops the
 * rest up to head.  Checked through next() and through walk_all().
 */
Test(ring, corrupt_size_ends_the_pass_after_the_good_records)
{
	static const struct {
		const char *what;
		uint16_t bad_size;
		uint16_t published; /* bytes of the bad record made visible */
	} cases[] = {
		{ "size 0", 0, 32 },
		{ "size 4", 4, 32 },
		{ "size past head", 64, 32 },
		{ "partial header", 16, 4 },
	};

	for (int walk = 0; walk < 2; walk++) {
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			struct fake f;
			struct perfrec_ring_batch b;
			const struct perf_event_header *rec;
			struct perf_event_header bad = { .type = 9, .size = cases[c].bad_size };
			struct iovec iov[2];
			unsigned char got[256];
			uint64_t good_end;

			fake_init(&f, 256, 256 - 16);
			cr_assert(produce(&f, 24, 1)); /* straddles the end */
			cr_assert(produce(&f, 40, 2));
			good_end = f.meta->data_head;
			put_bytes(&f, good_end, &bad, sizeof(bad));
			f.meta->data_head = good_end + cases[c].published;

			cr_assert_eq(perfrec_ring__begin(&f.r, &b), 64 + cases[c].published);
			if (walk) {
				cr_assert_eq(perfrec_ring__walk_all(&f.r, &b), -EBADMSG, "%s", cases[c].what);
			} else {
				cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
				cr_assert_eq(rec->misc, 1);
				cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
				cr_assert_eq(rec->misc, 2);
				cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), -EBADMSG, "%s", cases[c].what);
				/* The pass stays over. */
				cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 0);
			}
			cr_assert_eq(b.skip, cases[c].published, "%s", cases[c].what);
			cr_assert_eq(f.r.corrupt, 1);
			cr_assert_eq(flatten(iov, perfrec_ring__iov(&f.r, &b, iov), got), 64);
			cr_assert_eq(memcmp(got, f.stream, 64), 0);
			perfrec_ring__commit(&f.r, &b);
			cr_assert_eq(f.meta->data_tail, f.meta->data_head, "%s", cases[c].what);
			fake_exit(&f);
		}
	}
}

Test(ring, tail_moves_only_on_commit)
{
	struct fake f;
	struct perfrec_ring_batch b;
	const struct perf_event_header *rec;

	fake_init(&f, 512, 0);
	cr_assert(produce(&f, 48, 1));
	cr_assert(produce(&f, 16, 2));
	cr_assert_eq(perfrec_ring__begin(&f.r, &b), 64);
	cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
	cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
	cr_assert_eq(f.meta->data_tail, 0);
	/* An uncommitted pass is read again from the same tail. */
	cr_assert_eq(perfrec_ring__begin(&f.r, &b), 64);
	cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
	cr_assert_eq(rec->misc, 1);
	perfrec_ring__commit(&f.r, &b);
	/* Partial commit: only the record walked is released. */
	cr_assert_eq(f.meta->data_tail, 48);
	cr_assert_eq(perfrec_ring__begin(&f.r, &b), 16);
	cr_assert_eq(perfrec_ring__next(&f.r, &b, &rec), 1);
	cr_assert_eq(rec->misc, 2);
	fake_exit(&f);
}

/* xorshift64: a fixed-seed generator so failures reproduce. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Property: whatever the interleaving of producer and consumer, and whether
 * the consumer reads record by record or as byte segments, it gets exactly
 * the produced byte stream, record boundaries intact.
 */
Test(ring, interleaved_passes_deliver_exactly_the_produced_stream)
{
	static const uint64_t starts[] = { 0, (uint64_t)0 - 4096 };

	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		struct fake f;
		uint64_t seed = 0x9e3779b97f4a7c15ULL + s;
		unsigned char *got = malloc(8 << 20);
		size_t got_len = 0;
		uint32_t seq = 0, want_seq = 0;
		uint16_t pending = 0;

		cr_assert_not_null(got);
		fake_init(&f, 512, starts[s]);
		for (int pass = 0; pass < 4000; pass++) {
			struct perfrec_ring_batch b;
			const struct perf_event_header *rec;
			struct iovec iov[2];
			int64_t avail;
			int n = (int)(rnd(&seed) % 6);

			for (int i = 0; i < n; i++) {
				if (!pending)
					pending = (uint16_t)(8 * (1 + rnd(&seed) % 40));
				if (!produce(&f, pending, seq))
					break;
				seq++;
				pending = 0;
			}
			avail = perfrec_ring__begin(&f.r, &b);
			cr_assert_geq(avail, 0);
			if (rnd(&seed) & 1) {
				int ret;

				while ((ret = perfrec_ring__next(&f.r, &b, &rec)) == 1) {
					cr_assert_eq(rec->misc, (uint16_t)want_seq);
					memcpy(got + got_len, rec, rec->size);
					got_len += rec->size;
					want_seq++;
					/* Stop early sometimes: the rest waits for the next pass. */
					if (!(rnd(&seed) % 7))
						break;
				}
				cr_assert_geq(ret, 0);
			} else {
				int segs, walked = perfrec_ring__walk_all(&f.r, &b);

				cr_assert_geq(walked, 0);
				want_seq += (uint32_t)walked;
				segs = perfrec_ring__iov(&f.r, &b, iov);
				got_len += flatten(iov, segs, got + got_len);
			}
			perfrec_ring__commit(&f.r, &b);
			cr_assert_leq(f.meta->data_head - f.meta->data_tail, f.size);
			cr_assert_lt(got_len, (size_t)(8 << 20) - 4096);
		}
		cr_assert_gt(seq, 1000, "too few records produced to mean anything");
		cr_assert_eq(f.r.corrupt, 0);
		/* Drain what is left, then compare the whole stream. */
		{
			struct perfrec_ring_batch b;
			struct iovec iov[2];

			perfrec_ring__begin(&f.r, &b);
			perfrec_ring__walk_all(&f.r, &b);
			got_len += flatten(iov, perfrec_ring__iov(&f.r, &b, iov), got + got_len);
			perfrec_ring__commit(&f.r, &b);
		}
		cr_assert_eq(got_len, f.stream_len);
		cr_assert_eq(memcmp(got, f.stream, got_len), 0);
		free(got);
		fake_exit(&f);
	}
}
