/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The flight recorder's memory: a time-indexed history of drained records,
 * per CPU, bounded by a time window and a memory cap.  Each CPU keeps a list
 * of chunks of whole records with the first and last timestamp of each
 * chunk; whole chunks are evicted, oldest first, when the newest time seen
 * minus a chunk's last time exceeds the window, or (globally oldest chunk
 * first, so every CPU keeps about the same window) when the memory used
 * exceeds the cap.  Non-sample records (MMAP2, COMM, FORK, EXIT ...) of an
 * evicted chunk move into a separate side-band store, bounded by its own
 * share of the cap, so that samples inside the window can still be
 * symbolized after the mapping that created their code fell out of it.
 */
#ifndef PERFRECD_HISTORY_H
#define PERFRECD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/format.h>

struct history;

struct history_opts {
	size_t nr_cpus;        /* per-CPU lists, indexed 0..nr_cpus-1 */
	uint64_t window_ns;    /* keep records newer than newest - window; 0: no time bound */
	uint64_t max_bytes;    /* cap on all memory the history holds (chunks + side band) */
	size_t chunk_bytes;    /* 0: derived from max_bytes (max/32, within 64 KiB..1 MiB) */
};

/*
 * A chunk is also closed once it spans window/16 of time, and shrunk to
 * what it holds, so that eviction is fine-grained in time on a quiet CPU
 * without a quiet CPU pinning a mostly empty chunk.
 */

int history_new(const struct history_opts *opts, struct history **ret);
void history_free(struct history *h);

/*
 * Copy one record (h->size bytes) stamped @time into CPU @cpu's list.
 * Records of one CPU must come in time order (as a ring delivers them).
 * Returns 0, -EINVAL (bad cpu/size), -ENOMEM.
 */
int history_add(struct history *h, size_t cpu, const struct perf_event_header *rec, uint64_t time);

/*
 * While frozen (a snapshot is being written from the history), records are
 * still added but nothing is evicted or moved, so iterations in progress
 * stay valid; the cap may be exceeded by what arrives meanwhile, and the
 * first trim after thawing restores it.
 */
void history_freeze(struct history *h, bool frozen);

/* The oldest record time held on any CPU (0: none); O(CPUs). */
uint64_t history_oldest(const struct history *h);

/* The newest record time seen (0: none). */
uint64_t history_newest(const struct history *h);

/* Evict by the window as if the newest time were @now (idle CPUs age too). */
void history_trim(struct history *h, uint64_t now);

struct history_span {
	uint64_t first_time, last_time; /* 0, 0: nothing held */
	uint64_t records, bytes;        /* record bytes held (not chunk overhead) */
};

/* What CPU @cpu's list covers now. */
void history_span(const struct history *h, size_t cpu, struct history_span *ret);
/* The side-band store: evicted non-sample records. */
void history_sideband_span(const struct history *h, struct history_span *ret);

/* Bytes allocated for records (chunks of both stores, headers included). */
uint64_t history_memory(const struct history *h);
/* Chunks evicted so far (window or cap) and of those, by the cap. */
void history_evictions(const struct history *h, uint64_t *ret_total, uint64_t *ret_by_cap);

typedef int (*history_fn)(void *ctx, const struct perf_event_header *rec, uint64_t time);

/*
 * Every record of CPU @cpu's list, oldest first, except samples older than
 * @min_time (a chunk straddles the window's edge; its other records are
 * side band and stay useful).  Stops at the first negative return.
 */
int history_foreach(const struct history *h, size_t cpu, uint64_t min_time, history_fn fn, void *ctx);
/*
 * A read position in one CPU's list, for merging the CPUs by time.  Valid
 * while nothing is evicted (the history frozen, or no add in between); a
 * cursor at the end sees records added later.
 */
struct history_cursor {
	const void *chunk;
	size_t off;
	uint64_t min_time;
};

void history_cursor_init(const struct history *h, size_t cpu, uint64_t min_time,
			 struct history_cursor *ret);
/* 1 with the next record (samples older than min_time skipped) and its time, 0 at the end. */
int history_cursor_next(struct history_cursor *c, const struct perf_event_header **ret_rec,
			uint64_t *ret_time);

/* Every side-band record, in eviction order. */
int history_foreach_sideband(const struct history *h, history_fn fn, void *ctx);

#endif
