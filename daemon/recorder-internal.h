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

/* Counts of the records that make up a file's samples and losses. */
struct host_counts {
	uint64_t samples;
	uint64_t lost;          /* in PERF_RECORD_LOST records */
	uint64_t lost_samples;  /* in PERF_RECORD_LOST_SAMPLES */
	uint64_t bytes;         /* of the records themselves (as the worker writes them) */
};

/* An event id and the ring its records go through. */
struct host_ring_id {
	uint64_t id;
	size_t ring;
};

/*
 * unwind=host: the worker's way into the current file, and the accounts of
 * what it was given.  A record handed to the worker counts nowhere until
 * the worker has written it (into the file it went to, and the totals) or
 * seen the file refuse it (lost); what the worker never emitted (the
 * unwinder could not rewrite it, no memory) is known once it is idle:
 * handed over minus written minus refused.  recorder_host_collect()
 * settles these on the draining thread.
 */
struct host_out {
	pthread_mutex_t lock;
	struct recorder *rec;          /* moved with it (recorder_move()) */
	struct host_ring_id *ids;      /* sorted by id; read-only once open (the worker looks up) */
	size_t nr_ids;
	/* under lock (the worker adds, the draining thread collects): per ring, since the last collection */
	struct host_counts *written;   /* into the current file, counted in it too */
	struct host_counts *refused;   /* the file refused them */
	uint64_t refused_bytes;
	int err;                       /* the first write error among the refused */
	/* the draining thread's own, per ring */
	struct host_counts *queued;    /* in the sink's round being filled */
	struct host_counts *inflight;  /* handed to the worker, neither written nor refused yet */
};

/* Take / release host_out's lock around a use of the writer (no-op without unwind=host). */
void recorder_out_lock(const struct recorder *rec);
void recorder_out_unlock(const struct recorder *rec);
/* Queue @h of ring @ring for the worker (file_record()); a record it cannot take is lost, counted. */
void recorder_host_queue(struct recorder *rec, size_t ring, const struct perf_event_header *h,
			 const struct perf_event_attr *attr);
/* Hand the round filled so far to the worker; 0 or -ENOMEM (it stays queued). */
int recorder_host_round(struct recorder *rec);
/*
 * Settle what the worker wrote (into the totals) and what the file
 * refused (lost, pending for a LOST record); with the worker idle, also
 * what it never emitted.  True when the file refused writes.
 */
bool recorder_host_collect(struct recorder *rec);
/* Hand over, wait until the worker has emitted everything, collect: before a file changes. */
bool recorder_host_sync(struct recorder *rec);
/* Free host_out (after the unwind sink). */
void recorder_host_close(struct recorder *rec);
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
