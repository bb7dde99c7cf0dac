/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `perfrecctl cut --archive FILE` (cut-archive.c): one tar of a cut and
 * the build-id cache entries it needs, laid out as `perf archive`'s output
 * is, to be unpacked into ~/.debug on another machine.
 */
#ifndef PERFRECCTL_CUT_ARCHIVE_H
#define PERFRECCTL_CUT_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>

struct cut_archive_opts {
	const char *data_path;          /* the cut, written and verified */
	const char *archive_path;       /* gzip'ed if it ends in .gz or .tgz */
	/* Directories whose .build-id/ is a cache (perfrecd's, perf's old style), first one first. */
	const char *const *cache_dirs;
	size_t nr_cache_dirs;
	bool force;                     /* replace an existing @archive_path */
};

/*
 * Write @o->archive_path: the cut as member basename(data_path), then for
 * every build id its HEADER_BUILD_ID or its MMAP2 records name, the first
 * cache's entry, as .build-id/xx/yyyy... (a file, or a directory's files:
 * a kernel's kallsyms).  Build ids no cache holds are named on stderr and
 * counted; links in a cache are not followed.  Returns 0 written (even with
 * entries missing), EXIT_USAGE when it could not be (nothing is left).
 */
int cut_archive(const struct cut_archive_opts *o);

/*
 * The build ids @path's HEADER_BUILD_ID names, in hex, NUL-separated in
 * one string (ended by an empty one) that the caller frees: what a cut of
 * it needs in a cache.  0 and *@ret, or -errno.
 */
int cut_archive_buildids(const char *path, char **ret);

#endif
