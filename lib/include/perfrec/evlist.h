/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The set of events perfrecd opens: per CPU, one dummy side-band event that
 * owns the ring buffer (MMAP2 with build ids, COMM with exec, TASK, ...) and
 * every sampling event redirected into it with PERF_EVENT_IOC_SET_OUTPUT.
 * Every attr carries sample_id_all and PERF_SAMPLE_IDENTIFIER.
 *
 * What is recorded is the CPU map crossed with a target, as libperf crosses
 * its CPU and thread maps: all tasks (the default), one process, a set of
 * threads, or a cgroup.  For a process or threads each event is opened once
 * per thread and CPU, and all of a CPU's events still share one ring.
 *
 * Not thread-safe: one thread drives an evlist (rings may be read by the
 * thread that drives it while nothing else calls into it).
 */
#ifndef PERFREC_EVLIST_H
#define PERFREC_EVLIST_H

#include <perfrec/cpumap.h>
#include <perfrec/evspec.h>
#include <perfrec/ring.h>

struct perfrec_evlist_opts {
	size_t sz;
	uint64_t freq;          /* sample_freq; 0: use period */
	uint64_t period;        /* sample_period when freq == 0 */
	bool callchain;         /* PERF_SAMPLE_CALLCHAIN (frame pointers) */
	int clockid;            /* use_clockid; -1: the kernel's perf clock;
				   MONOTONIC, MONOTONIC_RAW, REALTIME, BOOTTIME, TAI */
	size_t mmap_pages;      /* data pages per ring, a power of 2 (0: 128) */
	uint32_t wakeup_bytes;  /* watermark; 0: half the ring */
	bool context_switch;    /* PERF_RECORD_SWITCH on the side-band event */
	/*
	 * The target (since LIBPERFREC_0.1; an older opts records all tasks):
	 *   PERFREC_TARGET_CPUS     every task on the map's CPUs
	 *   PERFREC_TARGET_PROCESS  process @pid: each of its threads at open
	 *                           time with inherit, so threads and children
	 *                           it starts later are recorded too
	 *   PERFREC_TARGET_THREADS  exactly the @nr_tids threads @tids, no
	 *                           inherit (copied by __new())
	 *   PERFREC_TARGET_CGROUP   tasks in the cgroup directory @cgroup (a
	 *                           cgroup2 or perf_event v1 path); side-band
	 *                           records stay host-wide, so tasks that enter
	 *                           the cgroup later are still described
	 */
	int target;
	int32_t pid;
	const int32_t *tids;
	size_t nr_tids;
	const char *cgroup;
	/*
	 * DWARF callchains (with callchain): bytes of user stack copied per
	 * sample with the user registers, for unwinding later; the kernel
	 * then walks only the kernel part.  0: frame pointers.  A multiple of
	 * 8, at most PERFREC_STACK_USER_MAX.
	 */
	uint32_t stack_user;
};

enum perfrec_target_kind {
	PERFREC_TARGET_CPUS = 0,
	PERFREC_TARGET_PROCESS = 1,
	PERFREC_TARGET_THREADS = 2,
	PERFREC_TARGET_CGROUP = 3,
};

#define PERFREC_STACK_USER_MAX 65528u
#define PERFREC_STACK_USER_DEFAULT 8192u
/*
 * The user registers perf copies for DWARF unwinding on x86_64: every
 * general register, ip, sp and flags, all but the segment registers
 * (perf's PERF_REGS_MASK).
 */
#define PERFREC_REGS_USER_X86_64 0xff0fffULL

/* One opened event (a spec, or the side-band dummy) across all CPUs. */
struct perfrec_evsel {
	char name[PERFREC_EVSPEC_NAME_MAX];
	struct perf_event_attr attr; /* as the kernel accepted it */
	size_t nr_ids;
	uint64_t *ids;               /* one per CPU (and thread) opened */
	int *cpus;                   /* CPU of ids[i] */
	bool is_sideband;
};

struct perfrec_evlist;

/*
 * Called once per event that could not be opened, with the CPU it failed on
 * and the kernel's errno (positive, e.g. ENOENT for a PMU event in a VM).
 */
typedef void (*perfrec_evlist_err_fn)(void *ctx, const char *event, int cpu, int err);

/*
 * Copy @cpus, @specs and @opts into a new evlist (nothing is opened yet).
 * NULL @opts, or fields past an older opts' sz, mean: freq 1000, clockid
 * CLOCK_MONOTONIC, 128 pages.  Returns -EINVAL when freq and period are both
 * 0, when freq exceeds perfrec_evlist__max_sample_rate(), when mmap_pages
 * is not a power of 2, for a clockid perf_event_open does not take, for an
 * unknown target, a PROCESS target without a pid > 0, THREADS without tids
 * (or a tid <= 0), CGROUP without a path, and for a stack_user that is not
 * a multiple of 8 or passes PERFREC_STACK_USER_MAX; -EOPNOTSUPP for
 * stack_user off x86_64.  The caller owns the result (perfrec_evlist__free()).
 */
PERFREC_API int perfrec_evlist__new(const struct perfrec_cpumap *cpus,
				    const struct perfrec_evspec *specs, size_t nr_specs,
				    const struct perfrec_evlist_opts *opts,
				    struct perfrec_evlist **ret_evlist);

/*
 * Open everything (disabled), SET_OUTPUT into each CPU's side-band event,
 * mmap the rings.  An event that fails on a CPU is reported through @cb and
 * left out (on every CPU).  Attr bits an older kernel refuses with EINVAL
 * (build_id, cgroup, ksymbol, PERF_FORMAT_LOST, ...) are dropped for every
 * event and CPU alike; evsel->attr says what was kept.  Every attr has the
 * same sample_id trailer layout; tracepoints sample every hit (period 1)
 * and add PERF_SAMPLE_RAW.  Returns the number of sampling events opened
 * (> 0), or a negative errno: that of the last failure when none opened.
 * A PROCESS target lists its threads in /proc/<pid>/task; one that is gone
 * gives -ESRCH, and a thread that exits meanwhile is left out.  A thread
 * that a not yet opened thread starts while this runs can be missed, as
 * with perf record -p.  Such targets take one fd per event, CPU and
 * thread: a process of many threads needs RLIMIT_NOFILE to match (-EMFILE
 * otherwise).  A CGROUP path that cannot be opened gives its -errno
 * (-ENOENT...).
 */
PERFREC_API int perfrec_evlist__open(struct perfrec_evlist *el, perfrec_evlist_err_fn cb, void *ctx);

/*
 * Enable or disable every event on every CPU and thread (PERF_EVENT_IOC_*).
 * Returns 0, or the -errno of the last ioctl that failed (the others still
 * ran); -EINVAL for NULL.
 */
PERFREC_API int perfrec_evlist__enable(struct perfrec_evlist *el);
PERFREC_API int perfrec_evlist__disable(struct perfrec_evlist *el);
/*
 * Change every sampling event's frequency (or period) live.  The kernel
 * cannot switch an event between freq and period mode: -EINVAL when asked
 * to; also -EINVAL above the max sample rate.  Tracepoints keep period 1.
 */
PERFREC_API int perfrec_evlist__set_freq(struct perfrec_evlist *el, uint64_t freq, uint64_t period);

/*
 * The kernel's limit on sample_freq (kernel.perf_event_max_sample_rate),
 * for telling users why a frequency was refused; negative errno if unknown.
 */
PERFREC_API int perfrec_evlist__max_sample_rate(void);

/* Rings, one per CPU of the map (0 before __open()). */
PERFREC_API size_t perfrec_evlist__nr_rings(const struct perfrec_evlist *el);
/* Ring @idx (borrowed, lives as long as @el); its fd is for poll/epoll. */
PERFREC_API struct perfrec_ring *perfrec_evlist__ring(struct perfrec_evlist *el, size_t idx);
PERFREC_API int perfrec_evlist__ring_fd(const struct perfrec_evlist *el, size_t idx);
PERFREC_API int perfrec_evlist__ring_cpu(const struct perfrec_evlist *el, size_t idx);

/* Opened events, side-band first.  Borrowed. */
PERFREC_API size_t perfrec_evlist__nr_evsels(const struct perfrec_evlist *el);
/*
 * The fds of the sampling events opened (every CPU and thread slot, not the
 * side-band's): at most @max written, the number there are returned.
 * Borrowed: for ioctls such as PERF_EVENT_IOC_SET_BPF, closed by __free().
 */
PERFREC_API size_t perfrec_evlist__sample_fds(const struct perfrec_evlist *el, int *fds, size_t max);
PERFREC_API const struct perfrec_evsel *perfrec_evlist__evsel(const struct perfrec_evlist *el, size_t idx);

/* Unmap the rings, close every fd, free; NULL and half-opened evlists are fine. */
PERFREC_API void perfrec_evlist__free(struct perfrec_evlist *el);

#endif
