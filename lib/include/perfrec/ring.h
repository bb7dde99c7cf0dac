/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a perf mmap ring buffer.  A pass is:
 *
 *   perfrec_ring__begin()   acquire-load data_head (pairs with the kernel's
 *                           store of head after writing the records)
 *   perfrec_ring__next()    walk records in [tail, head); a record that
 *                           straddles the end of the buffer is copied whole
 *                           into a scratch buffer
 *   perfrec_ring__iov()     the walked bytes as at most two contiguous
 *                           segments, for writev straight from the ring
 *   perfrec_ring__commit()  release-store data_tail (pairs with the kernel's
 *                           read of tail before it overwrites space), only
 *                           after the bytes have been copied out
 *
 * The ring memory may be a real mmap or an in-memory fake (tests).
 */
#ifndef PERFREC_RING_H
#define PERFREC_RING_H

#include <sys/uio.h>
#include <perfrec/format.h>

struct perfrec_ring {
	struct perf_event_mmap_page *meta; /* first page of the mapping, borrowed */
	unsigned char *data;               /* data area, borrowed */
	uint64_t size;                     /* data area bytes, a power of 2 */
	uint64_t mask;
	unsigned char *scratch;            /* owned, for wrapped records */
	size_t scratch_size;
	int cpu;
	uint64_t corrupt;                  /* passes cut short by a bad size */
};

struct perfrec_ring_batch {
	uint64_t head;  /* data_head as loaded */
	uint64_t start; /* tail at begin */
	uint64_t pos;   /* end of the last record walked */
	uint64_t skip;  /* bytes dropped after a corrupt header */
};

/*
 * Set up @r over a mapping whose first page is @base and whose data area of
 * @data_size bytes (power of 2) follows at @base + @page_size.
 */
PERFREC_API int perfrec_ring__init(struct perfrec_ring *r, void *base, size_t page_size,
				   size_t data_size, int cpu);
PERFREC_API void perfrec_ring__exit(struct perfrec_ring *r);

/*
 * Start a pass.  Returns the bytes available (head - tail), >= 0, or
 * -EBADMSG when head - tail exceeds the ring size (the writer overwrote
 * unread data): the pass is then empty, r->corrupt is counted and
 * perfrec_ring__commit() moves tail to head, so the caller must still commit.
 */
PERFREC_API int64_t perfrec_ring__begin(struct perfrec_ring *r, struct perfrec_ring_batch *b);

/*
 * Next record of the pass: 1 and *ret_rec (valid until the next call),
 * 0 when the pass is done, -ENOMEM when the scratch buffer for a wrapped
 * record cannot be allocated (nothing consumed), -EBADMSG when a record's
 * size is impossible (below 8 bytes or past head): the rest of the pass is
 * then dropped at commit, counted in b->skip and r->corrupt, and later
 * calls return 0.
 */
PERFREC_API int perfrec_ring__next(struct perfrec_ring *r, struct perfrec_ring_batch *b,
				   const struct perf_event_header **ret_rec);

/*
 * Walk every remaining record without returning them (fast path for the byte
 * copy); sizes are still validated.  Returns the number of records walked,
 * or -EBADMSG as perfrec_ring__next() does (the records before the bad one
 * stay walked and are part of perfrec_ring__iov()).
 */
PERFREC_API int perfrec_ring__walk_all(struct perfrec_ring *r, struct perfrec_ring_batch *b);

/* The bytes walked so far as <= 2 segments; returns the count (0..2). */
PERFREC_API int perfrec_ring__iov(const struct perfrec_ring *r, const struct perfrec_ring_batch *b,
				  struct iovec iov[2]);

/*
 * Release the bytes walked (and any skipped) back to the kernel: tail becomes
 * b->pos + b->skip, always a record boundary or head itself.  Until then
 * data_tail is untouched, so a pass that is not committed is read again.
 */
PERFREC_API void perfrec_ring__commit(struct perfrec_ring *r, const struct perfrec_ring_batch *b);

#endif
