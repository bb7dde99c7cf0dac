// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for views/demangle.c: symbol names demangled as perf report
 * (Debian's perf 6.1, libiberty, no options) shows them, names that are
 * not mangled left alone, and the demangler's memo by address.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

Test(demangle, names_as_perf_report_shows_them)
{
	/* What `perf report --stdio --sort sym` printed for these symbols. */
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "_ZN5outer5inner3BoxImE4spinEmm.isra.0", "outer::inner::Box<unsigned long>::spin" },
		{ "_ZNK6shapes4GridImE5sweepEmm", "shapes::Grid<unsigned long>::sweep" },
		{ "_Z7apply_nIZ4mainEUlmE_EmT_mm.constprop.0", "apply_n<main::{lambda(unsigned long)#1}>" },
		{ "_ZN12_GLOBAL__N_110hidden_mixEmm.constprop.0", "(anonymous namespace)::hidden_mix" },
		{ "_ZN5names6engine16Mixer$LT$u64$GT$5churn17h12a03a80c9a5b15bE", "names::engine::Mixer<u64>::churn" },
		{ "_RNvMNtCs6GmmlP4bgsG_5names6engineINtB2_5MixeryE5churn", "<names::engine::Mixer<u64>>::churn" },
		{ "main", NULL },
		{ "__libc_start_call_main", NULL },
		{ "[unknown]", NULL },
		{ "", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = demangle_perf(cases[i].in);

		if (cases[i].out)
			cr_assert_str_eq(d ? d : "(null)", cases[i].out, "%s", cases[i].in);
		else
			cr_assert_null(d, "%s gave %s", cases[i].in, d);
		free(d);
	}
	cr_assert_null(demangle_perf(NULL));
}

Test(demangle, a_demangler_remembers_each_name_by_address)
{
	struct demangler *d = demangler__new();
	char names[600][32];
	const char *first[600];

	cr_assert(d);
	/* Enough names to grow its table a few times. */
	for (int i = 0; i < 600; i++) {
		snprintf(names[i], sizeof(names[i]), "_ZN2ns1fILi%dEEEvv", i);
		first[i] = demangler__name(d, names[i]);
		cr_assert_neq(first[i], names[i]);
	}
	for (int i = 0; i < 600; i++) {
		char want[32];

		snprintf(want, sizeof(want), "ns::f<%d>", i);
		cr_assert_str_eq(first[i], want);
		cr_assert_eq(demangler__name(d, names[i]), first[i], "the same name, the same string");
	}
	cr_assert_str_eq(demangler__name(d, "plain_c"), "plain_c");
	cr_assert_null(demangler__name(d, NULL));
	demangler__free(d);
	demangler__free(NULL);
}
