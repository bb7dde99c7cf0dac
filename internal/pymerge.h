/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One callchain and the walk of Python frames read at its sample
 * (pywalk.h) made into one chain (issue 27): in the user part (after
 * PERF_CONTEXT_USER), the frames of the interpreter's eval loop replaced
 * by the Python frames each C call of it was running.
 *
 *   - the walk (innermost first) splits into groups at its PYWALK_F_ENTRY
 *     frames: a group is what one C call of the eval loop runs;
 *   - a whole walk is matched to the eval frames from the root: the
 *     outermost group to the outermost eval frame, and so on inwards; when
 *     the counts differ the inner ones left over stay as they are (native
 *     eval frames, or Python frames no eval frame runs yet);
 *   - a walk that was cut (PYWALK_TORN, PYWALK_TRUNCATED, or whose last
 *     frame is no entry frame) has no root: its whole groups are matched
 *     from the leaf, and only when the sample's own user ip is in the eval
 *     loop (that call is running the innermost frame read); otherwise
 *     nothing is merged;
 *   - a group with a frame whose code object cannot be named stays native.
 *
 * Native frames below and above stay in place, in order.  Pure: no I/O,
 * prints nothing, bounded by PYMERGE_MAX_CHAIN and PYWALK_MAX_FRAMES
 * whatever the chain and the walk hold (tests/fuzz/fuzz-pymerge.c).
 */
#ifndef PERFREC_PYMERGE_H
#define PERFREC_PYMERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pywalk.h"

/* Longer chains are left alone (the kernel's are 127 frames by default). */
#define PYMERGE_MAX_CHAIN 4096

/*
 * @chain (@nr entries) with the eval frames of its user part (return
 * addresses in [@lo, @hi], the byte after a call at the end included)
 * replaced by @w's groups, each Python frame turned into an address by
 * @addr (0: it cannot be named), into @out, which has room
 * for @nr + PYWALK_MAX_FRAMES entries.  Returns the entries written, 0
 * when nothing was merged; *@ret_partial says whether eval frames or
 * groups were left over (or the walk was cut).  Not reentrant across
 * threads' signal handlers (a per-thread scratch table).
 */
size_t pymerge_chain(const uint64_t *chain, size_t nr, uint64_t lo, uint64_t hi, const struct pywalk_rec *w,
		     uint64_t (*addr)(void *ctx, const struct pywalk_frame *f), void *ctx, uint64_t *out, bool *ret_partial);

#endif
