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

/*
 * DWARF callchains: after the callchain, REGS_USER (abi, one u64 per bit
 * of sample_regs_user) and STACK_USER (size, the bytes, dyn_size), then
 * the cgroup.  @stack_size bytes of stack, @dyn of them filled; abi 0 (a
 * kernel thread) has no registers.
 */
static struct perf_event_header *build_dwarf(struct builder *b, struct perf_event_attr *a,
					     uint64_t abi, uint64_t stack_size, uint64_t dyn)
{
	struct perf_event_header *h = (struct perf_event_header *)b->buf;

	memset(a, 0, sizeof(*a));
	a->sample_type = BASE | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
			 PERF_SAMPLE_CGROUP;
	a->sample_regs_user = 0x7; /* three registers */
	a->sample_stack_user = (uint32_t)stack_size;
	build(b, BASE | PERF_SAMPLE_CALLCHAIN);
	put(b, abi);
	if (abi)
		for (uint64_t r = 0; r < 3; r++)
			put(b, 0x1000 + r);
	put(b, stack_size);
	for (uint64_t i = 0; i < stack_size / 8; i++)
		put(b, 0x5100 + i);
	if (stack_size)
		put(b, dyn);
	put(b, CGID);
	h->size = (uint16_t)b->len;
	return h;
}

Test(event, registers_and_the_stack_copy_are_decoded_with_the_attr)
{
	static const struct { uint64_t abi, size, dyn; } cases[] = {
		{ PERF_SAMPLE_REGS_ABI_64, 64, 40 },
		{ PERF_SAMPLE_REGS_ABI_64, 64, 64 },
		{ PERF_SAMPLE_REGS_ABI_NONE, 0, 0 },  /* kernel thread: neither */
		{ PERF_SAMPLE_REGS_ABI_64, 0, 0 },    /* no room left for a stack */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct perf_event_attr a;
		struct builder b;
		struct perf_event_header *h = build_dwarf(&b, &a, cases[i].abi, cases[i].size, cases[i].dyn);
		struct perfrec_sample s;

		cr_assert_eq(perfrec_sample__parse_attr(h, &a, &s), 0, "case %zu", i);
		cr_expect_eq(s.nr_callchain, 3, "case %zu", i);
		cr_expect_eq(s.regs_abi, cases[i].abi, "case %zu", i);
		cr_expect_eq(s.nr_regs, cases[i].abi ? 3 : 0, "case %zu", i);
		if (cases[i].abi) {
			cr_assert_not_null(s.regs);
			cr_expect_eq(s.regs[0], 0x1000);
			cr_expect_eq(s.regs[2], 0x1002);
		}
		cr_expect_eq(s.stack_size, cases[i].size, "case %zu", i);
		cr_expect_eq(s.stack_dyn_size, cases[i].dyn, "case %zu", i);
		if (cases[i].size) {
			uint64_t first;

			memcpy(&first, s.stack, 8);
			cr_expect_eq(first, 0x5100, "case %zu", i);
		}
		cr_expect_eq(s.cgroup, CGID, "case %zu: the cgroup after the stack", i);
		/* Without the attr's masks the parser stops before the registers. */
		cr_assert_eq(perfrec_sample__parse(h, a.sample_type, 0, &s), 0);
		cr_expect_eq(s.cgroup, 0, "case %zu: a cgroup guessed without the masks", i);
		cr_expect_eq(s.stack_size, 0);
	}
}

Test(event, a_stack_copy_that_does_not_add_up_does_not_parse)
{
	struct perf_event_attr a;
	struct builder b;
	struct perf_event_header *h;
	struct perfrec_sample s;

	/* dyn_size larger than the copy. */
	h = build_dwarf(&b, &a, PERF_SAMPLE_REGS_ABI_64, 32, 40);
	cr_expect_eq(perfrec_sample__parse_attr(h, &a, &s), -EINVAL);
	/* A size running past the record's end. */
	h = build_dwarf(&b, &a, PERF_SAMPLE_REGS_ABI_64, 32, 8);
	memcpy((char *)b.buf + h->size - 8 - 8 - 32 - 8, &(uint64_t){ 4096 }, 8);
	cr_expect_eq(perfrec_sample__parse_attr(h, &a, &s), -EINVAL);
	/* Cut inside the registers. */
	h = build_dwarf(&b, &a, PERF_SAMPLE_REGS_ABI_64, 0, 0);
	h->size = (uint16_t)(sizeof(*h) + 6 * 8 + 4 * 8 + 8 + 16);
	cr_expect_eq(perfrec_sample__parse_attr(h, &a, &s), -EINVAL);
}
