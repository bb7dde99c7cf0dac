// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The drain reads samples at offsets worked out once per layout
 * (internal/sample-layout.h) instead of parsing each one.  That is only right
 * if it sees exactly what perfrec_sample__parse() sees, on every record:
 * here random layouts (every sample_type bit and read_format the library
 * knows) and random records, whole, cut short, with a callchain's nr or a
 * RAW size that lies, are read both ways and must agree, and the
 * end-of-user-chain repair must give the same bytes as the parse-based
 * one it replaced (ref_end_user_chain() below).
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>

#include "sample-layout.h"

#define TRIALS 200000

static const uint64_t st_bits[] = {
	PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP,           PERF_SAMPLE_TID,         PERF_SAMPLE_TIME,
	PERF_SAMPLE_ADDR,       PERF_SAMPLE_ID,           PERF_SAMPLE_STREAM_ID,   PERF_SAMPLE_CPU,
	PERF_SAMPLE_PERIOD,     PERF_SAMPLE_READ,         PERF_SAMPLE_CALLCHAIN,   PERF_SAMPLE_RAW,
	PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_REGS_USER,  PERF_SAMPLE_STACK_USER,  PERF_SAMPLE_WEIGHT,
	PERF_SAMPLE_DATA_SRC,   PERF_SAMPLE_TRANSACTION,  PERF_SAMPLE_REGS_INTR,   PERF_SAMPLE_PHYS_ADDR,
	PERF_SAMPLE_CGROUP,     PERF_SAMPLE_WEIGHT_STRUCT, PERF_SAMPLE_DATA_PAGE_SIZE,
	PERF_SAMPLE_CODE_PAGE_SIZE,
};
static const uint64_t rf_bits[] = {
	PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING, PERF_FORMAT_ID, PERF_FORMAT_GROUP,
	PERF_FORMAT_LOST,
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* xorshift64*: the same records on every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

struct rec {
	uint64_t buf[2048];
	size_t len; /* bytes */
};

static void put(struct rec *r, uint64_t v)
{
	memcpy((char *)r->buf + r->len, &v, 8);
	r->len += 8;
}

/* A callchain entry: addresses, context markers, values in their range. */
static uint64_t chain_entry(void)
{
	switch (rnd_below(8)) {
	case 0:
		return (uint64_t)PERF_CONTEXT_USER;
	case 1:
		return (uint64_t)PERF_CONTEXT_KERNEL;
	case 2:
		return (uint64_t)PERF_CONTEXT_MAX + rnd_below(4096);
	case 3:
		return (uint64_t)PERF_CONTEXT_MAX - 1 - rnd_below(2);
	default:
		return 0x400000 + rnd_below(1 << 20) * 8;
	}
}

static void put_read(struct rec *r, uint64_t rf)
{
	uint64_t per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);
	uint64_t nr = rnd_below(4);

	if (!(rf & PERF_FORMAT_GROUP)) {
		for (int i = 0; i < 1 + __builtin_popcountll(rf); i++)
			put(r, rnd());
		return;
	}
	put(r, nr);
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		put(r, rnd());
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		put(r, rnd());
	for (uint64_t i = 0; i < nr * per; i++)
		put(r, rnd());
}

static void put_raw(struct rec *r)
{
	uint32_t size = (uint32_t)(4 + 8 * rnd_below(6)); /* u32 size + data: u64-aligned */

	memcpy((char *)r->buf + r->len, &size, 4);
	for (uint32_t i = 4; i < 4 + size; i++)
		((unsigned char *)r->buf)[r->len + i] = (unsigned char)rnd();
	r->len += 4 + size;
}

/* A sample laid out for @st/@rf, then maybe cut short or lying about a size. */
static struct perf_event_header *build(struct rec *r, uint64_t st, uint64_t rf)
{
	struct perf_event_header *h = (struct perf_event_header *)r->buf;
	size_t chain_nr_at = 0;

	memset(r, 0, sizeof(*r));
	r->len = sizeof(*h);
	for (size_t i = 0; i < 9; i++) /* IDENTIFIER .. PERIOD */
		if (st & st_bits[i])
			put(r, rnd());
	if (st & PERF_SAMPLE_READ)
		put_read(r, rf);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = rnd_below(48);

		chain_nr_at = r->len;
		put(r, nr);
		for (uint64_t i = 0; i < nr; i++)
			put(r, rnd_below(3) ? chain_entry() : (uint64_t)PERF_CONTEXT_USER);
	}
	if (st & PERF_SAMPLE_RAW)
		put_raw(r);
	/* The tail: fixed fields, or whatever follows a variable one. */
	for (uint64_t i = rnd_below(8); i > 0; i--)
		put(r, rnd());
	switch (rnd_below(6)) {
	case 0: /* cut short */
		r->len = sizeof(*h) + rnd_below(r->len - sizeof(*h) + 1);
		break;
	case 1: /* a callchain nr past the end */
		if (chain_nr_at) {
			uint64_t nr = rnd_below(2) ? rnd() : rnd_below(64);

			memcpy((char *)r->buf + chain_nr_at, &nr, 8);
		}
		break;
	default:
		break;
	}
	h->type = PERF_RECORD_SAMPLE;
	h->misc = (uint16_t)rnd();
	h->size = (uint16_t)r->len;
	return h;
}

/* perfrec_sample__end_user_chain() as it was, over perfrec_sample__parse(). */
static size_t ref_end_user_chain(const struct perf_event_header *h, uint64_t st, uint64_t rf, void *buf,
				 size_t bufsz)
{
	const unsigned char *p = (const unsigned char *)h;
	struct perfrec_sample s;
	size_t nr_off, chain_end, cut, size;
	uint64_t end = 0;
	bool in_user = false;

	if (h->type != PERF_RECORD_SAMPLE || !(st & PERF_SAMPLE_CALLCHAIN) ||
	    perfrec_sample__parse(h, st, rf, &s) < 0 || !s.callchain)
		return 0;
	for (uint64_t i = 0; i < s.nr_callchain; i++) {
		uint64_t v;

		memcpy(&v, s.callchain + i, sizeof(v));
		if (in_user && v >= (uint64_t)PERF_CONTEXT_MAX) {
			end = i;
			break;
		}
		if (v == (uint64_t)PERF_CONTEXT_USER)
			in_user = true;
	}
	if (!end)
		return 0;
	nr_off = (size_t)((const unsigned char *)s.callchain - p) - 8;
	chain_end = nr_off + 8 + (size_t)s.nr_callchain * 8;
	cut = (size_t)(s.nr_callchain - end) * 8;
	size = h->size - cut;
	if (size > bufsz)
		return 0;
	memcpy(buf, p, nr_off);
	memcpy((unsigned char *)buf + nr_off, &end, 8);
	memcpy((unsigned char *)buf + nr_off + 8, s.callchain, (size_t)end * 8);
	memcpy((unsigned char *)buf + chain_end - cut, p + chain_end, h->size - chain_end);
	((struct perf_event_header *)buf)->size = (uint16_t)size;
	return size;
}

static uint64_t random_bits(const uint64_t *bits, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		if (rnd_below(2))
			v |= bits[i];
	return v;
}

/* The chain and the fields the drain reads in place, against the parse. */
static void check_fields(const struct sample_layout *l, const struct perf_event_header *h, uint64_t st,
			 uint64_t rf, size_t trial)
{
	struct perfrec_sample s;
	const uint64_t *chain = NULL;
	uint64_t nr = 0, v = 0;
	int pr = perfrec_sample__parse(h, st, rf, &s);
	int lr = sample_layout_chain(l, h, &chain, &nr);

	if (!(st & PERF_SAMPLE_CALLCHAIN)) {
		cr_assert_eq(lr, -ENOENT, "trial %zu", trial);
	} else {
		cr_assert_eq(lr == 0, pr == 0, "trial %zu st %#llx rf %#llx size %u: layout %d, parse %d", trial,
			     (unsigned long long)st, (unsigned long long)rf, h->size, lr, pr);
		if (pr == 0) {
			cr_assert_eq(chain, s.callchain, "trial %zu", trial);
			cr_assert_eq(nr, s.nr_callchain, "trial %zu", trial);
		}
	}
	if (pr < 0)
		return;
	if (st & PERF_SAMPLE_TID) {
		memcpy(&v, (const char *)h + l->pid_off, 4);
		cr_assert_eq((uint32_t)v, s.pid, "trial %zu", trial);
	} else {
		cr_assert_eq(l->pid_off, 0);
	}
	if (st & PERF_SAMPLE_TIME) {
		memcpy(&v, (const char *)h + l->time_off, 8);
		cr_assert_eq(v, s.time, "trial %zu", trial);
	} else {
		cr_assert_eq(l->time_off, 0);
	}
}

Test(event_layout, offsets_agree_with_the_parse_for_random_layouts_and_records)
{
	static struct rec r;
	static uint64_t want[2048], got[2048], got2[2048];

	for (size_t t = 0; t < TRIALS; t++) {
		uint64_t st = random_bits(st_bits, sizeof(st_bits) / sizeof(st_bits[0]));
		uint64_t rf = random_bits(rf_bits, sizeof(rf_bits) / sizeof(rf_bits[0]));
		struct sample_layout l;
		struct perf_event_header *h;
		size_t bufsz = rnd_below(8) ? sizeof(want) : rnd_below(512);
		size_t nw, ng, ng2;

		/* Most trials: the layouts the daemon records, with a callchain. */
		if (rnd_below(2))
			st |= PERF_SAMPLE_CALLCHAIN;
		sample_layout_init(&l, st, rf);
		h = build(&r, st, rf);
		check_fields(&l, h, st, rf, t);
		memset(want, 0xa5, sizeof(want));
		memset(got, 0xa5, sizeof(got));
		memset(got2, 0xa5, sizeof(got2));
		nw = ref_end_user_chain(h, st, rf, want, bufsz);
		ng = sample_layout_end_user_chain(&l, h, got, bufsz);
		ng2 = perfrec_sample__end_user_chain(h, st, rf, got2, bufsz);
		cr_assert_eq(ng, nw, "trial %zu st %#llx rf %#llx: %zu bytes, want %zu", t,
			     (unsigned long long)st, (unsigned long long)rf, ng, nw);
		cr_assert_eq(ng2, nw, "trial %zu", t);
		cr_assert_eq(memcmp(got, want, sizeof(want)), 0, "trial %zu: other bytes", t);
		cr_assert_eq(memcmp(got2, want, sizeof(want)), 0, "trial %zu: other bytes", t);
	}
}

Test(event_layout, records_the_parse_refuses_are_left_alone)
{
	/* A chain that needs ending, in a record one CGROUP short of whole. */
	const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			    PERF_SAMPLE_CGROUP;
	static const uint64_t chain[] = { (uint64_t)PERF_CONTEXT_USER, 0x401000, ~0ULL };
	struct rec r = { .len = sizeof(struct perf_event_header) };
	struct perf_event_header *h = (struct perf_event_header *)r.buf;
	struct sample_layout l;
	uint64_t out[64];

	put(&r, 7);
	put(&r, 42);
	put(&r, 1000);
	put(&r, 3);
	for (size_t i = 0; i < 3; i++)
		put(&r, chain[i]);
	put(&r, 0x1234); /* cgroup */
	*h = (struct perf_event_header){ .type = PERF_RECORD_SAMPLE, .size = (uint16_t)r.len };
	sample_layout_init(&l, st, 0);
	cr_assert_eq(sample_layout_end_user_chain(&l, h, out, sizeof(out)), r.len - 8);
	h->size -= 8;
	cr_assert_eq(sample_layout_end_user_chain(&l, h, out, sizeof(out)), 0, "no room for the cgroup");
	cr_assert_eq(ref_end_user_chain(h, st, 0, out, sizeof(out)), 0);
}
