/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host unwinder: turns DWARF samples (PERF_SAMPLE_REGS_USER plus a copy
 * of the user stack, as --call-graph dwarf records them) into plain
 * callchain samples (kernel frames, PERF_CONTEXT_USER, then the user frames
 * unwound with the binaries' CFI), which every perf.data reader shows whole
 * with no unwinding of its own, at the size of a frame-pointer sample.
 *
 * It is a sink: give it every record in file order, side-band and samples.
 * MMAP/MMAP2, COMM (exec), FORK and EXIT keep one address space per
 * process; a sample is unwound in its process's space with unwind tables
 * made once per ELF file from its CFI (elfutils' libdwfl where a table
 * cannot say how: signal frames, DWARF expressions), reading memory only
 * from the sample's own stack copy.  ELF files
 * are found through /proc/PID/map_files, /proc/PID/root, then the path
 * itself, and used only when their build id (or device and inode) is the
 * one the map names; each is opened once and kept by build id in a bounded
 * LRU cache shared by every process, so nothing is opened per sample.
 * Code without CFI (JIT code) is walked by its frame pointers while their
 * chain is consistent.  Where unwinding cannot go on (no map, no ELF, a
 * stack pointer outside the copy, garbage) the chain just ends there.
 *
 * Not thread-safe: one unwinder per thread.
 */
#ifndef PERFREC_UNWIND_H
#define PERFREC_UNWIND_H

#include <perfrec/format.h>

struct perfrec_unwinder;

struct perfrec_unwinder_opts {
	size_t sz;
	const char *proc;       /* procfs root; NULL: "/proc"; "" : do not look in procfs */
	size_t max_elves;       /* ELF files kept (0: 256) */
	uint64_t max_elf_bytes; /* their sizes together (0: 2 GiB) */
	size_t max_spaces;      /* address spaces with unwind state (0: 64); 64 times that known */
	unsigned max_frames;    /* user frames per sample (0: 127, perf's default) */
	size_t max_elf_fds;     /* files read through an fd, not mapped (0: 64) */
};

struct perfrec_unwinder_stats {
	uint64_t samples;       /* samples rewritten */
	uint64_t unwound;       /* ... with at least one caller found */
	uint64_t frames;        /* user frames written, all samples */
	uint64_t no_user;       /* no user registers (kernel threads) */
	uint64_t no_space;      /* no maps known for the process */
	uint64_t dropped;       /* samples __flush() could not rewrite (bad input, no memory) */
	uint64_t elf_opened;    /* ELF files opened (misses of the cache) */
	uint64_t elf_hits;      /* lookups the cache answered */
	uint64_t elf_missing;   /* maps whose file was not found or did not match */
	uint64_t elf_evicted;
	size_t elves;           /* ELF files open now */
	uint64_t elf_bytes;     /* their sizes */
	size_t spaces;          /* address spaces known */
	uint64_t sessions;      /* unwind sessions built (a process's maps read into libdwfl) */
	uint64_t elf_refused;   /* files that are not x86_64 executables or shared objects */
	size_t elf_fds;         /* ELF files read through an fd kept open (not mapped) */
	uint64_t sessions_evicted; /* sessions dropped for the bounds (rebuilt if used again) */
	uint64_t spaces_evicted;   /* address spaces forgotten for the bound */
	size_t live_sessions;   /* sessions now */
};

/* Returns 0, -EINVAL on bad opts, -ENOMEM. */
PERFREC_API int perfrec_unwinder__new(const struct perfrec_unwinder_opts *opts,
				      struct perfrec_unwinder **ret_unwinder);
PERFREC_API void perfrec_unwinder__free(struct perfrec_unwinder *u);

/*
 * Feed one record, in file order.  Side-band records (MMAP, MMAP2, COMM,
 * FORK, EXIT) update the address spaces and return 0.  A SAMPLE of @attr
 * with PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER is rewritten into
 * @out (@outsz bytes) laid out for perfrec_unwinder__rewrite_attr(@attr):
 * the same fields, the kernel's chain followed by PERF_CONTEXT_USER and the
 * unwound user frames (callers as return address - 1, as perf's unwinders
 * give them), no registers and no stack; returns its size (> 0).  Other
 * records return 0 (pass them on unchanged).  -EINVAL for a sample that
 * does not parse for @attr, -ENOBUFS when @outsz is too small (64 KiB is
 * always enough).
 */
PERFREC_API int perfrec_unwinder__rewrite(struct perfrec_unwinder *u, const struct perf_event_header *rec,
					  const struct perf_event_attr *attr, void *out, size_t outsz);

/*
 * What a sink does with a DWARF sample it has no time to unwind: the same
 * rewrite with the sampled user ip as the only user frame (the chain ends
 * there, as where CFI is missing), in the layout of
 * perfrec_unwinder__rewrite_attr(@attr), so it can go into the same file.
 * Needs no unwinder: cheap, no state, thread-safe, for the draining thread
 * when the queue to the unwinding worker is full.  Returns as
 * perfrec_unwinder__rewrite() for samples, 0 for other records.
 */
PERFREC_API int perfrec_unwinder__strip(const struct perf_event_header *rec, const struct perf_event_attr *attr,
					void *out, size_t outsz);

/*
 * The attr of rewritten samples: @in without REGS_USER / STACK_USER and
 * with user callchains.  Attrs without a user stack come out unchanged.
 */
PERFREC_API void perfrec_unwinder__rewrite_attr(const struct perf_event_attr *in, struct perf_event_attr *out);

/*
 * The sink's entry points.  Records reach a sink in the order they were
 * drained, one CPU's ring after another, so a process's FORK or MMAP2 on
 * one CPU can come after its samples on another.  __push() copies @rec
 * (with @attr, the attr it belongs to, borrowed until the next __flush();
 * NULL if not known) into a queue; __flush() feeds the queue to
 * __rewrite() in time order (samples by their time, other records by their
 * sample_id trailer; a record without a time keeps its place after the one
 * before it) and hands every record to @emit in push order, rewritten
 * where it is a DWARF sample.  Flush at each FINISHED_ROUND: records
 * before one are older than any after it.  __push() returns 0 or -ENOMEM;
 * __flush() 0, the first rewrite error (such a sample is left out, its
 * layout not being the rewritten attr's, and counted in stats.dropped), or
 * the first error of @emit, which stops it (the queue is emptied either
 * way).
 */
typedef int (*perfrec_unwinder_emit_fn)(void *ctx, const struct perf_event_header *rec);

PERFREC_API int perfrec_unwinder__push(struct perfrec_unwinder *u, const struct perf_event_header *rec,
				       const struct perf_event_attr *attr);
PERFREC_API int perfrec_unwinder__flush(struct perfrec_unwinder *u, perfrec_unwinder_emit_fn emit, void *ctx);

/* Counters and cache sizes now. */
PERFREC_API void perfrec_unwinder__stats(const struct perfrec_unwinder *u, struct perfrec_unwinder_stats *ret);

#endif
