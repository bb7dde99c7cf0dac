/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Python frames read at the sample (issue 27): a BPF program attached to
 * the sampling events (PERF_EVENT_IOC_SET_BPF) reads, for the interrupted
 * thread of a process known to run CPython (pyproc.h), the chain of its
 * Python frames (code object, instruction) and hands it to user space
 * through a BPF ring buffer, one record per sample it ran for.
 *
 * Joining a walk to its sample: on one CPU the program runs in the
 * overflow handler of the sample, and both take their time from
 * CLOCK_MONOTONIC (the events' use_clockid, bpf_ktime_get_ns()).  Which
 * comes first depends on the kernel: older ones run the program before
 * they prepare the sample (the walk is older than its sample); newer ones
 * (6.18 here) prepare it first, taking its time, then run the program
 * (the walk is newer, by the program's run: microseconds).  So the walk of a
 * sample is the walk of the same CPU and thread nearest the sample's
 * time, within PYWALK_JOIN_WINDOW_NS either side; samples closer to each
 * other than that (over 10 kHz per CPU) could take a neighbour's walk
 * when their own is lost.  pywalk_take() does that, each walk joining
 * one sample at most.
 *
 * Nothing is guessed: a read that fails, a chain that loops or leaves
 * the frame budget ends the walk, and the record says so (flags).
 */
#ifndef PERFREC_PYWALK_H
#define PERFREC_PYWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyproc.h"

/* Frames one walk reads at most (the BPF program's bound). */
#define PYWALK_MAX_FRAMES 96
/* Not used by pywalk_take() any more (see PYWALK_JOIN_WINDOW_NS); kept for users. */
#define PYWALK_JOIN_NS 2000000ull
/* A walk further from its sample's time than this, either side, joins nothing. */
#define PYWALK_JOIN_WINDOW_NS 100000ull

/* struct pywalk_rec.flags */
#define PYWALK_TRUNCATED (1u << 0) /* PYWALK_MAX_FRAMES read and more remained */
#define PYWALK_TORN      (1u << 1) /* a read failed or the chain was not sane: cut there */
#define PYWALK_NO_TSTATE (1u << 2) /* the thread has no Python thread state: not a Python thread */

/* struct pywalk_frame.flags */
/*
 * The outermost Python frame of one C call of the interpreter's eval loop
 * (_PyEval_EvalFrameDefault): 3.10 every frame, 3.11 is_entry, 3.12+ the
 * frame above a C-stack-owned shim frame (the shims are not in the record).
 */
#define PYWALK_F_ENTRY (1u << 0)

struct pywalk_frame {
	/*
	 * The frame's f_code (3.13: f_executable) as read: aligned and a user
	 * address, but not checked to be a code object (that would cost a
	 * read per frame): the namer checks ob_type against the process's
	 * PyCode_Type (pywalk_process_info()) before it trusts it.
	 */
	uint64_t code;
	/* 3.10: f_lasti (code units); 3.11-12: prev_instr, 3.13: instr_ptr (addresses) */
	uint64_t instr;
	uint32_t flags;
	uint32_t pad;
};

/* What user space reads of one walk: frames innermost first. */
struct pywalk_rec {
	uint64_t time;    /* CLOCK_MONOTONIC ns */
	uint32_t pid, tid;
	uint32_t cpu;
	uint16_t nr;      /* frames[] used */
	uint16_t flags;
	struct pywalk_frame frames[PYWALK_MAX_FRAMES];
};

struct pywalk_stats {
	uint64_t walks;        /* records read from the ring */
	uint64_t joined;       /* taken by a sample */
	uint64_t unjoined;     /* aged out or pushed out without a sample */
	uint64_t torn, truncated;
	uint64_t ring_lost;    /* walks the BPF ring had no room for (the program's count) */
	uint64_t procs;        /* processes the program knows now */
	uint64_t procs_refused; /* processes not added: the map is full */
};

struct pywalk;

struct pywalk_opts {
	size_t sz;
	/* sampling event fds to attach the program to (each PERF_EVENT_IOC_SET_BPF) */
	const int *fds;
	size_t nr_fds;
	size_t max_procs;      /* 0: 4096 */
};

/*
 * Load the program and attach it to every fd.  0, or -errno (the program
 * or the kernel refused: the caller records without Python frames and
 * says why).
 */
int pywalk_open(const struct pywalk_opts *opts, struct pywalk **ret);
/*
 * Attach the loaded program to more sampling fds (events reopened by a
 * reload, when loading again would need privileges given up since).
 * 0, or -errno of the first fd refused.
 */
int pywalk_attach(struct pywalk *pw, const int *fds, size_t nr_fds);
/*
 * Stop walking and free.  NULL is fine.  The kernel cannot take a program
 * off a perf event but by closing it: the program stays on the events,
 * its map of processes emptied, returning at once, until they close.
 */
void pywalk_free(struct pywalk *pw);

/* The program walks @pid's threads from now on, with @info's layout (status PYPROC_OK). */
int pywalk_add_process(struct pywalk *pw, pid_t pid, const struct pyproc_info *info);
void pywalk_remove_process(struct pywalk *pw, pid_t pid);
/*
 * The layout @pid was added with (a copy into @ret: the code objects of
 * its walks are named with it), or -ENOENT: not added, or removed since.
 */
int pywalk_process_info(struct pywalk *pw, pid_t pid, struct pyproc_info *ret);

/*
 * Read what the ring holds now (non-blocking), then the walk of the sample
 * taken on @cpu from thread @tid at @time, which it consumes; walks of
 * that CPU older than it that no sample took are dropped (counted).
 * Calls for one CPU must come in the time order of its samples (the
 * evlist's one ring per CPU is).
 * NULL: none.  The record stays valid until the next call on @pw.
 * One thread takes; adding and removing processes and the stats may be
 * on others (a lock).
 */
const struct pywalk_rec *pywalk_take(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time);

void pywalk_get_stats(const struct pywalk *pw, struct pywalk_stats *ret);

#endif
