// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of lib/offcpu.c: the aggregated-entry -> offcpu-time sample
 * encoding (checked by decoding it back with the independent sample
 * parser), the attr, and, where BPF can be loaded here, the live program:
 * a thread blocked on a pipe for a known time shows up with about that much
 * period and with user frames.
 */
#include <criterion/criterion.h>
#include <sys/capability.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/offcpu.h>

#include "wait-blocked.h"

static const uint64_t kstack[] = { 0xffffffff81000010ull, 0xffffffff81000020ull, 0xffffffff81000030ull };
static const uint64_t ustack[] = { 0x401000, 0x401100 };

struct encode_case {
	uint32_t nr_kernel, nr_user;
	uint64_t want_nr;  /* callchain entries incl. context markers */
	uint64_t want_ip;
	uint16_t want_misc;
};

Test(offcpu, encoded_sample_decodes_to_the_entry_with_context_markers)
{
	static const struct encode_case cases[] = {
		{ 3, 2, 7, 0x401000, PERF_RECORD_MISC_USER },
		{ 3, 0, 4, 0xffffffff81000010ull, PERF_RECORD_MISC_KERNEL },
		{ 0, 2, 3, 0x401000, PERF_RECORD_MISC_USER },
		{ 0, 0, 0, 0, PERF_RECORD_MISC_KERNEL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct encode_case *c = &cases[i];
		struct perfrec_offcpu_entry e = {
			.pid = 100 + i, .tid = 200 + i, .cpu = 1, .period = 12345678 + i,
			.nr_kernel = c->nr_kernel, .nr_user = c->nr_user,
			.kernel = kstack, .user = ustack,
		};
		uint64_t buf[64];
		struct perfrec_sample s;
		int n = perfrec_offcpu__encode_sample(buf, sizeof(buf), &e, 0xdead0000 + i, 999 + i);

		cr_assert_gt(n, 0, "case %zu: %d", i, n);
		cr_assert_eq((size_t)n, perfrec_offcpu__sample_size(&e));
		const struct perf_event_header *h = (const void *)buf;
		cr_assert_eq(h->type, PERF_RECORD_SAMPLE);
		cr_assert_eq(h->size, n);
		cr_assert_eq(h->misc, c->want_misc, "case %zu", i);
		cr_assert_eq(perfrec_sample__parse(h, PERFREC_OFFCPU_SAMPLE_TYPE, 0, &s), 0);
		cr_assert_eq(s.id, 0xdead0000 + i);
		cr_assert_eq(s.ip, c->want_ip, "case %zu", i);
		cr_assert_eq(s.pid, 100 + i);
		cr_assert_eq(s.tid, 200 + i);
		cr_assert_eq(s.time, 999 + i);
		cr_assert_eq(s.cpu, 1);
		cr_assert_eq(s.period, 12345678 + i);
		cr_assert_eq(s.nr_callchain, c->want_nr, "case %zu", i);
		size_t k = 0;
		if (c->nr_kernel) {
			cr_assert_eq(s.callchain[k++], PERF_CONTEXT_KERNEL);
			for (uint32_t j = 0; j < c->nr_kernel; j++)
				cr_assert_eq(s.callchain[k++], kstack[j]);
		}
		if (c->nr_user) {
			cr_assert_eq(s.callchain[k++], PERF_CONTEXT_USER);
			for (uint32_t j = 0; j < c->nr_user; j++)
				cr_assert_eq(s.callchain[k++], ustack[j]);
		}
	}
}

Test(offcpu, encoding_rejects_small_buffers_empty_periods_and_deep_stacks)
{
	struct perfrec_offcpu_entry e = {
		.pid = 1, .tid = 1, .period = 5, .nr_kernel = 3, .nr_user = 2,
		.kernel = kstack, .user = ustack,
	};
	uint64_t buf[64];
	size_t need = perfrec_offcpu__sample_size(&e);

	cr_assert_eq(perfrec_offcpu__encode_sample(buf, need - 1, &e, 1, 1), -ENOSPC);
	cr_assert_eq(perfrec_offcpu__encode_sample(buf, need, &e, 1, 1), (int)need);
	e.period = 0;
	cr_assert_eq(perfrec_offcpu__encode_sample(buf, sizeof(buf), &e, 1, 1), -EINVAL);
	e.period = 5;
	e.nr_user = PERFREC_OFFCPU_MAX_STACK + 1;
	cr_assert_eq(perfrec_offcpu__sample_size(&e), 0);
	cr_assert_eq(perfrec_offcpu__encode_sample(buf, sizeof(buf), &e, 1, 1), -EINVAL);
}

Test(offcpu, attr_is_a_software_bpf_output_event_with_the_offcpu_sample_type)
{
	struct perf_event_attr a;

	memset(&a, 0xff, sizeof(a));
	perfrec_offcpu__attr(&a);
	cr_assert_eq(a.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(a.config, PERF_COUNT_SW_BPF_OUTPUT);
	cr_assert_eq(a.size, sizeof(a));
	cr_assert_eq(a.sample_type, PERFREC_OFFCPU_SAMPLE_TYPE);
	cr_assert(a.sample_type & PERF_SAMPLE_CALLCHAIN);
	cr_assert_eq(a.sample_period, 1);
	cr_assert_eq(a.freq, 0);
}

Test(offcpu, open_rejects_a_missing_cgroup_with_a_reason)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o), .cgroup_path = "no/such/cgroup/here" };
	struct perfrec_offcpu *oc = (void *)1;
	char why[256] = "";

	cr_assert_eq(perfrec_offcpu__open(&o, &oc, why, sizeof(why)), -ENOENT);
	cr_assert_null(oc);
	cr_assert(strstr(why, "no/such/cgroup/here"), "%s", why);
}

/* --- live: needs root with BPF --- */

struct drain_ctx {
	pid_t tid;
	uint64_t period;
	uint64_t nr_user;
	int count;
};

static int on_sample(const struct perf_event_header *h, void *arg)
{
	struct drain_ctx *d = arg;
	struct perfrec_sample s;

	cr_assert_eq(perfrec_sample__parse(h, PERFREC_OFFCPU_SAMPLE_TYPE, 0, &s), 0);
	d->count++;
	if ((pid_t)s.tid == d->tid) {
		d->period += s.period;
		for (uint64_t i = 0; i < s.nr_callchain; i++)
			if (s.callchain[i] == PERF_CONTEXT_USER)
				d->nr_user = s.nr_callchain - i - 1;
	}
	return 0;
}

struct sleeper {
	int fd;
	pid_t tid;
};

static void *reader(void *arg)
{
	struct sleeper *sl = arg;
	char c;

	__atomic_store_n(&sl->tid, gettid(), __ATOMIC_RELEASE);
	for (int i = 0; i < 5; i++)
		if (read(sl->fd, &c, 1) != 1)
			break;
	return NULL;
}

Test(offcpu, live_program_reports_the_time_a_thread_blocked_on_a_pipe)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o), .min_ns = 1000 };
	struct perfrec_offcpu *oc = NULL;
	struct drain_ctx d = { 0 };
	struct sleeper sl = { 0 };
	char why[256] = "";
	int p[2], r;
	pthread_t t;

	r = perfrec_offcpu__open(&o, &oc, why, sizeof(why));
	if (r < 0)
		cr_skip_test("BPF not usable here: %s", why);
	cr_assert_eq(pipe(p), 0);
	sl.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, reader, &sl), 0);
	for (int i = 0; i < 5; i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		/* Each block then lasts at least the 20 ms slept. */
		wait_blocked_in_read(&sl.tid, p[0]);
		nanosleep(&ts, NULL);
		cr_assert_eq(write(p[1], "x", 1), 1);
	}
	pthread_join(t, NULL);
	d.tid = sl.tid;
	r = perfrec_offcpu__drain(oc, 42, 1, on_sample, &d);
	cr_assert_geq(r, 1);
	cr_assert_eq(r, d.count);
	/* ~100 ms blocked; a loose floor, not a timing assertion on speed. */
	cr_assert_geq(d.period, 50ull * 1000 * 1000, "reader blocked %llu ns",
		      (unsigned long long)d.period);
	cr_assert_gt(d.nr_user, 0, "no user frames");
	/* Drained entries are gone. */
	d.count = 0;
	d.tid = -1;
	r = perfrec_offcpu__drain(oc, 42, 1, on_sample, &d);
	cr_assert_geq(r, 0);
	perfrec_offcpu__close(oc);
	close(p[0]);
	close(p[1]);
}

/* A thread blocked 5 times ~20 ms on a pipe; its tid. */
static pid_t block_a_reader(void)
{
	struct sleeper sl = { 0 };
	pthread_t t;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	sl.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, reader, &sl), 0);
	for (int i = 0; i < 5; i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		wait_blocked_in_read(&sl.tid, p[0]);
		nanosleep(&ts, NULL);
		cr_assert_eq(write(p[1], "x", 1), 1);
	}
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	return sl.tid;
}

/* The blocked ns the program counted for @tid since the last drain. */
static uint64_t counted_for(struct perfrec_offcpu *oc, pid_t tid)
{
	struct drain_ctx d = { .tid = tid };

	cr_assert_geq(perfrec_offcpu__drain(oc, 42, 1, on_sample, &d), 0);
	return d.period;
}

/*
 * perfrecd drops CAP_BPF and CAP_SYS_ADMIN after loading the program; a
 * reload's new offcpu-min= or offcpu-cgroup= must still reach it (issue 28
 * item 2: before, the filter was read-only data fixed at load).
 */
Test(offcpu, filter_changes_in_a_loaded_program_without_privileges)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o) };
	struct perfrec_offcpu_opts hour = { .sz = sizeof(hour), .min_ns = 3600ull * 1000000000 };
	struct perfrec_offcpu_opts nocg = { .sz = sizeof(nocg), .cgroup_path = "no/such/cgroup/here" };
	struct perfrec_offcpu *oc = NULL;
	cap_value_t drop[] = { CAP_BPF, CAP_SYS_ADMIN };
	char why[256] = "";
	cap_t caps;

	if (perfrec_offcpu__open(&o, &oc, why, sizeof(why)) < 0)
		cr_skip_test("BPF not usable here: %s", why);
	/* From here on as perfrecd after its start (criterion runs each test in a child). */
	caps = cap_get_proc();
	cr_assert_not_null(caps);
	cr_assert_eq(cap_set_flag(caps, CAP_EFFECTIVE, 2, drop, CAP_CLEAR), 0);
	cr_assert_eq(cap_set_flag(caps, CAP_PERMITTED, 2, drop, CAP_CLEAR), 0);
	cr_assert_eq(cap_set_proc(caps), 0);
	cap_free(caps);
	{
		struct perfrec_offcpu *again = NULL;

		cr_assert_lt(perfrec_offcpu__open(&o, &again, why, sizeof(why)), 0,
			     "loading still works without CAP_BPF: the test shows nothing");
	}

	cr_assert_gt(counted_for(oc, block_a_reader()), 0, "min 0: the blocks are not counted");
	cr_assert_eq(perfrec_offcpu__set_filter(oc, &hour), 0);
	cr_assert_eq(counted_for(oc, block_a_reader()), 0, "offcpu-min 1h: 20 ms blocks still counted");
	/* A missing cgroup is refused and the filter stays as it was. */
	cr_assert_eq(perfrec_offcpu__set_filter(oc, &nocg), -ENOENT);
	cr_assert_eq(counted_for(oc, block_a_reader()), 0, "a refused filter changed the minimum");
	cr_assert_eq(perfrec_offcpu__set_filter(oc, &o), 0);
	cr_assert_gt(counted_for(oc, block_a_reader()), 0, "min 0 again: the blocks are not counted");
	cr_assert_eq(perfrec_offcpu__set_filter(NULL, &o), -EINVAL);
	perfrec_offcpu__close(oc);
}
