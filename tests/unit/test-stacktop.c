// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/stacktop.c, the drain's record of how high each
 * thread's stack needs copying: how much of a copy is kept (a table), a
 * top learnt in a round begun before the thread was forgotten is not
 * taken, a later one is, tops only rise, and a thread that loses its slot
 * to another is copied whole again.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "stacktop.h"

static const struct {
	uint64_t top, sp, len, keep;
} keeps[] = {
	{ 0, 0x7000, 8192, 0 },                      /* top not known */
	{ 0x7000, 0x7000, 8192, 0 },                 /* not above the stack pointer */
	{ 0x6000, 0x7000, 8192, 0 },                 /* below it: another stack */
	{ 0x7000 + 9000, 0x7000, 8192, 0 },          /* past the copy: the copy is short already */
	{ 0x7000 + 8192, 0x7000, 8192, 0 },          /* the whole copy wanted */
	{ 0x7000 + 100, 0x7000, 8192, 104 + STACKTOP_SLACK },  /* rounded up to 8, the slack above */
	{ 0x7000 + 104, 0x7000, 8192, 104 + STACKTOP_SLACK },
	{ 0x7000 + 8000, 0x7000, 8192, 8000 + STACKTOP_SLACK },
	{ 0x7000 + 8130, 0x7000, 8192, 0 },          /* the slack reaches the end: all kept */
	{ 0x7000 + 1000, 0x7000, 1000, 0 },          /* a copy no longer than needed */
	{ 0x7000 + 1000, 0x7000, 1200, 1000 + STACKTOP_SLACK },
};

Test(stacktop, keeps_what_the_table_says)
{
	for (size_t i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
		uint64_t k = stacktops_keep(keeps[i].top, keeps[i].sp, keeps[i].len);

		cr_expect_eq(k, keeps[i].keep, "case %zu: keep %lu, want %lu", i, (unsigned long)k,
			     (unsigned long)keeps[i].keep);
		cr_expect(k % 8 == 0 && (k == 0 || k < keeps[i].len), "case %zu", i);
	}
}

Test(stacktop, a_top_learnt_before_the_thread_was_renewed_is_not_taken)
{
	struct stacktops *t = calloc(1, sizeof(*t));
	uint64_t round;

	cr_assert_not_null(t);
	round = stacktops_seq(t);
	stacktops_learn(t, 100, 0x7ffe0000, round);
	cr_expect_eq(stacktops_top(t, 100), 0x7ffe0000);
	/* The round began, then the thread exited; its top comes after. */
	round = stacktops_seq(t);
	stacktops_forget(t, 100);
	cr_expect_eq(stacktops_top(t, 100), 0, "forgetting left the top");
	stacktops_learn(t, 100, 0x7ffd0000, round);
	cr_expect_eq(stacktops_top(t, 100), 0, "the old thread's top taken for the new one");
	/* A round begun after: taken. */
	stacktops_learn(t, 100, 0x7ffc0000, stacktops_seq(t));
	cr_expect_eq(stacktops_top(t, 100), 0x7ffc0000);
	free(t);
}

Test(stacktop, tops_only_rise_and_a_slot_lost_is_copied_whole)
{
	struct stacktops *t = calloc(1, sizeof(*t));
	uint32_t other = 0;

	cr_assert_not_null(t);
	stacktops_learn(t, 7, 0x5000, 0);
	stacktops_learn(t, 7, 0x4000, 0);
	cr_expect_eq(stacktops_top(t, 7), 0x5000, "a lower top taken");
	stacktops_learn(t, 7, 0x6000, 0);
	cr_expect_eq(stacktops_top(t, 7), 0x6000, "a higher top not taken");
	stacktops_learn(t, 7, 0, 0);
	cr_expect_eq(stacktops_top(t, 7), 0x6000, "learning nothing changed the top");
	/* Another tid in the same slot takes it: 7 is not known then, never another's top. */
	for (uint32_t tid = 8; !other; tid++) {
		stacktops_learn(t, tid, 0x9000, 0);
		if (stacktops_top(t, 7) != 0x6000)
			other = tid;
		cr_assert_lt(tid, 1u << 24);
	}
	cr_expect_eq(stacktops_top(t, 7), 0, "tid 7 given tid %u's top", other);
	cr_expect_eq(stacktops_top(t, other), 0x9000);
	/* Forgetting a thread moves the sequence on; learning does not. */
	cr_expect_eq(stacktops_seq(t), 0);
	stacktops_forget(t, 7);
	cr_expect_eq(stacktops_seq(t), 1);
	free(t);
}
