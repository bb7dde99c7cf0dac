/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One self-contained perf.data of a wall-clock window across rotated
 * files (cut.c), for `perfrecctl cut`.
 */
#ifndef PERFRECCTL_CUT_H
#define PERFRECCTL_CUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-label.h"
#include "window.h"

struct cut_opts {
	const char *out_path;
	uint64_t from, to;           /* wall ns, [from, to) */
	/* Only the samples of the cgroups this selects (--container, --pod, --unit); the side-band whole. */
	struct cgroup_select select;
	int level;                   /* zstd level of the output's COMPRESSED records; 0: none */
	bool force;                  /* replace an existing @out_path */
	/*
	 * The file being written, when the window reaches it, from a Snapshot
	 * of the daemon answering at @socket_path rather than as far as it was
	 * checkpointed: @snapshot_into has that daemon write one into @fd and
	 * returns 0, or an exit code having said why.  Without them (or
	 * without a daemon at @socket_path) the file is read as it is on disk.
	 */
	bool live;
	const char *socket_path;
	int (*snapshot_into)(int fd, uint64_t *ret_samples);
};

/*
 * Write the window of @paths (files or directories of recordings) that
 * @o asks for into o->out_path, which is replaced only once the cut
 * verifies.  What it does and why not goes to stderr as "perfrecctl cut:
 * ...".  Returns 0 written; EXIT_BAD nothing recorded in the window, files
 * that cannot be cut together, or an output that would not verify (nothing
 * is left behind); EXIT_USAGE unreadable paths, I/O errors.
 */
int cut_write(const struct cut_opts *o, const char *const *paths, size_t nr_paths);

/*
 * The check cut_write() makes of files of @l the window [@from, @to)
 * needs that retention removed between their listing and their opening
 * (l->gone): EXIT_BAD having named them and the span missed, or 0.
 */
int cut_check_gone(const struct window_listing *l, uint64_t from, uint64_t to);

#endif
