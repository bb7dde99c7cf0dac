/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A stage: a sink (sink.h) that hands records on, possibly rewritten, to
 * sinks of its own.  Upstream (the drain, or a stage before it) sees only
 * the stage's sink; downstream sinks see the stage as they would see the
 * drain, and are written the same way, so any sink can sit behind any
 * stage: the file, the flight history, a live stream.
 *
 * A stage emits on the thread that drives the drain, so its sinks stay
 * single-threaded whatever the stage does inside (a worker thread of its
 * own hands its output back to be emitted there).  What it emits keeps
 * the drain's contract, per record of ring @ring:
 *
 *   stage_emit()     the record, whole, owned by the stage: each sink's
 *                    record() with it decoded by the stage's drain (the
 *                    layout of the records it emits, which need not be the
 *                    rings'), then write() of its bytes (one segment)
 *   stage_corrupt()  each sink's corrupt()
 *   stage_round()    each sink's round() with the bytes emitted since the
 *                    last: records of one round upstream stay one round
 *                    downstream, in order, never split across two
 *
 * A sink refusing a write() is counted in its refused_bytes as the drain
 * counts it; the others still get the record.  A sink may remove itself
 * from the stage inside its own callbacks, never another sink.
 */
#ifndef PERFREC_STAGE_H
#define PERFREC_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "drain.h"
#include "sink.h"

/* Embedded in its owner, which fills @sink.ops and @sink.ctx (stage_init()). */
struct stage {
	struct sink sink;          /* what upstream feeds: the stage's own callbacks */
	const struct drain *drain; /* decodes what the stage emits (drain_decode()); borrowed */
	/* NULL slots are sinks removed during an emit, compacted after it */
	struct sink **sinks;
	size_t nr_sinks, cap_sinks;
	unsigned emitting;
	uint64_t round_bytes;      /* emitted since the last stage_round() */
};

/*
 * @ops and @ctx are the stage's sink callbacks for upstream; @d (borrowed
 * for the stage's life) knows the layout of the records it emits.
 */
void stage_init(struct stage *st, const struct sink_ops *ops, void *ctx, const struct drain *d);
/* Forget the sinks (they are their owners'). */
void stage_exit(struct stage *st);

/* Sinks get records in the order they were added; @s is borrowed until removed. */
int stage_add_sink(struct stage *st, struct sink *s);
/* Removing one not added is a no-op. */
void stage_remove_sink(struct stage *st, struct sink *s);
/* @s in @old's place (its owner moved), in the same order. */
void stage_replace_sink(struct stage *st, struct sink *old, struct sink *s);
/* The first sink added with @ops (NULL: none). */
struct sink *stage_sink_of(const struct stage *st, const struct sink_ops *ops);
/* Whether any sink sits behind the stage (none: it can skip its work). */
static inline bool stage_has_sinks(const struct stage *st)
{
	return st->nr_sinks > 0;
}

/* @h, a whole record of ring @ring, to every sink: record() then write(). */
void stage_emit(struct stage *st, size_t ring, const struct perf_event_header *h);
void stage_corrupt(struct stage *st, size_t ring);
/* The round ends downstream: every sink's round() with the bytes emitted in it. */
void stage_round(struct stage *st);

#endif
