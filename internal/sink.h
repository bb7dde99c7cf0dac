/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A sink: one consumer of what the drain (drain.h) takes out of the rings.
 * The file being recorded, the flight history and every live subscriber
 * are sinks; a new consumer (an exporter) is a new sink and touches
 * nothing else.  One that hands records on, rewritten, to other sinks (the
 * host unwinder) is a stage (stage.h): a sink upstream, a drain to the
 * sinks behind it.  Beginning an output (attrs, synthesized state,
 * FINISHED_INIT) and ending it are the owner's, through the one
 * outfile_begin() (outfile.h) for perfrecd's outputs and the record
 * object's files alike.  A sink
 * behind a stage is called the same way, on the same thread, with the
 * stage's records.
 *
 * Per ring pass the drain calls, for each sink in turn:
 *
 *   record()  once per record walked, in ring order (may be NULL)
 *   write()   the bytes of exactly the records whose record() came since
 *             the last write() of this ring: whole records, as at most two
 *             segments pointing into the ring (or one repaired copy), valid
 *             only during the call (may be NULL)
 *
 * and after a pass over every ring:
 *
 *   round()   @bytes drained in the pass (0: nothing); a sink that wrote
 *             records ends its round here (FINISHED_ROUND)
 *
 * A sink that returns an error from write() is refused those bytes only
 * (it counts what it lost); the drain goes on and every other sink still
 * gets them.  A sink may remove itself from the drain inside its own
 * callbacks, never another sink.
 */
#ifndef PERFREC_SINK_H
#define PERFREC_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct drain_rec;
struct sink;

struct sink_ops {
	void (*record)(struct sink *s, struct drain_rec *r);
	int (*write)(struct sink *s, size_t ring, const struct iovec *iov, int n, uint64_t bytes);
	void (*corrupt)(struct sink *s, size_t ring);
	void (*round)(struct sink *s, uint64_t bytes);
};

/* Embedded in its owner (container_of() style: the owner's first field or @ctx). */
struct sink {
	const struct sink_ops *ops;
	void *ctx;
	uint64_t refused_bytes; /* write() failures, counted by the drain */
};

#endif
