/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Python frames merged into callchains (issue 27), as a stage (stage.h)
 * after the host unwinder when there is one, else right on the drain, in
 * front of the file, the history and the streams.
 *
 * For each sample with a callchain, the walk of its thread's Python frames
 * read at the sample (pywalk.h, pywalk_take()) replaces, in the user part
 * of the chain, the frames of the interpreter's eval loop
 * (_PyEval_EvalFrameDefault) with the Python frames each was running, as
 * pymerge.h says: a whole walk matched from the root, a cut one only from
 * an eval frame that is the sample's own ip, a group with a frame that
 * cannot be named left native.  Native frames below (C code called from
 * Python) and above (main, Py_RunMain, the helpers between eval calls)
 * stay in place.  Nothing is guessed; a sample the stage cannot merge
 * goes on unchanged.
 *
 * Each Python frame's address: one per code object of the process, in a
 * region at PYSTAGE_REGION_BASE, in every process the same.  That address
 * is not canonical on x86_64 with 4- or 5-level paging (bits 56-62 not
 * all copies of bit 63), so no process can map it, while readers (perf:
 * kernel_start 1 << 63 on x86_64, perfparser, perfrecd's views) take it
 * for user space.  It is named by the JIT machinery (jitsink.h's synthetic
 * mappings): the jitsink behind the stage gives the region an MMAP2 with a
 * build id, emitted by the stage right before the first sample of that
 * process in each file to every output behind it (its samples older than
 * that one, drained after it from other rings, stay native: none may
 * carry the region's addresses before its MMAP2), and an image whose
 * symbols ("py::QUALNAME (FILE:FIRSTLINE)", pyname.h) are written into the
 * build-id cache with the JIT images.  Without a jitsink behind the stage
 * or a build-id cache, nothing is merged.
 *
 * Records come out in the layout they came in (the stage's drain is the
 * one upstream emits with), on the draining thread, one round per round.
 */
#ifndef PERFRECD_PYSTAGE_H
#define PERFRECD_PYSTAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyname.h"
#include "pywalk.h"
#include "stage.h"

/* Where Python frames' addresses start: non-canonical, below 1 << 63 (see above). */
#define PYSTAGE_REGION_BASE 0x0200000000000000ull
/*
 * One slot a code object: its frames are at slot + 8, so that ip - 1 is in
 * it too.  Slot n lies at (n + 1) * PYSTAGE_SLOT: no symbol at the image's
 * address 0, which readers take for no address (perfrecd's symbolizer).
 */
#define PYSTAGE_SLOT 16
#define PYSTAGE_REGION_LEN ((uint64_t)(PYNAME_MAX_CODES + 1) * PYSTAGE_SLOT)
/* Python processes the stage keeps state of at once. */
#define PYSTAGE_MAX_PROCS 1024

struct pystage_stats {
	uint64_t samples;      /* samples with a callchain looked at */
	uint64_t merged;       /* of them, with Python frames in place of eval frames */
	uint64_t not_joined;   /* no walk joined them (not a Python thread, or the walk was lost) */
	uint64_t mismatched;   /* joined, eval frames and groups not all matched: the rest left native */
	uint64_t unmerged;     /* joined, nothing merged (no eval frame, a cut walk without anchor, ...) */
	uint64_t names_failed; /* Python frames whose code object could not be named (their group stays native) */
	uint64_t procs;        /* processes set up */
	uint64_t procs_failed; /* processes that could not be (no layout, no eval symbol, no memory access) */
	uint64_t procs_refused; /* not set up: PYSTAGE_MAX_PROCS */
	uint64_t maps;         /* synthetic MMAP2s emitted */
	uint64_t no_image;     /* samples not merged: no jitsink or no build-id cache behind the stage */
	uint64_t before_map;   /* samples not merged: older than their region's MMAP2 (drained after it) */
};

/* What the stage needs of a process: how to name its code, where its eval loop is. */
struct pystage_proc_setup {
	struct pyname_cache *names;   /* owned by the stage from then on */
	uint64_t eval_lo, eval_hi;    /* [lo, hi) in the process */
};

struct pystage_opts {
	size_t sz;
	struct pywalk *py;                   /* borrowed for the stage's life */
	/* decodes the records that come in, which go out in the same layout; borrowed */
	const struct drain *layout;
	/* the side-band event: the trailer of the MMAP2s the stage emits */
	uint64_t sideband_sample_type;
	const uint64_t *sideband_ids;        /* borrowed; one per CPU (@sideband_cpus), the first for others */
	const int *sideband_cpus;
	size_t nr_sideband_ids;
	/* seams for tests: NULL is pywalk_take(), and the walker's layout (else pyproc_detect()) + pyname_*() */
	const struct pywalk_rec *(*take)(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time);
	int (*setup)(void *ctx, pid_t pid, struct pystage_proc_setup *ret);
	void *ctx;
};

struct pystage;

/* 0, -EINVAL or -ENOMEM. */
int pystage_new(const struct pystage_opts *opts, struct pystage **ret);
/* NULL is fine. */
void pystage_free(struct pystage *ps);
struct stage *pystage_stage(struct pystage *ps);
void pystage_get_stats(const struct pystage *ps, struct pystage_stats *ret);

#endif
