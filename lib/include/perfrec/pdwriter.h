/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PERFILE2 writer.  Layout written:
 *
 *   header | ids of attr 0..n | attrs (attr + ids section) | data |
 *   feature section table | feature bodies
 *
 * The header goes first with data.size = 0; perfrec_pdwriter__checkpoint()
 * rewrites it with the data written so far (so a file left behind by a
 * crash is readable up to the last checkpoint); perfrec_pdwriter__finish()
 * appends the feature sections and rewrites it for good.  The writer only
 * writes to the fd it is given; naming, fsync of the directory and rename
 * belong to perfrec_pdwriter__create()/__publish().
 *
 * Not thread-safe: one thread drives a writer.
 */
#ifndef PERFREC_PDWRITER_H
#define PERFREC_PDWRITER_H

#include <sys/uio.h>
#include <perfrec/format.h>

struct perfrec_pdwriter;

struct perfrec_pdwriter_opts {
	size_t sz;
	bool owns_fd; /* close the fd in __free() */
};

/* Start a file on @fd (at offset 0, truncated).  Ownership per opts. */
PERFREC_API int perfrec_pdwriter__new(int fd, const struct perfrec_pdwriter_opts *opts,
				      struct perfrec_pdwriter **ret_writer);

/*
 * Create "@path.tmp" (mode 0640, O_CLOEXEC|O_EXCL) and start a file there;
 * the writer owns the fd and remembers @path for __publish().
 */
PERFREC_API int perfrec_pdwriter__create(const char *path, struct perfrec_pdwriter **ret_writer);

/*
 * Add an event: its attr (attr->size bytes are used; all attrs of a file must
 * be the same size), its ids and its name (for HEADER_EVENT_DESC, which the
 * writer produces itself at finish).  Only before the first data write.
 */
PERFREC_API int perfrec_pdwriter__add_attr(struct perfrec_pdwriter *w,
					   const struct perf_event_attr *attr,
					   const uint64_t *ids, size_t nr_ids, const char *name);

/* Append bytes to the data section.  Returns 0 or -errno (-ENOSPC ...). */
PERFREC_API int perfrec_pdwriter__write(struct perfrec_pdwriter *w, const void *buf, size_t len);
PERFREC_API int perfrec_pdwriter__writev(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt);

/* Bytes in the data section so far. */
PERFREC_API uint64_t perfrec_pdwriter__data_size(const struct perfrec_pdwriter *w);

/*
 * Rewrite the header so the file is readable up to here (data.size set,
 * no feature bits), then fdatasync.
 */
PERFREC_API int perfrec_pdwriter__checkpoint(struct perfrec_pdwriter *w);

/* Set (copying) the body of feature @feat; replaces an earlier one. */
PERFREC_API int perfrec_pdwriter__set_feature(struct perfrec_pdwriter *w, int feat,
					      const void *data, size_t len);

/* Write feature sections and the final header; fsync.  Data writes end. */
PERFREC_API int perfrec_pdwriter__finish(struct perfrec_pdwriter *w);

/*
 * After __finish() on a writer from __create(): rename "@path.tmp" to @path
 * and fsync the directory.
 */
PERFREC_API int perfrec_pdwriter__publish(struct perfrec_pdwriter *w);

/* Free; a writer from __create() that was never published unlinks its tmp file
 * only if @discard is true (otherwise it stays for recovery). */
PERFREC_API void perfrec_pdwriter__free(struct perfrec_pdwriter *w, bool discard);

/* The fd written to (borrowed). */
PERFREC_API int perfrec_pdwriter__fd(const struct perfrec_pdwriter *w);

#endif
