/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The file sink: the sink (sink.h) that writes what the drain, or a stage
 * in front of it, hands on into a perf.data file.  One for every writer
 * of files: perfrecd's recorder and the record object (record.c).  Per
 * pass it
 *
 *   record()   counts each record (samples, the kernel's LOST and
 *              LOST_SAMPLES) since the start and into the file, and
 *              tracks it (track.h): sample times and pids into the
 *              file's, maps and exits into the sink's own
 *   write()    writes the span into the file's writer; a span it cannot
 *              write (no file, a full disk, the owner's refusal) is
 *              refused: its samples become lost, and wait for the next
 *              round that succeeds to be reported in the file as a
 *              PERF_RECORD_LOST per ring
 *   round()    ends a pass that wrote with FINISHED_ROUND
 *
 * Beginning and finishing the files is the owner's (outfile.h), which
 * points the sink at the file it writes (@file) between the two.  What
 * only perfrecd does (logging a full disk once, min-free) comes in through
 * struct filesink_hooks.
 */
#ifndef PERFREC_FILESINK_H
#define PERFREC_FILESINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/perfrec.h>

#include "sink.h"
#include "track.h"

/* What reached the sink of one ring (or of all). */
struct filesink_counts {
	uint64_t samples;
	uint64_t lost;          /* PERF_RECORD_LOST: records the kernel dropped */
	uint64_t lost_samples;  /* PERF_RECORD_LOST_SAMPLES */
	uint64_t bytes;
	uint64_t corrupt;       /* ring passes cut short */
	uint64_t dropped;       /* samples the output refused (disk full), counted in lost too */
};

/* The file the sink writes, and what went into it; the owner's. */
struct filesink_file {
	struct perfrec_pdwriter *w; /* NULL: no file, every span refused */
	struct track track;         /* its samples: their times, their pids into the build-id table */
	uint64_t samples, lost, bytes;
	uint64_t dropped;           /* of lost: samples refused before, in LOST records of this file */
	struct filesink_counts *cpu; /* per ring (NULL: not counted per ring) */
};

/* What the owner adds (any may be NULL); called with @ctx. */
struct filesink_hooks {
	/* before a span goes into the file: 0, or -errno to refuse it (perfrecd: below min-free) */
	int (*admit)(void *ctx);
	/* the result of every write into the file, returned in its place (perfrecd: logs a full disk) */
	int (*wrote)(void *ctx, int err);
	/* @samples refused before are now in the file as lost */
	void (*reported)(void *ctx, uint64_t samples);
};

struct filesink_opts {
	size_t sz;
	/* the rings and their CPUs, borrowed for the sink's life (NULL: @nr_rings, ring i on CPU i) */
	const struct perfrec_evlist *evlist;
	size_t nr_rings;
	/* what the LOST records for refused samples are attributed to */
	uint64_t sideband_sample_type, sideband_id;
	const uint64_t *sideband_ids;        /* per ring (NULL: sideband_id for all) */
	int clockid;                         /* their time (-1: the perf clock, read as MONOTONIC) */
	/* nothing is written, only counted (perfrecd's flight mode: the history keeps them) */
	bool count_only;
	const struct filesink_hooks *hooks;
	void *hooks_ctx;
};

struct span_mark {
	uint64_t samples, lost, lost_samples;
};

/* Embedded in its owner, which adds @sink to the drain or a stage. */
struct filesink {
	struct sink sink;
	struct filesink_opts opts;
	size_t nr_rings;
	struct filesink_file *file; /* NULL: none (spans refused) */
	/* maps and exits of every file, into the build-id table (bids NULL: not tracked) */
	struct track track;
	struct filesink_counts *total; /* per ring, since the start */
	struct span_mark *marks;       /* per ring: where the span not yet written began */
	/* per ring: samples refused that no file reported yet */
	uint64_t *pending_dropped;
	uint64_t pass_written;         /* bytes into the file since the last FINISHED_ROUND */
	int pass_err;                  /* a write of this pass failed */
	uint64_t dropped_bytes;        /* drained but not written */
	uint64_t busy_samples;         /* samples not of the idle task (pid 0) */
};

int filesink_init(struct filesink *fs, const struct filesink_opts *opts);
void filesink_exit(struct filesink *fs);
/* @fs moved from where it was initialized to here: its sink points here. */
void filesink_moved(struct filesink *fs);

/* The first write error since the last call (0: none), cleared. */
int filesink_take_err(struct filesink *fs);
/* Report the refused samples in the file now, as LOST records (the next round does too). */
void filesink_report_dropped(struct filesink *fs);
/* A stage took @samples of ring @ring and never handed them on: lost, reported as refused ones. */
void filesink_lose(struct filesink *fs, size_t ring, uint64_t samples);
/* @f (no longer the sink's file) was discarded unfinished: what it was given is lost. */
void filesink_lose_file(struct filesink *fs, const struct filesink_file *f);

#endif
