/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Retention: keeps the output directory bounded by deleting the oldest
 * published recordings once a file count, total size or age limit is
 * exceeded.  Only published files of the daemon's own prefix are ever
 * considered; files still being written (*.data.tmp) and anything else in
 * the directory are left alone.
 */
#ifndef PERFRECD_RETENTION_H
#define PERFRECD_RETENTION_H

#include <stdint.h>

struct retention_opts {
	const char *dir;
	const char *prefix;
	uint64_t max_files;    /* 0: no limit */
	uint64_t max_bytes;    /* total size of published files; 0: no limit */
	uint64_t max_age_usec; /* by mtime; 0: no limit */
};

/*
 * Remove the oldest published files ("<prefix>-*.data", sorted by name,
 * which is by time) until every limit holds.  Files named in @keep (a
 * NULL-terminated array of names or paths, compared by their last path
 * component; may be NULL) are never removed but still count towards the
 * limits.  Files that vanish meanwhile are skipped.  Each removal is logged
 * once.  Returns the number of files removed, or -errno when the directory
 * cannot be read (logged).  Safe to run while files are being created or
 * removed by others; a file removed by someone else is not counted.
 */
int retention_apply(const struct retention_opts *o, const char *const *keep);

#endif
