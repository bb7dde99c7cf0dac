/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What perfrecd's unwinding worker (internal/unwind-sink.c) needs of the
 * unwinder beyond the public API; not exported from libperfrec.so.
 */
#ifndef PERFREC_UNWIND_INTERNAL_H
#define PERFREC_UNWIND_INTERNAL_H

#include <perfrec/unwind.h>

#include "unwtab-cache.h"

/*
 * perf register @reg (PERF_REG_X86_*) of a sample's user registers, laid
 * out one u64 per bit of @mask in bit order; 0 when @mask does not carry it.
 */
static inline uint64_t perfrec_user_reg(const uint64_t *regs, uint64_t mask, unsigned reg)
{
	if (!regs || !(mask & (1ULL << reg)))
		return 0;
	return regs[__builtin_popcountll(mask & ((1ULL << reg) - 1))];
}

/*
 * perfrec_unwinder__push() without the copy: @rec (and @attr) must stay
 * where they are until the next perfrec_unwinder__flush() returns.  The
 * worker's rounds hold their records until then, and a DWARF sample is
 * 8 KiB of stack that the drain has already copied once.
 */
int perfrec_unwinder__push_borrowed(struct perfrec_unwinder *u, const struct perf_event_header *rec,
				    const struct perf_event_attr *attr);

/*
 * The unwind tables (unwtab-cache.h), the unwinder's first way: a sample
 * is walked with them alone, and handed to libdwfl only where a table says
 * it cannot go on (a row of kind UNWTAB_FALLBACK) or where a file's CFI
 * made no table.  Set before the first record; without a call, tables
 * are on and kept in memory only.  0, -EINVAL, -ENOMEM.
 */
struct perfrec_unwinder_tables_opts {
	bool off;                 /* libdwfl for every sample, as before the tables */
	const char *dir;          /* the build-id cache directory, where DIR/.unwtab goes; NULL: memory only */
	uint64_t max_bytes;       /* tables in memory (0: unwtab-cache.h's default) */
	uint64_t max_disk_bytes;  /* table files (0: unwtab-cache.h's default) */
	uint64_t build_ns_per_sec; /* CPU for building tables, per second (0: no bound; unwtab-cache.h) */
};
int perfrec_unwinder__set_tables(struct perfrec_unwinder *u, const struct perfrec_unwinder_tables_opts *opts);

struct perfrec_unwinder_table_stats {
	uint64_t by_tables;       /* samples unwound with the tables alone */
	uint64_t by_dwfl;         /* samples libdwfl unwound: a fallback row or a file without a table on the way */
	uint64_t table_frames;    /* user frames found with a table */
	/*
	 * Frames found following rbp through code without a table (JIT code,
	 * files without CFI).  Counted only: perf's callchains have no place
	 * to mark a frame with.
	 */
	uint64_t fp_frames;
	struct unwtab_cache_stats cache;
};
void perfrec_unwinder__table_stats(const struct perfrec_unwinder *u, struct perfrec_unwinder_table_stats *ret);

/*
 * What the walk of a sample needed of its stack copy, told after each
 * sample unwound whose walk reached the stack's outermost frame or wanted
 * a word past the copy's end.  A thread's outermost frames stay where they
 * are for its life, so the words above @top are never read for it again:
 * the drain copies a thread's later samples only up to there (unwind-sink.c).
 */
struct perfrec_unwinder_reach {
	uint32_t pid, tid;
	uint64_t sp;      /* the sample's stack pointer */
	uint64_t room, len; /* its stack copy's size field and dyn_size */
	uint64_t top;     /* the walk reached the outermost frame: the end of the highest word it read; else 0 */
	uint64_t missed;  /* a word wanted at or past the copy's end (from sp), 0: none */
};
typedef void (*perfrec_unwinder_reach_fn)(void *ctx, const struct perfrec_unwinder_reach *r);
/* Called on the unwinding thread from perfrec_unwinder__rewrite(); NULL: not. */
void perfrec_unwinder__on_reach(struct perfrec_unwinder *u, perfrec_unwinder_reach_fn fn, void *ctx);

#endif
