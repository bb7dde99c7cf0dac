/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The worker of host unwinding (--unwind host; the stage around it is
 * unwind-stage.h): DWARF samples in, callchain samples out, unwound on a
 * worker thread so that the drain never waits for it.
 *
 * The draining thread hands over every record (unwind_sink_record()) and
 * closes a round at each FINISHED_ROUND (unwind_sink_round()); the worker
 * unwinds each round in time order (perfrec_unwinder__push/__flush) and
 * calls @emit with every record of it, in drain order, DWARF samples
 * rewritten into the layout of perfrec_unwinder__rewrite_attr().  @emit
 * runs on the worker thread: whatever it writes to is the worker's.
 *
 * Falling behind: the records waiting for the worker are bounded in bytes
 * (max_queue_bytes).  When a DWARF sample would pass the bound, the
 * draining thread rewrites it itself with its sampled ip as the only user
 * frame (perfrec_unwinder__strip(), a few hundred bytes) and queues that:
 * nothing waits, nothing is dropped, the file stays in one layout, and
 * such samples are counted (stats.behind).  Side-band records always go
 * into the queue (the address spaces need them).
 *
 * Trimming: a DWARF sample goes into the queue without the part of its
 * stack copy past dyn_size, and, once a walk of one of its thread's samples
 * has reached the outermost frame, without what lies above the highest word
 * that walk read (stacktop.h): the environment and argument strings above
 * a main thread, a thread's TLS.  The worker tells the drain such tops
 * (perfrec_unwinder__on_reach()) at the end of each round; a walk that
 * wants a word past a trimmed copy makes the drain forget the thread.
 * Counted in the stats (trimmed, trimmed_bytes, trim_missed).
 *
 * Attrs passed with records are borrowed until unwind_sink_sync() returns
 * or the sink is freed: sync before freeing the events they belong to.
 * One thread drives the record/round/sync calls.
 */
#ifndef PERFRECD_UNWIND_SINK_H
#define PERFRECD_UNWIND_SINK_H

#include <perfrec/unwind.h>

#include "unwind-internal.h"

struct unwind_sink;

typedef int (*unwind_sink_emit_fn)(void *ctx, const struct perf_event_header *rec);

struct unwind_sink_opts {
	uint64_t max_queue_bytes;             /* 0: 64 MiB */
	struct perfrec_unwinder_opts unwinder; /* sz 0: defaults */
	struct perfrec_unwinder_tables_opts tables; /* the unwind tables: where on disk, bounds */
};

struct unwind_sink_stats {
	struct perfrec_unwinder_stats unwinder; /* as of the last round done */
	struct perfrec_unwinder_table_stats tables; /* ... and how it went with the unwind tables */
	uint64_t behind;        /* samples only stripped: the worker was too far behind */
	uint64_t queued_bytes;  /* waiting for the worker now */
	uint64_t max_queued_bytes;
	uint64_t rounds;        /* rounds done */
	uint64_t trimmed;       /* DWARF samples queued only up to their thread's stack top (stacktop.h) */
	uint64_t trimmed_bytes; /* stack bytes the kernel copied that the trimming kept out of the queue */
	uint64_t trim_missed;   /* walks that wanted a word past a trimmed copy: the thread forgotten */
	int error;              /* first error of @emit or of unwinding (negative errno), 0 */
};

/* Start the worker.  0, -EINVAL, -ENOMEM, or pthread_create's error. */
int unwind_sink_new(const struct unwind_sink_opts *opts, unwind_sink_emit_fn emit, void *ctx,
		    struct unwind_sink **ret);
/* Queue @rec (copied) of @attr (NULL when it has none).  0 or -ENOMEM. */
int unwind_sink_record(struct unwind_sink *s, const struct perf_event_header *rec,
		       const struct perf_event_attr *attr);
/*
 * Feed a side-band record (an output's synthesized state) straight into
 * the worker's address spaces; it is not emitted.  Only while the worker
 * is idle: after unwind_sink_sync() and before the next round is handed
 * over.  0, -EBUSY when the worker is not idle, -EINVAL for a sample
 * or a record that does not parse for @attr.
 */
int unwind_sink_state(struct unwind_sink *s, const struct perf_event_header *rec,
		      const struct perf_event_attr *attr);
/*
 * Whether the worker is idle: every round handed over has been emitted,
 * and what it left out of them (samples the unwinder could not rewrite,
 * records it had no memory for) will never come out.
 */
bool unwind_sink_idle(struct unwind_sink *s);
/* Hand the records queued since the last round to the worker.  0 or -ENOMEM. */
int unwind_sink_round(struct unwind_sink *s);
/* Close the round and wait until the worker has emitted everything: before a file is closed. */
int unwind_sink_sync(struct unwind_sink *s);
void unwind_sink_stats(struct unwind_sink *s, struct unwind_sink_stats *ret);
/* Sync, stop and join the worker, free.  NULL is fine. */
void unwind_sink_free(struct unwind_sink *s);

#endif
