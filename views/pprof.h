/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof profiles out of perf.data files (pprof.c), split from the command
 * so the fuzz target can drive the same path.
 */
#ifndef PERFRECCTL_PPROF_H
#define PERFRECCTL_PPROF_H

#include "profile.h"
#include "summary.h"

/*
 * Walk @paths with @o and write the gzip'ed profile.proto to @fd; the
 * number of samples in it and their span go to *@ret (may be NULL).  Returns 0 or -errno
 * (the walk's errors are printed by it, naming the file).
 */
int pprof_write(const char *const *paths, size_t nr_paths, const struct profile_opts *o, int fd,
		struct view_summary *ret);

/*
 * profile_stack_fn of the writer (@ctx: its tables).  As profile.h says
 * of the walk, the strings of @s and its frames must live, unchanged, as
 * long as the tables: they are remembered by address.
 */
int pprof_add_stack(void *ctx, const struct pstack *s);

/*
 * The writer's tables on their own, for a caller that adds stacks itself
 * (pprof_add_stack() with the result as @ctx) and packs them: string 0 is
 * "", as pprof wants.  NULL without memory.
 */
struct pprof *pprof_new(void);
void pprof_free(struct pprof *p);
/* The profile.proto message of what was added, packed but not gzip'ed, into *@ret_buf (freed by the caller). */
int pprof_pack(struct pprof *p, uint8_t **ret_buf, size_t *ret_len);

#endif
