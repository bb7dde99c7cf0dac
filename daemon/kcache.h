/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's maps (kernel text and modules, as perfrec_synth__kernel
 * synthesizes them) read once before the events are enabled and replayed
 * into every file: see kcache.c.
 */
#ifndef PERFRECD_KCACHE_H
#define PERFRECD_KCACHE_H

#include <perfrec/synth.h>

/*
 * Synthesize the kernel maps with @so into the cache (so->time is ignored),
 * unless it already holds them for this sample_type/id and /proc/modules.
 */
void kcache_fill(const struct perfrec_synth_opts *so);

/*
 * perfrec_synth__kernel() as far as @emit can tell: the cached records,
 * each stamped with so->time, or freshly synthesized ones when the cache is
 * empty, was made for another sample_type/id, or /proc/modules changed since.
 * Returns what perfrec_synth__kernel() returned (-EPERM: addresses hidden),
 * or @emit's error.
 */
int kcache_emit(const struct perfrec_synth_opts *so, perfrec_synth_emit_fn emit, void *ctx);

/* Drop the cache (tests, shutdown). */
void kcache_clear(void);

#endif
