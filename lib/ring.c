// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Consumer side of a perf mmap ring buffer (non-overwrite mode): one pass
 * loads data_head, walks the records in [data_tail, data_head), hands them
 * out one by one (copying a record that wraps around the end of the data
 * area into a scratch buffer) or as at most two contiguous byte segments,
 * and finally publishes the new data_tail.  The kernel writes records and
 * data_head; we write data_tail; the two acquire/release pairs below are the
 * whole synchronisation.  Positions are free-running u64 counters (they are
 * masked only to index the data area), so every difference is computed in
 * unsigned arithmetic and stays correct when the counters wrap past 2^64.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <perfrec/ring.h>

/* header.size is a u16, so no record is larger than this. */
#define SCRATCH_SIZE 65536u

int perfrec_ring__init(struct perfrec_ring *r, void *base, size_t page_size,
		       size_t data_size, int cpu)
{
	if (!r || !base || !page_size)
		return -EINVAL;
	/* The mask arithmetic below only works for a power of 2; a ring
	 * smaller than one header could never hold a record. */
	if (data_size < sizeof(struct perf_event_header) || (data_size & (data_size - 1)))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->meta = base;
	r->data = (unsigned char *)base + page_size;
	r->size = data_size;
	r->mask = data_size - 1;
	r->cpu = cpu;
	return 0;
}

void perfrec_ring__exit(struct perfrec_ring *r)
{
	if (!r)
		return;
	free(r->scratch);
	r->scratch = NULL;
	r->scratch_size = 0;
}

/* Copy @len bytes starting at ring position @pos, following the wrap. */
static void copy_out(const struct perfrec_ring *r, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & r->mask;
	uint64_t first = r->size - off;

	if (first >= len) {
		memcpy(dst, r->data + off, len);
	} else {
		memcpy(dst, r->data + off, first);
		memcpy((unsigned char *)dst + first, r->data, len - first);
	}
}

int64_t perfrec_ring__begin(struct perfrec_ring *r, struct perfrec_ring_batch *b)
{
	uint64_t head, tail;

	/*
	 * Acquire: pairs with the kernel's smp_store_release() of data_head
	 * in perf_output_put_handle(), after it wrote the records.  Every
	 * byte below head is visible to the reads that follow this load.
	 */
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	/* Only we write data_tail, so a relaxed load sees our last store. */
	tail = __atomic_load_n(&r->meta->data_tail, __ATOMIC_RELAXED);

	b->head = head;
	b->start = tail;
	b->pos = tail;
	b->skip = 0;

	if (head - tail > r->size) {
		/*
		 * More unread bytes than the ring holds: the writer overwrote
		 * data we had not read (or head/tail are garbage).  Nothing
		 * between tail and head can be trusted to start on a record
		 * boundary, so the whole span is dropped at commit.
		 */
		b->skip = head - tail;
		r->corrupt++;
		return -EBADMSG;
	}
	return (int64_t)(head - tail);
}

/* Mark the rest of the pass as dropped; commit will move tail to head. */
static int cut_short(struct perfrec_ring *r, struct perfrec_ring_batch *b)
{
	b->skip = b->head - b->pos;
	r->corrupt++;
	return -EBADMSG;
}

/*
 * Validate the record at b->pos without consuming it.  Returns its size
 * (>= 8), 0 at the end of the pass, or -EBADMSG.
 */
static int peek(struct perfrec_ring *r, struct perfrec_ring_batch *b,
		struct perf_event_header *ret_hdr)
{
	uint64_t avail;

	/* A pass cut short (corrupt header, head far ahead) has nothing more. */
	if (b->skip)
		return 0;
	avail = b->head - b->pos;
	if (!avail)
		return 0;
	/* The kernel publishes only whole records: a partial header or a
	 * size below the header's own, or running past head, is garbage. */
	if (avail < sizeof(*ret_hdr))
		return cut_short(r, b);
	copy_out(r, b->pos, ret_hdr, sizeof(*ret_hdr));
	if (ret_hdr->size < sizeof(*ret_hdr) || ret_hdr->size > avail)
		return cut_short(r, b);
	return ret_hdr->size;
}

int perfrec_ring__next(struct perfrec_ring *r, struct perfrec_ring_batch *b,
		       const struct perf_event_header **ret_rec)
{
	struct perf_event_header hdr;
	uint64_t off;
	int size;

	size = peek(r, b, &hdr);
	if (size <= 0)
		return size;

	off = b->pos & r->mask;
	if (off + (uint64_t)size <= r->size) {
		*ret_rec = (const struct perf_event_header *)(r->data + off);
	} else {
		/* Straddles the end of the data area: hand out a whole copy. */
		if (!r->scratch) {
			r->scratch = malloc(SCRATCH_SIZE);
			if (!r->scratch)
				return -ENOMEM;
			r->scratch_size = SCRATCH_SIZE;
		}
		copy_out(r, b->pos, r->scratch, (size_t)size);
		*ret_rec = (const struct perf_event_header *)r->scratch;
	}
	b->pos += (uint64_t)size;
	return 1;
}

int perfrec_ring__walk_all(struct perfrec_ring *r, struct perfrec_ring_batch *b)
{
	struct perf_event_header hdr;
	int n = 0, size;

	/* Sizes are still checked: a bad one would make the byte copy hand
	 * out a torn record, and later passes would lose record alignment. */
	while ((size = peek(r, b, &hdr)) > 0) {
		b->pos += (uint64_t)size;
		if (n < INT32_MAX)
			n++;
	}
	return size < 0 ? size : n;
}

int perfrec_ring__iov(const struct perfrec_ring *r, const struct perfrec_ring_batch *b,
		      struct iovec iov[2])
{
	uint64_t len = b->pos - b->start;
	uint64_t off = b->start & r->mask;
	uint64_t first;

	if (!len)
		return 0;
	first = r->size - off;
	if (first >= len) {
		iov[0].iov_base = r->data + off;
		iov[0].iov_len = (size_t)len;
		return 1;
	}
	iov[0].iov_base = r->data + off;
	iov[0].iov_len = (size_t)first;
	iov[1].iov_base = r->data;
	iov[1].iov_len = (size_t)(len - first);
	return 2;
}

void perfrec_ring__commit(struct perfrec_ring *r, const struct perfrec_ring_batch *b)
{
	/*
	 * pos ends on a record boundary and skip is only ever head - pos, so
	 * the new tail is either a record boundary or exactly head: never
	 * inside a record, never past what the kernel published.
	 */
	uint64_t tail = b->pos + b->skip;

	/*
	 * Release: pairs with the kernel's read of data_tail in
	 * perf_output_begin() (followed by its smp_mb()) before it reuses
	 * space.  Our reads and copies of [start, tail) happen before the
	 * kernel can see the space as free and overwrite it.
	 */
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}
