/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Off-CPU profiling: a BPF program (lib/bpf/offcpu.bpf.c, loaded through its
 * libbpf skeleton) sums, per thread and blocking callchain, the nanoseconds
 * threads spend switched out in a sleeping state.  At each file end the
 * owner drains the sums into "offcpu-time" samples (period = blocked ns,
 * callchain = kernel then user stack at the block point), laid out like
 * perf record --off-cpu so perf report shows blocked time by callchain.
 */
#ifndef PERFREC_OFFCPU_H
#define PERFREC_OFFCPU_H

#include <sys/types.h>
#include <linux/perf_event.h>
#include <perfrec/common.h>

/* sample_type of the offcpu-time attr (perf 6.1 adds CGROUP; we do not). */
#define PERFREC_OFFCPU_SAMPLE_TYPE                                          \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |        \
	 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |          \
	 PERF_SAMPLE_CALLCHAIN)
#define PERFREC_OFFCPU_EVENT_NAME "offcpu-time"
/* Most frames one stack (kernel or user) carries, as the BPF map stores. */
#define PERFREC_OFFCPU_MAX_STACK 127

struct perfrec_offcpu;

struct perfrec_offcpu_opts {
	size_t sz;
	uint64_t min_ns;         /* shorter blocks are not counted */
	const char *cgroup_path; /* only this cgroup (v2 path, absolute or under /sys/fs/cgroup); NULL: all */
	pid_t self_pid;          /* process never counted (the profiler); 0: none */
	/*
	 * Whole user stacks: for a sample of blocks (copies_per_sec per CPU,
	 * 0: 32), the blocked thread's user registers and the top 8 KiB of its
	 * user stack are copied in the kernel and unwound at once (the thread
	 * still blocked) by a thread of the library with the host unwinder
	 * (perfrec/unwind.h), in the process's mappings as /proc shows them
	 * then; blocks not sampled, and copies that cannot be unwound (the
	 * process exec'd, a stack out of reach), keep their frame-pointer
	 * stacks.  Sampled blocks of one thread and path are
	 * summed into one sample.  Set at open; needs bpf_task_pt_regs()
	 * (Linux 5.15), without which every stack is a frame-pointer one.
	 */
	bool whole_stacks;
	uint32_t copies_per_sec;
};

/* One aggregated map entry, decoded. */
struct perfrec_offcpu_entry {
	uint32_t pid, tid, cpu;
	uint64_t period;            /* blocked ns */
	uint32_t nr_kernel, nr_user;
	const uint64_t *kernel;     /* innermost first */
	const uint64_t *user;
};

/* The attr perf uses for the event: software BPF_OUTPUT, sample_period 1. */
PERFREC_API void perfrec_offcpu__attr(struct perf_event_attr *attr);

/*
 * Load and attach the program.  On failure returns negative errno and puts
 * a one-line reason (no trailing newline) into @why.
 */
PERFREC_API int perfrec_offcpu__open(const struct perfrec_offcpu_opts *opts,
				     struct perfrec_offcpu **ret,
				     char *why, size_t why_len);
PERFREC_API void perfrec_offcpu__close(struct perfrec_offcpu *oc);
/*
 * Change the filter of a loaded program: @opts' min_ns and cgroup_path
 * (self_pid stays).  Needs no privilege beyond what loaded it, so a
 * process that dropped CAP_BPF since can call it.  Negative errno when
 * the cgroup is not there (the filter is then left as it was).
 */
PERFREC_API int perfrec_offcpu__set_filter(struct perfrec_offcpu *oc,
					   const struct perfrec_offcpu_opts *opts);

/*
 * Size in bytes of the sample record for @e (0 if it cannot be encoded).
 */
PERFREC_API size_t perfrec_offcpu__sample_size(const struct perfrec_offcpu_entry *e);

/*
 * Encode @e as a PERF_RECORD_SAMPLE of sample_type PERFREC_OFFCPU_SAMPLE_TYPE
 * with IDENTIFIER @id and TIME @time into @buf.  Returns the record size, or
 * -ENOSPC when @size is too small, -EINVAL for an entry with no period.
 */
PERFREC_API int perfrec_offcpu__encode_sample(void *buf, size_t size,
					      const struct perfrec_offcpu_entry *e,
					      uint64_t id, uint64_t time);

typedef int (*perfrec_offcpu_emit_fn)(const struct perf_event_header *rec, void *userdata);

/*
 * Read every aggregated entry, call @emit with its sample record (id @id,
 * time @time), and delete the entries read, so the next file starts from
 * zero.  Returns the number of samples emitted or the first negative error
 * (from the map or from @emit).
 */
PERFREC_API int perfrec_offcpu__drain(struct perfrec_offcpu *oc, uint64_t id,
				      uint64_t time, perfrec_offcpu_emit_fn emit,
				      void *userdata);

/* Entries the kernel side could not add because the map was full. */
PERFREC_API uint64_t perfrec_offcpu__lost(const struct perfrec_offcpu *oc);
/*
 * Blocks whose kernel or user stack was not recorded because the stack
 * map's bucket for it held another stack (counted since load; the period
 * is still counted, with the stack empty).
 */
PERFREC_API uint64_t perfrec_offcpu__lost_stacks(const struct perfrec_offcpu *oc);

/* What became of the blocks sampled for whole stacks (since open). */
struct perfrec_offcpu_copy_stats {
	uint64_t copied;     /* blocks whose user registers and stack were copied */
	uint64_t ring_full;  /* copies or their ends the ring had no room for (frame-pointer stacks) */
	uint64_t whole;      /* sampled blocks summed with the unwound user stack */
	uint64_t kept_fp;    /* ... with the frame-pointer stack: the copy did not unwind or was dropped */
	uint64_t gone;       /* copies whose process had exited or exec'd when they were read */
	uint64_t evicted;    /* copies dropped: too many threads blocked with one */
	uint64_t table_full; /* sampled blocks not written: too many distinct paths in one file */
};

PERFREC_API void perfrec_offcpu__copy_stats(struct perfrec_offcpu *oc,
					    struct perfrec_offcpu_copy_stats *ret);

#endif
