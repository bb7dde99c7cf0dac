// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unwinding's CPU per sample, before and after the unwind tables: the
 * DWARF samples of a recording (perf record --call-graph dwarf, or perfrecd
 * --call-graph dwarf) rewritten by perfrec_unwinder__rewrite(), as the
 * unwinding worker does, by three unwinders fed the same records:
 *
 *   libdwfl   tables off: libdwfl on every sample (the unwinder before)
 *   tables    tables on, an empty table directory: each file's table is
 *             built at its first sample (a first start)
 *   loaded    tables on, the directory the second left: loaded (a restart)
 *
 * Each sample's rewrite is timed in thread CPU time (the machine may be
 * busy), so the figures are CPU per sample, side-band records excluded.
 * The tables' output is compared with libdwfl's, byte for byte.
 *
 *   bench-unwind FILE.data
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/unwind.h>

#include "unwind-internal.h"

enum { DWFL, TABLES, LOADED, NR };
static const char *const names[NR] = { "libdwfl", "tables", "loaded" };

struct run {
	struct perfrec_unwinder *u;
	double cpu;
	uint64_t samples;
	float *each;             /* CPU of each sample (us), for the median */
	size_t cap;
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct perf_event_attr *record_attr(struct perfrec_pdreader *in, const struct perf_event_header *rec)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (perfrec_event__identifier(rec, &id) == 0)
		a = perfrec_pdreader__attr_by_id(in, id);
	if (!a && perfrec_pdreader__nr_attrs(in) == 1)
		a = perfrec_pdreader__attr(in, 0);
	return a ? &a->attr : NULL;
}

/* Feed @rec to @r; its output into @out, the size (0: not a rewritten sample). */
static int feed(struct run *r, const struct perf_event_header *rec, const struct perf_event_attr *a, void *out)
{
	double t0;
	int n;

	if (rec->type != PERF_RECORD_SAMPLE)
		return perfrec_unwinder__rewrite(r->u, rec, a, out, 65536) < 0 ? -1 : 0;
	t0 = cpu_now();
	n = perfrec_unwinder__rewrite(r->u, rec, a, out, 65536);
	t0 = cpu_now() - t0;
	r->cpu += t0;
	if (n <= 0)
		return n;
	if (r->samples == r->cap) {
		float *e = realloc(r->each, (r->cap = r->cap ? 2 * r->cap : 4096) * sizeof(*e));

		if (!e)
			return -1;
		r->each = e;
	}
	r->each[r->samples++] = (float)(t0 * 1e6);
	return n;
}

static int new_run(struct run *r, bool tables, const char *dir)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o) };
	struct perfrec_unwinder_tables_opts to = { .off = !tables, .dir = dir };

	return perfrec_unwinder__new(&o, &r->u) < 0 || perfrec_unwinder__set_tables(r->u, &to) < 0 ? -1 : 0;
}

/* With BENCH_UNWIND_SHOW set: the first samples whose chains differ, both. */
static void show(const void *x, const void *y, const struct perf_event_attr *a, uint64_t nth)
{
	struct perf_event_attr na;
	struct perfrec_sample s[2];

	static unsigned shown;

	if (!getenv("BENCH_UNWIND_SHOW") || shown >= 10)
		return;
	perfrec_unwinder__rewrite_attr(a, &na);
	if (perfrec_sample__parse_attr(x, &na, &s[0]) < 0 || perfrec_sample__parse_attr(y, &na, &s[1]) < 0)
		return;
	/* "shorter": only where the tables found fewer frames than libdwfl */
	if (!strcmp(getenv("BENCH_UNWIND_SHOW"), "shorter") && s[1].nr_callchain >= s[0].nr_callchain)
		return;
	shown++;
	printf("sample %llu, pid %u differs:\n", (unsigned long long)nth, s[0].pid);
	for (uint64_t i = 0; i < s[0].nr_callchain || i < s[1].nr_callchain; i++)
		printf("  %#18llx %#18llx\n", i < s[0].nr_callchain ? (unsigned long long)s[0].callchain[i] : 0ULL,
		       i < s[1].nr_callchain ? (unsigned long long)s[1].callchain[i] : 0ULL);
}

/* One pass over @path with the runs [@from, @to); counts samples whose outputs of DWFL and TABLES differ. */
static int pass(const char *path, struct run *runs, int from, int to, uint64_t *differ)
{
	static _Alignas(8) unsigned char out[NR][65536], copy[65536];
	const struct perf_event_header *rec;
	struct perfrec_pdreader *in;
	int n[NR];

	if (perfrec_pdreader__open(path, NULL, &in) < 0) {
		fprintf(stderr, "bench-unwind: cannot read %s\n", path);
		return -1;
	}
	while (perfrec_pdreader__next(in, &rec, NULL) > 0) {
		const struct perf_event_attr *a = record_attr(in, rec);

		/*
		 * A copy, as the worker's rounds hold: read from the file's
		 * mapping, the first unwinder to touch a sample would pay its
		 * page faults.
		 */
		memcpy(copy, rec, rec->size);
		rec = (const void *)copy;
		for (int i = from; i < to; i++)
			n[i] = feed(&runs[i], rec, a, out[i]);
		if (from == DWFL && to > TABLES && n[DWFL] > 0 &&
		    (n[DWFL] != n[TABLES] || memcmp(out[DWFL], out[TABLES], (size_t)n[DWFL])))
			show(out[DWFL], out[TABLES], a, ++*differ);
	}
	perfrec_pdreader__free(in);
	return 0;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static double median(const struct run *r)
{
	if (!r->samples)
		return 0;
	qsort(r->each, r->samples, sizeof(*r->each), cmp_float);
	return r->each[r->samples / 2];
}

static void report(const struct run *runs, uint64_t differ)
{
	struct perfrec_unwinder_table_stats ts;
	struct perfrec_unwinder_stats st;

	for (int i = 0; i < NR; i++) {
		perfrec_unwinder__stats(runs[i].u, &st);
		perfrec_unwinder__table_stats(runs[i].u, &ts);
		printf("%-8s %8llu samples %8.2f us/sample (median %.2f)  %.1f frames each  by tables %llu, by libdwfl %llu, "
		       "fp frames %llu; tables built %llu, loaded %llu; libdwfl sessions %llu\n",
		       names[i], (unsigned long long)runs[i].samples,
		       runs[i].samples ? runs[i].cpu * 1e6 / (double)runs[i].samples : 0.0, median(&runs[i]),
		       st.samples ? (double)st.frames / (double)st.samples : 0.0,
		       (unsigned long long)ts.by_tables, (unsigned long long)ts.by_dwfl,
		       (unsigned long long)ts.fp_frames, (unsigned long long)ts.cache.built,
		       (unsigned long long)ts.cache.loaded, (unsigned long long)st.sessions);
	}
	printf("tables vs libdwfl: %llu of %llu samples differ (%.2f%%)\n", (unsigned long long)differ,
	       (unsigned long long)runs[DWFL].samples,
	       runs[DWFL].samples ? 100.0 * (double)differ / (double)runs[DWFL].samples : 0.0);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/bench-unwind.XXXXXX", cmd[64];
	struct run runs[NR] = { 0 };
	uint64_t differ = 0;
	int st = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE.data\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (new_run(&runs[DWFL], false, NULL) == 0 && new_run(&runs[TABLES], true, dir) == 0 &&
	    pass(argv[1], runs, DWFL, LOADED, &differ) == 0 && new_run(&runs[LOADED], true, dir) == 0 &&
	    pass(argv[1], runs, LOADED, NR, &differ) == 0) {
		report(runs, differ);
		st = 0;
	}
	for (int i = 0; i < NR; i++) {
		perfrec_unwinder__free(runs[i].u);
		free(runs[i].each);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		st = 1;
	return st;
}
