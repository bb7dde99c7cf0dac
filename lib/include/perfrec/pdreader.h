/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PERFILE2 reader: the file header, attrs and their ids, feature sections and
 * the records of the data section, every size checked against the file.  It
 * is fed untrusted input (files from other hosts, files cut by a crash) and
 * must never read out of bounds; every failure names the problem and the file
 * offset where it was found.
 *
 * Pipe-mode data (perf record -o -, perfrecd -o -) reads the same way: attrs
 * come from its HEADER_ATTR records and features from its HEADER_FEATURE
 * records.  PERF_RECORD_COMPRESSED records are decompressed on the fly and
 * the records inside them returned in their place.
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
	/* Return PERF_RECORD_COMPRESSED records as they are, not their contents. */
	bool raw_compressed;
};

/*
 * Open a file by path (mmap) / from a memory buffer (copied).  Fails only when
 * the bytes cannot be had (-errno from open/mmap, -ENOMEM); a file that is
 * not sound perf data still opens, and its first structural problem shows in
 * __error() and makes __verify() (and, when the records cannot be located,
 * __next()) return -EBADMSG.  An unusable header yields zero attrs and a
 * zeroed header.
 */
PERFREC_API int perfrec_pdreader__open(const char *path, const struct perfrec_pdreader_opts *opts,
				       struct perfrec_pdreader **ret_reader);
PERFREC_API int perfrec_pdreader__open_mem(const void *buf, size_t len,
					   const struct perfrec_pdreader_opts *opts,
					   struct perfrec_pdreader **ret_reader);
/* Read @fd (a pipe, stdin, a file) to its end and open that; @fd stays open. */
PERFREC_API int perfrec_pdreader__open_fd(int fd, const struct perfrec_pdreader_opts *opts,
					  struct perfrec_pdreader **ret_reader);
/* True if the data is pipe-mode (16-byte header, attrs and features as records). */
PERFREC_API bool perfrec_pdreader__is_pipe(const struct perfrec_pdreader *r);

PERFREC_API const struct perfrec_file_header *perfrec_pdreader__header(const struct perfrec_pdreader *r);
PERFREC_API size_t perfrec_pdreader__nr_attrs(const struct perfrec_pdreader *r);
PERFREC_API const struct perfrec_pdreader_attr *perfrec_pdreader__attr(const struct perfrec_pdreader *r, size_t idx);
/* The attr an id belongs to, or NULL. */
PERFREC_API const struct perfrec_pdreader_attr *perfrec_pdreader__attr_by_id(const struct perfrec_pdreader *r, uint64_t id);

/* Feature body: 0 and pointer/length into the file, -ENOENT if absent. */
PERFREC_API int perfrec_pdreader__feature(const struct perfrec_pdreader *r, int feat,
					  const void **ret_data, size_t *ret_len);

/*
 * Next record of the data section: 1 with *ret_rec and its file offset, 0 at
 * the end, -EBADMSG on a bad record (see __error()).  A record from inside
 * a COMPRESSED record comes from a scratch buffer valid until the next call,
 * and its offset is the COMPRESSED record's.  *ret_rec points into
 * the file and stays valid while the reader lives, except for a record at an
 * offset that is not 8-aligned (never in files we write): that one is copied
 * to a scratch buffer valid until the next call.  In salvage mode the end of
 * the data is the last whole record: a cut or zero-sized record there ends
 * the walk (0) instead of failing.
 */
PERFREC_API int perfrec_pdreader__next(struct perfrec_pdreader *r, const struct perf_event_header **ret_rec,
				       uint64_t *ret_offset);
PERFREC_API void perfrec_pdreader__rewind(struct perfrec_pdreader *r);

/* Last problem found and its file offset ("" and 0 when none). */
PERFREC_API const char *perfrec_pdreader__error(const struct perfrec_pdreader *r, uint64_t *ret_offset);

/*
 * Check the whole file: header, sections, features (each body well formed,
 * none empty), attrs and ids (unique), a data section that is not empty
 * (perf refuses data size 0), every record as __check_record() does.  At
 * least as strict as perf 6.1 (perf script) and hotspot's perfparser.
 * Returns 0 if sound, else -EBADMSG with __error() naming the first problem.
 */
PERFREC_API int perfrec_pdreader__verify(struct perfrec_pdreader *r);

/*
 * Check one record the way __verify() checks each record of the file: a type
 * perf 6.1 reads, fields that fit the record (a sample parsed against its
 * attr, a sample_id trailer naming a known id, strings NUL-terminated, counts
 * of entries that fit), ids known to @r.  @rec need not lie in @r's data (a
 * salvage walks records beyond a .tmp's stated data size); @offset is only
 * for the message.  Returns 0, -EBADMSG with __error() naming the problem (the
 * first one found stays), -EINVAL for a record shorter than its header.
 * Counts the record into __stats().
 */
PERFREC_API int perfrec_pdreader__check_record(struct perfrec_pdreader *r, const struct perf_event_header *rec,
					       uint64_t offset);

/* Counts gathered by the last __verify() over the records it walked. */
struct perfrec_pdreader_stats {
	uint64_t nr_records;
	uint64_t nr_samples;
	uint64_t by_type[PERFREC_RECORD_USER_MAX]; /* index: record type */
	uint64_t lost;          /* sum of PERF_RECORD_LOST.lost */
	uint64_t lost_samples;  /* sum of PERF_RECORD_LOST_SAMPLES.lost */
	bool has_time;          /* first/last_time valid */
	uint64_t first_time, last_time; /* smallest/largest sample time */
	const uint64_t *samples_per_attr; /* nr_attrs entries */
	const uint64_t *samples_per_cpu;  /* nr_cpus entries */
	size_t nr_cpus;                   /* highest cpu seen + 1, at most 4096 */
	uint64_t samples_other_cpu;       /* cpu >= 4096, or unknown */
	/* COMPRESSED records: count in by_type[81]; payload bytes in, bytes out */
	uint64_t compressed_in, decompressed_out;
	uint64_t max_decompressed;        /* largest output of one COMPRESSED record */
	/*
	 * Samples with a user stack copy (DWARF callchains): how many, the
	 * bytes their records give it (the copy's size) and the bytes the
	 * kernel could fill (dyn_size).
	 */
	uint64_t stack_samples, stack_bytes, stack_dyn_bytes;
};

/* Stats of the last __verify() (zeros before one); valid while @r lives. */
PERFREC_API const struct perfrec_pdreader_stats *perfrec_pdreader__stats(const struct perfrec_pdreader *r);

/* "HOSTNAME", "EVENT_DESC", ... or "UNKNOWN". */
PERFREC_API const char *perfrec_pdreader__feature_name(int feat);

/*
 * One line decoding feature @feat into @buf (strings, numbers, the command
 * line, clock data, sample times; other features as their size).  Returns the
 * length written (truncated to fit, NUL-terminated), -ENOENT if absent,
 * -EBADMSG if malformed.
 */
PERFREC_API int perfrec_pdreader__feature_text(const struct perfrec_pdreader *r, int feat,
					       char *buf, size_t sz);

PERFREC_API void perfrec_pdreader__free(struct perfrec_pdreader *r);

#endif
