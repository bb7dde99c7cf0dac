// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for raw DWARF recordings in perfrecctl (views/unwind.c and
 * cut.c, tools/cut-cmd.c), on files holding this very process's
 * mappings and a sample of its own registers and stack (unwind-capture.h):
 * unwind_file() rewrites a file into the callchain form with
 * the sample's callers, and refuses a file that does not verify, naming
 * where it breaks and leaving nothing behind; `cut` of a raw file beside a host-unwound file of the
 * same events (a snapshot of an unwind=host recording and its published
 * files), in either order, unwinds the raw one and writes one event in
 * the unwound form; a raw file that differs in more than that is still
 * refused, naming the difference.  The daemon's snapshot is stubbed out
 * (--no-live).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/timespec.h>

#include "perfrecctl.h"
#include "unwind.h"
#include "window.h"
#include "unwind-capture.h"

#include "cut-standins.h"

#define S 1000000000ULL
/* The clock pair of every file: wall 2001-09-09T01:46:40Z is sample clock 1000 s. */
#define W0 (1000000000ULL * S)
#define C0 (1000ULL * S)

static char dir[] = "/tmp/test-cut-unwind-XXXXXX";
static struct snap snap;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/test-cut-unwind-XXXXXX")));
	find_stack_end();
	outer_marker(&snap);
}

static void teardown(void)
{
	char cmd[80];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(cut_unwind, .init = setup, .fini = teardown);

/* The attr of the raw samples: unwind-capture.h's, as perfrecd records cpu-clock. */
static struct perf_event_attr raw_attr(void)
{
	struct perf_event_attr a = attr();

	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.freq = 1;
	a.sample_freq = 499;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	return a;
}

struct writer_ctx {
	struct perfrec_pdwriter *w;
};

static void write_map(void *ctx, const struct perf_event_header *h)
{
	cr_assert_eq(perfrec_pdwriter__write(((struct writer_ctx *)ctx)->w, h, h->size), 0);
}

/*
 * A file @name of one event with id 42: this process's maps, then one
 * sample of the captured stack at sample time @t, raw with @a or, when
 * @unwound, as perfrecd's unwind=host writes it (the attr rewritten, the
 * sample with its ip as the only user frame).
 */
static char *make_file(const char *name, struct perf_event_attr a, bool unwound, uint64_t wall, uint64_t clk,
		       uint64_t t)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct { uint32_t version, clockid; uint64_t wall, clk; } cd = { 1, CLOCK_MONOTONIC, wall, clk };
	static _Alignas(8) unsigned char raw[65536], out[65536];
	struct perf_event_header *h = sample(&snap, raw);
	struct perf_event_attr na;
	struct writer_ctx wc;
	uint64_t id = 42;
	char *path;
	int fd, n;

	cr_assert_neq(asprintf(&path, "%s/%s", dir, name), -1);
	memcpy(raw + sizeof(*h) + 24, &t, 8); /* after identifier, ip, pid/tid */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &wc.w), 0);
	if (unwound) {
		perfrec_unwinder__rewrite_attr(&a, &na);
		cr_assert_eq(perfrec_pdwriter__add_attr(wc.w, &na, &id, 1, "cpu-clock"), 0);
	} else {
		cr_assert_eq(perfrec_pdwriter__add_attr(wc.w, &a, &id, 1, "cpu-clock"), 0);
	}
	for_each_map(NULL, NULL, write_map, &wc);
	if (unwound) {
		n = perfrec_unwinder__strip(h, &a, out, sizeof(out));
		cr_assert_gt(n, 0);
		cr_assert_eq(perfrec_pdwriter__write(wc.w, out, (size_t)n), 0);
	} else {
		cr_assert_eq(perfrec_pdwriter__write(wc.w, h, h->size), 0);
	}
	cr_assert_eq(perfrec_pdwriter__set_feature(wc.w, PERFREC_FEAT_CLOCK_DATA, &cd, sizeof(cd)), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(wc.w, PERFREC_FEAT_HOSTNAME, "\10\0\0\0host\0\0\0\0", 12), 0);
	cr_assert_eq(perfrec_pdwriter__finish(wc.w), 0);
	perfrec_pdwriter__free(wc.w, false);
	return path;
}

struct chains {
	size_t samples;
	uint64_t time[4];
	uint64_t user_frames[4]; /* after PERF_CONTEXT_USER */
	bool through_outer[4];   /* a caller lies in outer_marker() */
};

/* Read @path (it must verify, with one event): its attr into *ret_attr, its samples' chains. */
static struct chains read_chains(const char *path, struct perf_event_attr *ret_attr)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	struct chains c = { 0 };
	uint64_t off, fn = (uint64_t)(uintptr_t)outer_marker;

	cr_assert_eq(perfrec_pdreader__open(path, &o, &r), 0, "no %s", path);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, &off));
	cr_assert_eq(perfrec_pdreader__nr_attrs(r), 1);
	*ret_attr = perfrec_pdreader__attr(r, 0)->attr;
	perfrec_pdreader__rewind(r);
	while (perfrec_pdreader__next(r, &h, &off) > 0) {
		struct perfrec_sample s;
		size_t k = c.samples;

		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_lt(k, 4);
		cr_assert_eq(perfrec_sample__parse_attr(h, ret_attr, &s), 0);
		cr_assert_geq(s.nr_callchain, 2);
		cr_assert_eq(s.callchain[0], PERF_CONTEXT_USER);
		c.time[k] = s.time;
		c.user_frames[k] = s.nr_callchain - 1;
		for (uint64_t i = 2; i < s.nr_callchain; i++)
			c.through_outer[k] |= s.callchain[i] >= fn && s.callchain[i] < fn + 128;
		c.samples++;
	}
	perfrec_pdreader__free(r);
	return c;
}

static void expect_unwound_attr(const struct perf_event_attr *got)
{
	struct perf_event_attr a = raw_attr(), want;

	perfrec_unwinder__rewrite_attr(&a, &want);
	cr_expect_eq(got->sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER), 0);
	cr_expect_eq(got->sample_type, want.sample_type);
	cr_expect_eq(got->sample_regs_user, 0);
	cr_expect_eq(got->sample_stack_user, 0);
	cr_expect_eq(got->exclude_callchain_user, 0);
}

/* stderr into a file of @dir from capture_begin() to capture_end(), which returns it (owned). */
static int saved_stderr = -1;

static void capture_begin(void)
{
	char path[80];
	int fd;

	snprintf(path, sizeof(path), "%s/stderr", dir);
	fflush(stderr);
	saved_stderr = dup(2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	dup2(fd, 2);
	close(fd);
}

static char *capture_end(void)
{
	char path[80], *text;
	FILE *f;
	long n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	snprintf(path, sizeof(path), "%s/stderr", dir);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* Run `cut --no-live` with @args; its exit code, its stderr into *ret_err (owned). */
static int run_cut(char **ret_err, const char *const *args)
{
	char *argv[32] = { "cut", "--no-live" };
	int argc = 2, rc;

	for (size_t i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	capture_begin();
	rc = cmd_cut(argc, argv);
	*ret_err = capture_end();
	return rc;
}

static char *iso(uint64_t wall)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ % 4];

	cr_assert_gt(perfrec_timespec__format(wall, true, b, 64), 0);
	snprintf(b + 20, 44, "%09lluZ", (unsigned long long)(wall % S));
	return b;
}

Test(cut_unwind, a_raw_file_is_rewritten_with_the_callers_of_its_samples)
{
	char *in = make_file("raw.data", raw_attr(), false, W0, C0, C0 + S), out[96];
	struct perfrec_unwinder_stats st;
	struct perf_event_attr a;
	struct chains c;

	snprintf(out, sizeof(out), "%s/unwound.data", dir);
	cr_assert_eq(unwind_file("test", in, out, &st), 0);
	cr_expect_eq(st.samples, 1);
	cr_expect_eq(st.unwound, 1);
	c = read_chains(out, &a);
	expect_unwound_attr(&a);
	cr_assert_eq(c.samples, 1);
	cr_expect_eq(c.time[0], C0 + S);
	cr_expect_gt(c.user_frames[0], 2, "only %" PRIu64 " user frames", c.user_frames[0]);
	cr_expect(c.through_outer[0], "the chain does not reach outer_marker()");
	free(in);
}

Test(cut_unwind, a_file_that_does_not_verify_is_refused_where_it_breaks_and_nothing_is_left)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	char *in = make_file("raw.data", raw_attr(), false, W0, C0, C0 + S), out[96], want[64], *err;
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	uint64_t off, at = 0;
	uint16_t size = 168;
	int fd;

	/* The sample, cut short: a size its fields do not fit in. */
	cr_assert_eq(perfrec_pdreader__open(in, &o, &r), 0);
	while (!at && perfrec_pdreader__next(r, &h, &off) > 0)
		if (h->type == PERF_RECORD_SAMPLE)
			at = off;
	perfrec_pdreader__free(r);
	cr_assert_gt(at, 0);
	fd = open(in, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &size, 2, (off_t)at + 6), 2);
	close(fd);
	snprintf(out, sizeof(out), "%s/unwound.data", dir);
	snprintf(want, sizeof(want), "at offset %" PRIu64 " (perfrecctl verify", at);
	capture_begin();
	cr_expect_eq(unwind_file("test", in, out, NULL), EXIT_BAD);
	err = capture_end();
	cr_expect(strstr(err, "perfrecctl test: ") && strstr(err, "SAMPLE (size 168)") && strstr(err, want),
		  "%s (want '%s')", err, want);
	cr_expect_neq(access(out, F_OK), 0, "output left behind");
	free(err);
	free(in);
}

/*
 * A host-unwound file and a raw one of the same events (id 42): the
 * published file and the snapshot, or a raw file then unwound ones.
 */
Test(cut_unwind, a_raw_file_beside_host_unwound_files_of_its_events_is_unwound)
{
	for (int raw_first = 0; raw_first < 2; raw_first++) {
		char *pa = make_file("a.data", raw_attr(), !raw_first, W0, C0, C0 + S);
		char *pb = make_file("b.data", raw_attr(), raw_first, W0 + 10 * S, C0 + 10 * S, C0 + 11 * S);
		char out[96], *err;
		const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };
		size_t raw = raw_first ? 0 : 1;
		struct perf_event_attr a;
		struct chains c;

		snprintf(out, sizeof(out), "%s/out%d.data", dir, raw_first);
		cr_assert_eq(run_cut(&err, args), 0, "raw first: %d: %s", raw_first, err);
		cr_expect(strstr(err, raw_first ? "a.data: raw DWARF stacks" : "b.data: raw DWARF stacks") &&
			  strstr(err, "unwound on this host, 1 samples, 1 with callers"), "%s", err);
		c = read_chains(out, &a);
		expect_unwound_attr(&a);
		cr_assert_eq(c.samples, 2, "%s", err);
		cr_expect_eq(c.time[0], C0 + S);
		cr_expect_eq(c.time[1], C0 + 11 * S);
		/* the raw sample with its callers, the unwound one as it was */
		cr_expect_gt(c.user_frames[raw], 2, "raw first: %d", raw_first);
		cr_expect(c.through_outer[raw], "raw first: %d", raw_first);
		cr_expect_eq(c.user_frames[1 - raw], 1, "raw first: %d", raw_first);
		free(err);
		free(pa);
		free(pb);
	}
}

Test(cut_unwind, a_raw_file_that_differs_in_more_is_still_refused)
{
	struct perf_event_attr other = raw_attr();
	char *pa, *pb, out[96], *err;

	other.exclude_kernel = 1;
	pa = make_file("a.data", raw_attr(), true, W0, C0, C0 + S);
	pb = make_file("b.data", other, false, W0 + 10 * S, C0 + 10 * S, C0 + 11 * S);
	{
		const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };

		snprintf(out, sizeof(out), "%s/out.data", dir);
		cr_expect_eq(run_cut(&err, args), EXIT_BAD);
	}
	cr_expect(strstr(err, "event cpu-clock differs from") && strstr(err, "sample_type"), "%s", err);
	cr_expect_null(strstr(err, "unwound on this host"), "%s", err);
	cr_expect_neq(access(out, F_OK), 0, "output left behind");
	free(err);
	free(pa);
	free(pb);
}
