// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whole user stacks of off-CPU samples (lib/offcpu.c, whole_stacks): a
 * thread of this test blocks on a pipe two calls below its start routine,
 * in code built without frame pointers (this file, -fomit-frame-pointer),
 * and its offcpu-time sample must carry a user chain through both callers,
 * with the time it blocked.  Needs root with BPF; skipped otherwise.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/offcpu.h>

#include "wait-blocked.h"

#define BLOCKS 5
#define BLOCK_NS (30 * 1000 * 1000)

static int pipefd[2];
static pid_t reader_tid;

__attribute__((noinline, optimize("omit-frame-pointer"))) long inner_wait(int fd);
__attribute__((noinline, optimize("omit-frame-pointer"))) long inner_wait(int fd)
{
	volatile char buf[32];
	long n = read(fd, (char *)buf, 1);

	return n + buf[0];
}

__attribute__((noinline, optimize("omit-frame-pointer"))) long outer_wait(int fd);
__attribute__((noinline, optimize("omit-frame-pointer"))) long outer_wait(int fd)
{
	volatile char pad[48];
	long sum = 0;

	memset((char *)pad, 1, sizeof(pad));
	for (int i = 0; i < BLOCKS; i++)
		sum += inner_wait(fd);
	return sum + pad[3];
}

static void *reader(void *arg)
{
	(void)arg;
	__atomic_store_n(&reader_tid, gettid(), __ATOMIC_RELEASE);
	return (void *)outer_wait(pipefd[0]);
}

struct seen {
	uint64_t period, whole_period;
};

/* Is @ip a return address inside @fn (the call sits in its first bytes)? */
static bool in_fn(uint64_t ip, const void *fn)
{
	return ip > (uintptr_t)fn && ip < (uintptr_t)fn + 512;
}

static int on_sample(const struct perf_event_header *h, void *arg)
{
	struct seen *d = arg;
	struct perfrec_sample s;
	bool inner = false, outer = false;

	cr_assert_eq(perfrec_sample__parse(h, PERFREC_OFFCPU_SAMPLE_TYPE, 0, &s), 0);
	if ((pid_t)s.tid != reader_tid)
		return 0;
	d->period += s.period;
	for (uint64_t i = 0; i < s.nr_callchain; i++) {
		inner |= in_fn(s.callchain[i], (const void *)inner_wait);
		outer |= in_fn(s.callchain[i], (const void *)outer_wait);
	}
	if (inner && outer)
		d->whole_period += s.period;
	return 0;
}

Test(offcpu_whole, a_thread_blocked_below_two_callers_without_frame_pointers_has_them_all)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o), .min_ns = 1000, .whole_stacks = true };
	struct perfrec_offcpu_copy_stats st;
	struct perfrec_offcpu *oc = NULL;
	struct seen d = { 0 };
	char why[256] = "";
	pthread_t t;
	int r;

	r = perfrec_offcpu__open(&o, &oc, why, sizeof(why));
	if (r < 0)
		cr_skip_test("BPF not usable here: %s", why);
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(pthread_create(&t, NULL, reader, NULL), 0);
	for (int i = 0; i < BLOCKS; i++) {
		struct timespec ts = { 0, BLOCK_NS };

		/* Each block then lasts at least BLOCK_NS. */
		wait_blocked_in_read(&reader_tid, pipefd[0]);
		nanosleep(&ts, NULL);
		cr_assert_eq(write(pipefd[1], "x", 1), 1);
	}
	pthread_join(t, NULL);
	r = perfrec_offcpu__drain(oc, 42, 1, on_sample, &d);
	cr_assert_geq(r, 1);
	perfrec_offcpu__copy_stats(oc, &st);
	cr_assert_gt(st.copied, 0);
	/* A loose floor for the blocked time, not a timing assertion. */
	cr_assert_geq(d.period, BLOCKS * (uint64_t)BLOCK_NS / 2, "reader blocked %llu ns",
		      (unsigned long long)d.period);
	cr_assert_gt(d.whole_period, 0, "no sample of the reader has inner_wait and outer_wait "
		     "(%llu ns in all; %llu blocks copied, %llu unwound)", (unsigned long long)d.period,
		     (unsigned long long)st.copied, (unsigned long long)st.whole);
	perfrec_offcpu__close(oc);
	close(pipefd[0]);
	close(pipefd[1]);
}

Test(offcpu_whole, close_with_copies_not_drained_frees_them)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o), .whole_stacks = true };
	struct perfrec_offcpu *oc = NULL;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	char why[256] = "";

	if (perfrec_offcpu__open(&o, &oc, why, sizeof(why)) < 0)
		cr_skip_test("BPF not usable here: %s", why);
	/* Blocks of the host meanwhile: copies, pending chains, summed samples. */
	nanosleep(&ts, NULL);
	perfrec_offcpu__close(oc);
}
