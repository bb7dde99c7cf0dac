// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the daemon's kernel-map cache (daemon/kcache.c): what it
 * replays into a file must be byte for byte what perfrec_synth__kernel
 * would have written for that file at that moment, with the file's own
 * start time in every record's sample_id trailer; a different sample_type
 * or id is synthesized afresh.  Runs against the real /proc/kallsyms.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>
#include <perfrec/synth.h>

#include "kcache.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

struct bytes {
	unsigned char *p;
	size_t len;
	size_t nr;
};

static int collect(void *ctx, const struct perf_event_header *h)
{
	struct bytes *b = ctx;

	b->p = realloc(b->p, b->len + h->size);
	cr_assert_not_null(b->p);
	memcpy(b->p + b->len, h, h->size);
	b->len += h->size;
	b->nr++;
	return 0;
}

static int fail_emit(void *ctx, const struct perf_event_header *h)
{
	(void)ctx;
	(void)h;
	return -ENOSPC;
}

static struct perfrec_synth_opts opts(uint64_t st, uint64_t id, uint64_t time)
{
	struct perfrec_synth_opts so = { .sz = sizeof(so), .sample_type = st, .id = id,
					 .time = time, .build_ids = true };
	return so;
}

static void fresh(const struct perfrec_synth_opts *so, struct bytes *b, int *ret)
{
	*ret = perfrec_synth__kernel(so, collect, b);
	if (*ret == -EPERM || b->nr == 0)
		cr_skip_test("kernel maps cannot be synthesized here (kptr_restrict or no kallsyms)");
}

Test(kcache, replay_equals_fresh_synthesis_with_the_files_time)
{
	struct perfrec_synth_opts fill = opts(ST, 7, 1000), later = opts(ST, 7, 987654321);
	struct bytes want = { 0 }, got = { 0 };
	struct perfrec_sample_id sid;
	int rf, rc;

	kcache_clear();
	kcache_fill(&fill);
	fresh(&later, &want, &rf);
	rc = kcache_emit(&later, collect, &got);
	cr_assert_eq(rc, rf);
	cr_assert_eq(got.nr, want.nr);
	cr_assert_eq(got.len, want.len);
	cr_assert(memcmp(got.p, want.p, want.len) == 0, "replayed records differ from fresh ones");
	/* And the time really is the later file's, not the fill's. */
	cr_assert_eq(perfrec_sample_id__parse((const void *)got.p, ST, &sid), 0);
	cr_assert_eq(sid.time, 987654321);
	cr_assert_eq(sid.id, 7);
	free(want.p);
	free(got.p);
	kcache_clear();
}

Test(kcache, other_sample_layout_is_synthesized_afresh)
{
	uint64_t st2 = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
	struct perfrec_synth_opts fill = opts(ST, 7, 1000), other = opts(st2, 9, 5555);
	struct bytes want = { 0 }, got = { 0 };
	int rf;

	kcache_clear();
	kcache_fill(&fill);
	fresh(&other, &want, &rf);
	cr_assert_eq(kcache_emit(&other, collect, &got), rf);
	cr_assert_eq(got.len, want.len);
	cr_assert(memcmp(got.p, want.p, want.len) == 0);
	free(want.p);
	free(got.p);
	kcache_clear();
}

Test(kcache, emit_error_is_returned)
{
	struct perfrec_synth_opts so = opts(ST, 7, 1000);
	struct bytes probe = { 0 };
	int r;

	fresh(&so, &probe, &r);
	free(probe.p);
	kcache_clear();
	kcache_fill(&so);
	cr_assert_eq(kcache_emit(&so, fail_emit, NULL), -ENOSPC);
	kcache_clear();
}

Test(kcache, empty_cache_synthesizes_directly)
{
	struct perfrec_synth_opts so = opts(ST, 3, 42);
	struct bytes want = { 0 }, got = { 0 };
	int rf;

	kcache_clear();
	fresh(&so, &want, &rf);
	cr_assert_eq(kcache_emit(&so, collect, &got), rf);
	cr_assert_eq(got.len, want.len);
	cr_assert(memcmp(got.p, want.p, want.len) == 0);
	free(want.p);
	free(got.p);
}

Test(kcache, filling_again_or_for_another_id_replays_what_fresh_synthesis_gives)
{
	struct perfrec_synth_opts so = opts(ST, 7, 1000), other = opts(ST, 8, 1000);
	struct bytes a = { 0 }, b = { 0 }, want = { 0 };
	int rf;

	kcache_clear();
	fresh(&other, &want, &rf);
	kcache_fill(&so);
	cr_assert_eq(kcache_emit(&so, collect, &a), rf);
	kcache_fill(&so); /* a resume fills again (a no-op while modules are unchanged) */
	cr_assert_eq(kcache_emit(&so, collect, &b), rf);
	cr_assert_eq(a.len, b.len);
	cr_assert(memcmp(a.p, b.p, a.len) == 0);
	/* Another id: its records carry the new id. */
	kcache_fill(&other);
	free(b.p);
	b = (struct bytes){ 0 };
	cr_assert_eq(kcache_emit(&other, collect, &b), rf);
	cr_assert_eq(b.len, want.len);
	cr_assert(memcmp(b.p, want.p, want.len) == 0);
	free(a.p);
	free(b.p);
	free(want.p);
	kcache_clear();
}
