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

#endif
