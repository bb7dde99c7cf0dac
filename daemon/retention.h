/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Retention: keeps the output directory bounded by deleting the oldest
 * published recordings once a file count, total size or age limit is
 * exceeded, or the file system has less free space than a floor.  Only published files of the daemon's own prefix are ever
 * considered; files still being written (*.data.tmp) and anything else in
 * the directory are left alone.
 */
#ifndef PERFRECD_RETENTION_H
#define PERFRECD_RETENTION_H

#include <stdint.h>

/* The file system holding the directory, in bytes. */
struct retention_space {
	uint64_t size;   /* all of it */
	uint64_t avail;  /* free for unprivileged writers (statvfs f_bavail) */
};

struct retention_opts {
	const char *dir;
	const char *prefix;
	uint64_t max_files;    /* 0: no limit */
	/* total size of published files: at most max_bytes and at most
	 * max_bytes_percent of the file system, each 0 when unset */
	uint64_t max_bytes;
	unsigned max_bytes_percent;
	uint64_t max_age_usec; /* by mtime; 0: no limit */
	/* the free-space floor: the smaller of the two that are set */
	uint64_t min_free;
	unsigned min_free_percent;
	/* How big and how free the directory's file system is; NULL: fstatvfs().
	 * Asked again after each removal the floor makes.  0 or -errno. */
	int (*space)(int dfd, void *ctx, struct retention_space *ret);
	void *space_ctx;
};

/*
 * Remove the oldest published files ("<prefix>-*.data", sorted by name,
 * which is by time) until every limit holds, the free-space floor
 * included (as far as removing published files can reach it).  Files named in @keep (a
 * NULL-terminated array of names or paths, compared by their last path
 * component; may be NULL) are never removed but still count towards the
 * limits.  Files that vanish meanwhile are skipped.  Each removal is logged
 * once.  Returns the number of files removed, or -errno when the directory
 * cannot be read (logged).  Safe to run while files are being created or
 * removed by others; a file removed by someone else is not counted.
 */
int retention_apply(const struct retention_opts *o, const char *const *keep);

/*
 * Whether the directory's file system has less free space than the floor
 * (min-free): 1 if so, with what is free and what the floor asks for in
 * *@ret_avail and *@ret_floor (each may be NULL); 0 if not or when there is
 * no floor; -errno when the file system cannot be measured (not logged).
 */
int retention_below_floor(const struct retention_opts *o, uint64_t *ret_avail, uint64_t *ret_floor);

#endif
