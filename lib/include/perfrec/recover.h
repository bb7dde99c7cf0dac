/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recovery of perf.data files a crash left behind: the "NAME.tmp" a killed
 * perfrecd leaves (header checkpointed, more whole records after the
 * checkpoint, then a cut record, no feature sections) or any damaged
 * PERFILE2 file.  The whole records are copied into a new, complete file with
 * the same attrs, ids and event names and freshly built feature sections.
 */
#ifndef PERFREC_RECOVER_H
#define PERFREC_RECOVER_H

#include <perfrec/format.h>

struct perfrec_recover_opts {
	size_t sz;
	int argc;               /* for HEADER_CMDLINE */
	char *const *argv;
};

struct perfrec_recover_stats {
	uint64_t records;       /* records copied */
	uint64_t samples;       /* of which PERF_RECORD_SAMPLE */
	uint64_t bytes;         /* data bytes copied */
	uint64_t dropped_bytes; /* bytes after the last whole record, not copied */
};

/*
 * Read @src in salvage mode, keep every whole record that
 * perfrec_pdreader__check_record() accepts up to the first cut or bad one,
 * and write a complete file to @dst with the same attrs, ids and event
 * names, those records, and feature sections: this host's (hostinfo), sample
 * times found, HEADER_BUILD_ID from the MMAP2 and sample records, and any
 * feature the source still carries (dropped if they would not verify).  No
 * CLOCK_DATA unless the source has it: the wall-clock reference of a .tmp is
 * unknown.  The file is written as "@dst.recovering-XXXXXX", verified, then
 * renamed to @dst (replacing it), so @dst may be the name @src was heading
 * for ("X.data" for "X.data.tmp").  @src is not modified.
 * Returns 0, or -errno: -EBADMSG when @src has no usable header or attrs,
 * -ENODATA when it holds no whole record after them (a .tmp killed before
 * its first records; perf refuses a file with data size 0), -EBUSY when a
 * live writer holds @src (a recording in progress: perf_pdwriter__create()
 * locks it), -EPROTO if the file written would not verify (a bug).  On
 * failure no file is left behind.
 * @ret_stats (may be NULL) is filled on success.
 */
PERFREC_API int perfrec_recover__file(const char *src, const char *dst,
				      const struct perfrec_recover_opts *opts,
				      struct perfrec_recover_stats *ret_stats);

#endif
