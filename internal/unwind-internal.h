/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What perfrecd's unwinding worker (internal/unwind-sink.c) needs of the
 * unwinder beyond the public API; not exported from libperfrec.so.
 */
#ifndef PERFREC_UNWIND_INTERNAL_H
#define PERFREC_UNWIND_INTERNAL_H

#include <perfrec/unwind.h>

/*
 * perfrec_unwinder__push() without the copy: @rec (and @attr) must stay
 * where they are until the next perfrec_unwinder__flush() returns.  The
 * worker's rounds hold their records until then, and a DWARF sample is
 * 8 KiB of stack that the drain has already copied once.
 */
int perfrec_unwinder__push_borrowed(struct perfrec_unwinder *u, const struct perf_event_header *rec,
				    const struct perf_event_attr *attr);

#endif
