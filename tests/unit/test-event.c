// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of sample decoding where PERF_SAMPLE_CGROUP is involved: the cgroup
 * id sits after the callchain, raw data and the fixed-size fields up to
 * phys_addr (the kernel's perf_output_sample() order), and a sample cut
 * short of it does not parse.  Records are built here field by field in
 * that order.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>

#define BASE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	      PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define CGID 0x1234567890abcdefULL

struct builder {
	uint64_t buf[256];
	size_t len; /* bytes */
};

static void put(struct builder *b, uint64_t v)
{
	memcpy((char *)b->buf + b->len, &v, 8);
	b->len += 8;
}

/* A sample for @st with recognisable values, cgroup = CGID. */
static struct perf_event_header *build(struct builder *b, uint64_t st)
{
	struct perf_event_header *h = (struct perf_event_header *)b->buf;

	memset(b, 0, sizeof(*b));
	b->len = sizeof(*h);
	put(b, 77);                         /* identifier */
	put(b, 0xffffffff81000000ULL);      /* ip */
	put(b, ((uint64_t)43 << 32) | 42);  /* pid, tid */
	put(b, 1000);                       /* time */
	put(b, 1);                          /* cpu, res */
	put(b, 250000);                     /* period */
	if (st & PERF_SAMPLE_CALLCHAIN) {
		put(b, 3);
		put(b, 0x10);
		put(b, 0x20);
		put(b, 0x30);
	}
	if (st & PERF_SAMPLE_RAW) {
		/* u32 size 12, then 12 bytes: 16 bytes in all, 8-aligned */
		put(b, 12 | ((uint64_t)0xaaaaaaaa << 32));
		put(b, 0xbbbbbbbbbbbbbbbbULL);
	}
	if (st & PERF_SAMPLE_WEIGHT)
		put(b, 5);
	if (st & PERF_SAMPLE_DATA_SRC)
		put(b, 6);
	if (st & PERF_SAMPLE_TRANSACTION)
		put(b, 7);
	if (st & PERF_SAMPLE_PHYS_ADDR)
		put(b, 8);
	if (st & PERF_SAMPLE_CGROUP)
		put(b, CGID);
	if (st & PERF_SAMPLE_DATA_PAGE_SIZE)
		put(b, 4096);
	h->type = PERF_RECORD_SAMPLE;
	h->size = (uint16_t)b->len;
	return h;
}

Test(event, the_cgroup_id_is_decoded_after_the_fields_before_it)
{
	static const uint64_t types[] = {
		BASE | PERF_SAMPLE_CGROUP,
		BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP,
		BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_CGROUP,
		BASE | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_CGROUP,
		BASE | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP,
		BASE | PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE,
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct builder b;
		struct perf_event_header *h = build(&b, types[i]);
		struct perfrec_sample s;
		int r = perfrec_sample__parse(h, types[i], 0, &s);

		cr_assert_eq(r, 0, "case %zu: parse %d", i, r);
		cr_expect_eq(s.cgroup, CGID, "case %zu: cgroup %#llx", i, (unsigned long long)s.cgroup);
		cr_expect_eq(s.pid, 42);
		cr_expect_eq(s.period, 250000);
		if (types[i] & PERF_SAMPLE_CALLCHAIN)
			cr_expect_eq(s.nr_callchain, 3);
	}
}

Test(event, without_the_bit_the_cgroup_is_zero)
{
	struct builder b;
	struct perf_event_header *h = build(&b, BASE | PERF_SAMPLE_CALLCHAIN);
	struct perfrec_sample s;

	cr_assert_eq(perfrec_sample__parse(h, BASE | PERF_SAMPLE_CALLCHAIN, 0, &s), 0);
	cr_expect_eq(s.cgroup, 0);
}

Test(event, a_sample_cut_before_its_cgroup_does_not_parse)
{
	struct builder b;
	uint64_t st = BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP;
	struct perf_event_header *h = build(&b, st);
	struct perfrec_sample s;

	h->size -= 8;
	cr_expect_eq(perfrec_sample__parse(h, st, 0, &s), -EINVAL);
}

Test(event, a_variable_field_before_the_cgroup_leaves_it_unknown_not_wrong)
{
	/* Branch stacks need branch_sample_type to be walked: not guessed at. */
	struct builder b;
	uint64_t st = BASE | PERF_SAMPLE_CGROUP;
	struct perf_event_header *h = build(&b, st);
	struct perfrec_sample s;

	cr_assert_eq(perfrec_sample__parse(h, st | PERF_SAMPLE_BRANCH_STACK, 0, &s), 0);
	cr_expect_eq(s.cgroup, 0);
}

/* A sample (BASE | CALLCHAIN | CGROUP) with @nr callchain entries. */
static struct perf_event_header *build_chain(struct builder *b, const uint64_t *chain, size_t nr)
{
	struct perf_event_header *h = (struct perf_event_header *)b->buf;

	memset(b, 0, sizeof(*b));
	b->len = sizeof(*h);
	put(b, 77);
	put(b, 0x401000);
	put(b, ((uint64_t)43 << 32) | 42);
	put(b, 1000);
	put(b, 1);
	put(b, 250000);
	put(b, nr);
	for (size_t i = 0; i < nr; i++)
		put(b, chain[i]);
	put(b, CGID);
	h->type = PERF_RECORD_SAMPLE;
	h->size = (uint16_t)b->len;
	return h;
}

#define K ((uint64_t)PERF_CONTEXT_KERNEL)
#define U ((uint64_t)PERF_CONTEXT_USER)

Test(event, a_user_chain_ends_before_a_value_in_the_perf_context_range)
{
	static const struct {
		const char *what;
		uint64_t chain[8];
		size_t nr, want_nr; /* want_nr 0: left alone */
	} cases[] = {
		{ "clean chain", { K, 0xffffffff81000010ULL, U, 0x401000, 0x402000 }, 5, 0 },
		{ "-1 after user frames", { K, 0xffffffff81000010ULL, U, 0x401000, ~0ULL, 0x402000 }, 6, 4 },
		{ "first user value", { U, (uint64_t)-4095, 0x401000 }, 3, 1 },
		{ "-4096 is an address", { U, 0x401000, (uint64_t)-4096 }, 3, 0 },
		{ "kernel marker kept, user cut", { K, 0xffffffff81000010ULL, U, 0x401000, K }, 5, 4 },
		{ "no user part", { K, 0xffffffff81000010ULL, ~0ULL }, 3, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct builder b;
		struct perf_event_header *h = build_chain(&b, cases[i].chain, cases[i].nr);
		uint64_t out[256];
		struct perfrec_sample s;
		size_t n = perfrec_sample__end_user_chain(h, BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP, 0,
							 out, sizeof(out));

		if (!cases[i].want_nr) {
			cr_assert_eq(n, 0, "%s: changed", cases[i].what);
			continue;
		}
		cr_assert_eq(n, h->size - (cases[i].nr - cases[i].want_nr) * 8, "%s: size %zu", cases[i].what, n);
		cr_assert_eq(((struct perf_event_header *)out)->size, n);
		cr_assert_eq(perfrec_sample__parse((struct perf_event_header *)out,
						   BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP, 0, &s), 0);
		cr_assert_eq(s.nr_callchain, cases[i].want_nr, "%s", cases[i].what);
		cr_assert_eq(memcmp(s.callchain, cases[i].chain, cases[i].want_nr * 8), 0, "%s", cases[i].what);
		/* What follows the chain is moved along with it. */
		cr_assert_eq(s.cgroup, CGID, "%s", cases[i].what);
		cr_assert_eq(s.ip, 0x401000);
		cr_assert_eq(s.time, 1000);
	}
}

Test(event, a_chain_is_not_ended_without_room_or_callchains)
{
	static const uint64_t chain[] = { U, 0x401000, ~0ULL };
	struct builder b;
	struct perf_event_header *h = build_chain(&b, chain, 3);
	uint64_t out[256];

	cr_assert_eq(perfrec_sample__end_user_chain(h, BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP, 0, out, 16), 0);
	cr_assert_eq(perfrec_sample__end_user_chain(h, BASE, 0, out, sizeof(out)), 0, "no CALLCHAIN in sample_type");
	h->type = PERF_RECORD_MMAP2;
	cr_assert_eq(perfrec_sample__end_user_chain(h, BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP, 0, out,
						    sizeof(out)), 0);
}
