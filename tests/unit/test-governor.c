// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the overhead governor's pure decision (daemon/governor.c):
 * given the budget, one period's measured costs and the current frequency,
 * the next frequency -- lowered in proportion when over budget, raised back
 * only when well under it (hysteresis), always within the floor and the
 * configured ceiling.
 */
#include <criterion/criterion.h>

#include "governor.h"

/* 2 CPUs at max-overhead=1%: 0.02 CPU-seconds per second. */
static const struct governor_policy pol = { .budget = 0.02, .max_freq = 4000, .min_freq = GOVERNOR_MIN_FREQ };

static struct governor_measure meas(double own, uint64_t samples, double cost_us)
{
	struct governor_measure m = {
		.wall_sec = 1.0, .own_cpu_sec = own, .samples = samples, .sample_cost_sec = cost_us * 1e-6,
	};
	return m;
}

Test(governor, overhead_is_own_cpu_plus_samples_times_cost_per_second)
{
	struct governor_measure m = meas(0.01, 1000, 10);

	m.wall_sec = 2.0;
	cr_expect_float_eq(governor_overhead(&m), (0.01 + 1000 * 10e-6) / 2.0, 1e-12);
	m.wall_sec = 0;
	cr_expect_float_eq(governor_overhead(&m), 0.0, 1e-12, "an empty period measures nothing");
}

struct decide_case {
	const char *what;
	double own;
	uint64_t samples;
	double cost_us;
	uint64_t cur;
	enum governor_why why;
	uint64_t lo, hi; /* expected frequency within [lo, hi] */
};

Test(governor, decides_by_the_budget_table)
{
	static const struct decide_case cases[] = {
		/* 8000 samples * 10 us = 0.08 + 0.01 own = 0.09: 4.5x over, target 0.8 -> 4000 * 0.016/0.09 = 711 */
		{ "far over budget: lowered in proportion", 0.01, 8000, 10, 4000, GOVERNOR_LOWER, 711, 711 },
		/* 0.021: just over -> 4000 * 0.016/0.021 = 3047 */
		{ "just over budget: lowered a little", 0.001, 2000, 10, 4000, GOVERNOR_LOWER, 3047, 3047 },
		/* 0.015: between half and the whole budget -> kept (hysteresis band) */
		{ "inside the band: kept", 0.005, 1000, 10, 1000, GOVERNOR_KEEP, 1000, 1000 },
		/* exactly the budget is not over it */
		{ "at the budget: kept", 0.0, 2000, 10, 1000, GOVERNOR_KEEP, 1000, 1000 },
		/* 0.006: under half -> raised towards 0.8 of it: 100 * 0.016/0.006 = 267, capped at 2x = 200 */
		{ "well under: raised at most twofold", 0.001, 500, 10, 100, GOVERNOR_RAISE, 200, 200 },
		/* 0.009: under half -> 1000 * 0.016/0.009 = 1778 (< 2x) */
		{ "under half: raised in proportion", 0.004, 500, 10, 1000, GOVERNOR_RAISE, 1777, 1779 },
		/* idle: nothing measured -> doubled, but never above the ceiling */
		{ "idle near the ceiling: capped at the configured frequency", 0.0, 0, 10, 3000, GOVERNOR_RAISE, 4000, 4000 },
		{ "at the ceiling and idle: kept", 0.0, 0, 10, 4000, GOVERNOR_KEEP, 4000, 4000 },
		/* 400x over: 4000 * 0.016/8 = 8 Hz is below the floor: the floor, not less */
		{ "hopelessly over: floor", 8.0, 0, 10, 4000, GOVERNOR_LOWER, GOVERNOR_MIN_FREQ, GOVERNOR_MIN_FREQ },
		{ "at the floor and still over: kept", 0.5, 0, 10, GOVERNOR_MIN_FREQ, GOVERNOR_KEEP,
		  GOVERNOR_MIN_FREQ, GOVERNOR_MIN_FREQ },
		/* a frequency above the ceiling (set from outside) comes back under it */
		{ "above the ceiling: back to it", 0.009, 0, 10, 8000, GOVERNOR_LOWER, 4000, 4000 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct decide_case *c = &cases[i];
		struct governor_measure m = meas(c->own, c->samples, c->cost_us);
		enum governor_why why = (enum governor_why)-1;
		uint64_t f = governor_decide(&pol, &m, c->cur, &why);

		cr_expect(f >= c->lo && f <= c->hi, "%s: %lu Hz, expected %lu..%lu", c->what,
			  (unsigned long)f, (unsigned long)c->lo, (unsigned long)c->hi);
		cr_expect_eq(why, c->why, "%s: why %d, expected %d", c->what, why, c->why);
	}
}

/*
 * A workload whose cost is linear in the frequency (samples = f per CPU on
 * 2 busy CPUs, own CPU 1 us per sample): starting far over, the governor
 * reaches the budget and then stays put -- no flapping between two values.
 */
Test(governor, settles_without_flapping_on_a_steady_load)
{
	struct governor_policy p = { .budget = 0.01, .max_freq = 20000, .min_freq = GOVERNOR_MIN_FREQ };
	uint64_t f = 20000, seen[20];
	int changes_late = 0;

	for (int step = 0; step < 20; step++) {
		struct governor_measure m = meas((double)(2 * f) * 1e-6, 2 * f, 40);
		enum governor_why why;

		seen[step] = f;
		f = governor_decide(&p, &m, f, &why);
		if (step >= 3 && why != GOVERNOR_KEEP)
			changes_late++;
	}
	cr_expect_lt(seen[1], 20000, "the first step lowers");
	cr_expect_eq(changes_late, 0, "settled after three steps, then kept (saw %lu %lu %lu %lu)",
		     (unsigned long)seen[1], (unsigned long)seen[2], (unsigned long)seen[3], (unsigned long)seen[4]);
	{
		struct governor_measure m = meas((double)(2 * f) * 1e-6, 2 * f, 40);

		cr_expect_leq(governor_overhead(&m), p.budget, "settled inside the budget");
		cr_expect_geq(governor_overhead(&m), GOVERNOR_RAISE_BELOW * p.budget,
			      "and not needlessly far below it");
	}
}

/* When the load goes away the frequency climbs back to the ceiling, and no further. */
Test(governor, rises_back_to_the_ceiling_when_the_load_goes)
{
	struct governor_policy p = { .budget = 0.01, .max_freq = 5000, .min_freq = GOVERNOR_MIN_FREQ };
	uint64_t f = 20;
	int steps = 0;

	while (f < p.max_freq && steps < 50) {
		/* idle CPUs: only a trickle of busy samples */
		struct governor_measure m = meas(0.0001, f / 100, 40);
		uint64_t next = governor_decide(&p, &m, f, NULL);

		cr_assert_gt(next, f, "step %d: %lu Hz did not rise", steps, (unsigned long)f);
		cr_assert_leq(next, 2 * f, "at most twofold per step");
		f = next;
		steps++;
	}
	cr_expect_eq(f, p.max_freq);
	cr_expect_eq(governor_decide(&p, &(struct governor_measure){ .wall_sec = 1 }, f, NULL), p.max_freq);
}

Test(governor, a_ceiling_below_the_floor_is_honoured)
{
	struct governor_policy p = { .budget = 0.01, .max_freq = 5, .min_freq = GOVERNOR_MIN_FREQ };
	struct governor_measure m = meas(1.0, 0, 10);

	cr_expect_eq(governor_decide(&p, &m, 5, NULL), 5, "never above what was configured");
}
