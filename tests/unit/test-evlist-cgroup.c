// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evlist and PERF_SAMPLE_CGROUP: every attr asks for it (samples then name
 * their cgroup), and a kernel that refuses it (older than 5.7, or built
 * without CONFIG_CGROUP_PERF) gets it dropped from every attr while the
 * CGROUP side-band records stay.  The refusing kernel is faked by taking
 * over syscall() in this test executable, as tests/unit/test-evlist.c does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/evlist.h>

static struct {
	bool on;
	bool no_sample_cgroup;
	int einval;
} fake;

long syscall(long nr, ...);

/* Forwards all six possible arguments; see test-evlist.c for no_sanitize. */
__attribute__((no_sanitize("address")))
long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == __NR_perf_event_open && fake.on) {
		const struct perf_event_attr *attr = (const void *)a[0];

		if (fake.no_sample_cgroup && (attr->sample_type & PERF_SAMPLE_CGROUP)) {
			fake.einval++;
			errno = EINVAL;
			return -1;
		}
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void need_perf(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.disabled = 1, .sample_type = PERF_SAMPLE_CGROUP,
	};
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root for system-wide perf_event_open");
	fd = (int)syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		cr_skip_test("this kernel does not take PERF_SAMPLE_CGROUP: %s", strerror(errno));
	close(fd);
}

static struct perfrec_evlist *open_clock(void)
{
	struct perfrec_cpumap *m = NULL;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	char err[128];

	cr_assert_eq(perfrec_cpumap__read(NULL, &m), 0);
	cr_assert_eq(perfrec_evspec__parse("cpu-clock", NULL, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	perfrec_cpumap__free(m);
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), 1);
	return el;
}

Test(evlist_cgroup, every_attr_asks_for_the_samples_cgroup)
{
	struct perfrec_evlist *el;

	need_perf();
	el = open_clock();
	for (size_t e = 0; e < perfrec_evlist__nr_evsels(el); e++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

		cr_expect(ev->attr.sample_type & PERF_SAMPLE_CGROUP, "%s lacks PERF_SAMPLE_CGROUP", ev->name);
	}
	cr_expect(perfrec_evlist__evsel(el, 0)->attr.cgroup, "side band lacks attr.cgroup");
	perfrec_evlist__free(el);
}

Test(evlist_cgroup, a_kernel_refusing_it_records_without_it_everywhere)
{
	struct perfrec_evlist *el;

	need_perf();
	fake.on = fake.no_sample_cgroup = true;
	el = open_clock();
	fake.on = false;
	cr_assert_gt(fake.einval, 0, "the fake kernel was never asked");
	for (size_t e = 0; e < perfrec_evlist__nr_evsels(el); e++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

		cr_expect_eq(ev->attr.sample_type & PERF_SAMPLE_CGROUP, 0, "%s kept PERF_SAMPLE_CGROUP", ev->name);
		cr_expect(ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER);
	}
	/* Only what was refused is given up: CGROUP records still come. */
	cr_expect(perfrec_evlist__evsel(el, 0)->attr.cgroup, "attr.cgroup dropped needlessly");
	cr_expect(perfrec_evlist__evsel(el, 0)->attr.build_id, "build_id dropped needlessly");
	perfrec_evlist__free(el);
	memset(&fake, 0, sizeof(fake));
}
