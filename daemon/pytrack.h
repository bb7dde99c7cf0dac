/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which processes the walk of Python frames (pywalk.h) walks (issue 27):
 * a sink (sink.h) on the side-band records that, for each executable
 * MMAP2 of a file named like a CPython interpreter (python*, or a
 * libpython*.so), detects the process's layout (pyproc.h) and hands it to
 * the walker; at the process's EXIT, or an exec that replaces it, takes
 * it back (not at an older one: pytrack_note()).  At start, pytrack_scan() looks at the processes that already
 * run.  Detection goes through a cache of interpreter files (device,
 * inode, mtime), so a second process of the same python costs no parse.
 *
 * What detection found is counted per pyproc_status: a process whose
 * version or layout is not known is recorded as before, and counted.
 * All on the draining thread; not thread-safe.
 */
#ifndef PERFRECD_PYTRACK_H
#define PERFRECD_PYTRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

#include "pyproc.h"
#include "pystage.h"
#include "pywalk.h"
#include "sink.h"

/* Processes tracked at once; past it they are refused (counted). */
#define PYTRACK_MAX_PROCS 4096

struct pytrack_stats {
	struct pyproc_counters found; /* detections by outcome (PYPROC_OK: a CPython found) */
	uint64_t added;               /* processes handed to the walker */
	uint64_t refused;             /* not handed: the walker or PYTRACK_MAX_PROCS refused */
	uint64_t removed;             /* taken back at exit or exec */
	uint64_t stale;               /* exits and execs older than the process's interpreter MMAP2: not its end */
	uint64_t tracked;             /* now */
	uint64_t cache_hits, cache_misses;
};

struct pytrack_proc {
	pid_t pid;
	uint64_t since;               /* the time of the record it was added at (0: none, the scan) */
};

struct pytrack {
	struct sink sink;             /* ctx: this */
	struct pywalk *pw;            /* borrowed */
	char proc[64];                /* "/proc", or a test's */
	struct pyproc_cache cache;
	struct pytrack_proc *procs;   /* tracked, sorted by pid */
	size_t nr_procs;
	struct pytrack_stats st;
};

/* A new tracker feeding @pw (borrowed), looking at processes under @proc (NULL: "/proc"). */
int pytrack_new(struct pywalk *pw, const char *proc, struct pytrack **ret);
void pytrack_free(struct pytrack *t);

/* Every process that runs now: detected, and handed to the walker if it is a CPython. */
void pytrack_scan(struct pytrack *t);
/*
 * One side-band record (MMAP2, EXIT, COMM) of @time (0: not known).  The
 * drain takes the rings one after the other, so an EXIT or exec of a pid
 * may come after the MMAP2 of a newer program of it (another CPU's ring,
 * drained later): one older than the record the process was added at is
 * not its end (counted in stale).
 */
void pytrack_note(struct pytrack *t, const struct perf_event_header *h, uint64_t time);
void pytrack_get_stats(const struct pytrack *t, struct pytrack_stats *ret);

/* Python frames (issue 27) as status and metrics tell them: processes tracked, walks, merges. */
struct python_stats {
	struct pytrack_stats track;
	struct pywalk_stats walk;
	struct pystage_stats stage;
};

/* The cheap test first: does a mapped file's name look like a CPython interpreter? */
bool pytrack_python_name(const char *path);

extern const struct sink_ops pytrack_sink_ops;

#endif
