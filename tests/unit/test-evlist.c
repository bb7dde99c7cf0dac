// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for evlist against the real kernel: events open on every online
 * CPU, samplers land in the side-band ring of their CPU (SET_OUTPUT), ids
 * are unique, every attr shares one sample_id layout, and an event the
 * machine lacks is reported and left out while the rest still record.
 * Argument checks run anywhere; the rest need root and perf_event_open.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/evlist.h>

/* The sample_type bits that shape the sample_id trailer. */
#define SAMPLE_ID_BITS (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | \
			PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/*
 * An older kernel, faked: while fake.on is set, perf_event_open calls that
 * use a feature listed here fail with EINVAL as a kernel that predates it
 * would.  libperfrec calls syscall(), which this definition (in the test
 * executable) takes over; everything else goes on to libc's.
 */
static struct {
	bool on;
	bool no_build_id, no_format_lost, no_cgroup;
	bool no_exclude_guest;      /* a PMU that refuses exclude_guest/exclude_host */
	int build_id_bad_cpu;       /* >= 0: only this CPU lacks build_id */
	uint64_t bad_sw_config;     /* a software config always refused */
	bool bad_sw;
	int einval;                 /* refusals handed out */
	signed char build_id_of_fd[1024]; /* attr.build_id each fd was opened with */
} fake = { .build_id_bad_cpu = -1 };

long syscall(long nr, ...);

/*
 * Forwarding a variadic call needs all six possible arguments; callers that
 * pass fewer leave the extra va_arg reads looking at their own stack frame
 * (harmless on x86-64, but ASan calls it an underflow), hence no_sanitize.
 */
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
		int cpu = (int)a[2];
		bool bad = (fake.no_build_id && attr->build_id &&
			    (fake.build_id_bad_cpu < 0 || fake.build_id_bad_cpu == cpu)) ||
			   (fake.no_format_lost && (attr->read_format & PERF_FORMAT_LOST)) ||
			   (fake.no_cgroup && attr->cgroup) ||
			   (fake.no_exclude_guest && (attr->exclude_guest || attr->exclude_host)) ||
			   (fake.bad_sw && attr->type == PERF_TYPE_SOFTWARE &&
			    attr->config == fake.bad_sw_config);

		if (bad) {
			fake.einval++;
			errno = EINVAL;
			return -1;
		}
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	long ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);

	if (nr == __NR_perf_event_open && fake.on && ret >= 0 && ret < 1024)
		fake.build_id_of_fd[ret] = (signed char)((const struct perf_event_attr *)a[0])->build_id;
	return ret;
}

struct failure {
	char event[PERFREC_EVSPEC_NAME_MAX];
	int cpu, err;
	int calls;
};

static void record_failure(void *ctx, const char *event, int cpu, int err)
{
	struct failure *f = ctx;

	snprintf(f->event, sizeof(f->event), "%s", event);
	f->cpu = cpu;
	f->err = err;
	f->calls++;
}

static struct perfrec_cpumap *online(void)
{
	struct perfrec_cpumap *m = NULL;

	cr_assert_eq(perfrec_cpumap__read(NULL, &m), 0);
	return m;
}

static struct perfrec_evspec spec(const char *name)
{
	struct perfrec_evspec s;
	char err[128];

	cr_assert_eq(perfrec_evspec__parse(name, NULL, &s, err, sizeof(err)), 0, "%s", err);
	return s;
}

/* Skips unless this process may open a system-wide software event. */
static void need_perf(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
	};
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root for system-wide perf_event_open");
	fd = (int)syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		cr_skip_test("perf_event_open does not work here: %s", strerror(errno));
	close(fd);
}

static volatile unsigned long sink;

/* Keep a CPU busy so cpu-clock samples land in its ring. */
static void *burn(void *arg)
{
	struct timespec start, now;
	long ms = (long)(intptr_t)arg;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	return NULL;
}

/* One busy thread pinned to each CPU of @m, ~@ms each. */
static void burn_all(const struct perfrec_cpumap *m, long ms)
{
	pthread_t th[m->nr];

	for (int i = 0; i < m->nr; i++) {
		pthread_attr_t pa;
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(m->cpus[i], &set);
		pthread_attr_init(&pa);
		pthread_attr_setaffinity_np(&pa, sizeof(set), &set);
		cr_assert_eq(pthread_create(&th[i], &pa, burn, (void *)(intptr_t)ms), 0);
		pthread_attr_destroy(&pa);
	}
	for (int i = 0; i < m->nr; i++)
		pthread_join(th[i], NULL);
}

static uint64_t ring_head(struct perfrec_ring *r)
{
	return __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* ids nonzero, unique across all evsels, one per CPU, cpus as in the map. */
static void check_evsels(const struct perfrec_evlist *el, const struct perfrec_cpumap *m)
{
	size_t n = perfrec_evlist__nr_evsels(el), total = 0, k = 0;
	uint64_t *all;
	uint64_t layout = 0;

	for (size_t e = 0; e < n; e++)
		total += perfrec_evlist__evsel(el, e)->nr_ids;
	all = calloc(total, sizeof(*all));
	cr_assert_not_null(all);

	cr_assert(perfrec_evlist__evsel(el, 0)->is_sideband, "evsel 0 is not the side-band event");
	for (size_t e = 0; e < n; e++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

		cr_assert_eq(ev->is_sideband, e == 0);
		cr_assert_eq(ev->nr_ids, (size_t)m->nr, "%s: %zu ids for %d CPUs", ev->name, ev->nr_ids, m->nr);
		cr_assert(ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER, "%s: no IDENTIFIER", ev->name);
		cr_assert(ev->attr.sample_id_all, "%s: no sample_id_all", ev->name);
		cr_assert(ev->attr.read_format & PERF_FORMAT_ID, "%s: no PERF_FORMAT_ID", ev->name);
		cr_assert(ev->attr.disabled, "%s: not opened disabled", ev->name);
		if (e == 0)
			layout = ev->attr.sample_type & SAMPLE_ID_BITS;
		cr_assert_eq(ev->attr.sample_type & SAMPLE_ID_BITS, layout,
			     "%s: sample_id layout %#llx differs from the side-band's %#llx", ev->name,
			     (unsigned long long)(ev->attr.sample_type & SAMPLE_ID_BITS),
			     (unsigned long long)layout);
		for (size_t i = 0; i < ev->nr_ids; i++) {
			cr_assert_neq(ev->ids[i], 0, "%s: id %zu is 0", ev->name, i);
			cr_assert_eq(ev->cpus[i], m->cpus[i]);
			all[k++] = ev->ids[i];
		}
	}
	qsort(all, total, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < total; i++)
		cr_assert_neq(all[i], all[i - 1], "id %llu appears twice", (unsigned long long)all[i]);
	free(all);
}

Test(evlist, new_rejects_bad_rates_and_sizes)
{
	struct perfrec_cpumap *m = NULL;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 0, .period = 0 };
	int max = perfrec_evlist__max_sample_rate();

	cr_assert_eq(perfrec_cpumap__parse("0", &m), 0);
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), -EINVAL, "freq 0 and period 0 accepted");
	cr_assert_null(el);
	o.freq = 1000;
	o.mmap_pages = 3;
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), -EINVAL, "3 pages accepted");
	o.mmap_pages = 4;
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	perfrec_evlist__free(el);
	el = NULL;
	if (max > 0) {
		o.freq = (uint64_t)max + 1;
		cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), -EINVAL,
			     "freq above perf_event_max_sample_rate (%d) accepted", max);
		o.freq = (uint64_t)max;
		cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
		perfrec_evlist__free(el);
	}
	perfrec_cpumap__free(m);
	perfrec_evlist__free(NULL);
}

Test(evlist, max_sample_rate_matches_procfs)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	int want = 0;

	if (!f)
		cr_skip_test("no /proc/sys/kernel/perf_event_max_sample_rate");
	cr_assert_eq(fscanf(f, "%d", &want), 1);
	fclose(f);
	cr_assert_eq(perfrec_evlist__max_sample_rate(), want);
}

Test(evlist, cpu_clock_records_into_one_ring_per_cpu)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 1000, .callchain = true, .clockid = CLOCK_MONOTONIC,
		.mmap_pages = 16,
	};
	struct failure f = { 0 };
	const struct perfrec_evsel *ev;

	need_perf();
	m = online();
	s = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 1, "open failed: %s on CPU %d: %s",
		     f.event, f.cpu, strerror(f.err));
	cr_assert_eq(f.calls, 0);
	cr_assert_eq(perfrec_evlist__nr_rings(el), (size_t)m->nr);
	cr_assert_eq(perfrec_evlist__nr_evsels(el), 2);
	check_evsels(el, m);

	ev = perfrec_evlist__evsel(el, 1);
	cr_assert_str_eq(ev->name, "cpu-clock");
	cr_assert(ev->attr.sample_type & PERF_SAMPLE_CALLCHAIN);
	cr_assert(ev->attr.freq);
	cr_assert_eq(ev->attr.sample_freq, 1000);
	cr_assert_eq(ev->attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(ev->attr.config, PERF_COUNT_SW_CPU_CLOCK);
	ev = perfrec_evlist__evsel(el, 0);
	cr_assert(ev->attr.mmap2 && ev->attr.comm && ev->attr.task, "side-band lacks tracking bits");
	cr_assert_eq(perfrec_evlist__evsel(el, 2), NULL);

	for (size_t i = 0; i < perfrec_evlist__nr_rings(el); i++) {
		cr_assert_geq(perfrec_evlist__ring_fd(el, i), 0);
		cr_assert_eq(perfrec_evlist__ring_cpu(el, i), m->cpus[i]);
		cr_assert_eq(perfrec_evlist__ring(el, i)->cpu, m->cpus[i]);
		cr_assert_eq(ring_head(perfrec_evlist__ring(el, i)), 0, "ring %zu has data while disabled", i);
	}
	cr_assert_null(perfrec_evlist__ring(el, perfrec_evlist__nr_rings(el)));

	cr_assert_eq(perfrec_evlist__enable(el), 0);
	burn_all(m, 200);
	cr_assert_eq(perfrec_evlist__disable(el), 0);

	/* Every CPU was busy, so every ring got samples through SET_OUTPUT. */
	for (size_t i = 0; i < perfrec_evlist__nr_rings(el); i++)
		cr_assert_gt(ring_head(perfrec_evlist__ring(el, i)), 0, "ring of CPU %d is empty",
			     perfrec_evlist__ring_cpu(el, i));

	/* Live frequency change; period mode cannot be switched to. */
	cr_assert_eq(perfrec_evlist__set_freq(el, 500, 0), 0);
	cr_assert_eq(perfrec_evlist__evsel(el, 1)->attr.sample_freq, 500);
	cr_assert_eq(perfrec_evlist__set_freq(el, 0, 100000), -EINVAL);
	cr_assert_eq(perfrec_evlist__set_freq(el, 0, 0), -EINVAL);

	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist, missing_hardware_event_is_reported_by_name)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };
	int r;

	need_perf();
	m = online();
	s = spec("cycles");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	r = perfrec_evlist__open(el, record_failure, &f);
	if (r == 1) {
		perfrec_evlist__free(el);
		perfrec_cpumap__free(m);
		cr_skip_test("this machine has a PMU: cycles opened");
	}
	cr_assert_lt(r, 0, "open returned %d with nothing opened", r);
	cr_assert_eq(f.calls, 1, "callback called %d times", f.calls);
	cr_assert_str_eq(f.event, "cycles");
	cr_assert_eq(-r, f.err, "open returned %d, callback got errno %d", r, f.err);
	cr_assert_eq(perfrec_evlist__nr_evsels(el), 1, "failed event was kept");
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist, a_failing_event_is_left_out_and_the_rest_records)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s[2];
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };
	uint64_t total = 0;
	int r;

	need_perf();
	m = online();
	s[0] = spec("cycles");
	s[1] = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, s, 2, &o, &el), 0);
	r = perfrec_evlist__open(el, record_failure, &f);
	if (f.calls == 0) {
		perfrec_evlist__free(el);
		perfrec_cpumap__free(m);
		cr_skip_test("this machine has a PMU: cycles opened");
	}
	cr_assert_eq(r, 1);
	cr_assert_eq(f.calls, 1);
	cr_assert_str_eq(f.event, "cycles");
	cr_assert_eq(perfrec_evlist__nr_evsels(el), 2);
	cr_assert_str_eq(perfrec_evlist__evsel(el, 1)->name, "cpu-clock");
	check_evsels(el, m);

	cr_assert_eq(perfrec_evlist__enable(el), 0);
	burn_all(m, 100);
	cr_assert_eq(perfrec_evlist__disable(el), 0);
	for (size_t i = 0; i < perfrec_evlist__nr_rings(el); i++)
		total += ring_head(perfrec_evlist__ring(el, i));
	cr_assert_gt(total, 0, "nothing recorded");

	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist, several_software_events_share_the_rings)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s[3];
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .period = 100000, .clockid = CLOCK_MONOTONIC, .context_switch = true,
	};
	struct failure f = { 0 };

	need_perf();
	m = online();
	s[0] = spec("cpu-clock");
	s[1] = spec("task-clock");
	s[2] = spec("page-faults:u");
	cr_assert_eq(perfrec_evlist__new(m, s, 3, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 3, "failed: %s: %s", f.event,
		     strerror(f.err));
	cr_assert_eq(perfrec_evlist__nr_evsels(el), 4);
	check_evsels(el, m);
	for (size_t e = 1; e < 4; e++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

		cr_assert_eq(ev->attr.freq, 0);
		cr_assert_eq(ev->attr.sample_period, 100000);
		cr_assert_eq(ev->attr.sample_type & PERF_SAMPLE_CALLCHAIN, 0);
		/* With PERIOD the kernel samples page-faults on every hit. */
		cr_assert_eq(ev->attr.sample_type & PERF_SAMPLE_PERIOD, 0, "%s samples carry PERIOD", ev->name);
	}
	cr_assert(perfrec_evlist__evsel(el, 3)->attr.exclude_kernel);
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.context_switch);
	cr_assert_eq(perfrec_evlist__set_freq(el, 0, 200000), 0);
	cr_assert_eq(perfrec_evlist__evsel(el, 2)->attr.sample_period, 200000);
	cr_assert_eq(perfrec_evlist__set_freq(el, 1000, 0), -EINVAL, "switched period to freq mode");
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist, an_old_kernel_gets_the_newest_bits_dropped_and_nothing_more)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };

	need_perf();
	m = online();
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	fake.on = true;
	fake.no_build_id = true;
	fake.no_format_lost = true;
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 1, "failed: %s: %s", f.event,
		     strerror(f.err));
	fake.on = false;
	cr_assert_gt(fake.einval, 0, "the fake kernel was never asked");
	check_evsels(el, m);
	for (size_t e = 0; e < 2; e++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

		cr_assert_eq(ev->attr.read_format & PERF_FORMAT_LOST, 0, "%s kept FORMAT_LOST", ev->name);
		cr_assert_eq(ev->attr.build_id, 0);
		cr_assert(ev->attr.use_clockid, "%s lost use_clockid needlessly", ev->name);
	}
	/* Only what the kernel refused is given up. */
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.cgroup, "cgroup dropped needlessly");
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.namespaces, "namespaces dropped needlessly");
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.ksymbol, "ksymbol dropped needlessly");
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.mmap2);

	cr_assert_eq(perfrec_evlist__enable(el), 0);
	burn_all(m, 50);
	cr_assert_eq(perfrec_evlist__disable(el), 0);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
	memset(&fake, 0, sizeof(fake));
	fake.build_id_bad_cpu = -1;
}

/* perf's exclude_guest default is given up where refused, as perf does, and only there. */
Test(evlist, exclude_guest_is_dropped_where_the_kernel_refuses_it)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };

	need_perf();
	m = online();
	cr_assert(s.attr.exclude_guest, "perf's default");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	fake.on = true;
	fake.no_exclude_guest = true;
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 1, "failed: %s: %s", f.event,
		     strerror(f.err));
	fake.on = false;
	cr_assert_gt(fake.einval, 0, "the fake kernel was never asked");
	cr_assert_eq(perfrec_evlist__evsel(el, 1)->attr.exclude_guest, 0);
	cr_assert(perfrec_evlist__evsel(el, 1)->attr.use_clockid, "use_clockid dropped needlessly");
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.build_id, "build_id dropped needlessly");
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
	memset(&fake, 0, sizeof(fake));
	fake.build_id_bad_cpu = -1;
}

Test(evlist, a_feature_missing_on_a_later_cpu_is_dropped_on_all)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };

	need_perf();
	m = online();
	if (m->nr < 2)
		cr_skip_test("needs two online CPUs");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	fake.on = true;
	fake.no_build_id = true;
	fake.build_id_bad_cpu = m->cpus[m->nr - 1];
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 1);
	fake.on = false;
	cr_assert_eq(fake.einval, 1);
	check_evsels(el, m);
	cr_assert_eq(perfrec_evlist__evsel(el, 0)->attr.build_id, 0);
	/* Not just the recorded attr: the fds really were (re)opened without it. */
	for (size_t i = 0; i < perfrec_evlist__nr_rings(el); i++) {
		int fd = perfrec_evlist__ring_fd(el, i);

		cr_assert(fd >= 0 && fd < 1024);
		cr_assert_eq(fake.build_id_of_fd[fd], 0, "CPU %d side-band opened with build_id",
			     perfrec_evlist__ring_cpu(el, i));
	}
	cr_assert(perfrec_evlist__evsel(el, 0)->attr.read_format & PERF_FORMAT_LOST);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
	memset(&fake, 0, sizeof(fake));
	fake.build_id_bad_cpu = -1;
}

Test(evlist, an_invalid_event_does_not_strip_features_from_the_others)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s[2];
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC };
	struct failure f = { 0 };

	need_perf();
	m = online();
	s[0] = spec("emulation-faults");
	s[1] = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, s, 2, &o, &el), 0);
	fake.on = true;
	fake.bad_sw = true;
	fake.bad_sw_config = PERF_COUNT_SW_EMULATION_FAULTS;
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 1);
	fake.on = false;
	cr_assert_eq(f.calls, 1);
	cr_assert_str_eq(f.event, "emulation-faults");
	cr_assert_eq(f.err, EINVAL);
	cr_assert_eq(f.cpu, m->cpus[0]);
	cr_assert_eq(perfrec_evlist__nr_evsels(el), 2);
	cr_assert_str_eq(perfrec_evlist__evsel(el, 1)->name, "cpu-clock");
	cr_assert(perfrec_evlist__evsel(el, 1)->attr.read_format & PERF_FORMAT_LOST);
	cr_assert(perfrec_evlist__evsel(el, 1)->attr.use_clockid);
	check_evsels(el, m);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
	memset(&fake, 0, sizeof(fake));
	fake.build_id_bad_cpu = -1;
}

Test(evlist, new_rejects_a_clock_the_kernel_does_not_take)
{
	struct perfrec_cpumap *m = NULL;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .freq = 100, .clockid = CLOCK_PROCESS_CPUTIME_ID };

	cr_assert_eq(perfrec_cpumap__parse("0", &m), 0);
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), -EINVAL);
	o.clockid = -1;
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

/* The sampling events' fds, for PERF_EVENT_IOC_SET_BPF: every CPU's, not the side-band's. */
Test(evlist, sample_fds_are_the_sampling_events)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s[2];
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = { .sz = sizeof(o), .period = 100000 };
	struct failure f = { 0 };
	size_t n, want = 0;
	int fds[512], one;

	need_perf();
	m = online();
	s[0] = spec("cpu-clock");
	s[1] = spec("task-clock");
	cr_assert_eq(perfrec_evlist__new(m, s, 2, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__sample_fds(el, fds, 512), 0, "fds before open");
	cr_assert_eq(perfrec_evlist__open(el, record_failure, &f), 2);
	for (size_t e = 1; e < perfrec_evlist__nr_evsels(el); e++)
		want += perfrec_evlist__evsel(el, e)->nr_ids;
	n = perfrec_evlist__sample_fds(el, fds, 512);
	cr_assert_eq(n, want, "%zu fds for %zu sampling ids", n, want);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = 0;
		bool sampling = false;

		cr_assert_eq(ioctl(fds[i], PERF_EVENT_IOC_ID, &id), 0, "fd %d", fds[i]);
		for (size_t e = 1; e < perfrec_evlist__nr_evsels(el); e++) {
			const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, e);

			for (size_t k = 0; k < ev->nr_ids; k++)
				sampling |= ev->ids[k] == id;
		}
		cr_expect(sampling, "fd %d (id %llu) is no sampling event's", fds[i], (unsigned long long)id);
	}
	/* Less room: the count all the same, and only that many written. */
	one = -7;
	cr_assert_eq(perfrec_evlist__sample_fds(el, &one, 1), want);
	cr_expect_eq(one, fds[0]);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}
