// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evlist targets: the CPU map crossed with a process (inherit, threads
 * started later included), a set of threads, or a cgroup.  The option
 * checks run anywhere; the recordings need root and perf_event_open, and
 * check against the real kernel which tasks' samples reach the rings.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/evlist.h>
#include <perfrec/event.h>

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

Test(evlist_target, options_are_checked)
{
	static const int32_t good_tids[] = { 1, 2 }, bad_tids[] = { 5, 0 };
	static const struct {
		const char *what;
		int target;
		int32_t pid;
		const int32_t *tids;
		size_t nr_tids;
		const char *cgroup;
		int want;
	} t[] = {
		{ "all CPUs", PERFREC_TARGET_CPUS, 0, NULL, 0, NULL, 0 },
		{ "a process", PERFREC_TARGET_PROCESS, 1, NULL, 0, NULL, 0 },
		{ "a process without pid", PERFREC_TARGET_PROCESS, 0, NULL, 0, NULL, -EINVAL },
		{ "a negative pid", PERFREC_TARGET_PROCESS, -4, NULL, 0, NULL, -EINVAL },
		{ "threads", PERFREC_TARGET_THREADS, 0, good_tids, 2, NULL, 0 },
		{ "threads without a list", PERFREC_TARGET_THREADS, 0, NULL, 2, NULL, -EINVAL },
		{ "an empty thread list", PERFREC_TARGET_THREADS, 0, good_tids, 0, NULL, -EINVAL },
		{ "a tid of 0", PERFREC_TARGET_THREADS, 0, bad_tids, 2, NULL, -EINVAL },
		{ "a cgroup", PERFREC_TARGET_CGROUP, 0, NULL, 0, "/sys/fs/cgroup", 0 },
		{ "a cgroup without path", PERFREC_TARGET_CGROUP, 0, NULL, 0, NULL, -EINVAL },
		{ "an empty cgroup path", PERFREC_TARGET_CGROUP, 0, NULL, 0, "", -EINVAL },
		{ "an unknown target", 4, 1, good_tids, 2, "/", -EINVAL },
	};
	struct perfrec_cpumap *m = NULL;
	struct perfrec_evspec s = spec("cpu-clock");

	cr_assert_eq(perfrec_cpumap__parse("0", &m), 0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct perfrec_evlist_opts o = {
			.sz = sizeof(o), .freq = 100, .target = t[i].target, .pid = t[i].pid,
			.tids = t[i].tids, .nr_tids = t[i].nr_tids, .cgroup = t[i].cgroup,
		};
		struct perfrec_evlist *el = NULL;

		cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), t[i].want, "%s", t[i].what);
		cr_assert_eq(el != NULL, t[i].want == 0, "%s", t[i].what);
		perfrec_evlist__free(el);
	}
	{
		/* An opts from before targets: all CPUs, whatever follows it. */
		struct {
			struct perfrec_evlist_opts o;
		} old = { .o = { .freq = 100, .target = 99 } };
		struct perfrec_evlist *el = NULL;

		old.o.sz = offsetof(struct perfrec_evlist_opts, target);
		cr_assert_eq(perfrec_evlist__new(m, &s, 1, &old.o, &el), 0);
		perfrec_evlist__free(el);
	}
	perfrec_cpumap__free(m);
}

/* Skips unless this process may open a software event on itself. */
static void need_perf(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
	};
	int fd = (int)syscall(__NR_perf_event_open, &a, 0, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		cr_skip_test("perf_event_open does not work here: %s", strerror(errno));
	close(fd);
}

struct spinner {
	pthread_t th;
	volatile int tid;
	volatile int go, stop;
};

static volatile unsigned long sink;

static void *spin(void *arg)
{
	struct spinner *sp = arg;

	sp->tid = (int)syscall(SYS_gettid);
	while (!sp->go)
		sched_yield();
	while (!sp->stop)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
	return NULL;
}

struct seen {
	size_t samples;
	size_t of_tid;   /* samples of the thread looked for */
	size_t foreign;  /* samples of other processes */
	size_t other_tid; /* samples of threads other than the one looked for */
};

/* Read every ring's samples, counting whose they are. */
static void read_rings(struct perfrec_evlist *el, int tid, struct seen *s)
{
	for (size_t i = 0; i < perfrec_evlist__nr_rings(el); i++) {
		struct perfrec_ring *r = perfrec_evlist__ring(el, i);
		const struct perf_event_header *h;
		struct perfrec_ring_batch b;

		cr_assert_geq(perfrec_ring__begin(r, &b), 0);
		while (perfrec_ring__next(r, &b, &h) > 0) {
			const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, 1);
			struct perfrec_sample smp;

			if (h->type != PERF_RECORD_SAMPLE)
				continue;
			cr_assert_eq(perfrec_sample__parse(h, ev->attr.sample_type, ev->attr.read_format,
							   &smp), 0);
			s->samples++;
			if ((pid_t)smp.pid != getpid())
				s->foreign++;
			if ((int)smp.tid == tid)
				s->of_tid++;
			else
				s->other_tid++;
		}
		perfrec_ring__commit(r, &b);
	}
}

/* Poll the rings (bounded) until @sp's thread has samples in them. */
static void wait_for_samples(struct perfrec_evlist *el, struct spinner *sp, struct seen *s)
{
	for (int i = 0; i < 1000 && !s->of_tid; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		read_rings(el, sp->tid, s);
	}
}

Test(evlist_target, a_process_records_threads_it_starts_later)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC, .mmap_pages = 16,
		.target = PERFREC_TARGET_PROCESS, .pid = getpid(),
	};
	struct spinner sp = { .go = 1 };
	struct seen seen = { 0 };

	need_perf();
	m = online();
	s = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), 1);
	cr_assert(perfrec_evlist__evsel(el, 1)->attr.inherit, "a process is recorded with inherit");
	cr_assert_eq(perfrec_evlist__nr_rings(el), (size_t)m->nr, "one ring per CPU");
	cr_assert_eq(perfrec_evlist__enable(el), 0);
	/* Started after open: only inherit can bring its samples. */
	cr_assert_eq(pthread_create(&sp.th, NULL, spin, &sp), 0);
	while (!sp.tid)
		sched_yield();
	wait_for_samples(el, &sp, &seen);
	sp.stop = 1;
	pthread_join(sp.th, NULL);
	cr_assert_eq(perfrec_evlist__disable(el), 0);
	read_rings(el, sp.tid, &seen);
	cr_assert_gt(seen.of_tid, 0, "no samples of thread %d started after open (%zu samples)",
		     sp.tid, seen.samples);
	cr_assert_eq(seen.foreign, 0, "%zu samples of other processes", seen.foreign);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist_target, threads_records_only_the_listed_ones)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct spinner in = { 0 }, out = { 0 };
	struct seen seen = { 0 };
	int32_t tid;

	need_perf();
	cr_assert_eq(pthread_create(&in.th, NULL, spin, &in), 0);
	cr_assert_eq(pthread_create(&out.th, NULL, spin, &out), 0);
	while (!in.tid || !out.tid)
		sched_yield();
	tid = in.tid;

	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC, .mmap_pages = 16,
		.target = PERFREC_TARGET_THREADS, .tids = &tid, .nr_tids = 1,
	};
	m = online();
	s = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	tid = -1; /* copied by __new() */
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), 1);
	cr_assert_not(perfrec_evlist__evsel(el, 1)->attr.inherit);
	cr_assert_eq(perfrec_evlist__enable(el), 0);
	in.go = out.go = 1;
	wait_for_samples(el, &in, &seen);
	in.stop = out.stop = 1;
	pthread_join(in.th, NULL);
	pthread_join(out.th, NULL);
	cr_assert_eq(perfrec_evlist__disable(el), 0);
	read_rings(el, in.tid, &seen);
	cr_assert_gt(seen.of_tid, 0, "no samples of the listed thread");
	cr_assert_eq(seen.other_tid, 0, "%zu samples of threads not listed (spinning %d among them)",
		     seen.other_tid, out.tid);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist_target, a_process_that_is_gone_is_esrch)
{
	struct perfrec_cpumap *m;
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 100, .target = PERFREC_TARGET_PROCESS,
		.pid = 0x3ffffff0, /* above any pid_max */
	};

	m = online();
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), -ESRCH);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

static char cg[128];
static pid_t child = -1;

/* Whatever the test's outcome: no spinning child, no cgroup left. */
static void cgroup_cleanup(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (*cg)
		rmdir(cg);
}

/* A cgroup: the samples of its member, none of ours, through cgroup2. */
Test(evlist_target, a_cgroup_records_its_members_only, .fini = cgroup_cleanup)
{
	char procs[160], line[32];
	struct perfrec_cpumap *m;
	struct perfrec_evspec s;
	struct perfrec_evlist *el = NULL;
	struct spinner us = { .go = 1 };
	struct seen seen = { 0 };
	int go[2], fd;

	need_perf();
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/unified/test-evlist-target-%d", (int)getpid());
	if (access("/sys/fs/cgroup/unified/cgroup.procs", W_OK) < 0 || mkdir(cg, 0755) < 0) {
		*cg = '\0';
		cr_skip_test("cannot create a cgroup2 group here");
	}
	cr_assert_eq(pipe(go), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Spins once it is in the cgroup and told to, until killed. */
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (;;)
			sink++;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	snprintf(line, sizeof(line), "%d\n", (int)child);
	cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	close(fd);

	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 1000, .clockid = CLOCK_MONOTONIC, .mmap_pages = 16,
		.target = PERFREC_TARGET_CGROUP, .cgroup = cg,
	};
	m = online();
	s = spec("cpu-clock");
	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), 1);
	cr_assert_eq(perfrec_evlist__enable(el), 0);
	cr_assert_eq(write(go[1], "g", 1), 1);
	/* We spin as well, outside the cgroup. */
	cr_assert_eq(pthread_create(&us.th, NULL, spin, &us), 0);
	for (int i = 0; i < 1000 && seen.foreign < 50; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		read_rings(el, -1, &seen);
	}
	us.stop = 1;
	pthread_join(us.th, NULL);
	cr_assert_eq(perfrec_evlist__disable(el), 0);
	read_rings(el, -1, &seen);
	/* read_rings counts samples not of this process as foreign. */
	cr_assert_gt(seen.foreign, 0, "no samples of the cgroup's member");
	cr_assert_eq(seen.foreign, seen.samples, "%zu samples from outside the cgroup",
		     seen.samples - seen.foreign);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}

Test(evlist_target, a_cgroup_that_does_not_exist_is_enoent)
{
	struct perfrec_cpumap *m = online();
	struct perfrec_evspec s = spec("cpu-clock");
	struct perfrec_evlist *el = NULL;
	struct perfrec_evlist_opts o = {
		.sz = sizeof(o), .freq = 100, .target = PERFREC_TARGET_CGROUP, .cgroup = "/nonexistent/cg",
	};

	cr_assert_eq(perfrec_evlist__new(m, &s, 1, &o, &el), 0);
	cr_assert_eq(perfrec_evlist__open(el, NULL, NULL), -ENOENT);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
}
