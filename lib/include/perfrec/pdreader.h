/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PERFILE2 reader: the file header, attrs and their ids, feature sections and
 * the records of the data section, every size checked against the file.  It
 * is fed untrusted input (files from other hosts, files cut by a crash) and
 * must never read out of bounds; every failure names the problem and the file
 * offset where it was found.
 */
#ifndef PERFREC_PDREADER_H
#define PERFREC_PDREADER_H

#include <perfrec/format.h>

struct perfrec_pdreader;

struct perfrec_pdreader_attr {
	struct perf_event_attr attr; /* copied, zero-extended to our size */
	const uint64_t *ids;
	size_t nr_ids;
	const char *name;            /* from EVENT_DESC, or NULL */
};

struct perfrec_pdreader_opts {
	size_t sz;
	/* Accept data.size == 0 and walk to end of file (recovery of .tmp files). */
	bool salvage;
};

/* Open a file by path / from a memory buffer (copied). */
PERFREC_API int perfrec_pdreader__open(const char *path, const struct perfrec_pdreader_opts *opts,
				       struct perfrec_pdreader **ret_reader);
PERFREC_API int perfrec_pdreader__open_mem(const void *buf, size_t len,
					   const struct perfrec_pdreader_opts *opts,
					   struct perfrec_pdreader **ret_reader);

PERFREC_API const struct perfrec_file_header *perfrec_pdreader__header(const struct perfrec_pdreader *r);
PERFREC_API size_t perfrec_pdreader__nr_attrs(const struct perfrec_pdreader *r);
PERFREC_API const struct perfrec_pdreader_attr *perfrec_pdreader__attr(const struct perfrec_pdreader *r, size_t idx);
/* The attr an id belongs to, or NULL. */
PERFREC_API const struct perfrec_pdreader_attr *perfrec_pdreader__attr_by_id(const struct perfrec_pdreader *r, uint64_t id);

/* Feature body: 0 and pointer/length into the file, -ENOENT if absent. */
PERFREC_API int perfrec_pdreader__feature(const struct perfrec_pdreader *r, int feat,
					  const void **ret_data, size_t *ret_len);

/*
 * Next record of the data section: 1 with *ret_rec (valid while the reader
 * lives) and its file offset, 0 at the end, -EBADMSG on a bad record (see
 * __error()).
 */
PERFREC_API int perfrec_pdreader__next(struct perfrec_pdreader *r, const struct perf_event_header **ret_rec,
				       uint64_t *ret_offset);
PERFREC_API void perfrec_pdreader__rewind(struct perfrec_pdreader *r);

/* Last problem found and its file offset ("" and 0 when none). */
PERFREC_API const char *perfrec_pdreader__error(const struct perfrec_pdreader *r, uint64_t *ret_offset);

/*
 * Check the whole file: header, sections, features (each body well formed),
 * attrs and ids (unique), every record's type and size, sample ids known.
 * Returns 0 if sound, else -EBADMSG with __error() naming the first problem.
 */
PERFREC_API int perfrec_pdreader__verify(struct perfrec_pdreader *r);

PERFREC_API void perfrec_pdreader__free(struct perfrec_pdreader *r);

#endif
