// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/array.c: how much room array_reserve() makes (a table
 * of capacities before and after), that what was in the array stays, and
 * that a size that would overflow fails without touching the array.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "array.h"

static const struct {
	size_t cap, need, min, want;
} cases[] = {
	{ 0, 0, 8, 0 },      /* nothing needed: nothing allocated */
	{ 0, 1, 8, 8 },      /* first room: the minimum */
	{ 0, 20, 8, 20 },    /* more than the minimum at once */
	{ 8, 8, 8, 8 },      /* fits: unchanged */
	{ 8, 9, 8, 16 },     /* full: doubled */
	{ 8, 100, 8, 100 },  /* more than double: what is needed */
	{ 16, 17, 64, 64 },  /* the minimum still counts */
};

Test(array, reserves_the_room_of_the_table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int *a = cases[i].cap ? calloc(cases[i].cap, sizeof(*a)) : NULL;
		size_t cap = cases[i].cap;

		cr_assert_eq(ARRAY_RESERVE(a, cap, cases[i].need, cases[i].min), 0, "case %zu", i);
		cr_expect_eq(cap, cases[i].want, "case %zu: cap %zu, want %zu", i, cap, cases[i].want);
		for (size_t j = 0; j < cap; j++)
			a[j] = 1; /* ASan and valgrind see a short allocation here */
		free(a);
	}
}

Test(array, keeps_what_was_there)
{
	uint64_t *a = NULL;
	size_t cap = 0, nr = 0;

	for (uint64_t v = 0; v < 10000; v++) {
		cr_assert_eq(ARRAY_RESERVE(a, cap, nr + 1, 16), 0);
		a[nr++] = v * 3;
	}
	cr_expect_geq(cap, nr);
	for (size_t i = 0; i < nr; i++)
		cr_assert_eq(a[i], i * 3, "element %zu changed", i);
	free(a);
}

Test(array, an_overflowing_size_fails_and_leaves_the_array)
{
	uint64_t *a = calloc(4, sizeof(*a));
	uint64_t *before = a;
	size_t cap = 4;

	cr_assert_not_null(a);
	a[3] = 42;
	cr_expect_eq(ARRAY_RESERVE(a, cap, SIZE_MAX / 4, 4), -ENOMEM);
	cr_expect_eq(a, before);
	cr_expect_eq(cap, 4);
	cr_expect_eq(a[3], 42);
	free(a);
}
