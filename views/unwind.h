/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfrecctl's file unwinding (unwind.c): a raw DWARF recording rewritten
 * into the callchain form by libperfrec's host unwinder, for `perfrecctl
 * unwind` and for the commands that have to put a raw recording beside
 * host-unwound ones (`cut` of a window reaching perfrecd's snapshot, whose
 * records stay raw while its published files are unwound).
 */
#ifndef PERFRECCTL_UNWIND_H
#define PERFRECCTL_UNWIND_H

#include <perfrec/unwind.h>

/*
 * Unwind @in_path, which must verify, into a new file @out_path (created or
 * truncated, mode 0640) that verifies: the same attrs passed through
 * perfrec_unwinder__rewrite_attr(), the same features, every DWARF sample
 * rewritten with its unwound user frames.  Problems go to stderr as
 * "perfrecctl CMD: ...".  Returns 0 (*ret_stats, may be NULL: the
 * unwinder's counters) or an exit code: EXIT_BAD the input is not sound or
 * a sample could not be rewritten, EXIT_USAGE cannot read or write; on
 * failure @out_path is removed.
 */
int unwind_file(const char *cmd, const char *in_path, const char *out_path, struct perfrec_unwinder_stats *ret_stats);

/* How the last unwind_file() went with the unwind tables (unwind-internal.h). */
struct perfrec_unwinder_table_stats;
void unwind_file_table_stats(struct perfrec_unwinder_table_stats *ret);

#endif
