/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flight-recorder snapshots: the recorder's drained records kept in a
 * history (history.c) for `history=` (flight mode: 5 min by default), and
 * written on demand (SIGUSR2, the control socket's Snapshot) as one
 * self-contained perf.data file.  In flight mode nothing else is written;
 * in continuous mode the history runs beside the current file so a
 * snapshot reaches back before it.
 *
 * A snapshot holds: the attrs, /proc state synthesized now but stamped just
 * before its oldest record, FINISHED_INIT, the side-band records that fell
 * out of the window (maps of long-lived processes), every CPU's records in
 * the window, one FINISHED_ROUND, and the usual features plus
 * PERFREC_FEAT_SPANS (which span each CPU actually covers).
 */
#ifndef PERFRECD_SNAPSHOT_H
#define PERFRECD_SNAPSHOT_H

#include <stdint.h>

#include <perfrec/perfrec.h>

#include "config.h"

struct recorder;

/* The history window in effect (ns): history=, or 5 min in flight mode. */
uint64_t snapshot_window_ns(const struct config *c);
bool snapshot_flight_mode(const struct config *c);

/* What the history holds, for status reports (all zero without one). */
struct snapshot_stats {
	uint64_t window_ns;      /* configured window */
	uint64_t memory_bytes;   /* held now (accounted as allocated) */
	uint64_t max_bytes;      /* history-max */
	uint64_t oldest_time;    /* oldest record kept on any CPU (recording clock) */
	uint64_t evicted_chunks, evicted_by_cap;
	uint64_t dropped;        /* records not kept for want of memory */
};

void snapshot_stats(const struct recorder *rec, struct snapshot_stats *ret);

/*
 * Keep a history of @rec's drained records when a window is in effect: a
 * sink of its drain, until snapshot_close() (before recorder_close()).
 * Logs its errors.
 */
int snapshot_open(struct recorder *rec);
void snapshot_close(struct recorder *rec);
/* Whether @rec keeps a history (snapshot_open() set one up). */
bool snapshot_has_history(const struct recorder *rec);

/*
 * Drain the rings, then write the history as a perf.data file into @fd: a
 * regular file is written from offset 0 (and truncated), anything else
 * (pipe, socket) gets the pipe-mode stream.  Without a history (continuous
 * mode, history=0) the snapshot is a finished copy of the file in progress.
 * The fd stays open.  Recording goes on throughout.  Returns the number of
 * samples written or -errno (-ENODATA: neither a history nor a file in
 * progress).
 */
int recorder_snapshot(struct recorder *rec, int fd);

/*
 * The same snapshot, for a reader that may be slow or gone (a pipe, a
 * socket, a file on a hung file system): written whole into a spool, an
 * unlinked temporary file the caller copies out at the reader's pace, so
 * no reader can hold up the recorder; in pipe mode with @pipe_mode, else
 * as a whole file to copy from offset 0.  Returns the number of samples
 * and *ret_fd (the spool, owned by the caller, its size the snapshot's)
 * or -errno.
 */
int recorder_snapshot_spool(struct recorder *rec, bool pipe_mode, int *ret_fd);

/*
 * A snapshot published into the output directory like any other file
 * (NAME.tmp, rename; retention and the on-rotate hook apply).  *ret_path
 * (optional) gets the file name.  Logs the outcome.
 */
int recorder_snapshot_publish(struct recorder *rec, char **ret_path);

#endif
