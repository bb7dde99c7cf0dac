/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How high each thread's stack needs copying for host unwinding (the
 * drain's side of unwind-sink.c).  A thread's outermost frames (_start and
 * __libc_start_main, or start_thread and clone3) stay at the same
 * addresses for its life, so once a walk of one of its samples has reached
 * them, the highest word that walk read is as high as any later walk of
 * that thread reads.  The kernel copies up to the requested size (8 KiB)
 * from the stack pointer whatever the depth: above a thread's top lie the
 * environment, auxv and argument strings, or the thread's TLS, and the
 * drain need not queue them.
 *
 * The unwinding worker learns tops a round after the drain queued the
 * samples, so what it tells comes with the sequence number the drain had
 * when it started that round; a thread forgotten since (it exited, exec'd,
 * its tid was handed to a new thread) does not take a top learnt of the
 * old one.  A slot per hash of the tid, the last writer wins: a thread
 * that loses its slot is copied whole again, which costs bytes, never
 * frames.  A top too low (a thread that moved its stack, a tid reused
 * unseen) shows as a walk wanting a word past a trimmed copy: the worker
 * says so and the thread is forgotten.  Owned by one thread.
 */
#ifndef PERFRECD_STACKTOP_H
#define PERFRECD_STACKTOP_H

#include <stdbool.h>
#include <stdint.h>

#define STACKTOP_SLOTS 4096

/* The slot of @tid, in this table and in the worker's record of what it told (unwind-sink.c). */
static inline uint32_t stacktop_index(uint32_t tid)
{
	_Static_assert(STACKTOP_SLOTS == 1u << 12, "stacktop_index() takes 12 bits");
	return (uint32_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ull) >> 52);
}

struct stacktop_slot {
	uint32_t tid;
	uint64_t top;       /* 0: not known */
	uint64_t forgotten; /* the sequence number of the last forgetting in this slot */
};

struct stacktops {
	uint64_t seq;
	struct stacktop_slot slot[STACKTOP_SLOTS];
};

/* The sequence number now: what a round begun now is stamped with. */
static inline uint64_t stacktops_seq(const struct stacktops *t)
{
	return t->seq;
}

/* @tid exited, exec'd or was just created: whatever was known of it is not of its stack now. */
void stacktops_forget(struct stacktops *t, uint32_t tid);
/* A walk of @tid's sample, in a round stamped @seq, reached the outermost frame reading up to @top. */
void stacktops_learn(struct stacktops *t, uint32_t tid, uint64_t top, uint64_t seq);
/* @tid's top, 0 when not known. */
uint64_t stacktops_top(const struct stacktops *t, uint32_t tid);

/*
 * How many bytes of a stack copy of @len bytes from @sp to keep for a
 * thread whose top is @top: 0 to keep them all (top not known, not above
 * @sp, or no fewer bytes wanted), else a multiple of 8 below @len.  A
 * little is kept above the top (STACKTOP_SLACK bytes).
 */
#define STACKTOP_SLACK 64
uint64_t stacktops_keep(uint64_t top, uint64_t sp, uint64_t len);

#endif
