/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the recorder's own files (recorder.c, recorder-host.c for
 * unwind=host, leftovers.c for start-up recovery): not for other modules.
 */
#ifndef PERFRECD_RECORDER_INTERNAL_H
#define PERFRECD_RECORDER_INTERNAL_H

#include <stdbool.h>
#include <pthread.h>

#include <perfrec/perfrec.h>

#include "drain.h"

struct recorder;
struct recfile;

/* unwind=host: the worker's way into the current file. */
struct host_out {
	pthread_mutex_t lock;
	struct recorder *rec;    /* moved with it (recorder_move()) */
	uint64_t failed_samples; /* samples the file refused, not yet counted lost */
	uint64_t failed_lost;    /* the counts of LOST / LOST_SAMPLES records it refused */
	uint64_t failed_bytes;
	int err;                 /* the first write error among them */
	uint64_t seen_dropped;   /* the unwinder's dropped samples accounted for (draining thread) */
};

/* Take / release host_out's lock around a use of the writer (no-op without unwind=host). */
void recorder_out_lock(const struct recorder *rec);
void recorder_out_unlock(const struct recorder *rec);
/* @h did not reach the file (@err); under ho->lock. */
void host_count_refused(struct host_out *ho, const struct perf_event_header *h, int err);
/* Account for what the worker could not write; true when writes failed. */
bool recorder_host_failures(struct recorder *rec);
/* The attr of an event by one of its ids (NULL: not ours). */
const struct perf_event_attr *recorder_attr_of(const struct recorder *rec, const struct drain_id *id);
/* Start the unwind sink when unwind=host (0 otherwise); -errno, logged. */
int recorder_open_unwind(struct recorder *rec);
/* The side-band event's attr: the synthesized records' trailers are laid out by it. */
const struct perf_event_attr *recorder_sideband_attr(const struct recorder *rec);
/*
 * After a file is published (@o: its counts, NULL for a recovered file
 * without them): upload, retention, the on-rotate hook (recorder.c).
 */
void recorder_after_publish(struct recorder *rec, const char *path, const struct recfile *o, bool recovered);
/* A write's result @r: 0, or -errno logged once per episode (recorder.c). */
int recorder_note_write(struct recorder *rec, int r);

#endif
