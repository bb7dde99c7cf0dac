/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host unwinding as a stage (stage.h): DWARF samples in, callchain samples
 * out, for whatever sinks sit behind it (the file, the flight history, a
 * live stream, the record object's file).  The unwinding itself runs on a
 * worker (unwind-sink.h), so the drain never waits for it; what the worker
 * made of a round is emitted on the draining thread at a later round(),
 * so the sinks behind the stage stay single-threaded:
 *
 *   record()   each record queued for the worker (copied), with its
 *              event's attr
 *   round()    what the worker finished since the last round() emitted
 *              (stage_emit(), one stage_round() per round upstream), then
 *              the round filled since handed to the worker
 *   sync       unwind_stage_sync(): hand over, wait for the worker, emit
 *              everything: before an output behind the stage begins or
 *              ends, so it gets exactly the records drained meanwhile
 *
 * The records it emits are laid out as perfrec_unwinder__rewrite_attr()
 * says; an output behind the stage declares its attrs so (outfile.h's
 * unwound).  Maps of data segments (MMAP2 with MISC_MMAP_DATA) are the
 * unwinder's only: not emitted.
 *
 * Falling behind is the worker's (unwind-sink.h): past max_queue_bytes a
 * DWARF sample is stripped to its sampled ip on the draining thread and
 * counted (stats.behind).  A sample handed over and never emitted (the
 * unwinder could not rewrite it, no memory) is reported through @lost
 * once the worker is idle, per ring, so the owner counts it as lost.
 */
#ifndef PERFREC_UNWIND_STAGE_H
#define PERFREC_UNWIND_STAGE_H

#include <perfrec/perfrec.h>

#include "stage.h"
#include "unwind-sink.h"

struct unwind_stage;

/*
 * CPU the worker may spend loading and building unwind tables
 * (unwtab-cache.h): 50 ms a second, saved up to 100 ms.
 */
#define UNWIND_STAGE_BUILD_NS_PER_SEC 50000000ULL

struct unwind_stage_opts {
	size_t sz;
	uint64_t max_queue_bytes;             /* 0: unwind-sink.h's default */
	/* the build-id cache directory: unwind tables go to its .unwtab (NULL: memory only) */
	const char *table_dir;
	/* the events: attrs, ids and the rings they go through; borrowed for the stage's life */
	const struct perfrec_evlist *evlist;
	/* @samples of ring @ring were handed over and will never come out (NULL: not told) */
	void (*lost)(void *ctx, size_t ring, uint64_t samples);
	void *ctx;
};

/* Start the worker.  0, -EINVAL, -ENOMEM, or pthread_create's error. */
int unwind_stage_new(const struct unwind_stage_opts *opts, struct unwind_stage **ret);
/* Sync, stop the worker, free.  NULL is fine. */
void unwind_stage_free(struct unwind_stage *us);

/* The stage: its sink for upstream, its sinks downstream (stage_add_sink()). */
struct stage *unwind_stage_stage(struct unwind_stage *us);

/*
 * Feed a side-band record of an output's synthesized state straight into
 * the worker's address spaces (not emitted): only with the worker idle,
 * after unwind_stage_sync() and before the next round().  0 or -errno.
 */
int unwind_stage_state(struct unwind_stage *us, const struct perf_event_header *h);
/*
 * Hand the round filled so far to the worker, wait until it has done every
 * round, emit what it made (with a round each), report what it left out.
 * 0 or -ENOMEM (the round could not be handed over and stays queued).
 */
int unwind_stage_sync(struct unwind_stage *us);
/* The worker's counters (unwind-sink.h). */
void unwind_stage_stats(struct unwind_stage *us, struct unwind_sink_stats *ret);

#endif
