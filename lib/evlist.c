// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The events perfrecd records, opened on every CPU of a map.  Per CPU there
 * is one software dummy event that carries the side-band records (MMAP2 with
 * build ids, COMM, TASK, ...) and owns that CPU's ring buffer; every sampling
 * event on the CPU is redirected into it with PERF_EVENT_IOC_SET_OUTPUT, so
 * one ring per CPU holds everything in time order.  All attrs share the same
 * sample_type, hence the same sample_id trailer layout: perf and perfparser
 * decode the id of a non-sample record from that trailer before they know
 * which attr it belongs to, so mixing layouts would make records unreadable.
 *
 * A target other than all tasks crosses the CPU map with a thread map, as
 * libperf does: each event is opened per (CPU, thread) slot, slot index
 * cpu_idx * nr_threads + thread_idx; on each CPU the first side-band slot
 * that opened owns the ring and every other slot of the CPU writes into it.
 * A process is recorded with inherit, so the threads it starts later carry
 * its events (into the same ring) without being opened here.
 *
 * Older kernels reject attr bits they do not know with EINVAL.  Like perf's
 * "missing features" probing, we then drop the newest optional bits one at a
 * time and retry; what had to be dropped is remembered for the whole evlist
 * so every CPU of an event gets the identical attr (the file has one attr per
 * event, not per CPU).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/evlist.h>

#define DEFAULT_MMAP_PAGES 128
#define DEFAULT_FREQ 1000
/* perf record names its side-band event so: counted in host and guest alike. */
#define SIDEBAND_NAME "dummy:HG"
#define MAX_SAMPLE_RATE_PATH "/proc/sys/kernel/perf_event_max_sample_rate"

/*
 * Every attr's sample_type.  IDENTIFIER puts the id at a fixed place in every
 * record; the rest are what a profile needs.  Only CALLCHAIN (sample body,
 * not trailer) and RAW (tracepoints) are ever added per event, and PERIOD
 * is dropped from events that sample by period (sampler_attr()).
 */
#define BASE_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
			  PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/* Optional attr features, in the order they are given up (newest first). */
enum feature {
	F_BUILD_ID,      /* 5.12 */
	F_SAMPLE_CGROUP, /* 5.7, and only with CONFIG_CGROUP_PERF */
	F_CGROUP,        /* 5.7 */
	F_KSYMBOL,       /* 5.1, with bpf_event */
	F_NAMESPACES,    /* 4.12 */
	F_FORMAT_LOST,   /* 6.0 */
	F_CONTEXT_SWITCH, /* 4.3 */
	F_CLOCKID,       /* 4.1 */
	F_COMM_EXEC,     /* 3.16 */
	F_MMAP2,         /* 3.16 */
	F_EXCLUDE_GUEST, /* 3.2; perf's default, which some PMUs refuse, as perf falls back */
	F_NR,
};

struct evsel {
	struct perfrec_evsel pub;     /* first: handed out as const pointer */
	struct perf_event_attr want;  /* before dropping missing features */
	int *fds;                     /* per (CPU, thread) slot, -1: none */
	bool tracepoint;
};

struct ring_slot {
	struct perfrec_ring ring;
	void *base;
	size_t len;
	bool inited;
	int fd;                       /* the side-band fd that owns it (borrowed) */
};

struct perfrec_evlist {
	struct perfrec_cpumap *cpus;
	struct perfrec_evspec *specs;
	size_t nr_specs;

	uint64_t freq, period;
	bool callchain;
	int clockid;
	size_t mmap_pages;
	uint32_t wakeup_bytes;
	bool context_switch;
	uint32_t stack_user;

	int target;                   /* enum perfrec_target_kind */
	int32_t pid;
	int32_t *tids;                /* THREADS: owned copy */
	size_t nr_tids;
	char *cgroup;
	int cgroup_fd;                /* opened at __open(), -1 before */
	int32_t *threads;             /* pid argument per thread slot, at __open() */
	size_t nr_threads;            /* 1 for CPUS and CGROUP */

	unsigned int missing;         /* bit per enum feature */
	size_t page_size;

	struct evsel *evsels;         /* [0] side-band, then samplers opened */
	size_t nr_evsels;
	struct ring_slot *rings;      /* per CPU index, once mapped */
	size_t nr_rings;
	bool opened;
};

int perfrec_evlist__max_sample_rate(void)
{
	char buf[32];
	ssize_t n;
	long v;
	int fd;

	fd = open(MAX_SAMPLE_RATE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? (int)n : -EINVAL;
	buf[n] = '\0';
	v = strtol(buf, NULL, 10);
	if (v <= 0 || v > 0x7fffffff)
		return -EINVAL;
	return (int)v;
}

/*
 * A frequency above the kernel's limit is rejected by perf_event_open with a
 * bare EINVAL; checking first lets the caller say why (it can ask
 * perfrec_evlist__max_sample_rate() for the number).
 */
static int check_rate(uint64_t freq, uint64_t period)
{
	int max;

	if (!freq && !period)
		return -EINVAL;
	if (freq) {
		max = perfrec_evlist__max_sample_rate();
		/* No procfs to ask: let the kernel judge. */
		if (max > 0 && freq > (uint64_t)max)
			return -EINVAL;
	}
	return 0;
}

/* The target's fields, checked and copied (the caller's arrays are borrowed). */
static int copy_target(struct perfrec_evlist *el, const struct perfrec_evlist_opts *opts)
{
	const int32_t *tids = PERFREC_OPTS_GET(opts, tids, (const int32_t *)NULL);
	const char *cg = PERFREC_OPTS_GET(opts, cgroup, (const char *)NULL);

	el->target = PERFREC_OPTS_GET(opts, target, PERFREC_TARGET_CPUS);
	el->pid = PERFREC_OPTS_GET(opts, pid, 0);
	el->nr_tids = PERFREC_OPTS_GET(opts, nr_tids, (size_t)0);
	switch (el->target) {
	case PERFREC_TARGET_CPUS:
		el->nr_tids = 0;
		return 0;
	case PERFREC_TARGET_PROCESS:
		el->nr_tids = 0;
		return el->pid > 0 ? 0 : -EINVAL;
	case PERFREC_TARGET_THREADS:
		if (!tids || !el->nr_tids || el->nr_tids > 65536)
			return -EINVAL;
		for (size_t i = 0; i < el->nr_tids; i++)
			if (tids[i] <= 0)
				return -EINVAL;
		el->tids = malloc(el->nr_tids * sizeof(*el->tids));
		if (!el->tids)
			return -ENOMEM;
		memcpy(el->tids, tids, el->nr_tids * sizeof(*el->tids));
		return 0;
	case PERFREC_TARGET_CGROUP:
		el->nr_tids = 0;
		if (!cg || !*cg)
			return -EINVAL;
		el->cgroup = strdup(cg);
		return el->cgroup ? 0 : -ENOMEM;
	default:
		el->nr_tids = 0;
		return -EINVAL;
	}
}

/*
 * The threads of process @pid now, the leader first.  Only the leader
 * needs to be there: the others exit at will.
 */
static int list_threads(int32_t pid, int32_t **ret, size_t *ret_nr)
{
	char path[64];
	struct dirent *de;
	int32_t *t = NULL, *n;
	size_t nr = 1, cap = 16;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	t = malloc(cap * sizeof(*t));
	if (!t) {
		closedir(d);
		return -ENOMEM;
	}
	t[0] = pid;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || v <= 0 || v > INT32_MAX || v == pid)
			continue;
		if (nr == cap) {
			n = realloc(t, cap * 2 * sizeof(*t));
			if (!n) {
				free(t);
				closedir(d);
				return -ENOMEM;
			}
			t = n;
			cap *= 2;
		}
		t[nr++] = (int32_t)v;
	}
	closedir(d);
	*ret = t;
	*ret_nr = nr;
	return 0;
}

/* The thread map of the target, and the cgroup fd, at __open(). */
static int open_target(struct perfrec_evlist *el)
{
	switch (el->target) {
	case PERFREC_TARGET_PROCESS:
		return list_threads(el->pid, &el->threads, &el->nr_threads);
	case PERFREC_TARGET_THREADS:
		el->threads = malloc(el->nr_tids * sizeof(*el->threads));
		if (!el->threads)
			return -ENOMEM;
		memcpy(el->threads, el->tids, el->nr_tids * sizeof(*el->threads));
		el->nr_threads = el->nr_tids;
		return 0;
	case PERFREC_TARGET_CGROUP:
		el->cgroup_fd = open(el->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (el->cgroup_fd < 0)
			return -errno;
		break;
	default:
		break;
	}
	el->threads = malloc(sizeof(*el->threads));
	if (!el->threads)
		return -ENOMEM;
	el->threads[0] = -1;
	el->nr_threads = 1;
	return 0;
}

static size_t nr_slots(const struct perfrec_evlist *el)
{
	return (size_t)el->cpus->nr * el->nr_threads;
}

static struct perfrec_cpumap *cpumap_dup(const struct perfrec_cpumap *m)
{
	size_t sz = sizeof(*m) + (size_t)m->nr * sizeof(m->cpus[0]);
	struct perfrec_cpumap *c = malloc(sz);

	if (c)
		memcpy(c, m, sz);
	return c;
}

int perfrec_evlist__new(const struct perfrec_cpumap *cpus,
			const struct perfrec_evspec *specs, size_t nr_specs,
			const struct perfrec_evlist_opts *opts,
			struct perfrec_evlist **ret_evlist)
{
	struct perfrec_evlist *el;
	long ps;
	int r;

	if (!cpus || cpus->nr <= 0 || (nr_specs && !specs) || !ret_evlist ||
	    !PERFREC_OPTS_VALID(opts, struct perfrec_evlist_opts))
		return -EINVAL;

	el = calloc(1, sizeof(*el));
	if (!el)
		return -ENOMEM;

	/* Callers that pass no opts (or an older, shorter struct) get defaults. */
	el->freq = PERFREC_OPTS_GET(opts, freq, (uint64_t)DEFAULT_FREQ);
	el->period = PERFREC_OPTS_GET(opts, period, (uint64_t)0);
	el->callchain = PERFREC_OPTS_GET(opts, callchain, false);
	el->clockid = PERFREC_OPTS_GET(opts, clockid, CLOCK_MONOTONIC);
	el->mmap_pages = PERFREC_OPTS_GET(opts, mmap_pages, (size_t)0);
	el->wakeup_bytes = PERFREC_OPTS_GET(opts, wakeup_bytes, (uint32_t)0);
	el->context_switch = PERFREC_OPTS_GET(opts, context_switch, false);
	el->stack_user = PERFREC_OPTS_GET(opts, stack_user, (uint32_t)0);
	if (!el->mmap_pages)
		el->mmap_pages = DEFAULT_MMAP_PAGES;
	el->cgroup_fd = -1;
	r = copy_target(el, opts);
	if (r < 0)
		goto fail;

	if (el->stack_user % 8 || el->stack_user > PERFREC_STACK_USER_MAX) {
		r = -EINVAL;
		goto fail;
	}
#ifndef __x86_64__
	/* The register mask is per architecture; only x86_64's is known here. */
	if (el->stack_user) {
		r = -EOPNOTSUPP;
		goto fail;
	}
#endif
	r = check_rate(el->freq, el->period);
	if (r < 0)
		goto fail;
	/*
	 * The clocks perf_event_open accepts.  Checked here because the kernel
	 * answers a bad one with a bare EINVAL, which the feature probing
	 * below would take for an old kernel and quietly drop use_clockid.
	 */
	switch (el->clockid) {
	case -1:
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_REALTIME:
	case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		break;
	default:
		r = -EINVAL;
		goto fail;
	}
	/* The kernel only maps data areas of 2^n pages. */
	if (el->mmap_pages & (el->mmap_pages - 1)) {
		r = -EINVAL;
		goto fail;
	}
	ps = sysconf(_SC_PAGESIZE);
	el->page_size = ps > 0 ? (size_t)ps : 4096;
	if (el->mmap_pages > SIZE_MAX / el->page_size - 1 ||
	    el->wakeup_bytes >= el->mmap_pages * el->page_size) {
		r = -EINVAL;
		goto fail;
	}

	el->cpus = cpumap_dup(cpus);
	if (!el->cpus) {
		r = -ENOMEM;
		goto fail;
	}
	if (nr_specs) {
		el->specs = calloc(nr_specs, sizeof(*specs));
		if (!el->specs) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(el->specs, specs, nr_specs * sizeof(*specs));
		el->nr_specs = nr_specs;
	}
	*ret_evlist = el;
	return 0;
fail:
	perfrec_evlist__free(el);
	return r;
}

static size_t data_size(const struct perfrec_evlist *el)
{
	return el->mmap_pages * el->page_size;
}

/* Bits shared by the side-band and sampling attrs. */
static void common_attr(const struct perfrec_evlist *el, struct perf_event_attr *a)
{
	a->size = sizeof(*a);
	a->disabled = 1;
	a->sample_id_all = 1;
	/* Each sample names its task's cgroup (perf report --sort cgroup). */
	a->sample_type = BASE_SAMPLE_TYPE | PERF_SAMPLE_CGROUP;
	a->read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
	/*
	 * Wake the reader by bytes, not per sample: it drains in batches.
	 * Half the ring, as the kernel's default and perf record: a quarter
	 * woke perfrecd twice as often as perf for the same bytes, and the
	 * other half still holds ~40 ms of a CPU sampled at 50 kHz with -g.
	 */
	a->watermark = 1;
	a->wakeup_watermark = el->wakeup_bytes ? el->wakeup_bytes : (uint32_t)(data_size(el) / 2);
	if (el->clockid >= 0) {
		a->use_clockid = 1;
		a->clockid = el->clockid;
	}
	/* A process's later threads and children carry its events. */
	if (el->target == PERFREC_TARGET_PROCESS)
		a->inherit = 1;
}

static void sideband_attr(const struct perfrec_evlist *el, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	common_attr(el, a);
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->build_id = 1;
	a->ksymbol = 1;
	a->bpf_event = 1;
	a->cgroup = 1;
	a->namespaces = 1;
	a->context_switch = el->context_switch;
	/* DWARF unwinders read .eh_frame_hdr from the data mappings (as perf). */
	a->mmap_data = el->stack_user != 0;
}

static void sampler_attr(const struct perfrec_evlist *el, const struct perfrec_evspec *spec,
			 struct perf_event_attr *a)
{
	*a = spec->attr;
	common_attr(el, a);
	if (el->callchain) {
		/* Kernel and user frames; sample_max_stack 0 is the sysctl default. */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 0;
		a->exclude_callchain_kernel = 0;
		if (el->stack_user) {
			/*
			 * DWARF mode, as perf record --call-graph dwarf: the
			 * kernel walks only kernel frames, and the user part is
			 * the registers plus a copy of the stack from SP up,
			 * unwound later with the binaries' CFI.
			 */
			a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a->sample_regs_user = PERFREC_REGS_USER_X86_64;
			a->sample_stack_user = el->stack_user;
			a->exclude_callchain_user = 1;
		}
	}
	if (a->type == PERF_TYPE_TRACEPOINT) {
		/* Every hit, with its payload, as perf record does for tracepoints. */
		a->sample_type |= PERF_SAMPLE_RAW;
		a->freq = 0;
		a->sample_period = 1;
	} else if (el->freq) {
		a->freq = 1;
		a->sample_freq = el->freq;
	} else {
		a->freq = 0;
		a->sample_period = el->period;
		/*
		 * No PERIOD in the sample, as perf record -c does: the kernel
		 * reads PERIOD on a counting software event (page-faults,
		 * context-switches...) without freq as "sample every event,
		 * with the count as its period" (perf_swevent_event()), which
		 * ignores sample_period.  Readers take a sample's period from
		 * its attr when the sample has none.
		 */
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	}
}

static bool has_feature(const struct perf_event_attr *a, enum feature f)
{
	switch (f) {
	case F_SAMPLE_CGROUP: return a->sample_type & PERF_SAMPLE_CGROUP;
	case F_BUILD_ID: return a->build_id;
	case F_CGROUP: return a->cgroup;
	case F_KSYMBOL: return a->ksymbol || a->bpf_event;
	case F_NAMESPACES: return a->namespaces;
	case F_FORMAT_LOST: return a->read_format & PERF_FORMAT_LOST;
	case F_CONTEXT_SWITCH: return a->context_switch;
	case F_CLOCKID: return a->use_clockid;
	case F_COMM_EXEC: return a->comm_exec;
	case F_MMAP2: return a->mmap2;
	case F_EXCLUDE_GUEST: return a->exclude_guest || a->exclude_host;
	case F_NR: break;
	}
	return false;
}

static void apply_missing(struct perf_event_attr *a, const struct perf_event_attr *want,
			  unsigned int missing)
{
	*a = *want;
	if (missing & (1u << F_SAMPLE_CGROUP))
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_CGROUP;
	if (missing & (1u << F_BUILD_ID))
		a->build_id = 0;
	if (missing & (1u << F_CGROUP))
		a->cgroup = 0;
	if (missing & (1u << F_KSYMBOL)) {
		a->ksymbol = 0;
		a->bpf_event = 0;
	}
	if (missing & (1u << F_NAMESPACES))
		a->namespaces = 0;
	if (missing & (1u << F_FORMAT_LOST))
		a->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
	if (missing & (1u << F_CONTEXT_SWITCH))
		a->context_switch = 0;
	if (missing & (1u << F_CLOCKID)) {
		a->use_clockid = 0;
		a->clockid = 0;
	}
	if (missing & (1u << F_COMM_EXEC))
		a->comm_exec = 0;
	if (missing & (1u << F_MMAP2)) {
		/* build ids ride on MMAP2 only */
		a->mmap2 = 0;
		a->build_id = 0;
	}
	if (missing & (1u << F_EXCLUDE_GUEST)) {
		a->exclude_guest = 0;
		a->exclude_host = 0;
	}
}

/* Where slot @t of @ev opens: (pid argument, extra flags). */
static int slot_pid(const struct perfrec_evlist *el, const struct evsel *ev, size_t t,
		    unsigned long *ret_flags)
{
	*ret_flags = 0;
	if (el->target == PERFREC_TARGET_CGROUP) {
		/*
		 * The side-band stays host-wide: a task's MMAP2 and COMM come
		 * before it may move into the cgroup, and readers need them.
		 */
		if (ev->pub.is_sideband)
			return -1;
		*ret_flags = PERF_FLAG_PID_CGROUP;
		return el->cgroup_fd;
	}
	return el->threads[t];
}

static int sys_perf_event_open(struct perf_event_attr *a, int pid, int cpu, unsigned long flags)
{
	int fd = (int)syscall(__NR_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

/*
 * Open @ev on @cpu with the evlist's missing features applied.  On EINVAL
 * give up optional bits newest first until the kernel accepts the event,
 * then try to win back each bit given up on the way but the last, since
 * EINVAL does not say which bit was the problem.  The enlarged missing set
 * is kept only if the event opened, so an event that is simply invalid (a
 * bad raw config, a bad clockid) does not strip features from the others.
 */
static int open_probe(struct perfrec_evlist *el, const struct evsel *ev, int pid, int cpu,
		      unsigned long flags)
{
	struct perf_event_attr a;
	unsigned int missing = el->missing, dropped;
	int fd, fd2, first, f;

	apply_missing(&a, &ev->want, missing);
	fd = sys_perf_event_open(&a, pid, cpu, flags);
	if (fd >= 0 || fd != -EINVAL)
		return fd;
	first = fd;
	for (f = 0; f < F_NR; f++) {
		if ((missing & (1u << f)) || !has_feature(&a, (enum feature)f))
			continue;
		missing |= 1u << f;
		apply_missing(&a, &ev->want, missing);
		fd = sys_perf_event_open(&a, pid, cpu, flags);
		if (fd >= 0 || fd != -EINVAL)
			break;
	}
	if (fd < 0)
		return first;

	dropped = missing & ~el->missing & ~(1u << f);
	for (int g = 0; g < F_NR; g++) {
		if (!(dropped & (1u << g)))
			continue;
		apply_missing(&a, &ev->want, missing & ~(1u << g));
		fd2 = sys_perf_event_open(&a, pid, cpu, flags);
		if (fd2 >= 0) {
			close(fd);
			fd = fd2;
			missing &= ~(1u << g);
		}
	}
	el->missing = missing;
	return fd;
}

static void close_evsel_fds(struct perfrec_evlist *el, struct evsel *ev)
{
	for (size_t i = 0; ev->fds && i < nr_slots(el); i++) {
		if (ev->fds[i] >= 0)
			close(ev->fds[i]);
		ev->fds[i] = -1;
	}
	ev->pub.nr_ids = 0;
}

static void evsel_exit(struct perfrec_evlist *el, struct evsel *ev)
{
	close_evsel_fds(el, ev);
	free(ev->fds);
	free(ev->pub.ids);
	free(ev->pub.cpus);
	memset(ev, 0, sizeof(*ev));
}

static int evsel_init(struct perfrec_evlist *el, struct evsel *ev, const char *name,
		      const struct perf_event_attr *want, bool sideband)
{
	size_t n = nr_slots(el);

	memset(ev, 0, sizeof(*ev));
	snprintf(ev->pub.name, sizeof(ev->pub.name), "%s", name);
	ev->pub.is_sideband = sideband;
	ev->want = *want;
	ev->tracepoint = want->type == PERF_TYPE_TRACEPOINT;
	ev->fds = malloc(n * sizeof(*ev->fds));
	ev->pub.ids = calloc(n, sizeof(*ev->pub.ids));
	ev->pub.cpus = calloc(n, sizeof(*ev->pub.cpus));
	if (!ev->fds || !ev->pub.ids || !ev->pub.cpus)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ev->fds[i] = -1;
	return 0;
}

/*
 * Open @ev on every (CPU, thread) slot.  Samplers are redirected into the
 * ring of their CPU (which must already be mapped: the kernel refuses
 * SET_OUTPUT to an event without a buffer); the side-band's own extra slots
 * are redirected by redirect_sideband() once the rings exist.  A thread
 * that exited (ESRCH) leaves its slot empty.  On failure every fd of @ev
 * is closed, and *ret_cpu names the CPU that failed.
 */
static int evsel_open(struct perfrec_evlist *el, struct evsel *ev, int *ret_cpu)
{
	size_t n = nr_slots(el), nthr = el->nr_threads, opened;
	unsigned long flags;
	unsigned int start;
	uint64_t id;
	int fd, pid, r, cpu = -1;

restart:
	start = el->missing;
	opened = 0;
	for (size_t i = 0; i < n; i++) {
		cpu = el->cpus->cpus[i / nthr];
		pid = slot_pid(el, ev, i % nthr, &flags);
		fd = open_probe(el, ev, pid, cpu, flags);
		if (fd == -ESRCH && pid > 0)
			continue;
		if (fd < 0) {
			r = fd;
			goto fail;
		}
		ev->fds[i] = fd;
		/*
		 * A later slot needed to give up a feature the earlier ones kept:
		 * reopen them all so the event has one attr everywhere.
		 */
		if (el->missing != start) {
			if (opened > 0) {
				close_evsel_fds(el, ev);
				goto restart;
			}
			start = el->missing;
		}
		opened++;
		if (!ev->pub.is_sideband &&
		    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, el->rings[i / nthr].fd) < 0) {
			r = -errno;
			goto fail;
		}
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0) {
			r = -errno;
			goto fail;
		}
		ev->pub.ids[ev->pub.nr_ids] = id;
		ev->pub.cpus[ev->pub.nr_ids] = cpu;
		ev->pub.nr_ids++;
	}
	if (!opened) {
		/* Every thread of the target is gone. */
		r = -ESRCH;
		goto fail;
	}
	apply_missing(&ev->pub.attr, &ev->want, el->missing);
	return 0;
fail:
	close_evsel_fds(el, ev);
	*ret_cpu = cpu;
	return r;
}

/* The side-band slots of a CPU other than the ring's owner write into it. */
static int redirect_sideband(struct perfrec_evlist *el)
{
	const struct evsel *sb = &el->evsels[0];

	for (size_t i = 0; i < nr_slots(el); i++) {
		int fd = sb->fds[i], owner = el->rings[i / el->nr_threads].fd;

		if (fd >= 0 && fd != owner && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, owner) < 0)
			return -errno;
	}
	return 0;
}

static int map_rings(struct perfrec_evlist *el)
{
	const struct evsel *sb = &el->evsels[0];
	size_t n = (size_t)el->cpus->nr;
	int r;

	el->rings = calloc(n, sizeof(*el->rings));
	if (!el->rings)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ring_slot *s = &el->rings[i];
		size_t len = el->page_size + data_size(el);

		/* The CPU's first side-band slot that opened owns its ring. */
		s->fd = -1;
		for (size_t t = 0; t < el->nr_threads && s->fd < 0; t++)
			s->fd = sb->fds[i * el->nr_threads + t];
		if (s->fd < 0)
			return -ESRCH;

		/*
		 * Writable so we can store data_tail: the kernel then never
		 * overwrites unread data.  EPERM/ENOMEM here mostly mean the
		 * locked-memory limit (kernel.perf_event_mlock_kb plus
		 * RLIMIT_MEMLOCK) was exceeded by an unprivileged caller.
		 */
		s->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
		if (s->base == MAP_FAILED) {
			s->base = NULL;
			return -errno;
		}
		s->len = len;
		el->nr_rings = i + 1;
		r = perfrec_ring__init(&s->ring, s->base, el->page_size, data_size(el),
				       el->cpus->cpus[i]);
		if (r < 0)
			return r;
		s->inited = true;
	}
	return 0;
}

int perfrec_evlist__open(struct perfrec_evlist *el, perfrec_evlist_err_fn cb, void *ctx)
{
	struct perf_event_attr want;
	int r, cpu = -1, last_err = 0, opened = 0;

	if (!el || el->opened)
		return -EINVAL;
	el->opened = true;

	el->evsels = calloc(1 + el->nr_specs, sizeof(*el->evsels));
	if (!el->evsels)
		return -ENOMEM;
	r = open_target(el);
	if (r < 0)
		return r;

	/* The side-band event owns the rings: without it nothing can record. */
	sideband_attr(el, &want);
	el->nr_evsels = 1;
	r = evsel_init(el, &el->evsels[0], SIDEBAND_NAME, &want, true);
	if (r < 0)
		return r;
	r = evsel_open(el, &el->evsels[0], &cpu);
	if (r < 0) {
		if (cb)
			cb(ctx, SIDEBAND_NAME, cpu, -r);
		return r;
	}
	r = map_rings(el);
	if (r < 0)
		return r;
	r = redirect_sideband(el);
	if (r < 0)
		return r;

	for (size_t i = 0; i < el->nr_specs; i++) {
		struct evsel *ev = &el->evsels[el->nr_evsels];

		sampler_attr(el, &el->specs[i], &want);
		r = evsel_init(el, ev, el->specs[i].name, &want, false);
		if (r < 0)
			return r;
		r = evsel_open(el, ev, &cpu);
		if (r < 0) {
			/* Reported once, left out everywhere; the rest still record. */
			if (cb)
				cb(ctx, el->specs[i].name, cpu, -r);
			evsel_exit(el, ev);
			last_err = r;
			continue;
		}
		el->nr_evsels++;
		opened++;
	}
	if (!opened && el->nr_specs)
		return last_err;
	return opened;
}

static int ioctl_all(struct perfrec_evlist *el, unsigned long req)
{
	int r = 0;

	if (!el)
		return -EINVAL;
	for (size_t e = 0; e < el->nr_evsels; e++) {
		struct evsel *ev = &el->evsels[e];

		for (size_t i = 0; i < nr_slots(el); i++)
			if (ev->fds[i] >= 0 && ioctl(ev->fds[i], req, 0) < 0)
				r = -errno;
	}
	return r;
}

int perfrec_evlist__enable(struct perfrec_evlist *el)
{
	return ioctl_all(el, PERF_EVENT_IOC_ENABLE);
}

int perfrec_evlist__disable(struct perfrec_evlist *el)
{
	return ioctl_all(el, PERF_EVENT_IOC_DISABLE);
}

int perfrec_evlist__set_freq(struct perfrec_evlist *el, uint64_t freq, uint64_t period)
{
	int r;

	if (!el)
		return -EINVAL;
	r = check_rate(freq, period);
	if (r < 0)
		return r;
	/*
	 * PERF_EVENT_IOC_PERIOD sets sample_freq on a freq event and
	 * sample_period otherwise; it cannot switch between the two modes.
	 */
	if (el->opened && (freq ? !el->freq : !!el->freq))
		return -EINVAL;

	for (size_t e = 1; e < el->nr_evsels; e++) {
		struct evsel *ev = &el->evsels[e];
		uint64_t v = freq ? freq : period;

		/* Tracepoints record every hit; their period stays 1. */
		if (ev->tracepoint)
			continue;
		/*
		 * cpu-clock and task-clock run on an hrtimer: at open the kernel
		 * turns their frequency into a fixed period in ns and clears
		 * attr.freq, so the ioctl then takes a period: a frequency given
		 * as is would become a period of that many ns.
		 */
		if (freq && ev->want.type == PERF_TYPE_SOFTWARE &&
		    (ev->want.config == PERF_COUNT_SW_CPU_CLOCK || ev->want.config == PERF_COUNT_SW_TASK_CLOCK))
			v = freq < 1000000000ULL ? 1000000000ULL / freq : 1;
		for (size_t i = 0; i < nr_slots(el); i++)
			if (ev->fds[i] >= 0 && ioctl(ev->fds[i], PERF_EVENT_IOC_PERIOD, &v) < 0)
				return -errno;
		if (freq) {
			ev->want.sample_freq = freq;
			ev->pub.attr.sample_freq = freq;
		} else {
			ev->want.sample_period = period;
			ev->pub.attr.sample_period = period;
		}
	}
	el->freq = freq;
	el->period = freq ? el->period : period;
	return 0;
}

size_t perfrec_evlist__nr_rings(const struct perfrec_evlist *el)
{
	return el ? el->nr_rings : 0;
}

struct perfrec_ring *perfrec_evlist__ring(struct perfrec_evlist *el, size_t idx)
{
	if (!el || idx >= el->nr_rings)
		return NULL;
	return &el->rings[idx].ring;
}

int perfrec_evlist__ring_fd(const struct perfrec_evlist *el, size_t idx)
{
	if (!el || idx >= el->nr_rings)
		return -EINVAL;
	return el->rings[idx].fd;
}

int perfrec_evlist__ring_cpu(const struct perfrec_evlist *el, size_t idx)
{
	if (!el || idx >= el->nr_rings)
		return -EINVAL;
	return el->cpus->cpus[idx];
}

size_t perfrec_evlist__nr_evsels(const struct perfrec_evlist *el)
{
	return el ? el->nr_evsels : 0;
}

size_t perfrec_evlist__sample_fds(const struct perfrec_evlist *el, int *fds, size_t max)
{
	size_t n = 0;

	for (size_t e = 0; el && e < el->nr_evsels; e++) {
		const struct evsel *ev = &el->evsels[e];

		if (ev->pub.is_sideband || !ev->fds)
			continue;
		for (size_t i = 0; i < nr_slots(el); i++) {
			if (ev->fds[i] < 0)
				continue;
			if (n < max)
				fds[n] = ev->fds[i];
			n++;
		}
	}
	return n;
}

const struct perfrec_evsel *perfrec_evlist__evsel(const struct perfrec_evlist *el, size_t idx)
{
	if (!el || idx >= el->nr_evsels)
		return NULL;
	return &el->evsels[idx].pub;
}

void perfrec_evlist__free(struct perfrec_evlist *el)
{
	if (!el)
		return;
	/* Unmap before closing: the mapping keeps the buffer alive anyway. */
	for (size_t i = 0; i < el->nr_rings; i++) {
		struct ring_slot *s = &el->rings[i];

		if (s->inited)
			perfrec_ring__exit(&s->ring);
		if (s->base)
			munmap(s->base, s->len);
	}
	free(el->rings);
	/* nr_evsels + 1: a sampler half-way through open may hold memory. */
	for (size_t e = 0; el->evsels && e <= el->nr_evsels && e <= el->nr_specs; e++)
		evsel_exit(el, &el->evsels[e]);
	free(el->evsels);
	free(el->specs);
	free(el->cpus);
	free(el->tids);
	free(el->threads);
	free(el->cgroup);
	if (el->cgroup_fd >= 0)
		close(el->cgroup_fd);
	free(el);
}
